package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

func Example() {
	srv, err := orgadmintest.Run() // a stand-in for the hosted API
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	c := client.New(srv.URL(), srv.AdminToken())
	sa, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "reporter", Description: "nightly reports"})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := c.CreateToken(ctx, sa.Username, client.CreateTokenRequest{Name: "ci"})
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := client.New(srv.URL(), tok.Value).GetInstanceConfig(ctx, "reporter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sa.Username, tok.Type, cfg.ReadScaling.Size, cfg.ReadScaling.FlockSize)
	// Output: reporter read_write standard 4
}

func ExampleClient_AllUsers() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, name := range []string{"carol", "Bob", "dave"} {
		srv.CreateServiceAccount(name)
	}

	c := client.New(srv.URL(), srv.AdminToken())
	// Two users per request; the iterator follows next_page_token.
	for u, err := range c.AllUsers(context.Background(), client.ListUsersOptions{Limit: client.Some(2)}) {
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

func ExampleError() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := client.New(srv.URL(), srv.AdminToken())
	ctx := context.Background()

	_, err = c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "admin"})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code)
		for _, is := range e.Issues {
			fmt.Println(is.Path, is.Code, is.Message, is.Code == client.IssueAlreadyExists)
		}
	}
	// The sentinels are the orgadmin package's: either name tests the code,
	// through any wrapping.
	_, err = c.GetInstanceConfig(ctx, "nobody")
	err = fmt.Errorf("provision: %w", err)
	fmt.Println(errors.Is(err, orgadmin.ErrNotFound), errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrForbidden))
	fmt.Println(orgadmin.ErrorCode(err))
	// Output:
	// 400 BAD_REQUEST
	// username already_exists Username is already taken true
	// true true false
	// NOT_FOUND
}

// A request the API cannot carry is refused before it is sent.
func ExampleValidationError() {
	c := client.New("http://127.0.0.1:1", "token") // nothing is sent
	_, err := c.CreateToken(context.Background(), "robot", client.CreateTokenRequest{Name: "ci", TTL: 300})
	var ve *client.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(ve.Issues[0].Path, ve.Issues[0].Code)
	}
	fmt.Println(errors.Is(err, orgadmin.ErrBadRequest))
	fmt.Println(err)
	// Output:
	// ttl invalid_type
	// true
	// orgadmin: invalid request: ttl: Expected a whole number of seconds, received 300ns
}

// GET, PUT and DELETE are retried on 429, 502, 503 and 504, honouring
// Retry-After.
func ExampleRetryPolicy() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// The next two requests answer 503, then 429, each asking for no wait.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusServiceUnavailable})
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusTooManyRequests})

	c := client.New(srv.URL(), srv.AdminToken(), client.WithRetry(client.RetryPolicy{MaxRetries: 3, MinBackoff: time.Millisecond}))
	toks, err := c.ListTokens(context.Background(), "admin")
	fmt.Println(len(toks), err)
	for _, r := range srv.Journal() {
		fmt.Println(r.Method, r.Path, r.Status, r.Fault)
	}
	// Output:
	// 1 <nil>
	// GET /v1/users/admin/tokens 503 true
	// GET /v1/users/admin/tokens 429 true
	// GET /v1/users/admin/tokens 200 false
}

// A DELETE whose answer was lost is retried; the retry finds the token
// gone, and says so with ErrDeletedOnRetry.
func ExampleErrDeletedOnRetry() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.CreateServiceAccount("robot")
	srv.CreateToken("robot", orgadmin.CreateTokenInput{Name: "old"})
	id := srv.Tokens("robot")[0].ID
	// The first DELETE deletes the token, then the connection drops.
	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}/tokens/{token_id}", Times: 1, AfterHandling: true, Drop: true})

	c := client.New(srv.URL(), srv.AdminToken(), client.WithRetry(client.RetryPolicy{MaxRetries: 3, MinBackoff: time.Millisecond}))
	err = c.DeleteToken(context.Background(), "robot", id)
	fmt.Println(errors.Is(err, client.ErrDeletedOnRetry), errors.Is(err, client.ErrNotFound))
	if errors.Is(err, client.ErrDeletedOnRetry) {
		err = nil // gone, as asked
	}
	fmt.Println(err, len(srv.Tokens("robot")))
	for _, r := range srv.Journal() {
		fmt.Println(r.Method, r.Status, r.Dropped)
	}
	// Output:
	// true true
	// <nil> 0
	// DELETE 0 true
	// DELETE 404 false
}
