package testdb

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// QuietProxy forwards TCP connections to a server. Once made quiet, it
// stops passing the server's answers on, and closes Got when a request
// comes in after that: a database that went quiet, whose client waits on
// an answer that is not coming.
type QuietProxy struct {
	addr  string
	quiet atomic.Bool
	got   chan struct{}
	once  sync.Once
}

// NewQuietProxy starts a proxy to upstream (HOST:PORT) on a free
// loopback port; it and its connections are closed when t ends.
func NewQuietProxy(t testing.TB, upstream string) *QuietProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testdb: proxy: %v", err)
	}
	p := &QuietProxy{addr: l.Addr().String(), got: make(chan struct{})}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	closed := false
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		closed = true
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	conns.Add(1)
	go func() {
		defer conns.Done()
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
			if closed {
				mu.Unlock()
				_, _ = c.Close(), u.Close()
				return
			}
			open = append(open, c, u)
			mu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); p.pipe(u, c, true) }()
			go func() { defer conns.Done(); p.pipe(c, u, false) }()
		}
	}()
	return p
}

// Addr is the proxy's HOST:PORT.
func (p *QuietProxy) Addr() string { return p.addr }

// SetQuiet makes the proxy drop the server's answers (true) or pass them
// on again (false).
func (p *QuietProxy) SetQuiet(quiet bool) { p.quiet.Store(quiet) }

// Got is closed once a request has come in while the proxy was quiet.
func (p *QuietProxy) Got() <-chan struct{} { return p.got }

// pipe copies from src to dst: requests (from the client) close got
// while quiet; answers are dropped while quiet.
func (p *QuietProxy) pipe(dst, src net.Conn, request bool) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			quiet := p.quiet.Load()
			if quiet && request {
				p.once.Do(func() { close(p.got) })
			}
			if quiet && !request {
				continue
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
