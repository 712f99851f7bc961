package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
)

// quietProxy forwards TCP connections to a server; once quiet, it stops
// passing the server's answers on, and closes got when a request comes in
// then: a database that stopped answering.
type quietProxy struct {
	addr  string
	quiet atomic.Bool
	got   chan struct{}
	once  sync.Once
}

func newQuietProxy(t *testing.T, upstream string) *quietProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &quietProxy{addr: l.Addr().String(), got: make(chan struct{})}
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, u)
			mu.Unlock()
			go p.pipe(u, c, true)
			go p.pipe(c, u, false)
		}
	}()
	return p
}

func (p *quietProxy) pipe(dst, src net.Conn, request bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if quiet := p.quiet.Load(); quiet && request {
				p.once.Do(func() { close(p.got) })
			} else if quiet {
				continue
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A request still under way when the shutdown's grace has passed is
// canceled: it ends at its store call, answered and logged, before the
// server exits, rather than cut where the exit finds it.
func TestShutdownCancelsRequestsLeftAfterTheGrace(t *testing.T) {
	u, err := url.Parse(testdb.Postgres(t))
	require.NoError(t, err)
	p := newQuietProxy(t, u.Host)
	u.Host = p.addr
	const token = "admin-token-of-the-shutdown-test"

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stderr := &syncBuffer{}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-store", u.String(), "-shutdown-grace", "1ms"},
			func(k string) string { return map[string]string{"ORGADMIN_ADMIN_TOKEN": token}[k] }, stderr, func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("server did not start: %v\n%s", err, stderr)
	}

	p.quiet.Store(true)
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr.String()+"/v1/users", strings.NewReader(`{"username":"robot"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()
	<-p.got // the request waits on the store
	stop()  // SIGTERM
	select {
	case err := <-done:
		require.ErrorContains(t, err, "shutdown")
	case <-time.After(time.Minute):
		t.Fatal("the server still runs a minute after its shutdown")
	}
	log := stderr.String()
	require.Contains(t, log, "requests still under way after the shutdown grace")
	require.Contains(t, log, `"path":"/v1/users"`, "the canceled request is logged: %s", log)
	require.Contains(t, log, `"status":499`)
	require.NotContains(t, log, `"level":"ERROR"`)
	require.Equal(t, 499, <-answered)
}
