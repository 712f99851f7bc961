package orgadmin_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// benchWorld is an org with an Admin, a service account and their tokens.
type benchWorld struct {
	svc   *orgadmin.Service
	admin orgadmin.Caller
	token string // the Admin's token value
}

func newBenchWorld(b *testing.B) benchWorld {
	b.Helper()
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	tok, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, tok)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"}); err != nil {
		b.Fatal(err)
	}
	return benchWorld{svc: svc, admin: admin, token: tok}
}

// The per-operation benchmarks of every store, memory included, are in
// internal/storebench; this file keeps the memory store at scale.

// million is an org of 1 000 000 users, built once for the list benchmarks.
var million struct {
	once sync.Once
	w    benchWorld
	deep string // a page token about 900 000 users in
}

func millionUsers(b *testing.B) benchWorld {
	b.Helper()
	million.once.Do(func() {
		ctx := context.Background()
		w := newBenchWorld(b)
		for i := range 1_000_000 {
			if _, err := w.svc.CreateUser(ctx, "bench", orgadmin.NewUser{Username: fmt.Sprintf("u%07d", i), IsServiceAccount: true}); err != nil {
				b.Fatal(err)
			}
		}
		page, err := w.svc.ListUsers(ctx, w.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Ptr(899_900)})
		if err != nil {
			b.Fatal(err)
		}
		million.w, million.deep = w, page.NextPageToken
	})
	return million.w
}

// BenchmarkListUsers lists pages of 100 users: of an org of 1 000 users,
// and of an org of 1 000 000 users from the start, by cursor and by offset
// about 900 000 users in.
func BenchmarkListUsers(b *testing.B) {
	ctx := context.Background()
	small := newBenchWorld(b)
	for i := range 1000 {
		if _, err := small.svc.CreateUser(ctx, "bench", orgadmin.NewUser{Username: fmt.Sprintf("u%07d", i), IsServiceAccount: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("1k_users/first_page", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if page, err := small.svc.ListUsers(ctx, small.admin, orgadmin.ListUsersOptions{}); err != nil || len(page.Users) != 100 {
				b.Fatal(len(page.Users), err)
			}
		}
	})
	w := millionUsers(b)
	for _, bc := range []struct {
		name string
		opt  orgadmin.ListUsersOptions
	}{
		{"1m_users/first_page", orgadmin.ListUsersOptions{}},
		{"1m_users/cursor_900k", orgadmin.ListUsersOptions{PageToken: million.deep}},
		{"1m_users/offset_900k", orgadmin.ListUsersOptions{Offset: orgadmin.Ptr(900_000)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := w.svc.ListUsers(ctx, w.admin, bc.opt)
				if err != nil || len(page.Users) != 100 {
					b.Fatal(len(page.Users), err)
				}
			}
		})
	}
}
