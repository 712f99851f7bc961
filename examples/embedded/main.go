// Command embedded uses the orgadmin library directly, without HTTP: it
// bootstraps an organization, creates a service account with a token, sets
// its instance configuration, reports Duckling activity and mints a Dive
// embed session.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

func main() {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})

	// The first Admin of an organization comes from the Go API.
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "alice"})
	check(err)
	admin, err := svc.Authenticate(ctx, adminToken)
	check(err)

	// Everything else goes through the same operations as the REST API.
	sa, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{
		Username: "Reporter", Description: "nightly reports",
	})
	check(err)
	fmt.Printf("created %s (role %s, service account %v)\n", sa.Username, sa.Role, sa.IsServiceAccount)

	tok, err := svc.CreateToken(ctx, admin, "reporter", orgadmin.CreateTokenInput{Name: "ci", TTL: orgadmin.Some(time.Hour)})
	check(err)
	fmt.Printf("token %q of type %s expires %s\n", tok.Name, tok.Type, tok.ExpireAt.Format(time.RFC3339))

	cfg, err := svc.SetInstanceConfig(ctx, admin, "reporter", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizePulse, FlockSize: 2},
	}})
	check(err)
	fmt.Printf("read_write %s, cooldown %v\n", cfg.ReadWrite.Size, cfg.ReadWrite.Cooldown.Value)

	// The platform reports activity; the API shows who is running.
	check(svc.MarkDucklingActive(ctx, "acme", "reporter", "rw"))
	check(svc.MarkDucklingIdle(ctx, "acme", "reporter", "rs.1"))
	accounts, err := svc.GetActiveAccounts(ctx, admin)
	check(err)
	for _, a := range accounts {
		for _, d := range a.Ducklings {
			fmt.Printf("%s: %s %s\n", a.Username, d.ID, d.Status)
		}
	}

	// Dives are registered through the Go API; embed sessions are minted
	// for service accounts and resolved by the renderer.
	const dive = "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"
	check(svc.RegisterDive(ctx, "acme", orgadmin.Dive{ID: dive, Title: "Sales", Version: 3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}}}))
	value, err := svc.CreateEmbedSession(ctx, admin, dive, orgadmin.CreateEmbedSessionInput{
		Username: "reporter", SessionName: orgadmin.Some("lobby-screen"),
	})
	check(err)
	session, err := svc.ResolveEmbedSession(ctx, value)
	check(err)
	fmt.Printf("session renders %s v%d for %s with %d resource(s)\n",
		session.DiveID, session.Version, session.Username, len(session.RequiredResources))

	// Errors carry a code and, for bad requests, every problem found.
	_, err = svc.CreateToken(ctx, admin, "reporter", orgadmin.CreateTokenInput{Name: "", TTL: orgadmin.Some(10 * time.Second)})
	fmt.Println(orgadmin.ErrorCode(err), err)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
