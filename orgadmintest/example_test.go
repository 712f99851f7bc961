package orgadmintest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// In a test, start the fake with NewServer(t): it is closed when the test
// ends. An Example has no test, so it uses Run and closes it itself.
func Example() {
	srv, err := orgadmintest.Run() // in a test: srv := orgadmintest.NewServer(t)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	admin := client.New(srv.URL(), srv.AdminToken())
	if _, err := admin.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"}); err != nil {
		log.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, "robot", client.CreateTokenRequest{Name: "ci", TTL: 5 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	robot := client.New(srv.URL(), tok.Value)
	_, err = robot.ListTokens(ctx, "robot")
	fmt.Println("before expiry:", err)

	srv.FastForward(5 * time.Minute)
	_, err = robot.ListTokens(ctx, "robot")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println("after expiry:", e.StatusCode, e.Code)
	}
	// Output:
	// before expiry: <nil>
	// after expiry: 401 UNAUTHORIZED
}

// Seed a world in the example server's fixture format, then watch a
// Duckling cool down as the clock moves.
func ExampleServer_SeedJSON() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.SeedJSON(`{"organizations": [{"id": "default", "users": [
		{"username": "reporter", "is_service_account": true,
		 "ducklings": [{"id": "rw", "status": "cooldown"}]}]}]}`)

	fmt.Println(srv.ActiveAccounts())
	srv.FastForward(time.Minute) // a standard instance cools down for 60 s
	fmt.Println(srv.ActiveAccounts())
	// Output:
	// [{reporter [{rw read_write cooldown}]}]
	// []
}

// Seed from Go, and inspect what the API did.
func ExampleServer_CreateToken() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateServiceAccount("robot")
	token := srv.CreateToken("robot", orgadmin.CreateTokenInput{Name: "seeded"})

	c := client.New(srv.URL(), token)
	_, err = c.SetInstanceConfig(context.Background(), "robot", client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizeJumbo},
		ReadScaling: client.InstanceSide{Size: client.SizePulse, FlockSize: 2},
	})
	fmt.Println(err)
	cfg := srv.InstanceConfig("robot")
	fmt.Println(cfg.ReadWrite.Size, cfg.ReadScaling.FlockSize)
	fmt.Println(len(srv.Tokens("robot")), srv.Tokens("robot")[0].Name)
	// Output:
	// <nil>
	// jumbo 2
	// 1 seeded
}

// Make the next requests fail, as miniredis's SetError does, and watch
// the client retry through them.
func ExampleServer_InjectFault() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c := client.New(srv.URL(), srv.AdminToken(), client.WithRetry(client.RetryPolicy{MaxRetries: 2, MinBackoff: time.Millisecond}))

	// The next request answers 429 asking for no wait; the client retries.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusTooManyRequests})
	_, err = c.ListTokens(ctx, "admin")
	fmt.Println("through a 429:", err)

	// Every POST /v1/users answers 503: POST is never retried.
	f := srv.InjectFault(orgadmintest.Fault{Route: "POST /v1/users", Status: http.StatusServiceUnavailable, RetryAfter: time.Second})
	_, err = c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println("create:", e.StatusCode, e.RetryAfter, f.Hits())
	}
	f.Remove()

	// The API deletes the user, then the connection drops: the retry
	// finds it gone.
	srv.CreateServiceAccount("robot")
	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}", Times: 1, AfterHandling: true, Drop: true})
	_, err = c.DeleteUser(ctx, "robot")
	fmt.Println("delete:", errors.Is(err, client.ErrDeletedOnRetry))
	// Output:
	// through a 429: <nil>
	// create: 503 1s 1
	// delete: true
}

// The journal lists what the Server received: method, path, status and
// request id, never a token.
func ExampleServer_Journal() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := client.New(srv.URL(), srv.AdminToken())
	ctx := context.Background()
	if _, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"}); err != nil {
		log.Fatal(err)
	}
	_, _ = c.GetInstanceConfig(ctx, "ghost")

	for _, r := range srv.Journal() {
		fmt.Println(r.Method, r.Path, r.Status, r.RequestID != "")
	}
	// Output:
	// POST /v1/users 200 true
	// GET /v1/users/ghost/instances 404 true
}

// The clock stands still until FastForward moves it; records created
// while it stands still keep their order.
func ExampleServer_FastForward() {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	srv, err := orgadmintest.Run(orgadmintest.WithStart(start))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateServiceAccount("robot")
	for _, name := range []string{"first", "second", "third"} {
		srv.CreateToken("robot", orgadmin.CreateTokenInput{Name: name, TTL: orgadmin.Some(time.Hour)})
	}
	for _, t := range srv.Tokens("robot") {
		fmt.Println(t.Name, t.CreatedAt.Format(time.RFC3339), t.ExpireAt.Format(time.RFC3339))
	}
	srv.FastForward(time.Hour)
	fmt.Println(srv.Now().Format(time.RFC3339), len(srv.Tokens("robot")))
	// Output:
	// first 2030-01-02T03:04:05Z 2030-01-02T04:04:05Z
	// second 2030-01-02T03:04:05Z 2030-01-02T04:04:05Z
	// third 2030-01-02T03:04:05Z 2030-01-02T04:04:05Z
	// 2030-01-02T04:04:05Z 0
}

// Seed and inspect another organization than the bootstrapped one.
func ExampleServer_InOrg() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.SeedJSON(`{"organizations": [{"id": "acme", "users": [{"username": "alice", "role": "Admin"}]}]}`)

	_, inDefault := srv.User("alice")
	alice, inAcme := srv.InOrg("acme").User("alice")
	fmt.Println(inDefault, inAcme, alice.Org, alice.Role)
	// Output:
	// false true acme Admin
}

// Handler is the whole fake, to wrap in middleware of your own.
func ExampleServer_Handler() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	var seen atomic.Int32
	wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		srv.Handler().ServeHTTP(w, r)
	}))
	defer wrapped.Close()

	toks, err := client.New(wrapped.URL, srv.AdminToken()).ListTokens(context.Background(), "admin")
	fmt.Println(len(toks), err, seen.Load())
	// Output:
	// 1 <nil> 1
}
