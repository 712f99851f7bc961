// Command loadharness measures the orgadmin server under HTTP load, in one
// run on one machine, beside the least a server could do for the same
// request on the same store: its floor.
//
// From the repository root:
//
//	go run ./bench/loadharness [-duration 5s] [-repeats 3] [-stores memory,redis,mongodb,postgres,sqlite,redis-cluster] [-prism] [-before REV]
//
// or scripts/loadharness.sh, which starts Redis, a 3-master Redis Cluster,
// FerretDB and PostgreSQL first. It builds examples/server and starts it once per store, as a
// process of its own, seeded with one organization (an Admin with -tokens
// tokens and -users service accounts). Five workloads (list tokens, get
// and set an instance configuration, create tokens, list users by page)
// run on every store.
//
// Beside the servers run the floors, processes of this program
// (baseline.Floor): bare net/http servers that route each workload's
// method and path, read and discard the body, parse the bearer, SHA-256
// it, look the digest up once and write that workload's answer, whose
// status, Content-Type and bytes the harness captured from the first
// server it started (a page of 100 users; the answer to the PUT sent; one
// creation answer, written again each time). Each store has its own
// floor: bare (a map lookup) for memory, bare+redis-get (one GET) for
// Redis, bare+cluster-get (one GET through a Cluster client) for the
// Redis Cluster, bare+mongo-find (one find by _id, in a database of its
// own) for MongoDB, and one lookup by primary key on PostgreSQL or on a
// SQLite file for the SQL stores. With -prism it also starts the Prism mock
// server of the OpenAPI document.
//
// wrk drives every target with the same threads, connections and
// duration, pinned with taskset to one CPU while the servers (and, through
// scripts/loadharness.sh, the databases) have the other, and the runs are
// interleaved: each repeat runs every target once, each store next to its
// floor on every workload (see runOrder). After each run the harness
// waits until the target, and the database processes listed in
// $LOADHARNESS_DATABASE_PIDS (scripts/loadharness.sh lists those it
// started), are idle, so that requests a slow database still works through
// do not eat into the next run. Every run meets a store that holds its
// seed and no more: after token creation, the store is started afresh
// (see schedule). The table shows the median of the repeats: requests/s,
// p50, p99, the CPU time per request of the target's processes and, for a
// target that uses a database process, of the database processes (those
// of $LOADHARNESS_DATABASE_PIDS and their children, from /proc); and each
// figure's ratio to the target's floor on the same workload in the same
// repeat. A goals table holds each store's requests/s ratio, workload by
// workload, to the goal it must reach, with no failed answer (the stores
// without goals, the Redis Cluster and the SQL stores, are listed there
// with their ratios). The Redis store is found at $ORGADMIN_REDIS_ADDR
// (-redis), the Redis Cluster at $ORGADMIN_REDIS_CLUSTER (-redis-cluster)
// and MongoDB at $ORGADMIN_MONGO_URI (-mongo); a store whose address is
// unset is skipped and the table says so.
//
// With -before REV (a commit, a tag, HEAD~3) it also measures
// examples/server as it is at that revision beside the working tree's, in
// the same run: it extracts the revision with git archive into its work
// directory, builds it there, and runs it on every store as the target
// <store>@before, with the same seed, pinning and fresh starts, on a store
// of its own (Redis database -redis-db minus 1, MongoDB databases of its
// own; on the Cluster, which has one database, an organization of its
// own). Each store and its @before run one right after the other in every
// repeat, each first in turn, and a second table, after ÷ before, gives
// the working tree's req/s and cpu/req over the before build's, taken
// within each repeat, and both builds' ratios to their floor.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/baseline"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := runFloor(os.Args[2:], os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "loadharness floor:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "loadharness:", err)
		os.Exit(1)
	}
}

// allStores are the stores the harness knows.
var allStores = []string{"memory", "redis", "mongodb", "postgres", "sqlite", "redis-cluster"}

type settings struct {
	duration, warmup, timeout time.Duration
	repeats                   int
	threads, connections      int
	stores, workloads         []string
	prism                     bool
	users, mongoUsers, tokens int
	wrkCPU, serverCPU         string
	redisAddr, mongoURI       string
	redisCluster              string // HOST:PORT,HOST:PORT,...
	postgresURL               string
	redisDB                   int
	svg, markdown             string
	cpuProfile, profileStore  string
	profileWorkload           string
	keep                      bool
	startLimit                time.Duration
	before                    string // a git revision, or ""
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var o settings
	fs := flag.NewFlagSet("loadharness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured wrk run (whole seconds)")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "length of one unmeasured run of each target and workload before the first repeat (0: none)")
	fs.IntVar(&o.repeats, "repeats", 3, "measured runs of each target and workload; the table shows medians")
	fs.IntVar(&o.threads, "threads", 1, "wrk threads")
	fs.IntVar(&o.connections, "connections", 32, "wrk connections (the concurrency of every target)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "wrk's timeout for one request; a request that takes longer is an error")
	stores := fs.String("stores", strings.Join(allStores, ","), "stores to run the server on ("+strings.Join(allStores, ", ")+")")
	workloads := fs.String("workloads", strings.Join(allWorkloads, ","), "workloads to run ("+strings.Join(allWorkloads, ", ")+")")
	fs.BoolVar(&o.prism, "prism", false, "also measure the Prism "+prismVersion+" mock server of httpserver/openapi.json (needs npx)")
	fs.IntVar(&o.users, "users", 1000, "service accounts seeded in each store")
	fs.IntVar(&o.mongoUsers, "mongo-users", 300, "service accounts seeded in MongoDB (FerretDB scans the users for each page of list-users, so that costs in proportion)")
	fs.IntVar(&o.tokens, "tokens", 10, "tokens of the Admin, which list-tokens lists")
	fs.StringVar(&o.wrkCPU, "wrk-cpu", "0", "CPU list wrk is pinned to (taskset -c); empty with -server-cpu empty: no pinning")
	fs.StringVar(&o.serverCPU, "server-cpu", "1", "CPU list every server is pinned to")
	fs.StringVar(&o.redisAddr, "redis", os.Getenv("ORGADMIN_REDIS_ADDR"), "Redis server HOST:PORT (default $ORGADMIN_REDIS_ADDR); empty skips the Redis targets")
	fs.StringVar(&o.redisCluster, "redis-cluster", os.Getenv("ORGADMIN_REDIS_CLUSTER"), "Redis Cluster nodes HOST:PORT,HOST:PORT,... (default $ORGADMIN_REDIS_CLUSTER); empty skips the redis-cluster targets. The Cluster must hold no keys: the harness empties it at the end")
	fs.IntVar(&o.redisDB, "redis-db", 15, "Redis database to use; it must be empty, and is emptied again at the end. -before's store uses the one below it (1 when this is 0) under the same rules")
	fs.StringVar(&o.mongoURI, "mongo", os.Getenv("ORGADMIN_MONGO_URI"), "MongoDB URI mongodb://HOST:PORT/ (default $ORGADMIN_MONGO_URI); empty skips MongoDB. Each start uses a new database, dropped at the end")
	fs.StringVar(&o.postgresURL, "postgres", os.Getenv("ORGADMIN_POSTGRES_URL"), "PostgreSQL URL postgres://USER@HOST:PORT/DB (default $ORGADMIN_POSTGRES_URL); empty skips PostgreSQL. Each start uses a schema of its own, dropped at the end")
	fs.StringVar(&o.svg, "svg", "", "write the chart of throughput to this SVG file")
	fs.StringVar(&o.markdown, "markdown", "", "rewrite the "+sectionBegin+" section of this Markdown file (BENCHMARKS.md) with the figures")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "after the repeats, profile the server of -profile-store during one run of -profile-workload and write the CPU profile here")
	fs.StringVar(&o.profileStore, "profile-store", "memory", "the store whose server -cpuprofile profiles")
	fs.StringVar(&o.profileWorkload, "profile-workload", listTokens, "the workload -cpuprofile profiles (one of -workloads)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work files (server logs, seeds, wrk scripts) instead of removing them")
	fs.DurationVar(&o.startLimit, "start-timeout", 5*time.Minute, "how long a server may take to load its seed and listen")
	fs.StringVar(&o.before, "before", "", "a git revision (commit, tag, HEAD~3) whose examples/server to measure beside the working tree's: every store runs it too, as <store>@before on a store of its own, right next to <store> in every repeat, and a second table gives after ÷ before (empty: off)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	o.stores, o.workloads = splitList(*stores), splitList(*workloads)
	for _, s := range o.stores {
		if !slices.Contains(allStores, s) {
			return o, fmt.Errorf("-stores: unknown store %q", s)
		}
	}
	for _, w := range o.workloads {
		if !slices.Contains(allWorkloads, w) {
			return o, fmt.Errorf("-workloads: unknown workload %q", w)
		}
	}
	switch {
	case len(o.stores) == 0:
		return o, errors.New("-stores: name at least one store")
	case len(o.workloads) == 0:
		return o, errors.New("-workloads: name at least one workload")
	case o.repeats < 1:
		return o, errors.New("-repeats: at least 1")
	case o.duration < time.Second:
		return o, errors.New("-duration: at least 1s")
	case o.threads < 1 || o.connections < o.threads:
		return o, errors.New("-threads at least 1 and -connections at least -threads")
	case o.users < 1 || o.mongoUsers < 1 || o.tokens < 1:
		return o, errors.New("-users, -mongo-users and -tokens: at least 1")
	case strings.HasPrefix(o.before, "-"):
		// git would read it as an option.
		return o, fmt.Errorf("-before: %q is not a revision", o.before)
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// harness is one run: its options, temporary directory, targets and
// what they measured.
type harness struct {
	opt       settings
	workloads []string
	runID     string
	dir       string
	serverBin string
	serverCPU string
	pinning   string // how the runs share the CPUs, for the report

	beforeBin    string // the -before build of the server, or ""
	beforeCommit string // the commit -before names

	// What the floors serve: the answer of each workload, captured from
	// the first server started; the token they accept, its Admin's; and
	// the requests that server's scripts send, which the floors get too.
	answers      map[string]baseline.Answer
	floorToken   string
	floorScripts map[string]script
	redisKey     string

	redis       *redis.Client        // -redis-db: the Redis store's and the Redis floor's
	redisBefore *redis.Client        // the Redis store's of the -before build
	cluster     *redis.ClusterClient // -redis-cluster: both builds' stores' and the Cluster floor's
	mongo       *mongo.Client
	mongoDBs    []string
	pg          *sql.DB  // -postgres: makes and drops the schemas
	pgSchemas   []string // the schemas made
	dbPIDs      []int    // the database processes, whose backlog each run waits out

	targets []*target
	wrk     *wrkRunner
	res     results
	notes   []string
	fails   failures
	load    string // the load average when the run started
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opt, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("examples", "server", "main.go")); err != nil {
		return errors.New("run from the repository root (examples/server not found here)")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk not found: install it (Debian: apt-get install wrk)")
	}
	var idb [3]byte
	_, _ = rand.Read(idb[:])
	h := &harness{opt: opt, workloads: opt.workloads, runID: hex.EncodeToString(idb[:])}
	if h.dbPIDs, err = databasePIDs(); err != nil {
		return err
	}
	if opt.before != "" {
		if h.beforeCommit, err = resolveCommit(ctx, opt.before); err != nil {
			return fmt.Errorf("-before %s: %w", opt.before, err)
		}
	}
	h.redisKey = "loadharness:" + h.runID + ":"
	h.wrk = &wrkRunner{Threads: opt.threads, Connections: opt.connections, Timeout: opt.timeout}
	if opt.wrkCPU != "" || opt.serverCPU != "" {
		_, tsErr := exec.LookPath("taskset")
		switch {
		case tsErr != nil:
			h.pinning = "not pinned (no taskset; apt-get install util-linux); runs interleaved"
		case runtime.NumCPU() < 2:
			h.pinning = "not pinned (one CPU); runs interleaved"
		default:
			h.wrk.CPU, h.serverCPU = opt.wrkCPU, opt.serverCPU
			h.pinning = fmt.Sprintf("wrk pinned to CPU %s, every server to CPU %s; runs interleaved", opt.wrkCPU, opt.serverCPU)
		}
	} else {
		h.pinning = "not pinned (-wrk-cpu and -server-cpu empty); runs interleaved"
	}
	if h.dir, err = os.MkdirTemp("", "loadharness-"); err != nil {
		return err
	}
	h.wrk.Dir = h.dir
	defer h.cleanup(stderr)

	h.load = loadAverage()
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	logf("loadharness: %s; work files in %s", h.pinning, h.dir)
	h.serverBin = filepath.Join(h.dir, "orgadmin-server")
	logf("building examples/server")
	if err := buildServer(ctx, "", h.serverBin); err != nil {
		return err
	}
	if opt.before != "" {
		logf("building examples/server of %s (%s)", opt.before, h.beforeCommit)
		src := filepath.Join(h.dir, "before-src")
		if err := extractTree(ctx, h.beforeCommit, src); err != nil {
			return fmt.Errorf("-before %s: %w", opt.before, err)
		}
		h.beforeBin = filepath.Join(h.dir, "orgadmin-server-before")
		if err := buildServer(ctx, src, h.beforeBin); err != nil {
			return fmt.Errorf("-before %s: %w", opt.before, err)
		}
	}
	if err := h.startTargets(ctx, logf); err != nil {
		return err
	}
	if err := h.measure(ctx, logf); err != nil {
		return err
	}
	h.notes = append(h.notes, h.fails.notes()...)
	rows := h.res.rows(h.targets, h.workloads)
	goals := h.res.goals(rows)
	before := ""
	if opt.before != "" {
		before = "; " + h.beforeNote()
	}
	fmt.Fprintf(stdout, "\n%d× %s per target and workload, wrk -t%d -c%d; medians; %s; load average %s at the start, %s now%s\n\n",
		opt.repeats, wrkSeconds(opt.duration), opt.threads, opt.connections, h.pinning, h.load, loadAverage(), before)
	if err := writeTable(stdout, rows, goals); err != nil {
		return err
	}
	if opt.before != "" {
		fmt.Fprintf(stdout, "\n%s\n\n", changesTitle)
		if err := writeChanges(stdout, h.res.changes(rows)); err != nil {
			return err
		}
	}
	for _, n := range h.notes {
		fmt.Fprintln(stdout, "note:", n)
	}
	if opt.cpuProfile != "" {
		if err := h.profile(ctx, stdout, logf); err != nil {
			return err
		}
	}
	if opt.svg != "" {
		if err := os.WriteFile(opt.svg, []byte(chartSVG(rows, goals, "orgadmin server beside the floor of each store")), 0o600); err != nil {
			return err
		}
		logf("wrote %s", opt.svg)
	}
	if opt.markdown != "" {
		if err := h.writeMarkdown(ctx, rows, goals, args); err != nil {
			return err
		}
		logf("updated %s", opt.markdown)
	}
	return nil
}

// startTargets starts every store's server, then the floors of the
// stores in the run (which answer what the first server answered: the
// working tree's build, which starts before its @before), then Prism.
func (h *harness) startTargets(ctx context.Context, logf func(string, ...any)) error {
	if h.opt.redisAddr != "" && slices.Contains(h.opt.stores, "redis") {
		var err error
		if h.redis, err = h.openRedis(ctx, h.opt.redisDB); err != nil {
			return err
		}
	}
	for _, s := range h.opt.stores {
		for _, b := range h.builds() {
			name := s + b.suffix
			var t *target
			switch s {
			case "memory":
				t = h.storeTarget(name, b.bin, func(int) string { return "memory" })
			case "redis":
				t = h.storeTarget(name, b.bin, func(int) string { return fmt.Sprintf("redis://%s/%d", h.opt.redisAddr, b.redisDB) })
				if h.opt.redisAddr == "" {
					t.Skip = "no Redis: set ORGADMIN_REDIS_ADDR or -redis (scripts/loadharness.sh starts one)"
				} else if b.suffix == beforeSuffix {
					var err error
					if h.redisBefore, err = h.openRedis(ctx, b.redisDB); err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
				}
			case "redis-cluster":
				t = h.storeTarget(name, b.bin, func(int) string { return clusterStoreURI(clusterAddrs(h.opt.redisCluster)) })
				if h.opt.redisCluster == "" {
					t.Skip = "no Redis Cluster: set ORGADMIN_REDIS_CLUSTER or -redis-cluster (scripts/loadharness.sh starts one)"
				} else if h.cluster == nil {
					var err error
					if h.cluster, err = h.openCluster(ctx); err != nil {
						return err
					}
				}
			case "mongodb":
				t = h.storeTarget(name, b.bin, h.mongoStoreURI(b.mongoDB))
				t.users = h.opt.mongoUsers
				if t.users != h.opt.users && b.suffix == "" {
					h.notes = append(h.notes, fmt.Sprintf("the MongoDB store holds %d service accounts (-mongo-users), the others %d (-users)", t.users, h.opt.users))
				}
				if h.opt.mongoURI == "" {
					t.Skip = "no MongoDB: set ORGADMIN_MONGO_URI or -mongo (scripts/loadharness.sh starts FerretDB)"
				} else if h.mongo == nil {
					if err := h.openMongo(ctx); err != nil {
						return err
					}
				}
			case "postgres":
				t = h.storeTarget(name, b.bin, h.postgresStoreURI(ctx, strings.ReplaceAll(b.mongoDB, "loadharness_", "loadharness_pg_")))
				if h.opt.postgresURL == "" {
					t.Skip = "no PostgreSQL: set ORGADMIN_POSTGRES_URL or -postgres (scripts/loadharness.sh starts one)"
				} else if h.pg == nil {
					if err := h.openPostgres(ctx); err != nil {
						return err
					}
				}
			case "sqlite":
				t = h.storeTarget(name, b.bin, h.sqliteStoreURI(name))
			}
			t.db = s == "redis" || s == "redis-cluster" || s == "mongodb" || s == "postgres"
			if name == h.opt.profileStore && h.opt.cpuProfile != "" {
				addr, err := freeAddr()
				if err != nil {
					return err
				}
				t.pprof = addr
			}
			h.targets = append(h.targets, t)
			if t.Skip != "" {
				logf("%s: skipped: %s", t.Name, t.Skip)
				continue
			}
			logf("%s: starting the server with %d service accounts", t.Name, t.users)
			if err := h.startStore(ctx, t, 1, logf); err != nil {
				return err
			}
		}
	}
	if h.answers == nil {
		return errors.New("no store ran, so there are no answers for the floors to copy")
	}
	logf("floors: starting")
	bare, err := h.floorTarget(ctx, bareName, false)
	if err != nil {
		return err
	}
	floors := []*target{bare}
	// The floors of the stores on a database server: each started when
	// its store is in the run, or listed as skipped when its database is
	// not there (start nil).
	type dbFloor struct {
		store, name string
		start       func(context.Context) (*target, error)
		missing     string
	}
	dbFloors := []dbFloor{
		{"redis", redisName, nil, "no Redis: set ORGADMIN_REDIS_ADDR or -redis"},
		{"redis-cluster", clusterName, nil, "no Redis Cluster: set ORGADMIN_REDIS_CLUSTER or -redis-cluster"},
		{"mongodb", mongoName, nil, "no MongoDB: set ORGADMIN_MONGO_URI or -mongo"},
	}
	if h.redis != nil {
		dbFloors[0].start = h.redisFloor
	}
	if h.cluster != nil {
		dbFloors[1].start = h.clusterFloor
	}
	if h.mongo != nil {
		dbFloors[2].start = h.mongoFloor
	}
	for _, f := range dbFloors {
		switch {
		case !slices.Contains(h.opt.stores, f.store):
		case f.start == nil:
			floors = append(floors, &target{Name: f.name, Kind: kindFloor, Skip: f.missing})
		default:
			t, err := f.start(ctx)
			if err != nil {
				return err
			}
			floors = append(floors, t)
		}
	}
	if h.pg != nil {
		pt, err := h.sqlFloor(ctx, pgName, "postgres")
		if err != nil {
			return err
		}
		floors = append(floors, pt)
	}
	if slices.Contains(h.opt.stores, "sqlite") {
		st, err := h.sqlFloor(ctx, sqliteName, "sqlite")
		if err != nil {
			return err
		}
		floors = append(floors, st)
	}
	if h.opt.prism && slices.Contains(h.workloads, listTokens) {
		if _, err := exec.LookPath("npx"); err != nil {
			floors = append(floors, &target{Name: "prism", Kind: kindPrism, Skip: "npx not found (Debian: apt-get install nodejs npm)"})
		} else {
			logf("prism: starting %s through npx (the first time fetches it)", prismVersion)
			pt, err := h.prismTarget(ctx)
			if err != nil {
				return err
			}
			floors = append(floors, pt)
		}
	}
	h.targets = append(floors, h.targets...)
	return nil
}

// redisFloor starts the floor of the Redis store: one GET, in the
// store's database, of a key the floor's token's digest names.
func (h *harness) redisFloor(ctx context.Context) (*target, error) {
	if err := h.redis.Set(ctx, h.redisKey+digestHex(h.floorToken), "admin", 0).Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", redisName, err)
	}
	return h.floorTarget(ctx, redisName, true, "-redis", h.opt.redisAddr, "-redis-db", fmt.Sprint(h.opt.redisDB), "-key", h.redisKey)
}

// mongoFloor starts the floor of the MongoDB store: one find by _id in the
// collection floor of a database of its own, dropped at the end, holding
// the digest of the floors' token.
func (h *harness) mongoFloor(ctx context.Context) (*target, error) {
	db := "loadharness_" + h.runID + "_floor"
	h.mongoDBs = append(h.mongoDBs, db)
	doc := bson.D{{Key: "_id", Value: digestHex(h.floorToken)}, {Key: "username", Value: "admin"}}
	if _, err := h.mongo.Database(db).Collection("floor").InsertOne(ctx, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", mongoName, err)
	}
	return h.floorTarget(ctx, mongoName, true, "-mongo", h.opt.mongoURI, "-mongo-db", db, "-mongo-collection", "floor")
}

// startStore starts the server of store target t on generation gen,
// trying up to three times: loading a seed again changes nothing, and a
// database that answers slowly while the seed loads (FerretDB on a busy
// machine) makes the server stop.
func (h *harness) startStore(ctx context.Context, t *target, gen int, logf func(string, ...any)) error {
	var err error
	for try := 1; try <= 3; try++ {
		start := time.Now()
		if err = t.start(ctx, gen); err == nil {
			logf("%s: ready in %s", t.Name, time.Since(start).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		logf("%s: start %d failed: %v", t.Name, try, err)
	}
	return fmt.Errorf("%s: %w", t.Name, err)
}

// step is one run of the measurement: a workload on a target, in a round
// (0 is the warm-up), on a store started afresh first when fresh.
type step struct {
	round    int
	target   *target
	workload string
	fresh    bool
}

// schedule lists the runs of the warm-up round (when warmup) and of the
// repeats, in order. Each round runs every workload on every target that
// serves it, in the order of runOrder.
//
// Every run meets a store that holds its seed and no more. Token creation
// grows a store, by tens of thousands of tokens in a run of a few seconds,
// and every later run would pay for them: the memory store's garbage
// collector marks them all, which took its list-tokens from 0.80x to 0.74x
// the bare floor, measured side by side. So the run after token
// creation on a store starts it afresh; token creation itself then always
// starts on a fresh store, and never reaches the per-user token limit. A
// <store>@before target has a store of its own, and follows the rule by
// itself.
func schedule(targets []*target, workloads []string, repeats int, warmup bool) []step {
	grown := map[*target]bool{}
	var steps []step
	for round := 0; round <= repeats; round++ {
		if round == 0 && !warmup {
			continue
		}
		for _, w := range workloads {
			for _, t := range runOrder(targets, w, round) {
				steps = append(steps, step{round: round, target: t, workload: w, fresh: grown[t]})
				// A floor writes the same answer each time, and grows nothing.
				grown[t] = w == createToken && t.Kind == kindStore
			}
		}
	}
	return steps
}

// runOrder returns the targets that serve workload w in the order they run
// in round. A store whose floor (baselineOf) also serves w runs next to
// it, and a <store>@before next to its <store> (which comes just before it
// in targets), so that the ratio of a repeat compares runs made one after
// the other: the speed of this shared machine drifts within seconds. Such
// a group, and every other target, is a unit; the units rotate from round
// to round, and every other round each unit runs in reverse, so that
// neither side of a ratio always runs first.
func runOrder(targets []*target, w string, round int) []*target {
	have := map[string]bool{}
	for _, t := range targets {
		have[t.Name] = t.Skip == ""
	}
	var units [][]*target
	unitOf := map[string]int{}
	for _, t := range targets {
		if !t.serves(w) {
			continue
		}
		i, ok := unitOf[baselineOf(t, w, have)]
		if !ok {
			i, ok = unitOf[storeOf(t.Name)]
		}
		if ok && t.Kind == kindStore {
			units[i] = append(units[i], t)
			continue
		}
		unitOf[t.Name] = len(units)
		units = append(units, []*target{t})
	}
	var out []*target
	for i := range units {
		u := slices.Clone(units[(i+round)%len(units)])
		if round%2 == 1 {
			slices.Reverse(u)
		}
		out = append(out, u...)
	}
	return out
}

// measure makes the runs of schedule, and keeps the figures of the
// repeats.
func (h *harness) measure(ctx context.Context, logf func(string, ...any)) error {
	for _, st := range schedule(h.targets, h.workloads, h.opt.repeats, h.opt.warmup > 0) {
		t, w, round := st.target, st.workload, st.round
		d := h.opt.duration
		if round == 0 {
			d = h.opt.warmup
		}
		if st.fresh {
			if err := h.startStore(ctx, t, t.gen+1, logf); err != nil {
				return err
			}
		}
		// The database's CPU time counts for a target that uses one:
		// the others leave it idle.
		withDB := t.db && len(h.dbPIDs) > 0
		var dbCPU time.Duration
		if withDB {
			dbCPU = pidsCPU(h.dbPIDs)
		}
		cpu, logged := t.proc.cpuTime(), t.proc.logSize()
		s, err := h.wrk.run(ctx, t.url, t.scripts[w], d)
		if err != nil {
			return fmt.Errorf("%s %s: %w", t.Name, w, err)
		}
		s.CPU = t.proc.cpuTime() - cpu
		if withDB {
			s.DBCPU, s.DB = pidsCPU(h.dbPIDs)-dbCPU, true
		}
		t.proc.settle(ctx, 10*time.Second)
		// A database can still be working through requests the
		// server gave up on; the next run must not pay for them.
		if len(h.dbPIDs) > 0 {
			waitIdle(ctx, func() time.Duration { return pidsCPU(h.dbPIDs) }, nil, 30*time.Second)
		}
		phase := "warm-up"
		if round > 0 {
			phase = fmt.Sprintf("repeat %d/%d", round, h.opt.repeats)
			h.res.add(t.Name, w, s)
		}
		bad := ""
		if s.StatusErrors+s.SocketErrors > 0 {
			bad = fmt.Sprintf("  ERRORS: %d status >= 400, %d socket", s.StatusErrors, s.SocketErrors)
			if t.Kind == kindStore && s.StatusErrors > 0 {
				counts, cause := t.proc.failures(logged)
				bad += " " + fmtStatuses(counts)
				if round > 0 {
					h.fails.add(t.Name, w, counts, cause)
				}
			}
		}
		db := ""
		if s.DB {
			db = "  db cpu/req " + fmtLatency(s.DBCPUPerRequest())
		}
		logf("%-11s %-15s %-13s %8.0f req/s  p50 %-8s p99 %-8s cpu/req %-7s%s%s", phase, t.Name, w, s.RPS(), fmtLatency(s.P50), fmtLatency(s.P99), fmtLatency(s.CPUPerRequest()), db, bad)
	}
	return nil
}

// failures gathers, per target and workload, the statuses the server
// logged for failed requests and the first cause of a 500.
type failures struct {
	order  []key
	counts map[key]map[int]int
	cause  map[key]string
}

func (f *failures) add(target, workload string, counts map[int]int, cause string) {
	k := key{target, workload}
	if f.counts == nil {
		f.counts, f.cause = map[key]map[int]int{}, map[key]string{}
	}
	if f.counts[k] == nil {
		f.order = append(f.order, k)
		f.counts[k] = map[int]int{}
	}
	for st, n := range counts {
		f.counts[k][st] += n
	}
	if f.cause[k] == "" {
		f.cause[k] = cause
	}
}

// notes says what the failed requests of each target and workload
// answered, by the server's log (which also counts requests that ended
// after wrk stopped waiting).
func (f *failures) notes() []string {
	var out []string
	for _, k := range f.order {
		n := fmt.Sprintf("%s %s: the server logged failed requests %s", k.Target, k.Workload, fmtStatuses(f.counts[k]))
		if c := f.cause[k]; c != "" {
			if len(c) > 240 {
				c = c[:240] + "..."
			}
			n += "; the first cause: " + c
		}
		out = append(out, n)
	}
	return out
}

// fmtStatuses writes status counts as "(500×3, 400×1)".
func fmtStatuses(counts map[int]int) string {
	var sts []int
	for st := range counts {
		sts = append(sts, st)
	}
	slices.Sort(sts)
	var parts []string
	for _, st := range sts {
		parts = append(parts, fmt.Sprintf("%d×%d", st, counts[st]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// profile runs -profile-workload on the server of -profile-store once more
// while taking a CPU profile of it, and prints the top of the profile.
func (h *harness) profile(ctx context.Context, stdout io.Writer, logf func(string, ...any)) error {
	var prof *target
	for _, t := range h.targets {
		if t.Name == h.opt.profileStore && t.serves(h.opt.profileWorkload) && t.pprof != "" {
			prof = t
		}
	}
	if prof == nil {
		return fmt.Errorf("-cpuprofile needs the store %q (-profile-store) and the workload %q (-profile-workload) in the run", h.opt.profileStore, h.opt.profileWorkload)
	}
	secs := int(h.opt.duration / time.Second)
	logf("profiling the %s server for %ds of %s", prof.Name, secs, h.opt.profileWorkload)
	type got struct {
		body []byte
		err  error
	}
	c := make(chan got, 1)
	go func() {
		st, body, err := get(ctx, "GET", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", prof.pprof, secs), "", "")
		if err == nil && st != 200 {
			err = fmt.Errorf("pprof: status %d: %s", st, body)
		}
		c <- got{body, err}
	}()
	if _, err := h.wrk.run(ctx, prof.url, prof.scripts[h.opt.profileWorkload], h.opt.duration+time.Second); err != nil {
		return err
	}
	p := <-c
	if p.err != nil {
		return p.err
	}
	if err := os.WriteFile(h.opt.cpuProfile, p.body, 0o600); err != nil {
		return err
	}
	logf("wrote %s", h.opt.cpuProfile)
	for _, extra := range [][]string{{"-top"}, {"-top", "-cum"}} {
		args := append([]string{"tool", "pprof", "-nodecount=25"}, extra...)
		out, err := exec.CommandContext(ctx, "go", append(args, h.opt.cpuProfile)...).CombinedOutput() // #nosec G204 -- the profile this run wrote
		if err != nil {
			return fmt.Errorf("go tool pprof: %w\n%s", err, out)
		}
		fmt.Fprintf(stdout, "\n$ go tool pprof %s %s\n%s", strings.Join(args[2:], " "), h.opt.cpuProfile, out)
	}
	return nil
}

// openRedis connects to database db of -redis, which must be empty: the
// harness empties it at the end.
func (h *harness) openRedis(ctx context.Context, db int) (*redis.Client, error) {
	c := redis.NewClient(&redis.Options{Addr: h.opt.redisAddr, DB: db})
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis %s: %w", h.opt.redisAddr, err)
	}
	if n != 0 {
		_ = c.Close()
		return nil, fmt.Errorf("redis %s: database %d holds %d keys; the harness empties its databases at the end, so give it empty ones (see -redis-db)", h.opt.redisAddr, db, n)
	}
	return c, nil
}

func (h *harness) openMongo(ctx context.Context) error {
	c, err := mongo.Connect(options.Client().ApplyURI(h.opt.mongoURI).SetServerSelectionTimeout(10 * time.Second))
	if err != nil {
		return fmt.Errorf("mongodb: %w", err)
	}
	h.mongo = c
	return c.Ping(ctx, nil)
}

// mongoStoreURI returns the function giving -mongo with the database of
// each generation, named prefix_gen.
func (h *harness) mongoStoreURI(prefix string) func(gen int) string {
	return func(gen int) string {
		db := fmt.Sprintf("%s_%d", prefix, gen)
		h.mongoDBs = append(h.mongoDBs, db)
		return withDatabase(h.opt.mongoURI, db)
	}
}

// withDatabase returns the MongoDB URI uri naming database db instead of
// any it named.
func withDatabase(uri, db string) string {
	rest, query, hasQuery := strings.Cut(uri, "?")
	scheme, hosts, _ := strings.Cut(rest, "://")
	hosts, _, _ = strings.Cut(hosts, "/")
	out := scheme + "://" + hosts + "/" + db
	if hasQuery {
		out += "?" + query
	}
	return out
}

// cleanup stops every process, empties the Redis databases and the Redis
// Cluster, drops the MongoDB databases and removes the work files (the
// -before tree too).
func (h *harness) cleanup(stderr io.Writer) {
	for _, t := range h.targets {
		t.proc.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []*redis.Client{h.redis, h.redisBefore} {
		if c == nil {
			continue
		}
		if err := c.FlushDB(ctx).Err(); err != nil {
			fmt.Fprintf(stderr, "loadharness: emptying Redis database %d: %v\n", c.Options().DB, err)
		}
		_ = c.Close()
	}
	if h.cluster != nil {
		if err := emptyCluster(ctx, h.cluster); err != nil {
			fmt.Fprintf(stderr, "loadharness: emptying the Redis Cluster: %v\n", err)
		}
		_ = h.cluster.Close()
	}
	if h.mongo != nil {
		for _, db := range h.mongoDBs {
			if err := h.mongo.Database(db).Drop(ctx); err != nil {
				fmt.Fprintf(stderr, "loadharness: dropping %s: %v\n", db, err)
			}
		}
		_ = h.mongo.Disconnect(ctx)
	}
	h.dropSchemas(ctx, stderr)
	switch {
	case h.dir == "":
	case h.opt.keep:
		fmt.Fprintln(stderr, "loadharness: work files kept in", h.dir)
	default:
		_ = os.RemoveAll(h.dir)
	}
}

// machine describes where the figures come from.
func (h *harness) machine(ctx context.Context) []string {
	var out []string
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	out = append(out, fmt.Sprintf("%d CPUs (nproc), %s", runtime.NumCPU(), cpu))
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		out = append(out, "Linux "+strings.TrimSpace(string(b)))
	}
	if h.load != "" {
		out = append(out, fmt.Sprintf("load average %s at the start, %s at the end (other work on the machine)", h.load, loadAverage()))
	}
	if b, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output(); err == nil {
		out = append(out, "Go "+strings.TrimPrefix(strings.TrimSpace(string(b)), "go")+" (the server's build)")
	}
	if b, _ := exec.CommandContext(ctx, "wrk", "-v").CombinedOutput(); len(b) > 0 {
		out = append(out, strings.SplitN(string(b), " Copyright", 2)[0])
	}
	var rc redis.UniversalClient
	switch {
	case h.redis != nil:
		rc = h.redis
	case h.cluster != nil:
		rc = h.cluster
	}
	if rc != nil {
		if info, err := rc.Info(ctx, "server").Result(); err == nil {
			for _, l := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
					out = append(out, "Redis "+v)
					break
				}
			}
		}
	}
	if h.cluster != nil {
		out = append(out, fmt.Sprintf("Redis Cluster of %d masters (%s)", len(clusterAddrs(h.opt.redisCluster)), h.opt.redisCluster))
	}
	if h.mongo != nil {
		var bi bson.M
		if err := h.mongo.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err == nil {
			s := fmt.Sprintf("MongoDB wire version %v", bi["version"])
			if fv, ok := bi["ferretdbVersion"]; ok {
				if fv == "unknown" {
					// Built from source by scripts/services.sh: its go.mod says which.
					fv = moduleVersion(filepath.Join("scripts", "ferretdb", "go.mod"), "github.com/FerretDB/FerretDB")
				}
				s = fmt.Sprintf("FerretDB %v (SQLite; reports MongoDB %v)", fv, bi["version"])
			}
			out = append(out, s)
		}
	}
	out = append(out, h.sqlVersions(ctx)...)
	for _, t := range h.targets {
		if t.Name == "prism" && t.Skip == "" {
			out = append(out, "Prism "+prismVersion+" (npm @stoplight/prism-cli, node "+nodeVersion(ctx)+")")
		}
	}
	if h.opt.before != "" {
		out = append(out, h.beforeNote())
	}
	return out
}

// beforeNote says what the @before targets run.
func (h *harness) beforeNote() string {
	return fmt.Sprintf("the %s targets: examples/server of -before %s, commit %s; the others: of the working tree", beforeSuffix, h.opt.before, h.beforeCommit)
}

// loadAverage returns the one-minute load average, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// moduleVersion returns the version of module that the go.mod file
// requires, or "unknown".
func moduleVersion(file, module string) string {
	b, err := os.ReadFile(file) // #nosec G304 -- a go.mod of this repository
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return "unknown"
}

func nodeVersion(ctx context.Context) string {
	b, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// floorsNote says, in the -markdown section, what the floors are and
// what the ratios and db cpu/req mean.
const floorsNote = "Each store is held to its floor: a bare net/http server that routes the workload's method and path, " +
	"reads the body, SHA-256s the bearer, looks the digest up once and writes the answer the server gave to that request " +
	"(status, Content-Type and bytes, captured after seeding): `" + bareName + "` in a map (memory), `" + redisName + "` with one GET (Redis), `" + clusterName + "` with one GET through a Cluster client (Redis Cluster), `" +
	mongoName + "` with one find by `_id` on the same FerretDB (MongoDB), `" + pgName + "` and `" + sqliteName + "` with one query by primary key " +
	"(PostgreSQL, SQLite). Ratios are each figure over its floor's on the same workload, within each repeat, then the median over the repeats; " +
	"the other floors and Prism are shown over `" + bareName + "`. `db cpu/req` is the CPU time of the database processes " +
	"(those scripts/loadharness.sh started, with their children) per request, for the targets that use one; SQLite runs inside its process."

// writeMarkdown rewrites the marked section of the -markdown file.
func (h *harness) writeMarkdown(ctx context.Context, rows []row, goals []goal, args []string) error {
	doc, err := os.ReadFile(h.opt.markdown)
	if err != nil {
		return err
	}
	command := os.Getenv("LOADHARNESS_COMMAND")
	if command == "" {
		command = strings.TrimSpace("go run ./bench/loadharness " + strings.Join(args, " "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s with:\n\n```sh\n%s\n```\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), command)
	b.WriteString("Machine: " + strings.Join(h.machine(ctx), "; ") + ".\n\n")
	fmt.Fprintf(&b, "Each figure is the median of %d runs of %s (after a %s warm-up), wrk -t%d -c%d; %s. Workloads:\n\n",
		h.opt.repeats, wrkSeconds(h.opt.duration), h.opt.warmup, h.opt.threads, h.opt.connections, h.pinning)
	for _, w := range h.workloads {
		fmt.Fprintf(&b, "- `%s`: %s\n", w, workloadTitles[w])
	}
	b.WriteString("\n" + floorsNote + "\n\n" + markdownTables(rows, goals))
	if h.opt.before != "" {
		fmt.Fprintf(&b, "\n%s\n\n%s", changesTitle, markdownChanges(h.res.changes(rows)))
	}
	for _, n := range h.notes {
		b.WriteString("\nNote: " + n + "\n")
	}
	if h.opt.svg != "" {
		rel, err := filepath.Rel(filepath.Dir(h.opt.markdown), h.opt.svg)
		if err != nil {
			rel = h.opt.svg
		}
		fmt.Fprintf(&b, "\n![Median requests/s per target and workload](%s)\n", filepath.ToSlash(rel))
	}
	out, err := replaceSection(string(doc), b.String())
	if err != nil {
		return fmt.Errorf("%s: %w", h.opt.markdown, err)
	}
	return os.WriteFile(h.opt.markdown, []byte(out), 0o600) // #nosec G703 -- the file the harness's operator names; an existing file keeps its mode
}
