package orgadmin

import (
	"context"

	"github.com/orgadmin/orgadmin/storage"
)

// FeedbackInput is one page-feedback submission.
type FeedbackInput struct {
	// PagePath is the page the feedback is about; required.
	PagePath string
	// Text is the feedback, 1 to 2000 characters.
	Text string
	// PageTitle is optional.
	PageTitle string
	// Source identifies the submitting interface; optional.
	Source string
	// DecodeIssues are the problems found while decoding the input from
	// its wire form; see CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
}

// Limits of feedback fields.
const (
	MaxFeedbackPagePath  = 2048
	MaxFeedbackPageTitle = maxShortString // 1024
	MaxFeedbackSource    = 255
)

// SubmitFeedback records page feedback and returns its id (a UUID). It
// needs no caller. It fails with BAD_REQUEST when in breaks a rule.
func (s *Service) SubmitFeedback(ctx context.Context, in FeedbackInput) (string, error) {
	if err := in.problems().err(); err != nil {
		return "", err
	}
	id, err := s.newID()
	if err != nil {
		return "", err
	}
	f := storage.Feedback{ID: id, PagePath: in.PagePath, Text: in.Text, PageTitle: in.PageTitle, Source: in.Source, CreatedAt: s.clock()}
	if err := s.store.AddFeedback(ctx, f); err != nil {
		return "", internal(ctx, "add feedback", err)
	}
	return id, nil
}

// problems returns every problem of in.
func (in FeedbackInput) problems() issues {
	var is issues
	is.checkString(in.PagePath, 1, MaxFeedbackPagePath, "page_path")
	is.checkString(in.Text, 1, MaxFeedbackText, "text")
	is.checkString(in.PageTitle, 0, MaxFeedbackPageTitle, "page_title")
	is.checkString(in.Source, 0, MaxFeedbackSource, "source")
	return is.withDecoded(in.DecodeIssues)
}
