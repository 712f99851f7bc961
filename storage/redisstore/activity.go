package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/orgadmin/orgadmin/storage"
)

// A Duckling report is stored as "<1|0>:<unix ms>": active or idle, and when.

// SetDuckling implements storage.Store.
func (s *Store) SetDuckling(ctx context.Context, d storage.Duckling) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	report := "0:"
	if d.Active {
		report = "1:"
	}
	report += strconv.FormatInt(millis(d.At), 10)
	v, err := s.run(ctx, setDucklingScript, d.Org, d.UserID, d.ID, report).Result()
	return status("set duckling", v, err)
}

// ListActivity implements storage.Store.
func (s *Store) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, listActivityScript, org).Slice()
	if err != nil {
		return nil, failed("list activity", err)
	}
	out := make([]storage.Activity, 0, len(v))
	for _, e := range v {
		rec, _ := e.([]any)
		if len(rec) != 4 {
			return nil, fmt.Errorf("redisstore: list activity: unexpected reply")
		}
		u, err := userFrom(org, str(rec[3]), str(rec[0]), str(rec[1]))
		if err != nil {
			return nil, err
		}
		reports, _ := rec[2].([]any)
		a := storage.Activity{User: u, Ducklings: make([]storage.Duckling, 0, len(reports)/2)}
		for i := 0; i+1 < len(reports); i += 2 {
			flag, at, ok := strings.Cut(str(reports[i+1]), ":")
			ms, err := strconv.ParseInt(at, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("redisstore: corrupt duckling report %q", reports[i+1])
			}
			a.Ducklings = append(a.Ducklings, storage.Duckling{
				Org: org, UserID: u.ID, ID: str(reports[i]), Active: flag == "1", At: fromMillis(ms),
			})
		}
		out = append(out, a)
	}
	return out, nil
}
