package client

import (
	"context"
	"net/http"
	"net/url"
)

// Feedback is a page-feedback submission. Automated callers are expected
// to obtain the user's confirmation before sending one.
type Feedback struct {
	// PagePath is the page the feedback is about; required.
	PagePath string
	// Text is the feedback, 1 to 2000 characters.
	Text string
	// PageTitle is optional.
	PageTitle string
	// Source identifies the submitting interface; optional.
	Source string
}

// FeedbackReceipt acknowledges a submission.
type FeedbackReceipt struct {
	// FeedbackID is a UUID.
	FeedbackID string `json:"feedback_id"`
}

// SubmitFeedback sends page feedback to the feedback endpoint (see
// WithFeedbackURL), without the bearer token. Each call records a
// submission, so it is never retried; a client past its rate gets a 429
// *Error whose RetryAfter says how long to wait.
func (c *Client) SubmitFeedback(ctx context.Context, f Feedback) (*FeedbackReceipt, error) {
	q := url.Values{}
	q.Set("page_path", f.PagePath)
	q.Set("text", f.Text)
	if f.PageTitle != "" {
		q.Set("page_title", f.PageTitle)
	}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	var out FeedbackReceipt
	if err := c.call(ctx, request{method: http.MethodGet, url: c.feedbackURL, query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
