package main

import (
	"bufio"
	"bytes"
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

	"github.com/orgadmin/orgadmin/internal/baseline"
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

// startProcess runs argv pinned to cpu (when not "") with stdin (when not
// nil) on its standard input and its standard output and error in
// dir/name.log.
func startProcess(dir, name, cpu string, env []string, stdin []byte, argv ...string) (*process, error) {
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
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
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
	a, err := send(ctx, method, url, token, body)
	return a.Status, a.Body, err
}

// send sends one request and returns the answer: status, Content-Type
// and body.
func send(ctx context.Context, method, url, token, body string) (baseline.Answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return baseline.Answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return baseline.Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return baseline.Answer{}, err
	}
	if len(b) > maxAnswer {
		return baseline.Answer{}, fmt.Errorf("%s %s: the answer exceeds %d bytes", method, url, maxAnswer)
	}
	return baseline.Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}, nil
}

// maxAnswer bounds an answer the harness reads (a CPU profile is the
// largest).
const maxAnswer = 64 << 20

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
		if st, ok := parseStat(string(b)); ok && st.pgrp == pgid {
			ticks += st.ticks
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// stat is what the harness reads of a /proc/PID/stat line.
type stat struct {
	ppid, pgrp int
	ticks      int64 // user plus system CPU time, in 1/userHZ s
}

// parseStat returns the parent, the process group and the user plus
// system ticks of a /proc/PID/stat line.
func parseStat(line string) (stat, bool) {
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): ppid is field 4, pgrp 5, utime 14, stime 15.
	if len(f) < 13 {
		return stat{}, false
	}
	p, err0 := strconv.Atoi(f[1])
	g, err1 := strconv.Atoi(f[2])
	u, err2 := strconv.ParseInt(f[11], 10, 64)
	s, err3 := strconv.ParseInt(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{ppid: p, pgrp: g, ticks: u + s}, true
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
// processes pids that still run and by their descendants: PostgreSQL
// serves each connection in a child process of its own.
func pidsCPU(pids []int) time.Duration {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	stats := map[int]stat{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, ok := parseStat(string(b)); ok {
			stats[pid] = st
		}
	}
	return time.Duration(treeTicks(stats, pids)) * time.Second / userHZ
}

// treeTicks returns the ticks of the processes roots of stats (by process
// id) and of all their descendants.
func treeTicks(stats map[int]stat, roots []int) int64 {
	in := map[int]bool{}
	for _, p := range roots {
		in[p] = true
	}
	var ticks int64
	for pid, st := range stats {
		// Walk up to a root, or to the top; a parent loop cannot last
		// longer than there are processes.
		for p, n := pid, 0; p > 0 && n <= len(stats); n++ {
			if in[p] {
				ticks += st.ticks
				break
			}
			p = stats[p].ppid
		}
	}
	return ticks
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
