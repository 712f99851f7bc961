package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server as a process of its own: this test's binary, run again with
// ORGADMIN_TEST_MAIN=1, is main with the arguments after it.
const mainEnv = "ORGADMIN_TEST_MAIN"

// A second signal ends the server at once, where the first one waits for
// the requests under way.
func TestSecondSignalEndsTheServerAtOnce(t *testing.T) {
	if os.Getenv(mainEnv) == "1" {
		os.Args = []string{"server", "-addr", "127.0.0.1:0"}
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalEndsTheServerAtOnce$") // #nosec G204 -- this test's own binary
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	// waitFor returns the first line of standard error that holds s.
	waitFor := func(s string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), s) {
				return lines.Text()
			}
		}
		t.Fatalf("the server's standard error ended without %q", s)
		return ""
	}
	var listening struct{ Addr string }
	require.NoError(t, json.Unmarshal([]byte(waitFor(`"msg":"listening"`)), &listening))
	addr := listening.Addr

	// A request under way: its handler reads a body that never comes
	// (the 100 Continue says that it has started).
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprint(conn, "POST /v1/users HTTP/1.1\r\nHost: orgadmin.test\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor(`"msg":"shutting down"`)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the server ended with %v", err)
	ws := exit.Sys().(syscall.WaitStatus)
	assert.True(t, ws.Signaled(), "ended by the second signal, not after the requests under way (%v)", err)
	assert.Equal(t, syscall.SIGTERM, ws.Signal())
}
