// Command server runs the orgadmin REST API.
//
//	go run ./examples/server [-addr 127.0.0.1:8080] [-store memory|redis://HOST:PORT[/DB]|mongodb://HOST:PORT/DB|postgres://USER@HOST:PORT/DB|sqlite:PATH] [-seed FILE] [-audit-log] [-max-users-per-org N] [-max-embed-sessions-per-user N] [-shutdown-grace 10s] [-pprof 127.0.0.1:6060] [-metrics-addr 127.0.0.1:9090]
//
// -store sqlite:orgadmin.db keeps everything in the file orgadmin.db
// (created if missing), so users and tokens survive a restart.
//
// Without -seed it bootstraps the organization "default" with the Admin
// "admin", whose token is $ORGADMIN_ADMIN_TOKEN when set, or a new one
// printed once on standard error. Either is the Admin's only bootstrap
// token: a restart revokes the one an earlier start made (set
// $ORGADMIN_ADMIN_TOKEN, or use -seed, to keep one across restarts). With
// -seed it loads that fixture instead; loading it again changes nothing
// and brings back nothing deleted since.
// -max-users-per-org bounds the users of each organization (0, the
// default, means the library's 100000; a negative number, no limit); every
// server sharing a store should be given the same.
// -max-embed-sessions-per-user bounds the live embed sessions of each
// service account alike (0 means the library's 10000; a negative number,
// no limit).
// It serves /v1, the audit trail at /ext/audit/events, the OpenAPI
// document at /docs/specs, GET /healthz and the page-feedback endpoint at
// /docs/api/feedback/agent, logs one JSON line per request (written within
// 0.1 s), and shuts down gracefully on SIGINT or SIGTERM (requests under
// way get 10 s to finish; if any is cut, it exits 1). -pprof serves the
// runtime profiles on a loopback address of its own (off by default).
// -metrics-addr serves the Prometheus metrics at /metrics on a listener of
// its own (off by default). -audit-log also writes each audit event on
// standard error, a JSON line with "msg":"audit". When $OTEL_EXPORTER_OTLP_ENDPOINT (or
// $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, it exports a span of each
// request, with its store calls below it, over OTLP/HTTP; otherwise it
// makes none.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/instrumented"
)

// canceledRequestsWait bounds the wait, at shutdown, for the requests
// canceled once the grace has passed: a store call under way that does
// not see its context end (a Redis round trip) runs to its own timeout.
const canceledRequestsWait = 5 * time.Second

// logFlushDelay is how long a log line may wait to be written with others.
const logFlushDelay = 100 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Once the first signal has come, the signals' default action is back:
	// a second one ends the process at once, requests under way or not.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil)
	switch {
	case errors.Is(err, flag.ErrHelp): // -h: the usage is printed
	case err != nil:
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down gracefully. ready, when not
// nil, is called with the address once the server listens.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, ready func(net.Addr)) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	// A bad flag is the one line main prints; -h prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	storeURI := fs.String("store", "memory", "store: memory (lost on exit), sqlite:PATH (a file, kept across restarts), postgres://USER[:PASSWORD]@HOST:PORT/DB, redis://HOST:PORT[/DB] (rediss:// for TLS), a Redis Cluster as redis://HOST:PORT?addr=HOST2:PORT2&addr=..., or mongodb://HOST:PORT/DB (or mongodb+srv://HOST/DB)")
	seedFile := fs.String("seed", "", "JSON fixture to load instead of bootstrapping org \"default\"")
	pprofAddr := fs.String("pprof", "", "loopback address to serve the runtime profiles at /debug/pprof/ (off when empty)")
	metricsAddr := fs.String("metrics-addr", "", "address to serve the Prometheus metrics at /metrics, such as 127.0.0.1:9090 (off when empty)")
	auditLog := fs.Bool("audit-log", false, "also log each audit event on standard error, as a JSON line with \"msg\":\"audit\" (for shipping to a SIEM)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long requests under way may take to finish before they are canceled")
	maxUsers := fs.Int("max-users-per-org", 0, fmt.Sprintf("most users an organization holds; one more is a 400 (0: %d; negative: no limit; the same on every server sharing a store)", orgadmin.DefaultMaxUsersPerOrg))
	maxSessions := fs.Int("max-embed-sessions-per-user", 0, fmt.Sprintf("most live embed sessions a service account holds; one more is a 400 (0: %d; negative: no limit; the same on every server sharing a store)", orgadmin.DefaultMaxEmbedSessionsPerUser))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "Usage of server:")
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	// -seed "" given on purpose is a fixture's path that went missing (an
	// unset variable, say), not a wish to bootstrap and print a new token.
	seedGiven := false
	fs.Visit(func(f *flag.Flag) { seedGiven = seedGiven || f.Name == "seed" })
	if seedGiven && *seedFile == "" {
		return errors.New("-seed: empty path (leave the flag out to bootstrap org \"default\")")
	}

	// Log lines wait up to logFlushDelay and are written together: one
	// write per busy moment instead of one per request.
	logs := newDelayedWriter(stderr, logFlushDelay)
	defer func() { _ = logs.Flush() }() // nowhere left to report an error
	log := slog.New(slog.NewJSONHandler(logs, nil))
	if *pprofAddr != "" {
		stopPprof, err := startPprof(*pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	tel, stopTelemetry, err := startTelemetry(*metricsAddr, getenv, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	store, closeStore, err := openStore(ctx, *storeURI, log, tel.tracerProvider())
	if err != nil {
		return err
	}
	defer closeStore()
	if tel.metrics != nil || tel.tracer != nil {
		if store, err = instrumented.New(store, instrumented.Config{Metrics: tel.registerer(), TracerProvider: tel.tracerProvider()}); err != nil {
			return err
		}
	}
	cfg := orgadmin.Config{MaxUsersPerOrg: *maxUsers, MaxEmbedSessionsPerUser: *maxSessions}
	if *auditLog {
		cfg.AuditLog = log
	}
	svc := orgadmin.New(store, cfg)

	// Listen first: a start that cannot serve changes nothing in the
	// store.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close() // closed by Shutdown already, unless set-up fails
	setupCtx, cancel := context.WithTimeout(ctx, setupLimit)
	defer cancel()
	if *seedFile != "" {
		if getenv("ORGADMIN_ADMIN_TOKEN") != "" {
			log.Warn("ORGADMIN_ADMIN_TOKEN is ignored with -seed: the fixture's tokens are the credentials")
		}
		if err := loadSeed(setupCtx, svc, *seedFile); err != nil {
			if errors.Is(setupCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("%w (loading the seed took longer than %s; start again to load the rest)", err, setupLimit)
			}
			return err
		}
	} else if err := bootstrap(setupCtx, svc, getenv("ORGADMIN_ADMIN_TOKEN"), log, logs, stderr); err != nil {
		return err
	}

	// Request lines go straight to logs, as slog's JSON handler would
	// write them, at a fraction of its cost (httpserver.LogRequestsTo).
	srv := newHTTPServer(routes(
		httpserver.New(svc, httpserver.Config{Logger: log, RequestLog: logs,
			Metrics: tel.registerer(), TracerProvider: tel.tracerProvider()}),
		httpserver.LogRequestsTo(logs, log, httpserver.Health(svc)),
		httpserver.NewFeedback(svc, httpserver.FeedbackConfig{Logger: log, RequestLog: logs,
			Metrics: tel.registerer(), TracerProvider: tel.tracerProvider()})), log)
	// Requests run on a context of their own, not ctx (which the first
	// signal ends): those still under way once the shutdown's grace has
	// passed are canceled, and end as a client that left does, answered
	// and logged (499), at a store call's end, rather than cut wherever the
	// exit finds them.
	requestsCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv.BaseContext = func(net.Listener) context.Context { return requestsCtx }
	conns := &openConns{}
	srv.ConnState = conns.track
	var underWay sync.WaitGroup
	api := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		underWay.Add(1)
		defer underWay.Done()
		api.ServeHTTP(w, r)
	})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "store", storeKind(*storeURI))
	_ = logs.Flush() // whoever waits for the server sees how it started
	if ready != nil {
		ready(ln.Addr())
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), *grace)
	defer cancelShutdown()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("requests still under way after the shutdown grace: canceling them", "grace", grace.String())
		cancelRequests()
		conns.endReads()
		ended := make(chan struct{})
		go func() { underWay.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(canceledRequestsWait):
		}
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// routes serves /healthz with health, the page-feedback path with
// feedback and every other path with api, the Handler with the /v1 routes
// of its own: a switch on the two exact paths spares every API request a
// second ServeMux. An unclean path (//v1/users, /v1/./users, /healthz/)
// is never one of the two, so api answers it a plain-text 404, where a
// ServeMux would redirect it to its clean form. An escaped slash (%2F) is
// part of its element, as the API's own routes take it: a path with one
// is neither of the two.
func routes(api, health, feedback http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if raw := r.URL.RawPath; raw != "" && (strings.Contains(raw, "%2F") || strings.Contains(raw, "%2f")) {
			p = "" // RawPath is set only for a path escaped unusually
		}
		switch p {
		case "/healthz":
			health.ServeHTTP(w, r)
		case httpserver.FeedbackPath:
			feedback.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}

// adminTaken reports whether err is Bootstrap's refusal of the username
// for what the store holds (a user of that name that is not an Admin, or
// an organization at its limit of users without it), and its message.
// The username being this file's constant, no other issue of it can be.
func adminTaken(err error) (string, bool) {
	var e *orgadmin.Error
	if !errors.As(err, &e) || e.Code != orgadmin.CodeBadRequest {
		return "", false
	}
	for _, is := range e.Issues {
		if is.Path.String() == "username" {
			return is.Message, true
		}
	}
	return "", false
}

// setupLimit bounds the seed's loading or the bootstrap at start: a store
// that does not answer stops the start rather than hang it. A loading
// cut short is completed by the next start.
var setupLimit = time.Minute

// bootstrap makes sure the org "default" and its Admin "admin" exist, with
// envToken (when set) or a newly minted token, printed once to stderr, as
// the Admin's only bootstrap token: the one an earlier start made is
// revoked. An envToken that was revoked since it was last used works
// again, as the operator's word: log gets a warning that says so (the
// store remembers a revocation for Config.RevokedTokenRetention). logs is
// flushed first, so that the lines before it come first.
//
// A restart on a store where "admin" can no longer be bootstrapped (an
// Admin deleted it, and then made a service account ADMIN, or filled the
// organization) starts without a bootstrap token, with a warning that
// says why: a restart must not fail, and the organization's other Admins
// hold its administration.
func bootstrap(ctx context.Context, svc *orgadmin.Service, envToken string, log *slog.Logger, logs *delayedWriter, stderr io.Writer) error {
	revoked := false
	if envToken != "" {
		_, err := svc.Authenticate(ctx, envToken)
		revoked = errors.Is(err, orgadmin.ErrRevokedToken)
	}
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "default", Username: "admin", Token: envToken})
	if why, ok := adminTaken(err); ok {
		log.Warn("no bootstrap token: admin \"admin\" of org \"default\" cannot be bootstrapped (" + why + "); the organization's other Admins administer it")
		_ = logs.Flush()
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if revoked && token != "" {
		log.Warn("ORGADMIN_ADMIN_TOKEN had been revoked; it is again the bootstrap token of admin \"admin\" of org \"default\" (set another value to retire it)")
	}
	_ = logs.Flush()
	switch {
	case token == "":
		fmt.Fprintln(stderr, "admin \"admin\" of org \"default\" holds the maximum number of tokens, none of them a bootstrap token: no bootstrap token made (revoke one, then restart)")
	case envToken == "":
		fmt.Fprintf(stderr, "admin token for org \"default\", user \"admin\" (shown once): %s\n", token)
	}
	return nil
}

// loadSeed applies the fixture in file; any broken rule stops the server
// with a message naming the entry.
func loadSeed(ctx context.Context, svc *orgadmin.Service, file string) error {
	f, err := os.Open(file) // #nosec G304 -- the operator names the seed file (-seed)
	if err != nil {
		return err
	}
	defer f.Close()
	seed, err := orgadmin.DecodeSeed(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := svc.ApplySeed(ctx, seed); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
