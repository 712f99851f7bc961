package orgadmintest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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
