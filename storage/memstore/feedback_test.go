package memstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/orgadmin/orgadmin/storage"
)

func TestFeedbackIsBounded(t *testing.T) {
	s := New()
	ctx := context.Background()
	for i := range MaxFeedback + 10 {
		if err := s.AddFeedback(ctx, storage.Feedback{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.feedback) != MaxFeedback || len(s.fbOrder) != MaxFeedback {
		t.Fatalf("kept %d/%d submissions, want %d", len(s.feedback), len(s.fbOrder), MaxFeedback)
	}
	if _, ok := s.feedback["9"]; ok {
		t.Error("the oldest submissions are kept")
	}
	if err := s.AddFeedback(ctx, storage.Feedback{ID: fmt.Sprint(MaxFeedback + 9)}); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Errorf("duplicate of a kept id: %v, want ErrAlreadyExists", err)
	}
}
