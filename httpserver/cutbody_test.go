package httpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/everystore"
)

// A body cut off gets the answer its cut body is due, on every store:
// 401 for a credential that does not authenticate, else 400 "Body could
// not be read", though net/http ends the request's context when the read
// fails (a store that looks at its context first answered 499 to a client
// still waiting). That holds for each operation with a body when the
// server's read timeout cuts it, and for the log line of a client that
// hangs up while it sends one. Nothing is stored.
func TestCutBodyGetsItsAnswerOnEveryStore(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		svc := orgadmin.New(k.Open(t).Store, orgadmin.Config{})
		token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: acme, Username: "admin"})
		require.NoError(t, err)
		var log syncBuffer
		srv := httptest.NewUnstartedServer(httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&log, nil))}))
		srv.Config.ReadTimeout = 300 * time.Millisecond
		srv.Start()
		t.Cleanup(srv.Close)

		// send starts a request whose body of 100 bytes stops after its first.
		send := func(t *testing.T, method, path, auth string) net.Conn {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
			_, err = io.WriteString(c, method+" "+path+" HTTP/1.1\r\nHost: orgadmin.test\r\nAuthorization: "+auth+
				"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"username\": \"cut\", \"description\": \"")
			require.NoError(t, err)
			return c
		}
		answer := func(t *testing.T, c net.Conn) (int, envelope) {
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			defer res.Body.Close()
			var env envelope
			require.NoError(t, json.NewDecoder(res.Body).Decode(&env))
			return res.StatusCode, env
		}

		for _, op := range []struct{ method, path string }{
			{"POST", "/v1/users"},
			{"POST", "/v1/users/admin/tokens"},
			{"PUT", "/v1/users/admin/instances"},
			{"POST", "/v1/dives/0b0d4c6e-8d5c-4a43-9d6a-3f1f1b2f4c11/embed-session"},
		} {
			t.Run(op.method+" "+op.path, func(t *testing.T) {
				status, env := answer(t, send(t, op.method, op.path, bearer(token)))
				require.Equal(t, http.StatusBadRequest, status, "%+v", env)
				assert.Equal(t, "BAD_REQUEST", env.Code)
				require.Len(t, env.Issues, 1)
				assert.Equal(t, "Body could not be read", env.Issues[0].Message)
				assert.Empty(t, env.Issues[0].Path)
			})
		}
		status, env := answer(t, send(t, "POST", "/v1/users", bearer("not-a-token-of-anyone")))
		require.Equal(t, http.StatusUnauthorized, status, "%+v", env)

		// A client that hangs up: its line says 400, as the README has it.
		before := strings.Count(log.String(), "\n")
		require.NoError(t, send(t, "POST", "/v1/users", bearer(token)).Close())
		require.Eventually(t, func() bool { return strings.Count(log.String(), "\n") > before }, 10*time.Second, 5*time.Millisecond)
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &line))
		assert.EqualValues(t, http.StatusBadRequest, line["status"], "%s", lines[len(lines)-1])
		assert.NotContains(t, log.String(), token)

		_, err = svc.GetUser(t.Context(), acme, "cut")
		assert.ErrorIs(t, err, orgadmin.ErrNotFound)
	})
}
