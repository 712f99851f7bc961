package mongostore

import (
	"context"
	"fmt"
	"testing"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The benchmarks run the operations of the root package's benchmarks
// through a Service on memstore and on this store, side by side in one run,
// so the figures compare. The MongoDB ones need ORGADMIN_MONGO_URI:
//
//	go test -run '^$' -bench . ./storage/mongostore

// benchStores are the stores each benchmark runs on.
var benchStores = []struct {
	name string
	open func(b *testing.B) storage.Store
}{
	{"memstore", func(*testing.B) storage.Store { return memstore.New() }},
	{"mongostore", func(b *testing.B) storage.Store { return newTestStore(b) }},
}

// eachStore runs bench on every store as a sub-benchmark.
func eachStore(b *testing.B, bench func(b *testing.B, s storage.Store)) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) { bench(b, st.open(b)) })
	}
}

// benchWorld is an org with an Admin and a service account.
type benchWorld struct {
	svc   *orgadmin.Service
	admin orgadmin.Caller
	token string // the Admin's token value
}

func newBenchWorld(b *testing.B, s storage.Store) benchWorld {
	b.Helper()
	ctx := context.Background()
	svc := orgadmin.New(s, orgadmin.Config{})
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

func BenchmarkAuthenticate(b *testing.B) {
	eachStore(b, func(b *testing.B, s storage.Store) {
		w := newBenchWorld(b, s)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.svc.Authenticate(ctx, w.token); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCreateToken spreads tokens over 1000 service accounts, so that
// no user nears the live-token limit.
func BenchmarkCreateToken(b *testing.B) {
	eachStore(b, func(b *testing.B, s storage.Store) {
		w := newBenchWorld(b, s)
		ctx := context.Background()
		names := make([]string, 1000)
		for i := range names {
			names[i] = fmt.Sprint("robot", i)
			if _, err := w.svc.CreateServiceAccount(ctx, w.admin, orgadmin.CreateServiceAccountInput{Username: names[i]}); err != nil {
				b.Fatal(err)
			}
		}
		in := orgadmin.CreateTokenInput{Name: "bench"}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := w.svc.CreateToken(ctx, w.admin, names[i%len(names)], in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkListTokens(b *testing.B) {
	eachStore(b, func(b *testing.B, s storage.Store) {
		w := newBenchWorld(b, s)
		ctx := context.Background()
		for i := range 10 {
			if _, err := w.svc.CreateToken(ctx, w.admin, "robot", orgadmin.CreateTokenInput{Name: fmt.Sprint("t", i)}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			ts, err := w.svc.ListTokens(ctx, w.admin, "robot")
			if err != nil || len(ts) != 10 {
				b.Fatal(len(ts), err)
			}
		}
	})
}

func BenchmarkCreateServiceAccount(b *testing.B) {
	eachStore(b, func(b *testing.B, s storage.Store) {
		w := newBenchWorld(b, s)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			in := orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("sa%09d", i)}
			if _, err := w.svc.CreateServiceAccount(ctx, w.admin, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListUsers lists pages of 100 users of an org of 10 000 users:
// the first page, and the page a cursor about 9 000 users in starts.
func BenchmarkListUsers(b *testing.B) {
	eachStore(b, func(b *testing.B, s storage.Store) {
		ctx := context.Background()
		w := newBenchWorld(b, s)
		for i := range 10_000 {
			if _, err := w.svc.CreateUser(ctx, "bench", orgadmin.NewUser{Username: fmt.Sprintf("u%07d", i), IsServiceAccount: true}); err != nil {
				b.Fatal(err)
			}
		}
		deep, err := w.svc.ListUsers(ctx, w.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Ptr(8_900)})
		if err != nil {
			b.Fatal(err)
		}
		for _, bc := range []struct {
			name string
			opt  orgadmin.ListUsersOptions
		}{
			{"10k_users/first_page", orgadmin.ListUsersOptions{}},
			{"10k_users/cursor_9k", orgadmin.ListUsersOptions{PageToken: deep.NextPageToken}},
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
	})
}
