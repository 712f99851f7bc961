package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
)

// shutdownToken is the Admin's token in the shutdown tests.
const shutdownToken = "admin-token-of-the-shutdown-test"

// startStoppable starts the server with a shutdown grace of 1 ms and
// args, and returns its address and shutdown: it sends the server the
// signal, requires that it end saying the shutdown had to cancel
// requests, and returns what it wrote on standard error.
func startStoppable(t *testing.T, args ...string) (addr net.Addr, shutdown func() string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	stderr := &syncBuffer{}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-shutdown-grace", "1ms"}, args...),
			func(k string) string { return map[string]string{"ORGADMIN_ADMIN_TOKEN": shutdownToken}[k] }, stderr, func(a net.Addr) { addrc <- a })
	}()
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("server did not start: %v\n%s", err, stderr)
	}
	return addr, func() string {
		stop() // SIGTERM
		select {
		case err := <-done:
			require.ErrorContains(t, err, "shutdown")
		case <-time.After(time.Minute):
			t.Fatal("the server still runs a minute after its shutdown")
		}
		return stderr.String()
	}
}

// A request still under way when the shutdown's grace has passed is
// canceled: it ends at its store call, answered and logged, before the
// server exits, rather than cut where the exit finds it.
func TestShutdownCancelsRequestsLeftAfterTheGrace(t *testing.T) {
	u, err := url.Parse(testdb.Postgres(t))
	require.NoError(t, err)
	p := testdb.NewQuietProxy(t, u.Host)
	u.Host = p.Addr()
	addr, shutdown := startStoppable(t, "-store", u.String())

	p.SetQuiet(true)
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+addr.String()+"/v1/users", strings.NewReader(`{"username":"robot"}`))
		req.Header.Set("Authorization", "Bearer "+shutdownToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()
	<-p.Got() // the request waits on the store
	log := shutdown()
	require.Contains(t, log, "requests still under way after the shutdown grace")
	require.Contains(t, log, `"path":"/v1/users"`, "the canceled request is logged: %s", log)
	require.Contains(t, log, `"status":499`)
	require.NotContains(t, log, `"level":"ERROR"`)
	require.Equal(t, 499, <-answered)
}

// A request whose client sends its body slowly is canceled at the end of
// the grace as well: its read of the body ends at once, and it is
// answered and logged (the 400 of a body cut off) before the server
// exits, rather than left reading until its read timeout.
func TestShutdownEndsABodyStillArriving(t *testing.T) {
	addr, shutdown := startStoppable(t)

	conn, err := net.Dial("tcp", addr.String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("POST /v1/users HTTP/1.1\r\nHost: orgadmin\r\nAuthorization: Bearer " + shutdownToken +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"))
	require.NoError(t, err)
	// net/http sends 100 Continue once the handler reads the body.
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, res.StatusCode)
	_, err = conn.Write([]byte(`{"user`))
	require.NoError(t, err)
	answered := make(chan string, 1)
	go func() {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			answered <- err.Error()
			return
		}
		res.Body.Close()
		answered <- res.Status
	}()
	log := shutdown() // the body not all sent
	require.Contains(t, log, `"path":"/v1/users","status":400`, "the canceled request is logged: %s", log)
	require.Equal(t, "400 Bad Request", <-answered)
}

// A connection whose request net/http read as the shutdown ended the
// reads (and so set its deadline after endReads had) has its reads ended
// as the request begins; one still open is cut at once, and one closed
// is forgotten.
func TestEndReadsReachesEveryConnection(t *testing.T) {
	var o openConns
	open, openPeer := net.Pipe()
	defer openPeer.Close()
	closed, closedPeer := net.Pipe()
	defer closedPeer.Close()
	o.track(open, http.StateNew)
	o.track(closed, http.StateNew)
	o.track(closed, http.StateClosed)
	require.Len(t, o.open, 1)

	o.endReads()
	requireReadEnds(t, open)

	late, latePeer := net.Pipe()
	defer latePeer.Close()
	o.track(late, http.StateNew)
	require.NoError(t, late.SetReadDeadline(time.Now().Add(time.Hour))) // as net/http does
	o.track(late, http.StateActive)
	requireReadEnds(t, late)
}

// requireReadEnds requires that a read of c fail at its deadline, which
// has passed; it gives up after a minute of waiting.
func requireReadEnds(t *testing.T, c net.Conn) {
	t.Helper()
	failed := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		failed <- err
	}()
	select {
	case err := <-failed:
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	case <-time.After(time.Minute):
		c.Close()
		t.Fatal("the read still waits")
	}
}
