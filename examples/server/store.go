package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
	"github.com/orgadmin/orgadmin/storage/redisstore"
	"github.com/orgadmin/orgadmin/storage/sqlstore"
)

// openStore opens the store a -store value names and returns it with a
// function that releases it; log receives what the store does in the
// background, and tp (when not nil) a span of each command the store's
// client sends.
func openStore(ctx context.Context, uri string, log *slog.Logger, tp trace.TracerProvider) (storage.Store, func(), error) {
	switch storeKind(uri) {
	case "memory":
		return memstore.New(), func() {}, nil
	case "redis", "rediss":
		return openRedis(ctx, uri, log, tp)
	case "mongodb", "mongodb+srv":
		return openMongo(ctx, uri, log, tp)
	case "postgres", "postgresql", "sqlite":
		s, err := sqlstore.Open(ctx, uri, sqlstore.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
		}
		return s, s.Close, nil
	default:
		return nil, nil, fmt.Errorf("-store %q: unsupported store (want memory, redis://HOST:PORT[/DB], mongodb://HOST:PORT/DB, postgres://USER@HOST:PORT/DB or sqlite:PATH)", redact(uri))
	}
}

// openRedis opens redis://HOST:PORT[/DB], or a Redis Cluster given as
// redis://HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3, with a span of each
// command to tp when it is not nil; what go-redis reports on its own goes
// to log. A URL without a host, and one naming a single node of a Cluster
// without the addr parameter (which would answer every command with
// MOVED), are refused.
func openRedis(ctx context.Context, uri string, log *slog.Logger, tp trace.TracerProvider) (storage.Store, func(), error) {
	redisLog.use(log)
	u, err := url.Parse(uri)
	if err != nil {
		return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
	}
	if u.Host == "" {
		return nil, nil, fmt.Errorf("-store %q: no HOST:PORT", redact(uri))
	}
	var c redis.UniversalClient
	if u.Query().Has("addr") {
		// go-redis ignores the path of a Cluster's URL.
		if db := strings.TrimPrefix(u.Path, "/"); db != "" && db != "0" {
			return nil, nil, fmt.Errorf("-store %q: a Redis Cluster has database 0 only", redact(uri))
		}
		opts, err := redis.ParseClusterURL(uri)
		if err != nil {
			return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
		}
		opts.ContextTimeoutEnabled = true
		c = redis.NewClusterClient(opts)
	} else {
		if db := strings.TrimPrefix(u.Path, "/"); db != "" {
			if n, err := strconv.Atoi(db); err != nil || n < 0 || strconv.Itoa(n) != db {
				return nil, nil, fmt.Errorf("-store %q: the database must be a number from 0", redact(uri))
			}
		}
		opts, err := redis.ParseURL(uri)
		if err != nil {
			return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
		}
		opts.ContextTimeoutEnabled = true
		c = redis.NewClient(opts)
		if clusterNode(ctx, c) {
			_ = c.Close()
			return nil, nil, fmt.Errorf("-store %q: the server is a node of a Redis Cluster: name the Cluster as redis://HOST:PORT?addr=HOST2:PORT2 (an addr for each other node)", redact(uri))
		}
	}
	if tp != nil {
		// The commands' text is left out: it holds the records.
		if err := redisotel.InstrumentTracing(c, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false)); err != nil {
			_ = c.Close()
			return nil, nil, err
		}
	}
	s, err := redisstore.New(c, redisstore.Options{})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	// Re-key what an earlier version stored under its username fold
	// before serving: one GET once done.
	if err := s.Migrate(ctx); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
	}
	return s, func() { _ = c.Close() }, nil
}

// clusterNode reports whether the server c talks to says it is a node of
// a Redis Cluster. A server that does not answer in time is not one here:
// the first command the store sends says what is wrong.
func clusterNode(ctx context.Context, c redis.UniversalClient) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// redisLog receives what go-redis reports on its own (a pool that cannot
// dial, say), which it would otherwise print on the process's standard
// error as plain text, among the server's JSON lines and in the middle of
// one that is being written. go-redis has one logger per process: the
// last server to open a Redis store (there is one, but for tests) gets
// the messages.
var redisLog redisLogger

type redisLogger struct {
	once sync.Once
	log  atomic.Pointer[slog.Logger]
}

// use makes log the one that receives go-redis's messages.
func (l *redisLogger) use(log *slog.Logger) {
	l.log.Store(log)
	l.once.Do(func() { redis.SetLogger(l) })
}

// Printf writes one of go-redis's messages as a warning.
func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if log := l.log.Load(); log != nil {
		log.WarnContext(ctx, "redis", "error", fmt.Sprintf(format, v...))
	}
}

// storeKind returns the scheme of a -store value ("memory" for memory,
// "sqlite" for sqlite:PATH).
func storeKind(uri string) string {
	if uri == "memory" || uri == "" {
		return "memory"
	}
	if strings.HasPrefix(uri, "sqlite:") {
		return "sqlite"
	}
	// Not net/url: a MongoDB replica set's URI lists several hosts.
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		return "invalid"
	}
	return scheme
}

// redact hides the secrets of a URI (a store's, the OTLP endpoint)
// before it is shown: the password of its user information, and the value
// of each query parameter that can hold one (PostgreSQL's password and sslpassword,
// MongoDB's tlsCertificateKeyFilePassword and authMechanismProperties,
// which carries AWS session tokens).
func redact(uri string) string {
	if storeKind(uri) == "sqlite" {
		return uri
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparseable)"
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			key, _, _ := strings.Cut(p, "=")
			if k, err := url.QueryUnescape(key); err != nil || secretParam(k) {
				params[i] = key + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.Redacted()
}

// secretParam reports whether the store URI's query parameter key may
// hold a secret.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"pass", "secret", "token", "key", "authmechanismproperties", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
