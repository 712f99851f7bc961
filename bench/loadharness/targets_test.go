package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/baseline"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// TestSeedLoads applies the generated seed to a real Service: the Admin's
// first token authenticates and lists every token, and every service
// account exists.
func TestSeedLoads(t *testing.T) {
	w, err := newWorld("loadtest", 25, 3)
	require.NoError(t, err)
	seed, err := orgadmin.DecodeSeed(bytes.NewReader(w.Seed))
	require.NoError(t, err)
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	require.NoError(t, svc.ApplySeed(ctx, seed))
	admin, err := svc.Authenticate(ctx, w.AdminToken)
	require.NoError(t, err)
	toks, err := svc.ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	assert.Len(t, toks, 3)
	page, err := svc.ListUsers(ctx, admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(1000)})
	require.NoError(t, err)
	assert.Equal(t, 26, page.TotalCount)
	assert.Len(t, w.Users, 25)
	assert.Equal(t, "sa00001", w.Users[0])
}

// TestFloorWritesTheCapturedAnswers captures each workload's answer from
// the real handler on a seeded store, serves it from a floor, and checks
// the floor as the harness does before measuring it.
func TestFloorWritesTheCapturedAnswers(t *testing.T) {
	w, err := newWorld("floortest", 150, 3)
	require.NoError(t, err)
	seed, err := orgadmin.DecodeSeed(bytes.NewReader(w.Seed))
	require.NoError(t, err)
	ctx := t.Context()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	require.NoError(t, svc.ApplySeed(ctx, seed))
	srv := httptest.NewServer(httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()

	scripts, answers, err := storeScripts(ctx, srv.URL, w, allWorkloads)
	require.NoError(t, err)
	require.Len(t, answers, len(allWorkloads))
	for _, wl := range allWorkloads {
		assert.Equal(t, 200, answers[wl].Status, wl)
		assert.Equal(t, "application/json", answers[wl].ContentType, wl)
		assert.Equal(t, w.AdminToken, scripts[wl].Token, wl)
	}
	var page struct {
		Users []json.RawMessage `json:"users"`
	}
	require.NoError(t, json.Unmarshal(answers[listUsers].Body, &page))
	assert.Len(t, page.Users, 100, "one page of 100")
	assert.Contains(t, string(answers[createToken].Body), `"token":"oat_`, "a creation answer, with its token")
	assert.Contains(t, string(answers[setConfig].Body), `"jumbo"`, "the answer to the PUT the workload sends")
	assert.Len(t, scripts[listUsers].Requests, 2, "151 users: two pages")

	floor, err := baseline.Floor(answers, baseline.MapLookup(sha256.Sum256([]byte(w.AdminToken))))
	require.NoError(t, err)
	fsrv := httptest.NewServer(floor)
	defer fsrv.Close()
	require.NoError(t, checkFloor(ctx, fsrv.URL, w.AdminToken, scripts, answers))

	// A floor that writes other bytes, or knows every bearer, fails the check.
	other := maps.Clone(answers)
	other[setConfig] = baseline.Answer{Status: 200, ContentType: "application/json", Body: []byte(`{}`)}
	wrong, err := baseline.Floor(other, baseline.MapLookup(sha256.Sum256([]byte(w.AdminToken))))
	require.NoError(t, err)
	wsrv := httptest.NewServer(wrong)
	defer wsrv.Close()
	err = checkFloor(ctx, wsrv.URL, w.AdminToken, scripts, answers)
	assert.ErrorContains(t, err, `PUT /v1/users/sa00001/instances: answered 200 "application/json" with 2 other bytes, want 200 "application/json" with the`)
	assert.NotContains(t, err.Error(), "jumbo", "no body in the message")
	open, err := baseline.Floor(answers, func(context.Context, [sha256.Size]byte) (bool, error) { return true, nil })
	require.NoError(t, err)
	osrv := httptest.NewServer(open)
	defer osrv.Close()
	assert.ErrorContains(t, checkFloor(ctx, osrv.URL, w.AdminToken, scripts, answers), "with another bearer: answered 200")
}

// TestRunFloorRefusesBadInput: the floor process says what is wrong with
// its arguments or its answers before it listens.
func TestRunFloorRefusesBadInput(t *testing.T) {
	ok := `{"list-tokens":{"status":200,"content_type":"application/json","body":"e30="}}`
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"-digest", "abc"}, ok, "want 64 hex digits"},
		{[]string{"-digest", digestHex("x")}, "", "the answers on standard input"},
		{[]string{"-digest", digestHex("x")}, "{}", "no answers"},
		{[]string{"-digest", digestHex("x")}, strings.Repeat(" ", maxAnswers+1), "exceed"},
		{[]string{"-digest", digestHex("x")}, `{"delete-user":{"status":200}}`, `unknown workload "delete-user"`},
		{[]string{"-mongo", "mongodb://127.0.0.1:1/"}, ok, "-mongo needs -mongo-db"},
		{[]string{"-digest", digestHex("x"), "extra"}, ok, "unexpected arguments"},
	} {
		err := runFloor(c.args, strings.NewReader(c.stdin))
		assert.ErrorContains(t, err, c.want, "%v", c.args)
	}
}

func TestWithDatabase(t *testing.T) {
	assert.Equal(t, "mongodb://127.0.0.1:27017/x", withDatabase("mongodb://127.0.0.1:27017/", "x"))
	assert.Equal(t, "mongodb://127.0.0.1:27017/x", withDatabase("mongodb://127.0.0.1:27017", "x"))
	assert.Equal(t, "mongodb://a:1,b:2/x?replicaSet=rs", withDatabase("mongodb://a:1,b:2/old?replicaSet=rs", "x"))
	assert.Equal(t, "mongodb://u:p@a:1/x?w=1", withDatabase("mongodb://u:p@a:1/?w=1", "x"))
}

func TestParseFlagsRefusesNonsense(t *testing.T) {
	for _, args := range [][]string{
		{"-stores", "cassandra"},
		{"-workloads", "list-tokens,delete-everything"},
		{"-repeats", "0"},
		{"-duration", "500ms"},
		{"-threads", "4", "-connections", "2"},
		{"-users", "0"},
		{"extra"},
	} {
		_, err := parseFlags(args, &bytes.Buffer{})
		assert.Error(t, err, args)
	}
	o, err := parseFlags([]string{"-stores", "memory, memory,redis", "-workloads", "list-users"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"memory", "redis"}, o.stores)
	assert.Equal(t, []string{listUsers}, o.workloads)
	assert.Equal(t, "", o.before, "-before is off unless named")
}

func TestParseFlagsBefore(t *testing.T) {
	o, err := parseFlags([]string{"-before", "HEAD~3"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "HEAD~3", o.before)
	_, err = parseFlags([]string{"-before", "--output=/tmp/x"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, "not a revision", "git would read it as an option")
}

// TestBuildsUseStoresApart: the -before build's Redis store is another
// database and its MongoDB databases have other names.
func TestBuildsUseStoresApart(t *testing.T) {
	h := &harness{opt: settings{redisDB: 15, mongoURI: "mongodb://127.0.0.1:27017/"}, runID: "abc123", serverBin: "/w/orgadmin-server"}
	require.Len(t, h.builds(), 1, "no -before, one build")
	h.beforeBin = "/w/orgadmin-server-before"
	bs := h.builds()
	require.Len(t, bs, 2)
	assert.Equal(t, build{bin: "/w/orgadmin-server", redisDB: 15, mongoDB: "loadharness_abc123"}, bs[0])
	assert.Equal(t, build{suffix: beforeSuffix, bin: "/w/orgadmin-server-before", redisDB: 14, mongoDB: "loadharness_abc123_before"}, bs[1])
	assert.Equal(t, "mongodb://127.0.0.1:27017/loadharness_abc123_2", h.mongoStoreURI(bs[0].mongoDB)(2))
	assert.Equal(t, "mongodb://127.0.0.1:27017/loadharness_abc123_before_2", h.mongoStoreURI(bs[1].mongoDB)(2))
	assert.Equal(t, []string{"loadharness_abc123_2", "loadharness_abc123_before_2"}, h.mongoDBs, "both dropped at the end")

	assert.Equal(t, 14, beforeRedisDB(15))
	assert.Equal(t, 0, beforeRedisDB(1))
	assert.Equal(t, 1, beforeRedisDB(0))
}

// TestBuildsOnOneCluster: both builds' stores share the Cluster's one
// database, each seeding an organization of its own, generation by
// generation.
func TestBuildsOnOneCluster(t *testing.T) {
	assert.Equal(t, "loadabc123g1", orgName("abc123", "redis-cluster", 1))
	assert.Equal(t, "loadabc123bg1", orgName("abc123", "redis-cluster"+beforeSuffix, 1))
	assert.Equal(t, "loadabc123g2", orgName("abc123", "memory", 2))
	assert.Equal(t, "redis://127.0.0.1:7001?addr=127.0.0.1%3A7002&addr=127.0.0.1%3A7003",
		clusterStoreURI(clusterAddrs("127.0.0.1:7001, 127.0.0.1:7002,127.0.0.1:7003")))
	assert.Equal(t, "redis://127.0.0.1:7001?addr=127.0.0.1%3A7001", clusterStoreURI([]string{"127.0.0.1:7001"}), "still a Cluster's URL")
}

func TestStoreOf(t *testing.T) {
	assert.Equal(t, "memory", storeOf("memory"))
	assert.Equal(t, "memory", storeOf("memory"+beforeSuffix))
	assert.Equal(t, bareName, storeOf(bareName))
}

func TestModuleVersion(t *testing.T) {
	assert.Regexp(t, `^v1\.`, moduleVersion("../../scripts/ferretdb/go.mod", "github.com/FerretDB/FerretDB"))
	assert.Equal(t, "unknown", moduleVersion("../../scripts/ferretdb/go.mod", "example.com/none"))
	assert.Equal(t, "unknown", moduleVersion("no-such-file", "x"))
}

// TestScheduleStartsGrownStoresAfresh: the run after token creation on a
// store starts it afresh, whatever workload it is and whichever round it
// falls in; no other run does.
func TestScheduleStartsGrownStoresAfresh(t *testing.T) {
	bare := servingTarget(bareName, allWorkloads...)
	mem := servingTarget("memory", allWorkloads...)
	red := servingTarget("redis", allWorkloads...)
	skipped := servingTarget("mongodb", allWorkloads...)
	skipped.Skip = "no MongoDB"

	type run struct {
		round    int
		target   string
		workload string
		fresh    bool
	}
	var got []run
	for _, s := range schedule([]*target{bare, mem, red, skipped}, []string{listTokens, createToken, getConfig}, 2, true) {
		got = append(got, run{s.round, s.target.Name, s.workload, s.fresh})
	}
	// The floor creates no tokens, and is never started afresh.
	assert.Equal(t, []run{
		{0, bareName, listTokens, false}, {0, "memory", listTokens, false}, {0, "redis", listTokens, false},
		{0, bareName, createToken, false}, {0, "memory", createToken, false}, {0, "redis", createToken, false},
		{0, bareName, getConfig, false}, {0, "memory", getConfig, true}, {0, "redis", getConfig, true},

		{1, "redis", listTokens, false}, {1, "memory", listTokens, false}, {1, bareName, listTokens, false},
		{1, "redis", createToken, false}, {1, "memory", createToken, false}, {1, bareName, createToken, false},
		{1, "redis", getConfig, true}, {1, "memory", getConfig, true}, {1, bareName, getConfig, false},

		{2, bareName, listTokens, false}, {2, "memory", listTokens, false}, {2, "redis", listTokens, false},
		{2, bareName, createToken, false}, {2, "memory", createToken, false}, {2, "redis", createToken, false},
		{2, bareName, getConfig, false}, {2, "memory", getConfig, true}, {2, "redis", getConfig, true},
	}, got)

	// Token creation last in a round: the next round's first run on each
	// store starts it afresh, and token creation again finds a fresh store.
	got = nil
	for _, s := range schedule([]*target{mem}, []string{listTokens, createToken}, 2, false) {
		got = append(got, run{s.round, s.target.Name, s.workload, s.fresh})
	}
	assert.Equal(t, []run{
		{1, "memory", listTokens, false}, {1, "memory", createToken, false},
		{2, "memory", listTokens, true}, {2, "memory", createToken, false},
	}, got)

	// Token creation alone: every run after the first starts afresh.
	got = nil
	for _, s := range schedule([]*target{mem}, []string{createToken}, 3, false) {
		got = append(got, run{s.round, s.target.Name, s.workload, s.fresh})
	}
	assert.Equal(t, []run{
		{1, "memory", createToken, false}, {2, "memory", createToken, true}, {3, "memory", createToken, true},
	}, got)
}

// TestScheduleBeforeTargets: a <store>@before runs right next to its
// <store> in every round, and is started afresh after token creation on
// its own store, as its <store> is.
func TestScheduleBeforeTargets(t *testing.T) {
	bare := servingTarget(bareName, listTokens)
	mem := servingTarget("memory", allWorkloads...)
	memBefore := servingTarget("memory@before", allWorkloads...)

	type run struct {
		round    int
		target   string
		workload string
		fresh    bool
	}
	var got []run
	for _, s := range schedule([]*target{bare, mem, memBefore}, []string{listTokens, createToken, getConfig}, 2, true) {
		got = append(got, run{s.round, s.target.Name, s.workload, s.fresh})
	}
	assert.Equal(t, []run{
		{0, bareName, listTokens, false}, {0, "memory", listTokens, false}, {0, "memory@before", listTokens, false},
		{0, "memory", createToken, false}, {0, "memory@before", createToken, false},
		{0, "memory", getConfig, true}, {0, "memory@before", getConfig, true},

		{1, "memory@before", listTokens, false}, {1, "memory", listTokens, false}, {1, bareName, listTokens, false},
		{1, "memory@before", createToken, false}, {1, "memory", createToken, false},
		{1, "memory@before", getConfig, true}, {1, "memory", getConfig, true},

		{2, bareName, listTokens, false}, {2, "memory", listTokens, false}, {2, "memory@before", listTokens, false},
		{2, "memory", createToken, false}, {2, "memory@before", createToken, false},
		{2, "memory", getConfig, true}, {2, "memory@before", getConfig, true},
	}, got)

	// Token creation last: the next round's first run on each build's
	// store starts it afresh, whichever build runs first.
	got = nil
	for _, s := range schedule([]*target{mem, memBefore}, []string{listTokens, createToken}, 2, false) {
		got = append(got, run{s.round, s.target.Name, s.workload, s.fresh})
	}
	assert.Equal(t, []run{
		{1, "memory@before", listTokens, false}, {1, "memory", listTokens, false},
		{1, "memory@before", createToken, false}, {1, "memory", createToken, false},
		{2, "memory", listTokens, true}, {2, "memory@before", listTokens, true},
		{2, "memory", createToken, false}, {2, "memory@before", createToken, false},
	}, got)
}

// TestRunOrder: on every workload each store runs next to its own
// store's floor, in every round, both sides first in turn; the units
// rotate; a skipped target never runs; Prism, on list-tokens only, is a
// unit of its own.
func TestRunOrder(t *testing.T) {
	targets := []*target{
		servingTarget(bareName, allWorkloads...), servingTarget(redisName, allWorkloads...), servingTarget(mongoName, allWorkloads...),
		servingTarget("prism", listTokens),
		servingTarget("memory", allWorkloads...), servingTarget("redis", allWorkloads...), servingTarget("mongodb", allWorkloads...),
	}
	names := func(w string, round int) []string {
		var out []string
		for _, t := range runOrder(targets, w, round) {
			out = append(out, t.Name)
		}
		return out
	}
	assert.Equal(t, []string{bareName, "memory", redisName, "redis", mongoName, "mongodb", "prism"}, names(listTokens, 0))
	assert.Equal(t, []string{"redis", redisName, "mongodb", mongoName, "prism", "memory", bareName}, names(listTokens, 1))
	assert.Equal(t, []string{mongoName, "mongodb", "prism", bareName, "memory", redisName, "redis"}, names(listTokens, 2))
	assert.Equal(t, []string{"prism", "memory", bareName, "redis", redisName, "mongodb", mongoName}, names(listTokens, 3))
	for _, w := range []string{getConfig, setConfig, createToken, listUsers} {
		assert.Equal(t, []string{bareName, "memory", redisName, "redis", mongoName, "mongodb"}, names(w, 0), w)
		assert.Equal(t, []string{"redis", redisName, "mongodb", mongoName, "memory", bareName}, names(w, 1), w)
		assert.Equal(t, []string{mongoName, "mongodb", bareName, "memory", redisName, "redis"}, names(w, 2), w)
	}

	// The Redis store skipped, and its floor with it.
	targets[1].Skip, targets[5].Skip = "no Redis", "no Redis"
	assert.Equal(t, []string{bareName, "memory", mongoName, "mongodb", "prism"}, names(listTokens, 0))
	assert.Equal(t, []string{"mongodb", mongoName, "prism", "memory", bareName}, names(listTokens, 1))

	// A store whose floor did not run is a unit of its own.
	targets[2].Skip = "broken"
	assert.Equal(t, []string{bareName, "memory", "prism", "mongodb"}, names(listTokens, 0))
}

// TestRunOrderBefore: each <store>@before is in its <store>'s unit, and
// with it in its floor's, so that the two builds run one right after
// the other in every round, each first in every other round.
func TestRunOrderBefore(t *testing.T) {
	targets := []*target{
		servingTarget(bareName, listTokens), servingTarget(redisName, listTokens), servingTarget("prism", listTokens),
		servingTarget("memory", allWorkloads...), servingTarget("memory@before", allWorkloads...),
		servingTarget("redis", allWorkloads...), servingTarget("redis@before", allWorkloads...),
		servingTarget("mongodb", allWorkloads...), servingTarget("mongodb@before", allWorkloads...),
	}
	names := func(w string, round int) []string {
		var out []string
		for _, t := range runOrder(targets, w, round) {
			out = append(out, t.Name)
		}
		return out
	}
	// No MongoDB floor here: the MongoDB store's two builds are a unit of
	// their own.
	assert.Equal(t, []string{bareName, "memory", "memory@before", redisName, "redis", "redis@before", "prism", "mongodb", "mongodb@before"}, names(listTokens, 0))
	assert.Equal(t, []string{"redis@before", "redis", redisName, "prism", "mongodb@before", "mongodb", "memory@before", "memory", bareName}, names(listTokens, 1))
	assert.Equal(t, []string{"prism", "mongodb", "mongodb@before", bareName, "memory", "memory@before", redisName, "redis", "redis@before"}, names(listTokens, 2))
	assert.Equal(t, []string{"memory", "memory@before", "redis", "redis@before", "mongodb", "mongodb@before"}, names(getConfig, 0))
	assert.Equal(t, []string{"redis@before", "redis", "mongodb@before", "mongodb", "memory@before", "memory"}, names(getConfig, 1))
	assert.Equal(t, []string{"mongodb", "mongodb@before", "memory", "memory@before", "redis", "redis@before"}, names(getConfig, 2))

	for _, w := range []string{listTokens, getConfig} {
		for round := range 4 {
			order := names(w, round)
			for _, s := range []string{"memory", "redis", "mongodb"} {
				i, j := slices.Index(order, s), slices.Index(order, s+beforeSuffix)
				if round%2 == 0 {
					assert.Equal(t, i+1, j, "%s %s round %d: %v", w, s, round, order)
				} else {
					assert.Equal(t, j+1, i, "%s %s round %d: %v", w, s, round, order)
				}
			}
		}
	}

	// Both builds of a skipped store are skipped; without the Redis
	// floor, the Redis store's two builds are a unit of their own.
	targets[1].Skip = "no Redis"
	targets[7].Skip, targets[8].Skip = "no MongoDB", "no MongoDB"
	assert.Equal(t, []string{bareName, "memory", "memory@before", "prism", "redis", "redis@before"}, names(listTokens, 0))
	assert.Equal(t, []string{"prism", "redis@before", "redis", "memory@before", "memory", bareName}, names(listTokens, 1))
}

// servingTarget returns a target of the kind its name says (a floor,
// Prism or a store) serving workloads ws, for the tests of the schedule.
func servingTarget(name string, ws ...string) *target {
	kind := kindStore
	switch name {
	case bareName, redisName, mongoName, pgName, sqliteName:
		kind = kindFloor
	case "prism":
		kind = kindPrism
	}
	tg := &target{Name: name, Kind: kind, scripts: map[string]script{}}
	for _, w := range ws {
		tg.scripts[w] = script{}
	}
	return tg
}
