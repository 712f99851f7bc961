package httpserver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/everystore"
	"github.com/orgadmin/orgadmin/internal/testdb"
)

// Token and embed-session values are stored only as SHA-256 digests and
// never logged: after a run that mints, uses and revokes them over HTTP
// and through the Go API, no value shows anywhere in what the store holds
// or in what the Handler logged (its request lines, and through slog at
// Debug level), nor in the audit trail (as read over HTTP and as
// streamed to Config.AuditLog), in clear, hex or base64,
// whole or as a run of everystore.MinLeak characters. It runs on every
// store.
func TestSecretsNeverStoredOrLogged(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		store := k.Open(t)
		// Request lines to a writer of their own, as the example server
		// writes them; everything else through slog, at Debug.
		var logs, lines, audit syncBuffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		auditLog := slog.New(slog.NewJSONHandler(&audit, nil))
		w := newWorldWith(t, orgadmin.Config{AuditLog: auditLog}, worldOptions{store: store.Store, logger: logger, requestLog: &lines})
		run := mintUseAndRevoke(t, w)

		// The values are real: the live ones work, the others do not.
		for _, v := range run.live {
			assert.True(t, w.authenticates(v), "live token %.8s… authenticates", v)
		}
		for _, v := range run.dead {
			assert.False(t, w.authenticates(v), "revoked token %.8s… authenticates", v)
		}
		for i, v := range run.sessions {
			_, err := w.svc.ResolveEmbedSession(t.Context(), v)
			if i < 2 {
				assert.NoError(t, err, "session %.8s… resolves", v)
			} else {
				assert.ErrorIs(t, err, orgadmin.ErrNotFound, "session %.8s… of a deleted user resolves", v)
			}
		}

		contents := store.Contents(t)
		all := strings.Join(contents, "\n")
		// The dump sees the token records: each live token's digest is
		// there, raw (memory) or in hex (Redis, MongoDB).
		for _, v := range run.live {
			d := sha256.Sum256([]byte(v))
			assert.True(t, strings.Contains(all, hex.EncodeToString(d[:])) || strings.Contains(all, string(d[:])),
				"the store's contents hold the digest of %.8s…", v)
		}
		require.GreaterOrEqual(t, strings.Count(lines.String(), `"msg":"request"`), run.requests, "one log line per request")

		// The audit trail of every change, as an Admin reads it and as it
		// is streamed.
		trail, bodies := readTrail(t, w, bearer(run.live[0]), nil, "1000")
		require.NotEmpty(t, trail)
		require.Greater(t, strings.Count(audit.String(), `"msg":"audit"`), len(trail), "the stream holds both orgs' events")

		secrets := append(append(append([]string{}, run.live...), run.dead...), run.sessions...)
		texts := append(contents, logs.String(), lines.String(), audit.String())
		texts = append(texts, bodies...)
		assert.Empty(t, everystore.Leaks(secrets, texts), "secret values in the store or the log")
	})
}

// secretRun is what mintUseAndRevoke made.
type secretRun struct {
	live     []string // token values that authenticate at the end
	dead     []string // revoked or expired ones, or of a deleted user
	sessions []string // embed session values; only the first two resolve
	requests int      // HTTP requests sent
}

// mintUseAndRevoke bootstraps two orgs, mints tokens of every kind and
// embed sessions over HTTP and through the Go API, uses them, revokes
// some, deletes a user that holds some, and offers values where the API
// refuses them (a Basic scheme, a revoked or expired token, a query
// string).
func mintUseAndRevoke(t *testing.T, w *world) secretRun {
	ctx := t.Context()
	var run secretRun
	do := func(method, path, auth string, body any) response {
		t.Helper()
		run.requests++
		return w.do(method, path, auth, body)
	}

	admin, err := w.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: acme, Username: "alice"})
	require.NoError(t, err)
	chosen := "boot-" + testdb.RandomHex(16)
	boss, err := w.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: globex, Username: "boss", Token: chosen})
	require.NoError(t, err)
	require.Equal(t, chosen, boss)
	run.live = append(run.live, admin, boss)

	for _, name := range []string{"robot", "reporter"} {
		requireOK(t, do("POST", "/v1/users", bearer(admin), map[string]any{"username": name, "description": "made over HTTP"}))
	}
	mint := func(user, auth string, body map[string]any) (value, id string) {
		t.Helper()
		obj := requireOK(t, do("POST", userPath(user, "tokens"), auth, body))
		return obj["token"].(string), obj["id"].(string)
	}
	rw, rwID := mint("robot", bearer(admin), map[string]any{"name": "rw", "ttl": 3600})
	rs, _ := mint("robot", bearer(admin), map[string]any{"name": "rs", "token_type": "read_scaling"})
	forever, _ := mint("robot", bearer(admin), map[string]any{"name": "forever", "description": "never expires"})
	mine, _ := mint("alice", bearer(admin), map[string]any{"name": "mine", "token_type": "read_write"})
	short, _ := mint("robot", bearer(admin), map[string]any{"name": "short", "ttl": 300})
	bossOwn, _ := mint("boss", bearer(boss), map[string]any{"name": "boss"})

	alice := w.caller(admin)
	goTok, err := w.svc.CreateToken(ctx, alice, "reporter", orgadmin.CreateTokenInput{Name: "go", TTL: orgadmin.Some(7200 * time.Second)})
	require.NoError(t, err)
	goKept, err := w.svc.CreateToken(ctx, alice, "robot", orgadmin.CreateTokenInput{Name: "go-kept", Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
	require.NoError(t, err)
	seeded, err := w.svc.SeedToken(ctx, acme, "reporter", orgadmin.SeedTokenInput{
		CreateTokenInput: orgadmin.CreateTokenInput{Name: "seeded"}, Value: "seed-" + testdb.RandomHex(20)})
	require.NoError(t, err)
	seededKept, err := w.svc.SeedToken(ctx, acme, "robot", orgadmin.SeedTokenInput{
		CreateTokenInput: orgadmin.CreateTokenInput{Name: "seeded-kept", TTL: orgadmin.Some(86400 * time.Second)}, Value: "seed-" + testdb.RandomHex(20)})
	require.NoError(t, err)

	// Use them.
	requireOK(t, do("GET", userPath("robot", "instances"), bearer(rw), nil))
	requireOK(t, do("PUT", userPath("robot", "instances"), bearer(forever), validConfig))
	requireOK(t, do("GET", userPath("robot", "tokens"), bearer(admin), nil))
	requireOK(t, do("GET", userPath("reporter", "tokens"), bearer(mine), nil))
	requireOK(t, do("GET", "/v1/users?limit=1", bearer(admin), nil))
	requireError(t, do("GET", "/v1/users", bearer(rs), nil), http.StatusForbidden)

	// Embed sessions, over HTTP and through the Go API.
	require.NoError(t, w.svc.RegisterDive(ctx, acme, orgadmin.Dive{ID: acmeDiveID, Title: "Sales", Version: 2,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}}}))
	embed := "/v1/dives/" + acmeDiveID + "/embed-session"
	session := func(body map[string]any) string {
		t.Helper()
		r := do("POST", embed, bearer(admin), body)
		requireOK(t, r)
		var out map[string]string
		require.NoError(t, json.Unmarshal(r.body, &out))
		return out["session"]
	}
	lobby := session(map[string]any{"username": "robot", "session_name": "lobby"})
	plain := session(map[string]any{"username": "robot", "version": 1, "initial_state": map[string]any{"tab": 2}})
	goSession, err := w.svc.CreateEmbedSession(ctx, alice, acmeDiveID, orgadmin.CreateEmbedSessionInput{
		Username: "reporter", SessionName: orgadmin.Some("nightly"), RequiredResources: []orgadmin.Resource{{URL: "md:other"}}})
	require.NoError(t, err)
	run.sessions = []string{lobby, plain, goSession}

	// Revoke: a token over HTTP, one through the Go API, and a user with
	// tokens and a session; let one expire.
	requireJSON(t, do("DELETE", userPath("robot", "tokens", rwID), bearer(admin), nil), `{}`)
	require.NoError(t, w.svc.DeleteToken(ctx, alice, "reporter", goTok.ID))
	requireOK(t, do("DELETE", userPath("reporter"), bearer(admin), nil))
	w.clock.Advance(301 * time.Second)

	// Values offered where they are refused.
	requireError(t, do("GET", "/v1/users", "Basic "+forever, nil), http.StatusUnauthorized)
	requireError(t, do("GET", "/v1/users", bearer(rw), nil), http.StatusUnauthorized)
	requireError(t, do("GET", "/v1/users", bearer(short), nil), http.StatusUnauthorized)
	requireError(t, do("GET", "/v1/users", bearer(seeded.Value), nil), http.StatusUnauthorized)
	requireError(t, do("GET", "/v1/users", bearer(forever+"x"), nil), http.StatusUnauthorized)
	requireError(t, do("GET", "/v1/users?page_token="+url.QueryEscape(mine), bearer(admin), nil), http.StatusBadRequest)

	run.live = append(run.live, rs, forever, mine, bossOwn, goKept.Value, seededKept.Value)
	run.dead = []string{rw, short, goTok.Value, seeded.Value}
	return run
}
