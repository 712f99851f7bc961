package orgadmin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/everystore"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// hangingUp is a store whose nth call hangs up the client of the request
// it serves, then waits until the server has seen it (the request's
// context is canceled) before the call goes on: a client that leaves in
// the middle of a write, at a known point. Zero never hangs up; calls
// counts the calls.
type hangingUp struct {
	storage.Store
	n      int
	hangUp context.CancelFunc

	mu    sync.Mutex
	calls int
	seen  bool // the server saw the hang-up in time
}

func (s *hangingUp) enter(ctx context.Context) {
	s.mu.Lock()
	s.calls++
	now := s.calls == s.n
	s.mu.Unlock()
	if !now {
		return
	}
	s.hangUp()
	select {
	case <-ctx.Done():
		s.mu.Lock()
		s.seen = true
		s.mu.Unlock()
	case <-time.After(10 * time.Second):
	}
}

// The calls a write makes; the reads of the checks go to the store
// directly.
func (s *hangingUp) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	s.enter(ctx)
	return s.Store.CreateUser(ctx, u, lim, a)
}

func (s *hangingUp) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	s.enter(ctx)
	return s.Store.GetUser(ctx, org, folded)
}

func (s *hangingUp) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	s.enter(ctx)
	return s.Store.SetInstances(ctx, org, userID, c, a)
}

func (s *hangingUp) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	s.enter(ctx)
	return s.Store.DeleteUser(ctx, org, userID, a)
}

func (s *hangingUp) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	s.enter(ctx)
	return s.Store.CreateToken(ctx, t, lim, a)
}

func (s *hangingUp) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	s.enter(ctx)
	return s.Store.ReadAccess(ctx, q)
}

func (s *hangingUp) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	s.enter(ctx)
	return s.Store.DeleteToken(ctx, org, userID, id, r, a)
}

func (s *hangingUp) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	s.enter(ctx)
	return s.Store.GetEmbedTarget(ctx, org, diveID, folded)
}

func (s *hangingUp) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	s.enter(ctx)
	return s.Store.CreateEmbedSession(ctx, es, lim, a)
}

func (s *hangingUp) AddFeedback(ctx context.Context, f storage.Feedback) error {
	s.enter(ctx)
	return s.Store.AddFeedback(ctx, f)
}

// httpWrite is a write over HTTP, checked as the cancelProbe of the same
// name checks it.
type httpWrite struct {
	probe        string
	method, path string
	body         string
	feedback     bool // sent to the feedback handler, without a token
}

func httpWrites(w *cancelWorld) []httpWrite {
	return []httpWrite{
		{probe: "CreateServiceAccount", method: "POST", path: "/v1/users", body: `{"username":"newbie"}`},
		{probe: "DeleteUser", method: "DELETE", path: "/v1/users/robot"},
		{probe: "SetInstanceConfig", method: "PUT", path: "/v1/users/robot/instances",
			body: `{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"mega","flock_size":7}}}`},
		{probe: "CreateToken", method: "POST", path: "/v1/users/robot/tokens", body: `{"name":"new"}`},
		{probe: "DeleteToken", method: "DELETE", path: "/v1/users/robot/tokens/" + w.robotTok.ID},
		{probe: "CreateEmbedSession", method: "POST", path: "/v1/dives/" + w.dive + "/embed-session", body: `{"username":"robot"}`},
		{probe: "SubmitFeedback", method: "GET", path: httpserver.FeedbackPath + "?page_path=/docs&text=fine", feedback: true},
	}
}

// syncLog is a log destination safe for the server's goroutines, read
// line by line.
type syncLog struct{ testdb.SyncBuffer }

func (l *syncLog) lines() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// settledGoroutines waits until no more than want goroutines run, and
// returns how many do then (more when they never settle, within 10s).
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// A client that hangs up in the middle of a write, at any of its store
// calls: the server logs the request once, at INFO, as 499 (or 200 when
// the write ran to its end regardless), and no internal error; no
// goroutine of the request outlives it; and what is stored is whole, as
// the Go probes check it, every event of the trail in Config.AuditLog.
func TestClientHangUpMidWrite(t *testing.T) {
	probes := map[string]cancelProbe{}
	for _, p := range cancelProbes() {
		probes[p.name] = p
	}
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		names := httpWrites(&cancelWorld{})
		for i := range names {
			t.Run(names[i].probe, func(t *testing.T) {
				// How many store calls the write makes when nothing hangs up.
				calls := func() int {
					w := newCancelWorld(t, k.Open(t).Store)
					s := &hangingUp{Store: w.store, hangUp: func() {}}
					hw := httpWrites(w)[i]
					srv := httptest.NewServer(hangUpHandler(orgadmin.New(s, probeConfig()), hw, slog.New(slog.DiscardHandler)))
					defer srv.Close()
					res, err := http.DefaultClient.Do(hangUpRequest(t, context.Background(), srv.URL, hw, w))
					require.NoError(t, err)
					res.Body.Close()
					require.Equal(t, http.StatusOK, res.StatusCode)
					return s.calls
				}()
				for n := 1; n <= calls; n++ {
					t.Run(fmt.Sprintf("call%d", n), func(t *testing.T) {
						w := newCancelWorld(t, k.Open(t).Store)
						hw := httpWrites(w)[i]
						ctx, hangUp := context.WithCancel(context.Background())
						defer hangUp()
						s := &hangingUp{Store: w.store, n: n, hangUp: hangUp}
						var log syncLog
						srv := httptest.NewServer(hangUpHandler(orgadmin.New(s, w.config()), hw, slog.New(slog.NewJSONHandler(&log, nil))))
						defer srv.Close()
						client := &http.Client{Transport: &http.Transport{}}
						defer client.CloseIdleConnections()
						before := runtime.NumGoroutine()

						_, err := client.Do(hangUpRequest(t, ctx, srv.URL, hw, w))
						require.ErrorIs(t, err, context.Canceled)
						var lines []map[string]any
						require.Eventually(t, func() bool { lines = log.lines(); return len(lines) > 0 }, 10*time.Second, 5*time.Millisecond, "the request is logged")
						require.True(t, s.seen, "the server saw the hang-up")
						require.Len(t, lines, 1, "one line, the request's: %v", lines)
						line := lines[0]
						require.Equal(t, "INFO", line["level"], "%v", line)
						status := line["status"].(float64)
						require.Contains(t, []float64{httpserver.StatusClientClosedRequest, http.StatusOK}, status, "%v", line)
						// The client's goroutines end with its connection; the
						// server's with the request.
						require.LessOrEqual(t, settledGoroutines(before), before, "goroutines left running")

						var werr error
						if status != http.StatusOK {
							werr = orgadmin.ErrCanceled
						}
						if v := probes[hw.probe].visible; v != nil {
							v(t, w, werr)
						}
						if c, ok := w.store.(cleaner); ok {
							_, cerr := c.Cleanup(context.Background(), time.Now().Add(time.Hour))
							require.NoError(t, cerr)
						}
						w.requireStreamed(t)
						probes[hw.probe].check(t, w, werr)
					})
				}
			})
		}
	})
}

func hangUpHandler(svc *orgadmin.Service, hw httpWrite, log *slog.Logger) http.Handler {
	if hw.feedback {
		return httpserver.NewFeedback(svc, httpserver.FeedbackConfig{Logger: log})
	}
	return httpserver.New(svc, httpserver.Config{Logger: log})
}

func hangUpRequest(t testing.TB, ctx context.Context, base string, hw httpWrite, w *cancelWorld) *http.Request {
	t.Helper()
	var body *strings.Reader
	if hw.body != "" {
		body = strings.NewReader(hw.body)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequestWithContext(ctx, hw.method, base+hw.path, body)
	} else {
		req, err = http.NewRequestWithContext(ctx, hw.method, base+hw.path, nil)
	}
	require.NoError(t, err)
	if !hw.feedback {
		req.Header.Set("Authorization", "Bearer "+w.adminToken)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}
