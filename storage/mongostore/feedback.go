package mongostore

import (
	"context"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// feedbackDoc is one feedback submission; its id is the submission's.
type feedbackDoc struct {
	ID        string    `bson:"_id"`
	PagePath  string    `bson:"path"`
	Text      string    `bson:"text"`
	PageTitle string    `bson:"title,omitempty"`
	Source    string    `bson:"source,omitempty"`
	Created   time.Time `bson:"created"`
}

// AddFeedback implements storage.Store. The collection is capped (see
// MaxFeedback) when this package creates it, so the oldest submissions
// make room for new ones.
func (s *Store) AddFeedback(ctx context.Context, f storage.Feedback) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.feedback.InsertOne(ctx, feedbackDoc{
		ID:        f.ID,
		PagePath:  f.PagePath,
		Text:      f.Text,
		PageTitle: f.PageTitle,
		Source:    f.Source,
		Created:   f.CreatedAt,
	})
	return wrap("add feedback", err)
}
