package orgadmintest_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// The test of README.md, "Testing with orgadmintest", as it is there.
func TestProvisioning(t *testing.T) {
	srv := orgadmintest.NewServer(t) // org "default", Admin "admin"
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken(),
		client.WithRetry(client.RetryPolicy{MaxRetries: 3, MinBackoff: time.Millisecond}))

	// Seed from Go or from the example server's fixture format; every
	// helper fails the test at the line that called it.
	srv.CreateServiceAccount("reporter")
	srv.SeedJSON(`{"organizations": [{"id": "acme", "users": [{"username": "alice", "role": "Admin"}]}]}`)
	if _, ok := srv.InOrg("acme").User("alice"); !ok { // helpers in another org
		t.Fatal("alice is not in acme")
	}

	// The clock: a token expires when the test says. Tokens created
	// while it stands still are listed in the order they were created.
	tok, err := c.CreateToken(ctx, "reporter", client.CreateTokenRequest{Name: "ci", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateToken("reporter", orgadmin.CreateTokenInput{Name: "second"})
	if toks := srv.Tokens("reporter"); toks[0].Name != "ci" || toks[1].Name != "second" {
		t.Fatalf("tokens out of order: %v", toks)
	}
	srv.FastForward(time.Hour)
	_, err = client.New(srv.URL(), tok.Value).ListTokens(ctx, "reporter")
	if !errors.Is(err, orgadmin.ErrUnauthorized) {
		t.Fatalf("an expired token: %v", err)
	}

	// Faults: the next request answers 503, asking for a second's wait.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusServiceUnavailable, RetryAfter: time.Second})
	// The next DELETE of a user deletes it, then drops the connection.
	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}", Times: 1, AfterHandling: true, Drop: true})
	_, err = c.DeleteUser(ctx, "reporter") // a 503, then a lost answer, then a 404
	if !errors.Is(err, client.ErrDeletedOnRetry) {
		t.Fatalf("delete: %v", err)
	}
	srv.ClearFaults()

	// The journal: what the server received and answered.
	var got []string
	for _, r := range srv.Journal() {
		got = append(got, fmt.Sprint(r.Method, " ", r.Path, " ", r.Status))
	}
	want := []string{
		"POST /v1/users/reporter/tokens 200",
		"GET /v1/users/reporter/tokens 401",
		"DELETE /v1/users/reporter 503",
		"DELETE /v1/users/reporter 0", // dropped
		"DELETE /v1/users/reporter 404",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("journal: %q", got)
	}
}

// README.md shows TestProvisioning as it is in this file.
func TestReadmeShowsTestProvisioning(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "func TestProvisioning(")
	end := strings.Index(s, "\n}\n") + 3
	if start < 0 || end < start {
		t.Fatal("no TestProvisioning in readme_test.go")
	}
	if !strings.Contains(string(readme), "```go\n"+s[start:end]+"```\n") {
		t.Error("README.md, \"Testing with orgadmintest\", is not TestProvisioning of readme_test.go")
	}
}
