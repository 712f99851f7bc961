package orgadmin_test

// Fuzz targets of the root package: the bearer header parser and the seed
// file format. scripts/fuzz.sh runs each for a few seconds; testdata/fuzz
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
	"github.com/orgadmin/orgadmin/internal/storestate"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// FuzzBearerToken: orgadmin.BearerToken against DESIGN §2 and RFC 7235: the
// scheme "Bearer" in any case, one space, then the token, which may have
// spaces around it but none (nor a tab) inside.
func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{
		"", "Bearer", "Bearer ", "Bearer  ", "Bearer x", "bearer x", "BEARER x", "bEaReR x", "Bearer  x  ", "Bearer x y",
		"Bearer\tx", "Bearer x\t", "Bearer\u00a0x", "Bearer\x00x", "Bearerx", " Bearer x", "Bearer:x", "Basic x",
		"Bearer x\r\n", "Bearer \xff", "Bearer oat_" + strings.Repeat("0", 49), "Bearer " + strings.Repeat("t", 513),
		"Bearer x,y", "Bearer \"x\"", "Bearer x=", "Bearer\u2003x", "BEARER\u0130x", "Bearer ſ",
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := orgadmin.BearerToken(header)
		scheme, rest, found := strings.Cut(header, " ")
		want := strings.Trim(rest, " ")
		wantOK := found && strings.EqualFold(scheme, "bearer") && want != "" && !strings.ContainsAny(want, " \t")
		require.Equal(t, wantOK, ok, "header %q gave %q", header, tok)
		if !ok {
			require.Empty(t, tok)
			return
		}
		require.Equal(t, want, tok)
		// Whatever a header carries, the canonical header carries too.
		again, ok := orgadmin.BearerToken("Bearer " + tok)
		require.True(t, ok)
		require.Equal(t, tok, again)
	})
}

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
		store := storestate.NewCounter(memstore.New())
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
					require.Equal(t, got.ID, c.UserID)
				}
			}
			for _, d := range o.Dives {
				id, err := uuid.Parse(d.ID)
				require.NoError(t, err)
				dives = append(dives, id.String())
			}
		}
		before, err := storestate.Snapshot(ctx, store, orgs, dives)
		require.NoError(t, err)
		require.NoError(t, svc.ApplySeed(ctx, sd), "applying a seed again")
		after, err := storestate.Snapshot(ctx, store, orgs, dives)
		require.NoError(t, err)
		require.Equal(t, before, after, "applying a seed again changed the store")
	})
}
