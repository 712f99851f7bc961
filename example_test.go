package orgadmin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The main flow: bootstrap an organization, create a service account as
// its Admin, mint a token for it and list the users.
func ExampleService() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})

	// The first Admin and its token come from Bootstrap; the HTTP API never
	// creates Admins.
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}

	// Every operation is called with a bearer token, as a request presents
	// it, and authenticates it with its first store read.
	admin := orgadmin.Bearer(adminToken)
	bot, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{
		Username:    "Ci_Bot",
		Description: "builds and deploys",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", bot.Username, bot.Role, "service account:", bot.IsServiceAccount)

	// Usernames compare case-insensitively.
	_, err = svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "ci_bot"})
	fmt.Println("again:", orgadmin.ErrorCode(err))

	tok, err := svc.CreateToken(ctx, admin, "ci_bot", orgadmin.CreateTokenInput{
		Name: "pipeline",
		TTL:  orgadmin.Some(3600 * time.Second),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("token:", strings.HasPrefix(tok.Value, "oat_"), len(tok.Value), orgadmin.ValidSecretChecksum(tok.Value))
	fmt.Println("lifetime:", tok.ExpireAt.Sub(tok.CreatedAt), tok.Type)

	// The service account is a Member: it may not create accounts.
	_, err = svc.CreateServiceAccount(ctx, orgadmin.Bearer(tok.Value), orgadmin.CreateServiceAccountInput{Username: "other"})
	fmt.Println("as ci_bot:", orgadmin.ErrorCode(err))

	// A Go program that knows who calls acts as that user's Caller.
	caller, err := svc.Authenticate(ctx, adminToken)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("caller:", caller.Username(), caller.Role())

	page, err := svc.ListUsers(ctx, caller, orgadmin.ListUsersOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, u := range page.Users {
		fmt.Println("user:", u.Username, u.Role, u.IsServiceAccount)
	}
	fmt.Println("total:", page.TotalCount)

	// Output:
	// created: Ci_Bot Member service account: true
	// again: BAD_REQUEST
	// token: true 53 true
	// lifetime: 1h0m0s read_write
	// as ci_bot: FORBIDDEN
	// caller: admin Admin
	// user: admin Admin false
	// user: Ci_Bot Member true
	// total: 2
}

func ExampleService_SetInstanceConfig() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, adminToken)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "etl"}); err != nil {
		log.Fatal(err)
	}

	show := func(c orgadmin.InstanceConfig) {
		for _, side := range []struct {
			name string
			s    orgadmin.InstanceSide
		}{{"read_write", c.ReadWrite}, {"read_scaling", c.ReadScaling}} {
			fmt.Print(side.name, ": ", side.s.Size)
			if side.name == "read_scaling" {
				fmt.Print(" flock_size=", side.s.FlockSize)
			}
			if cd, ok := side.s.Cooldown.Get(); ok {
				fmt.Print(" cooldown=", cd)
			}
			fmt.Println()
		}
	}

	// A new user starts with the defaults.
	cfg, err := svc.GetInstanceConfig(ctx, admin, "etl")
	if err != nil {
		log.Fatal(err)
	}
	show(cfg)

	// The whole configuration is replaced; an unset cooldown shows the
	// size's default, and pulse instances have none.
	cfg, err = svc.SetInstanceConfig(ctx, admin, "etl", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeMega},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizePulse, FlockSize: 8},
	}})
	if err != nil {
		log.Fatal(err)
	}
	show(cfg)

	// Every problem is reported at once.
	_, err = svc.SetInstanceConfig(ctx, admin, "etl", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeGiga, Cooldown: orgadmin.Some(30 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizePulse, FlockSize: 65, Cooldown: orgadmin.Some(60 * time.Second)},
	}})
	fmt.Println(orgadmin.ErrorCode(err))
	var e *orgadmin.Error // errors.As, not a type assertion: it sees through wrapping
	if errors.As(err, &e) {
		for _, is := range e.Issues {
			fmt.Println(" ", is.Path, is.Code)
		}
	}

	// Output:
	// read_write: standard cooldown=1m0s
	// read_scaling: standard flock_size=4 cooldown=1m0s
	// read_write: mega cooldown=5m0s
	// read_scaling: pulse flock_size=8
	// BAD_REQUEST
	//   config.read_write.cooldown_seconds too_small
	//   config.read_scaling.flock_size too_big
	//   config.read_scaling.cooldown_seconds not_allowed
}

func ExampleService_CreateEmbedSession() {
	ctx := context.Background()
	// A fixed clock, so the session's expiry can be printed.
	now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	svc := orgadmin.New(memstore.New(), orgadmin.Config{Now: func() time.Time { return now }})
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, adminToken)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "viewer"}); err != nil {
		log.Fatal(err)
	}

	// Dives are registered through the Go API.
	const diveID = "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f"
	err = svc.RegisterDive(ctx, "acme", orgadmin.Dive{
		ID:                diveID,
		Title:             "Sales",
		Version:           3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}},
	})
	if err != nil {
		log.Fatal(err)
	}

	in := orgadmin.CreateEmbedSessionInput{
		Username:     "viewer",
		SessionName:  orgadmin.Some("dashboard"),
		InitialState: json.RawMessage(`{"region": "emea"}`),
	}
	session, err := svc.CreateEmbedSession(ctx, admin, diveID, in)
	if err != nil {
		log.Fatal(err)
	}

	// The renderer resolves the opaque value.
	s, err := svc.ResolveEmbedSession(ctx, session)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dive:", s.DiveID, "version:", s.Version)
	fmt.Println("for:", s.Username)
	fmt.Println("resources:", s.RequiredResources)
	fmt.Println("initial state:", string(s.InitialState))
	fmt.Println("expires:", s.ExpiresAt.Format(time.RFC3339))

	// Another session of the same name reuses the read-scaling session.
	again, err := svc.CreateEmbedSession(ctx, admin, diveID, in)
	if err != nil {
		log.Fatal(err)
	}
	s2, err := svc.ResolveEmbedSession(ctx, again)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same affinity:", s.AffinityKey == s2.AffinityKey, "same value:", session == again)

	// A session value is not an API credential.
	_, err = svc.Authenticate(ctx, session)
	fmt.Println("as bearer:", orgadmin.ErrorCode(err))

	// Output:
	// dive: 0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f version: 3
	// for: viewer
	// resources: [{md:sales s}]
	// initial state: {"region":"emea"}
	// expires: 2026-06-20T12:00:00Z
	// same affinity: true same value: false
	// as bearer: UNAUTHORIZED
}

func ExampleFoldUsername() {
	fmt.Println(orgadmin.FoldUsername("Alice"), orgadmin.FoldUsername("ALICE"))
	// Unicode simple case folding: the Kelvin sign is a k, final sigma a sigma.
	fmt.Println(orgadmin.FoldUsername("\u212Aelvin"))
	fmt.Println(orgadmin.FoldUsername("ΣΑΣ") == orgadmin.FoldUsername("σας"))
	// Simple folding never changes a name's length: ß is not "ss".
	fmt.Println(orgadmin.FoldUsername("Straße") == orgadmin.FoldUsername("STRASSE"))
	// Output:
	// alice alice
	// kelvin
	// true
	// false
}

func ExampleValidUsername() {
	for _, name := range []string{"alice", "Ci_Bot_2", "émile", "a٣", "2fast", "_x", "al-ice", ""} {
		fmt.Printf("%q %v\n", name, orgadmin.ValidUsername(name))
	}
	// Output:
	// "alice" true
	// "Ci_Bot_2" true
	// "émile" true
	// "a٣" true
	// "2fast" false
	// "_x" false
	// "al-ice" false
	// "" false
}

// ErrorCode classifies any error, wrapped or not; errors.Is tests it
// against the sentinels, and errors.As gets at the *Error with its issues.
func ExampleErrorCode() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = svc.GetInstanceConfig(ctx, orgadmin.Bearer(token), "nobody")
	wrapped := fmt.Errorf("provision nobody: %w", err)

	fmt.Println(orgadmin.ErrorCode(wrapped))
	fmt.Println(errors.Is(wrapped, orgadmin.ErrNotFound), errors.Is(wrapped, orgadmin.ErrForbidden))
	var e *orgadmin.Error
	if errors.As(wrapped, &e) {
		fmt.Println(e.Issues[0].Code, e.Issues[0].Path, e.Issues[0].Message)
	}

	// A TTL is a time.Duration of whole seconds.
	_, err = svc.CreateToken(ctx, orgadmin.Bearer(token), "admin", orgadmin.CreateTokenInput{Name: "ci", TTL: orgadmin.Some(90 * time.Millisecond)})
	if errors.As(err, &e) {
		fmt.Println(orgadmin.ErrorCode(err), e.Issues[0].Path, e.Issues[0].Code)
	}
	fmt.Println(orgadmin.ErrorCode(nil) == "", orgadmin.ErrorCode(errors.New("other")))
	// Output:
	// NOT_FOUND
	// true false
	// not_found username user not found
	// BAD_REQUEST ttl invalid_type
	// true INTERNAL_SERVER_ERROR
}

// AllUsers walks every page of ListUsers with a range-over-func loop.
func ExampleService_AllUsers() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"carol", "Bob", "dave"} {
		if _, err := svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: name, IsServiceAccount: true}); err != nil {
			log.Fatal(err)
		}
	}
	// Two users per store read; the iterator follows the page tokens.
	opt := orgadmin.ListUsersOptions{Limit: orgadmin.Some(2)}
	for u, err := range svc.AllUsers(ctx, orgadmin.Bearer(token), opt) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(u.Username, u.Role)
	}
	// Output:
	// admin Admin
	// Bob Member
	// carol Member
	// dave Member
}

// A Caller comes only from the Service: Authenticate, ActAs, ActAsOrg. A
// Caller built by hand is nobody.
func ExampleService_ActAs() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	if _, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "alice"}); err != nil {
		log.Fatal(err)
	}
	alice, err := svc.ActAs(ctx, "acme", "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(alice.Org(), alice.Username(), alice.Role())
	_, err = svc.GetActiveAccounts(ctx, alice)
	fmt.Println("as alice:", err)

	_, err = svc.GetActiveAccounts(ctx, orgadmin.Caller{})
	fmt.Println("as a hand-made Caller:", orgadmin.ErrorCode(err))
	// Output:
	// acme alice Admin
	// as alice: <nil>
	// as a hand-made Caller: UNAUTHORIZED
}

// The audit trail: every change, newest first, with who made it and
// through which request; a Member may not read it.
func ExampleService_AuditEvents() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		log.Fatal(err)
	}
	admin := orgadmin.Bearer(adminToken)

	// httpserver puts each request's id in its context; a Go program may
	// too.
	reqCtx := orgadmin.WithRequestID(ctx, "req-1")
	if _, err := svc.CreateServiceAccount(reqCtx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"}); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.SetInstanceConfig(reqCtx, admin, "robot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizePulse},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, FlockSize: 1},
	}}); err != nil {
		log.Fatal(err)
	}

	for e, err := range svc.AllAuditEvents(ctx, admin, orgadmin.AuditQuery{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s by %s on %s %q, request %q\n", e.Action, e.ActorUsername, e.TargetKind, e.TargetUsername, e.RequestID)
		if e.After != nil {
			fmt.Println("  after:", string(e.After))
		}
	}

	tok, err := svc.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "ci"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = svc.AuditEvents(ctx, orgadmin.Bearer(tok.Value), orgadmin.AuditQuery{})
	fmt.Println("as robot:", orgadmin.ErrorCode(err))
	// Output:
	// instances.set by admin on user "robot", request "req-1"
	//   after: {"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"standard","flock_size":1,"cooldown_seconds":60}}
	// user.create by admin on user "robot", request "req-1"
	// token.create by system on token "admin", request ""
	// user.create by system on user "admin", request ""
	// org.create by system on org "", request ""
	// as robot: FORBIDDEN
}
