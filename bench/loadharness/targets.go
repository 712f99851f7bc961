package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/internal/baseline"
)

// Target kinds.
const (
	kindStore = "store" // the orgadmin server on one store
	kindFloor = "floor" // a bare net/http server (baseline.Floor)
	kindPrism = "prism" // the Prism mock of the OpenAPI document
)

// Workload names.
const (
	listTokens  = baseline.ListTokens
	getConfig   = baseline.GetConfig
	setConfig   = baseline.SetConfig
	createToken = baseline.CreateToken
	listUsers   = baseline.ListUsers
)

var allWorkloads = []string{listTokens, getConfig, setConfig, createToken, listUsers}

// beforeSuffix ends the names of the store targets of the -before build.
const beforeSuffix = "@before"

// storeOf returns the store a store target's name names: "memory" for both
// "memory" and "memory@before".
func storeOf(name string) string {
	return strings.TrimSuffix(name, beforeSuffix)
}

// workloadTitles says in words what each workload sends.
var workloadTitles = map[string]string{ // #nosec G101 -- titles that name token routes, no credentials
	listTokens:  "GET /v1/users/admin/tokens (the Admin's own tokens)",
	getConfig:   "GET /v1/users/{u}/instances, u over every service account",
	setConfig:   "PUT /v1/users/{u}/instances, u over every service account",
	createToken: "POST /v1/users/{u}/tokens, u over every service account, on a freshly seeded store",
	listUsers:   "GET /v1/users?limit=100&page_token=..., every page in turn",
}

// target is one server the harness drives.
type target struct {
	Name string
	Kind string
	Skip string // why it does not run, or ""

	url     string
	scripts map[string]script // by workload
	proc    *process
	db      bool // it uses a database process (Redis, FerretDB, PostgreSQL)

	// Store targets: how to start (again), on a store of generation gen.
	start func(ctx context.Context, gen int) error
	gen   int
	users int    // service accounts seeded
	pprof string // the server's -pprof address, or ""
}

// serves reports whether t runs workload w.
func (t *target) serves(w string) bool {
	_, ok := t.scripts[w]
	return ok && t.Skip == ""
}

// world is what a seed puts in a store: one organization with an Admin
// holding a few tokens, and many service accounts.
type world struct {
	Org        string
	AdminToken string
	Users      []string
	Seed       []byte
}

// newWorld seeds the organization org with the Admin "admin" (tokens
// tokens, the first one used to call) and users service accounts.
func newWorld(org string, users, tokens int) (world, error) {
	type seedToken struct {
		Name  string `json:"name"`
		Value string `json:"value"`
		TTL   int    `json:"ttl"`
	}
	type seedUser struct {
		Username         string      `json:"username"`
		Role             string      `json:"role,omitempty"`
		IsServiceAccount bool        `json:"is_service_account"`
		Tokens           []seedToken `json:"tokens,omitempty"`
	}
	w := world{Org: org}
	admin := seedUser{Username: "admin", Role: "Admin"}
	for i := range max(tokens, 1) {
		v, err := randomToken()
		if err != nil {
			return world{}, err
		}
		admin.Tokens = append(admin.Tokens, seedToken{Name: fmt.Sprintf("load%02d", i+1), Value: v, TTL: 30 * 86400})
	}
	w.AdminToken = admin.Tokens[0].Value
	all := []seedUser{admin}
	for i := range users {
		u := fmt.Sprintf("sa%05d", i+1)
		w.Users = append(w.Users, u)
		all = append(all, seedUser{Username: u, IsServiceAccount: true})
	}
	seed := map[string]any{"organizations": []any{map[string]any{"id": org, "users": all}}}
	b, err := json.Marshal(seed)
	if err != nil {
		return world{}, err
	}
	w.Seed = b
	return w, nil
}

// randomToken returns a token value of 256 random bits.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "load_" + hex.EncodeToString(b[:]), nil
}

// digestHex is the SHA-256 of a token value, as the floors look it up.
func digestHex(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

const (
	configBody = `{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"standard","flock_size":2}}}`
	tokenBody  = `{"name":"load","ttl":86400}` // #nosec G101 -- a request body naming a new token, no secret
)

// storeScripts returns the workloads of a server seeded with w, and the
// answer to the first request of each, after checking that it is a
// success (2xx). The list-users workload walks the listing once to learn
// its page tokens.
func storeScripts(ctx context.Context, base string, w world, workloads []string) (map[string]script, map[string]baseline.Answer, error) {
	scripts := map[string]script{}
	answers := map[string]baseline.Answer{}
	for _, name := range workloads {
		var reqs []request
		switch name {
		case listTokens:
			reqs = []request{{Method: "GET", Path: "/v1/users/admin/tokens"}}
		case getConfig, setConfig, createToken:
			for _, u := range w.Users {
				switch name {
				case getConfig:
					reqs = append(reqs, request{Method: "GET", Path: "/v1/users/" + u + "/instances"})
				case setConfig:
					reqs = append(reqs, request{Method: "PUT", Path: "/v1/users/" + u + "/instances", Body: configBody})
				case createToken:
					reqs = append(reqs, request{Method: "POST", Path: "/v1/users/" + u + "/tokens", Body: tokenBody})
				}
			}
		case listUsers:
			pages, err := userPages(ctx, base, w)
			if err != nil {
				return nil, nil, err
			}
			for _, p := range pages {
				reqs = append(reqs, request{Method: "GET", Path: p})
			}
		}
		if len(reqs) == 0 {
			return nil, nil, fmt.Errorf("workload %s: no requests (seed some users with -users)", name)
		}
		r := reqs[0]
		a, err := send(ctx, r.Method, base+r.Path, w.AdminToken, r.Body)
		if err != nil {
			return nil, nil, err
		}
		if a.Status/100 != 2 {
			return nil, nil, fmt.Errorf("%s %s: status %d: %s", r.Method, r.Path, a.Status, a.Body)
		}
		answers[name] = a
		scripts[name] = script{Token: w.AdminToken, Requests: reqs}
	}
	return scripts, answers, nil
}

// userPages walks GET /v1/users by page_token and returns the path of
// every page, the first one included.
func userPages(ctx context.Context, base string, w world) ([]string, error) {
	const first = "/v1/users?limit=100"
	pages := []string{first}
	path := first
	for {
		st, body, err := get(ctx, "GET", base+path, w.AdminToken, "")
		if err != nil {
			return nil, err
		}
		if st != 200 {
			return nil, fmt.Errorf("GET %s: status %d: %s", path, st, body)
		}
		var page struct {
			Users      []json.RawMessage `json:"users"`
			TotalCount int               `json:"total_count"`
			Next       *string           `json:"next_page_token"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		if page.TotalCount != len(w.Users)+1 {
			return nil, fmt.Errorf("GET %s: total_count %d, seeded %d users (is the store shared with something else?)", path, page.TotalCount, len(w.Users)+1)
		}
		if page.Next == nil {
			return pages, nil
		}
		if len(pages) > 100000 {
			return nil, fmt.Errorf("GET /v1/users: more than 100000 pages")
		}
		path = first + "&page_token=" + url.QueryEscape(*page.Next)
		pages = append(pages, path)
	}
}

// orgName names the organization of the seed of a store target's
// generation gen: of this run, of this build (the Cluster, with one
// database, holds both builds' stores) and of this generation.
func orgName(runID, target string, gen int) string {
	build := ""
	if strings.HasSuffix(target, beforeSuffix) {
		build = "b"
	}
	return fmt.Sprintf("load%s%sg%d", runID, build, gen)
}

// storeTarget returns the target of the server bin on store (memory, a
// Redis URI or a MongoDB URI for database names made by storeURI).
func (h *harness) storeTarget(name, bin string, storeURI func(gen int) string) *target {
	t := &target{Name: name, Kind: kindStore, users: h.opt.users}
	t.start = func(ctx context.Context, gen int) error {
		t.proc.stop()
		t.gen = gen
		w, err := newWorld(orgName(h.runID, name, gen), t.users, h.opt.tokens)
		if err != nil {
			return err
		}
		seedFile := filepath.Join(h.dir, fmt.Sprintf("seed-%s-%d.json", name, gen))
		if err := os.WriteFile(seedFile, w.Seed, 0o600); err != nil {
			return err
		}
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		argv := []string{bin, "-addr", addr, "-store", storeURI(gen), "-seed", seedFile}
		if t.pprof != "" {
			argv = append(argv, "-pprof", t.pprof)
		}
		p, err := startProcess(h.dir, fmt.Sprintf("server-%s-%d", name, gen), h.serverCPU, nil, nil, argv...)
		if err != nil {
			return err
		}
		t.proc, t.url = p, "http://"+addr
		if err := p.waitReady(ctx, h.opt.startLimit, func() error {
			st, body, err := get(ctx, "GET", t.url+"/healthz", "", "")
			if err == nil && st != 200 {
				err = fmt.Errorf("/healthz: %d %s", st, body)
			}
			return err
		}); err != nil {
			return err
		}
		scripts, answers, err := storeScripts(ctx, t.url, w, h.workloads)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		t.scripts = scripts
		if h.answers == nil {
			// The floors write these answers to this Admin's token, and
			// are sent these requests.
			h.answers, h.floorToken, h.floorScripts = answers, w.AdminToken, scripts
		}
		return nil
	}
	return t
}

// floorTarget starts the floor name (a process of this program, see
// runFloor) with the extra arguments args, which choose its lookup (none:
// a map), and checks that it answers each workload's first request with
// the captured answer, and another bearer with 401. db says whether its
// lookup uses a database process.
func (h *harness) floorTarget(ctx context.Context, name string, db bool, args ...string) (*target, error) {
	t := &target{Name: name, Kind: kindFloor, db: db}
	answers, err := json.Marshal(h.answers)
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := append([]string{self, "floor", "-addr", addr, "-digest", digestHex(h.floorToken)}, args...)
	p, err := startProcess(h.dir, name, h.serverCPU, nil, answers, argv...)
	if err != nil {
		return nil, err
	}
	t.proc, t.url = p, "http://"+addr
	t.scripts = h.floorScripts
	if err := p.waitReady(ctx, 30*time.Second, func() error { return checkListen(ctx, t.url) }); err != nil {
		return nil, err
	}
	if err := checkFloor(ctx, t.url, h.floorToken, h.floorScripts, h.answers); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// checkListen wants base to answer HTTP, whatever the status.
func checkListen(ctx context.Context, base string) error {
	_, _, err := get(ctx, "GET", base+"/", "", "")
	return err
}

// checkFloor sends the first request of each workload's script to the
// floor at base: with token it wants the workload's answer, byte for
// byte; with another bearer, 401.
func checkFloor(ctx context.Context, base, token string, scripts map[string]script, answers map[string]baseline.Answer) error {
	for w, s := range scripts {
		r := s.Requests[0]
		got, err := send(ctx, r.Method, base+r.Path, token, r.Body)
		if err != nil {
			return err
		}
		want := answers[w]
		// Not the bodies: a creation answer holds a token value.
		if got.Status != want.Status || got.ContentType != want.ContentType || !bytes.Equal(got.Body, want.Body) {
			return fmt.Errorf("%s %s: answered %d %q with %d other bytes, want %d %q with the %d bytes captured",
				r.Method, r.Path, got.Status, got.ContentType, len(got.Body), want.Status, want.ContentType, len(want.Body))
		}
		st, body, err := get(ctx, r.Method, base+r.Path, "not-"+token, r.Body)
		if err != nil {
			return err
		}
		if st != 401 {
			return fmt.Errorf("%s %s with another bearer: answered %d with %d bytes, want 401", r.Method, r.Path, st, len(body))
		}
	}
	return nil
}

// prismVersion is the Prism release measured against.
const prismVersion = "5.14.2"

// prismTarget returns the Prism mock server of the OpenAPI document,
// started through npx (which fetches it the first time).
func (h *harness) prismTarget(ctx context.Context) (*target, error) {
	t := &target{Name: "prism", Kind: kindPrism}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	doc, err := filepath.Abs(filepath.Join("httpserver", "openapi.json"))
	if err != nil {
		return nil, err
	}
	p, err := startProcess(h.dir, "prism", h.serverCPU, nil, nil,
		"npx", "--yes", "@stoplight/prism-cli@"+prismVersion, "mock", "-h", host, "-p", port, "-v", "warn", doc)
	if err != nil {
		return nil, err
	}
	t.proc, t.url = p, "http://"+addr
	t.scripts = map[string]script{listTokens: {Token: h.floorToken, Requests: []request{{Method: "GET", Path: "/v1/users/admin/tokens"}}}}
	return t, p.waitReady(ctx, 5*time.Minute, func() error { return checkListTokens(ctx, t.url, h.floorToken) })
}

// checkListTokens asks base for the Admin's tokens once and wants a 200.
func checkListTokens(ctx context.Context, base, token string) error {
	st, body, err := get(ctx, "GET", base+"/v1/users/admin/tokens", token, "")
	if err == nil && st != 200 {
		err = fmt.Errorf("GET /v1/users/admin/tokens: %d %s", st, body)
	}
	return err
}
