package servicetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// Benchmarks measures the orgadmin operations through a Service on
// stores made by newStore, a fresh one for each, so that every adapter is
// measured by the same code and the figures of `go test -bench` line up,
// store beside store, for benchstat.
func Benchmarks(b *testing.B, newStore func(testing.TB) storage.Store) {
	b.Run("Authenticate", func(b *testing.B) { authenticate(b, newStore(b)) })
	b.Run("CreateToken", func(b *testing.B) { createToken(b, newStore(b)) })
	b.Run("ListTokens", func(b *testing.B) { listTokens(b, newStore(b)) })
	b.Run("GetInstanceConfig", func(b *testing.B) { getInstanceConfig(b, newStore(b)) })
	b.Run("SetInstanceConfig", func(b *testing.B) { setInstanceConfig(b, newStore(b)) })
	b.Run("CreateServiceAccount", func(b *testing.B) { createServiceAccount(b, newStore(b)) })
	b.Run("ListUsers", func(b *testing.B) { BenchListUsers(b, newStore(b), 10_000) })
	b.Run("CreateEmbedSession", func(b *testing.B) { createEmbedSession(b, newStore(b)) })
}

// world is an org with an Admin and a service account "robot".
type world struct {
	svc   *orgadmin.Service
	admin orgadmin.Caller
	token string
}

func newWorld(b *testing.B, s storage.Store) world {
	b.Helper()
	// The orgs measured grow past the default limit of users (to a
	// million); a limit still applies, so creations cost what they cost
	// under one.
	return newWorldOf(b, s, orgadmin.Config{MaxUsersPerOrg: math.MaxInt32})
}

// newWorldOf is a world whose Service has the configuration cfg.
func newWorldOf(b *testing.B, s storage.Store, cfg orgadmin.Config) world {
	b.Helper()
	ctx := context.Background()
	svc := orgadmin.New(s, cfg)
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
	return world{svc: svc, admin: admin, token: tok}
}

func authenticate(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.svc.Authenticate(ctx, w.token); err != nil {
			b.Fatal(err)
		}
	}
}

// createToken spreads tokens over 1000 service accounts, so that no user
// nears the live-token limit.
func createToken(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
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
}

// getInstanceConfig reads the configuration of a service account.
func getInstanceConfig(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.svc.GetInstanceConfig(ctx, w.admin, "robot"); err != nil {
			b.Fatal(err)
		}
	}
}

// setInstanceConfig sets the configuration of a service account, as the
// load harness's set-config does: each change is audited, before and
// after.
func setInstanceConfig(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
	ctx := context.Background()
	in := orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, FlockSize: 2},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.svc.SetInstanceConfig(ctx, w.admin, "robot", in); err != nil {
			b.Fatal(err)
		}
	}
}

// listTokens lists a user's 10 tokens.
func listTokens(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
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
}

func createServiceAccount(b *testing.B, s storage.Store) {
	w := newWorld(b, s)
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
}

// ListUsers lists pages of 100 users of an org of n users, built on s
// first: the first page, and a page nine tenths of the way in, by cursor
// and by offset. Its sub-benchmarks are first_page, cursor_90pct and
// offset_90pct.
func BenchListUsers(b *testing.B, s storage.Store, n int) {
	w := newWorld(b, s)
	ctx := context.Background()
	for i := range n {
		if _, err := w.svc.CreateUser(ctx, "bench", orgadmin.NewUser{Username: fmt.Sprintf("u%07d", i), IsServiceAccount: true}); err != nil {
			b.Fatal(err)
		}
	}
	deepAt := n * 9 / 10
	deep, err := w.svc.ListUsers(ctx, w.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Some(deepAt - 100)})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opt  orgadmin.ListUsersOptions
	}{
		{"first_page", orgadmin.ListUsersOptions{}},
		{"cursor_90pct", orgadmin.ListUsersOptions{PageToken: deep.NextPageToken}},
		{"offset_90pct", orgadmin.ListUsersOptions{Offset: orgadmin.Some(deepAt)}},
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

// liveSessions is how many embed sessions of one service account are
// live at each creation createEmbedSession measures.
const liveSessions = 1000

// createEmbedSession mints embed sessions for one service account on a
// clock that moves a thousandth of a session's life at each, so that a
// creation finds liveSessions sessions live and one to drop, as an
// embedding program minting one a page view would.
func createEmbedSession(b *testing.B, s storage.Store) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	const ttl = 24 * time.Hour
	w := newWorldOf(b, s, orgadmin.Config{Now: func() time.Time { return now }, EmbedSessionTTL: ttl})
	svc, admin := w.svc, w.admin
	const dive = "0b0d5e8e-6f3a-4c1e-9d2a-3f4b5c6d7e8f"
	if err := svc.RegisterDive(ctx, "bench", orgadmin.Dive{ID: dive, Title: "Sales"}); err != nil {
		b.Fatal(err)
	}
	in := orgadmin.CreateEmbedSessionInput{Username: "robot", InitialState: []byte(`{"filter":"region = 'emea'"}`)}
	mint := func() {
		now = now.Add(ttl / liveSessions)
		if _, err := svc.CreateEmbedSession(ctx, admin, dive, in); err != nil {
			b.Fatal(err)
		}
	}
	for range liveSessions {
		mint()
	}
	b.ReportAllocs()
	for b.Loop() {
		mint()
	}
}
