package orgadmintest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// lineTB is a testing.TB that records where a failure is reported the way
// the testing package does: at the first caller on the stack that did not
// call Helper.
type lineTB struct {
	testing.TB // the real test, for Cleanup and Context

	mu      sync.Mutex
	helpers map[string]bool // functions that called Helper
	at      string          // file:line of the failure
	msg     string
}

func newLineTB(t *testing.T) *lineTB {
	return &lineTB{TB: t, helpers: map[string]bool{}}
}

func (tb *lineTB) Helper() {
	var pc [1]uintptr
	runtime.Callers(2, pc[:]) // the caller of Helper, as the testing package finds it
	f, _ := runtime.CallersFrames(pc[:]).Next()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.helpers[f.Function] = true
}

func (tb *lineTB) Fatal(args ...any) { tb.fail(fmt.Sprint(args...)) }

func (tb *lineTB) Fatalf(format string, args ...any) { tb.fail(fmt.Sprintf(format, args...)) }

// fail records the failure's place and message and ends the goroutine, as
// FailNow does.
func (tb *lineTB) fail(msg string) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)]) // above fail and Fatal
	tb.mu.Lock()
	for {
		f, more := frames.Next()
		if !tb.helpers[f.Function] {
			tb.at = fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
			break
		}
		if !more {
			break
		}
	}
	tb.msg = msg
	tb.mu.Unlock()
	runtime.Goexit()
}

// failsAt runs call, on its own goroutine as a test's helpers would end
// it, and returns where the failure was reported and its message.
func (tb *lineTB) failsAt(call func()) (at, msg string) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		call()
	}()
	wg.Wait()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	at, msg, tb.at, tb.msg = tb.at, tb.msg, "", ""
	return at, msg
}

// lineOf returns file:line of the function literal f, which is written on
// one line.
func lineOf(f func()) string {
	pc := reflect.ValueOf(f).Pointer()
	file, line := runtime.FuncForPC(pc).FileLine(pc)
	return fmt.Sprintf("%s:%d", filepath.Base(file), line)
}

// Every helper reports its failure at the line of the test that called
// it, not inside the package.
func TestHelpersFailAtTheCallersLine(t *testing.T) {
	t.Parallel()
	tb := newLineTB(t)
	srv := orgadmintest.NewServer(tb)
	srv.CreateServiceAccount("robot")
	acme := srv.InOrg("acme")
	for name, call := range map[string]func(){
		"CreateServiceAccount":   func() { srv.CreateServiceAccount("9bad") },
		"CreateUser":             func() { srv.CreateUser(orgadmin.NewUser{Username: "robot"}) },
		"CreateToken":            func() { srv.CreateToken("ghost", orgadmin.CreateTokenInput{}) },
		"CreateToken ttl":        func() { srv.CreateToken("robot", orgadmin.CreateTokenInput{TTL: orgadmin.Some(time.Second)}) },
		"FastForward":            func() { srv.FastForward(-time.Second) },
		"SeedJSON syntax":        func() { srv.SeedJSON(`{`) },
		"SeedJSON rule":          func() { srv.SeedJSON(`{"organizations": [{"id": "default", "users": [{"username": "9bad"}]}]}`) },
		"Seed":                   func() { srv.Seed(orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{ID: "bad org"}}}) },
		"SeedFile":               func() { srv.SeedFile("testdata/missing.json") },
		"GrantPrivilege":         func() { srv.GrantPrivilege("ghost", orgadmin.PrivilegeViewAllMembers) },
		"RegisterDive":           func() { srv.RegisterDive(orgadmin.Dive{ID: "not-a-uuid"}) },
		"MarkDucklingActive":     func() { srv.MarkDucklingActive("ghost", "rw") },
		"MarkDucklingIdle":       func() { srv.MarkDucklingIdle("robot", "rs.64") },
		"Tokens":                 func() { srv.Tokens("ghost") },
		"InstanceConfig":         func() { srv.InstanceConfig("ghost") },
		"InOrg":                  func() { srv.InOrg("bad org") },
		"InOrg.CreateUser":       func() { acme.CreateUser(orgadmin.NewUser{Username: "_x"}) },
		"InOrg.CreateToken":      func() { acme.CreateToken("ghost", orgadmin.CreateTokenInput{}) },
		"InOrg.Tokens":           func() { acme.Tokens("ghost") },
		"InOrg.InstanceConfig":   func() { acme.InstanceConfig("ghost") },
		"InOrg.GrantPrivilege":   func() { acme.GrantPrivilege("ghost", "p") },
		"InOrg.MarkDucklingIdle": func() { acme.MarkDucklingIdle("ghost", "rw") },
		"InjectFault route":      func() { srv.InjectFault(orgadmintest.Fault{Route: "GET /v1/{bad", Status: 503}) },
		"InjectFault nothing":    func() { srv.InjectFault(orgadmintest.Fault{Route: "GET /v1/users"}) },
		"InjectFault both":       func() { srv.InjectFault(orgadmintest.Fault{Status: 503, Drop: true}) },
		"InjectFault times":      func() { srv.InjectFault(orgadmintest.Fault{Times: -1, Status: 503}) },
		"InjectFault after":      func() { srv.InjectFault(orgadmintest.Fault{AfterHandling: true, Delay: time.Second}) },
	} {
		at, msg := tb.failsAt(call)
		assert.Equal(t, lineOf(call), at, "%s: %s", name, msg)
		assert.True(t, strings.HasPrefix(msg, "orgadmintest: "), "%s: %q", name, msg)
	}
}

// NewServer itself fails at the test's line.
func TestNewServerFailsAtTheCallersLine(t *testing.T) {
	t.Parallel()
	tb := newLineTB(t)
	call := func() { orgadmintest.NewServer(tb, orgadmintest.WithAdminToken("short")) }
	at, msg := tb.failsAt(call)
	assert.Equal(t, lineOf(call), at)
	assert.Contains(t, msg, "orgadmintest: bootstrap")
}

// A Server of Run panics where a test's would fail.
func TestRunPanicsInsteadOfFailing(t *testing.T) {
	t.Parallel()
	srv, err := orgadmintest.Run(nil) // a nil Option is none
	require.NoError(t, err)
	defer srv.Close()
	assert.PanicsWithValue(t, "orgadmintest: FastForward(-1s): the clock only moves forward", func() { srv.FastForward(-time.Second) })
	assert.Panics(t, func() { srv.InOrg("acme").CreateServiceAccount("9bad") })
}

// The same with the testing package's own T: a test binary that runs a
// failing test reports it at the test's line.
func TestHelperFailureLineWithARealTest(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperFailingChild$", "-test.v")
	cmd.Env = append(os.Environ(), "ORGADMINTEST_FAILING_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the child test fails: %s", out)
	src, err := os.ReadFile("helper_test.go")
	require.NoError(t, err)
	line := slices.IndexFunc(strings.Split(string(src), "\n"), func(l string) bool {
		return strings.HasSuffix(l, "// the failing line")
	}) + 1
	require.Positive(t, line)
	assert.Contains(t, string(out), fmt.Sprintf("helper_test.go:%d: orgadmintest: create user 9bad: BAD_REQUEST", line), "%s", out)
}

// TestHelperFailingChild fails on purpose, when run by
// TestHelperFailureLineWithARealTest.
func TestHelperFailingChild(t *testing.T) {
	if os.Getenv("ORGADMINTEST_FAILING_CHILD") == "" {
		t.Skip("run by TestHelperFailureLineWithARealTest")
	}
	srv := orgadmintest.NewServer(t)
	srv.InOrg("acme").CreateServiceAccount("9bad") // the failing line
}

// A view of WithT fails its own test, not NewServer's nor (for a Server
// of Run) by a panic, at the caller's line; and it is the same Server: what
// one view creates, the other sees.
func TestWithTFailsItsOwnTest(t *testing.T) {
	t.Parallel()
	parent := newLineTB(t)
	srv := orgadmintest.NewServer(parent)
	shared, err := orgadmintest.Run()
	require.NoError(t, err)
	defer shared.Close()
	for name, s := range map[string]*orgadmintest.Server{"NewServer": srv, "Run": shared} {
		child := newLineTB(t)
		view := s.WithT(child)
		call := func() { view.CreateToken("ghost", orgadmin.CreateTokenInput{}) }
		at, msg := child.failsAt(call)
		assert.Equal(t, lineOf(call), at, "%s: %s", name, msg)
		assert.True(t, strings.HasPrefix(msg, "orgadmintest: "), "%s: %q", name, msg)

		view.CreateServiceAccount("bot")
		_, ok := s.User("bot")
		assert.True(t, ok, "%s: a user created through the view is the Server's", name)
		assert.Equal(t, s.URL(), view.URL(), name)
	}
	parent.mu.Lock()
	defer parent.mu.Unlock()
	assert.Empty(t, parent.msg, "NewServer's test did not fail")
}
