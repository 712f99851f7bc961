package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a server the harness started, in a process group of its own
// (npx starts node as a child), with its output in a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProcess runs argv pinned to cpu (when not "") with its standard
// output and error in dir/name.log.
func startProcess(dir, name, cpu string, env []string, argv ...string) (*process, error) {
	if cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	logFile := fmt.Sprintf("%s/%s.log", dir, name)
	f, err := os.Create(logFile) // #nosec G304 -- a log file in the harness's own work directory
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...) // #nosec G204 -- the servers the harness starts, with arguments it makes
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop ends the process group with SIGTERM, then SIGKILL after ten
// seconds, and waits for the process.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls check until it succeeds, the process exits, or limit
// passes.
func (p *process) waitReady(ctx context.Context, limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before it was ready:\n%s", p.name, p.err, p.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.name, limit, err, p.logTail())
		}
	}
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// get sends one request and returns the status and body.
func get(ctx context.Context, method, url, token, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

var httpClient = &http.Client{Timeout: 60 * time.Second}

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// cpuTime returns the CPU time (user and system) used so far by the
// processes of p's process group, or 0 when /proc cannot tell.
func (p *process) cpuTime() time.Duration {
	if p == nil {
		return 0
	}
	pgid := p.cmd.Process.Pid
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		if group, t, ok := parseStat(string(b)); ok && group == pgid {
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// parseStat returns the process group and the user plus system ticks of a
// /proc/PID/stat line.
func parseStat(stat string) (pgrp int, ticks int64, ok bool) {
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(f[2])
	u, err2 := strconv.ParseInt(f[11], 10, 64)
	s, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return g, u + s, true
}

// logSize returns the current size of the process's log.
func (p *process) logSize() int64 {
	fi, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// failures reads the server's request log from offset on and returns how
// many requests ended with each status of 400 or more, and the first
// internal error it logged.
func (p *process) failures(offset int64) (map[int]int, string) {
	f, err := os.Open(p.log)
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, ""
	}
	return scanFailures(f)
}

var (
	statusField = regexp.MustCompile(`"msg":"request".*"status":(\d+)`)
	errorField  = regexp.MustCompile(`"msg":"internal error".*"error":"((?:[^"\\]|\\.)*)"`)
)

// scanFailures reads JSON log lines of the server (see failures).
func scanFailures(r io.Reader) (map[int]int, string) {
	counts := map[int]int{}
	first := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := statusField.FindStringSubmatch(line); m != nil {
			if st, _ := strconv.Atoi(m[1]); st >= 400 {
				counts[st]++
			}
		} else if m := errorField.FindStringSubmatch(line); m != nil && first == "" {
			first = m[1]
		}
	}
	return counts, first
}

// settle waits until the process group has been idle for 200 ms, or for
// limit: requests wrk gave up on may still be running (a database that
// answers slowly), and must not eat into the next target's run.
func (p *process) settle(ctx context.Context, limit time.Duration) {
	if p == nil {
		return
	}
	waitIdle(ctx, p.cpuTime, p.done, limit)
}

// waitIdle waits until cpu, a CPU time so far, grows by less than a tick
// in 200 ms, until done is closed, or for limit.
func waitIdle(ctx context.Context, cpu func() time.Duration, done <-chan struct{}, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last := cpu()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-time.After(200 * time.Millisecond):
		}
		now := cpu()
		if now-last < time.Second/userHZ {
			return
		}
		last = now
	}
}

// pidsCPU returns the CPU time (user and system) used so far by the
// processes pids, those that still run.
func pidsCPU(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		if _, t, ok := parseStat(string(b)); ok {
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// databasePIDs returns the process ids in $LOADHARNESS_DATABASE_PIDS
// (scripts/loadharness.sh sets it to the databases it started).
func databasePIDs() ([]int, error) {
	var pids []int
	for _, f := range strings.Fields(os.Getenv("LOADHARNESS_DATABASE_PIDS")) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("LOADHARNESS_DATABASE_PIDS: %q is not a process id", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
