package orgadmin_test

// Fuzz targets of the root package: the seed file format. scripts/fuzz.sh runs each for a few seconds; testdata/fuzz
// holds their seed corpora, which a plain go test replays.

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// FuzzSeed: the seed file format (DESIGN §12). Whatever the bytes:
// DecodeSeed accepts one JSON value and nothing after it; a seed Validate
// refuses is refused by ApplySeed with the same error; a seed ApplySeed
// refuses is refused naming the entry, with nothing written; a seed it
// applies holds what it says, and applying it again changes nothing.
func FuzzSeed(f *testing.F) {
	sample, err := os.ReadFile("examples/seed.json")
	require.NoError(f, err)
	f.Add(sample)
	f.Add([]byte(sampleSeed))
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"organizations":null}`, `{"organizations":[]}`, `{"organizations":{}}`,
		`{"organizations":[]}]`, `{"organizations":[]}}`, `{"organizations":[]} {}`, `{"organizations":[]} x`,
		`{"organizations":[{"id":"acme"}],"organizations":[{"id":"globex"}]}`,
		`{"organizations":[{"id":"acme"},{"id":"acme"}]}`, `{"organizations":[{"id":""}]}`,
		`{"organizations":[{"id":"ac me"}]}`, `{"organizations":[{"id":"` + strings.Repeat("a", 300) + `"}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","username":"b"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"` + strings.Repeat("é", 255) + `"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"` + strings.Repeat("é", 256) + `"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"Zoë"},{"username":"ZOË"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"K"},{"username":"k"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"\ud800"}]}]}`,
		"{\"organizations\":[{\"id\":\"acme\",\"users\":[{\"username\":\"a\xff\"}]}]}",
		`{"organizations":[{"id":"acme","users":[{"username":"a","role":"Admin","is_service_account":true,"email":"x"}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef","ttl":300}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef","ttl":299.5}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef","ttl":1e400}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef","ttl":-1}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef"}]},{"username":"b","tokens":[{"name":"t","value":"0123456789abcdef"}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcde\u00e9"}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","tokens":[{"name":"t","value":"0123456789abcdef","token_type":"read_scaling"}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","instances":{"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"giga","flock_size":64.0,"cooldown_seconds":86400}}}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","instances":{"read_scaling":{"instance_size":"giga","flock_size":2147483648}}}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","instances":{"read_write":null,"read_scaling":null}}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","ducklings":[{"id":"rw","status":"active"},{"id":"rs.63","status":"cooldown"},{"id":"rs.4","status":"active"}]}]}]}`,
		`{"organizations":[{"id":"acme","users":[{"username":"a","ducklings":[{"id":"rs.01","status":"active"},{"id":"rs.-1","status":"active"}]}]}]}`,
		`{"organizations":[{"id":"acme","dives":[{"id":"0B0D6F7E-5B1A-4C1E-9B0A-3C2D1E0F9A8B","version":1},{"id":"0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"}]}]}`,
		`{"organizations":[{"id":"acme","dives":[{"id":"0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b","version":2147483647,"required_resources":[{"url":""}]}]}]}`,
		`{"organizations":[{"id":"acme","dives":[{"id":"{0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b}"}]}]}`,
		`{"organizations":[{"id":"acme"},{"id":"globex","users":[{"username":"a"}],"dives":[{"id":"0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"}]}]}`,
		strings.Repeat(`{"organizations":[`, 3000) + strings.Repeat(`]}`, 3000),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sd, err := orgadmin.DecodeSeed(bytes.NewReader(data))
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "seed: "), "error: %v", err)
			return
		}
		require.True(t, json.Valid(data), "DecodeSeed accepted what is not one JSON value: %q", data)

		ctx := t.Context()
		store := servicetest.NewCounter(memstore.New())
		clk := newFakeClock()
		// A limit of two tokens a user is within the fuzzer's reach.
		svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now, Rand: rand.NewChaCha8([32]byte{'s', 'e', 'e', 'd'}), MaxTokensPerUser: 2})
		verr := sd.Validate()
		err = svc.ApplySeed(ctx, sd)
		if verr != nil {
			require.EqualError(t, err, verr.Error())
		}
		if err != nil {
			// Refused by Validate, or for a rule that needs the Service
			// (the limit of tokens a user): all the same.
			require.True(t, strings.HasPrefix(err.Error(), "seed: organizations["), "the error names the entry: %v", err)
			require.Zero(t, store.Writes(), "a refused seed wrote to the store")
			return
		}

		var orgs, dives []string
		for _, o := range sd.Organizations {
			orgs = append(orgs, o.ID)
			for _, u := range o.Users {
				got, err := svc.GetUser(ctx, o.ID, u.Username)
				require.NoError(t, err)
				require.Equal(t, u.Username, got.Username, "the spelling given is stored")
				for _, tk := range u.Tokens {
					c, err := svc.Authenticate(ctx, tk.Value)
					require.NoError(t, err, "seeded token %q", tk.Name)
					require.Equal(t, got.ID, c.UserID())
				}
			}
			for _, d := range o.Dives {
				id, err := uuid.Parse(d.ID)
				require.NoError(t, err)
				dives = append(dives, id.String())
			}
		}
		before, err := servicetest.Snapshot(ctx, store, orgs, dives)
		require.NoError(t, err)
		require.NoError(t, svc.ApplySeed(ctx, sd), "applying a seed again")
		after, err := servicetest.Snapshot(ctx, store, orgs, dives)
		require.NoError(t, err)
		require.Equal(t, before, after, "applying a seed again changed the store")
	})
}
