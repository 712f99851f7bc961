// Command testing is a small program that talks to the orgadmin API through
// the client package, and the example of how to test such a program: its
// test suite (provision_test.go) runs it against orgadmintest, the
// in-process fake of the API, and moves the fake's clock to expire tokens.
//
// The program keeps a reporting service account provisioned: it creates
// the account when missing, applies the wanted instance configuration,
// mints a fresh token, and invalidates its own older tokens that expire
// soon.
//
//	ORGADMIN_TOKEN=... go run ./examples/testing -api http://127.0.0.1:8080 -user reporter
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/orgadmin/orgadmin/client"
)

func main() {
	api := flag.String("api", "http://127.0.0.1:8080", "base URL of the orgadmin API")
	user := flag.String("user", "reporter", "service account to provision")
	ttl := flag.Duration("ttl", 24*time.Hour, "lifetime of the new token")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p := Provisioner{
		API:      client.New(*api, os.Getenv("ORGADMIN_TOKEN")),
		Username: *user,
		TokenTTL: *ttl,
	}
	res, err := p.Ensure(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "provision:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "provisioned %s (created: %v, token expires %s, %d old tokens invalidated)\n",
		*user, res.Created, res.Token.ExpireAt.Format(time.RFC3339), res.Revoked)
	fmt.Println(res.Token.Value)
}
