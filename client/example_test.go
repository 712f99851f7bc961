package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

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
	fmt.Println(sa.Username, tok.Type, cfg.ReadScaling.InstanceSize, cfg.ReadScaling.FlockSize)
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
	for u, err := range c.AllUsers(context.Background(), client.ListUsersOptions{Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(u.Username, u.Roles)
	}
	// Output:
	// admin [Admin]
	// Bob [Member]
	// carol [Member]
	// dave [Member]
}

func ExampleError() {
	srv, err := orgadmintest.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := client.New(srv.URL(), srv.AdminToken())

	_, err = c.CreateServiceAccount(context.Background(), client.CreateServiceAccountRequest{Username: "admin"})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.StatusCode, e.Code)
		for _, is := range e.Issues {
			fmt.Println(is.Path, is.Message)
		}
	}
	// Output:
	// 400 BAD_REQUEST
	// [username] Username is already taken
}
