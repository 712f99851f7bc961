package mongostore

import (
	"fmt"
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
)

// BenchmarkStore runs the operation benchmarks every store shares
// (internal/servicetest), on the server ORGADMIN_MONGO_URI names:
//
//	go test -run '^$' -bench . ./storage/memstore ./storage/mongostore
func BenchmarkStore(b *testing.B) {
	testURI(b)
	servicetest.Benchmarks(b, func(tb testing.TB) storage.Store { return newTestStore(tb) })
}

// BenchmarkByName looks users up by username in an org of 1000 users, the
// Service's commonest store calls after authentication: GetUser (what
// reads a user's instance configuration, and resolves the user of a token
// listing or creation) and SetInstances.
func BenchmarkByName(b *testing.B) {
	s := newTestStore(b)
	ctx := b.Context()
	org := storage.Org{ID: "bench", CreatedAt: t0}
	if err := s.CreateOrg(ctx, org, nil); err != nil {
		b.Fatal(err)
	}
	names, ids := make([]string, 1000), make(map[string]string)
	for i := range names {
		u := crashUser(org.ID, fmt.Sprintf("robot%04d", i))
		if err := s.CreateUser(ctx, u, storage.UserLimit{}, nil); err != nil {
			b.Fatal(err)
		}
		names[i] = u.FoldedUsername
		ids[u.FoldedUsername] = u.ID
	}
	cfg := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "jumbo"}}
	for _, bc := range []struct {
		name string
		op   func(folded string) error
	}{
		{"GetUser", func(folded string) error { _, err := s.GetUser(ctx, org.ID, folded); return err }},
		{"SetInstances", func(folded string) error { return s.SetInstances(ctx, org.ID, ids[folded], cfg, nil) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if err := bc.op(names[i%len(names)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
