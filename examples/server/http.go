package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the HTTP server, so that a slow or idle client cannot hold a
// connection (and its goroutine) for long, nor send headers of any size.
// Request bodies are bounded by the /v1 Handler itself (1 MiB, a 400
// beyond); the other routes read none.
const (
	// readHeaderTimeout bounds the time to read the request line and
	// headers: a client that trickles them is cut off.
	readHeaderTimeout = 5 * time.Second
	// readTimeout bounds the time to read a whole request, body included.
	readTimeout = 30 * time.Second
	// writeTimeout bounds the time from the end of the request headers to
	// the end of the response: answerMargin more than readTimeout, so
	// that a request whose body stopped coming still gets its answer (a
	// 400: the body could not be read) before the connection is closed.
	writeTimeout = readTimeout + answerMargin
	answerMargin = 5 * time.Second
	// idleTimeout bounds how long a keep-alive connection waits for its
	// next request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds the request line and headers; beyond it the
	// answer is 431 Request Header Fields Too Large.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer returns the server of h with the limits above; its own
// errors (a client's TLS or protocol mistakes) go to log as warnings.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           lastIfChunked(h),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// lastIfChunked serves h, closing the connection after the answer to a
// chunked request. A request may come with both Transfer-Encoding and
// Content-Length, which a proxy in front may frame by the length and
// net/http by the chunks; RFC 9112 §6.1 then has the server close the
// connection after answering, so that no bytes the two read differently
// are taken for another request. net/http drops the Content-Length of
// such a request without a trace, so every chunked request is the last
// of its connection (clients of this API send small bodies, with a
// length).
func lastIfChunked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// openConns is the set of a server's open connections, kept by its
// ConnState hook, so that the shutdown can end the reads of the requests
// it cancels: one that waits on a client sending its body slowly then
// ends at once, answered (the 400 of a body cut off) and logged, rather
// than cut at the exit. It costs a connection two updates of the set and
// a request nothing but a load of a flag.
type openConns struct {
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	ending atomic.Bool
}

// track is the server's ConnState hook.
func (o *openConns) track(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		o.mu.Lock()
		if o.open == nil {
			o.open = make(map[net.Conn]struct{})
		}
		o.open[c] = struct{}{}
		o.mu.Unlock()
	case http.StateActive:
		// net/http sets a connection's read deadline as it reads a
		// request's headers, before this state: a request read while
		// endReads ran gets its deadline here.
		if o.ending.Load() {
			_ = c.SetReadDeadline(time.Now())
		}
	case http.StateClosed, http.StateHijacked:
		o.mu.Lock()
		delete(o.open, c)
		o.mu.Unlock()
	}
}

// endReads makes every read of every open connection fail at once, from
// now on.
func (o *openConns) endReads() {
	o.ending.Store(true)
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.open {
		_ = c.SetReadDeadline(time.Now())
	}
}
