package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// request is one HTTP request a workload sends.
type request struct {
	Method string
	Path   string
	Body   string // "" for none
}

// script is what wrk sends to a target: the requests, taken in turn by
// every connection, with the bearer token of the caller.
type script struct {
	Token    string
	Requests []request
}

// resultMark starts the line the generated done() callback prints.
const resultMark = "loadharness-result"

// lua returns the wrk script of s. A single request is set on wrk itself,
// so wrk sends it without calling Lua; several are formatted once in init
// and cycled by request(), each thread from its own offset. done() prints
// one resultMark line that parseResult reads.
func (s script) lua() string {
	var b strings.Builder
	b.WriteString("-- Written by bench/loadharness; each run writes it anew.\n")
	fmt.Fprintf(&b, "wrk.headers[\"Authorization\"] = %s\n", luaString("Bearer "+s.Token))
	if len(s.Requests) == 1 {
		r := s.Requests[0]
		fmt.Fprintf(&b, "wrk.method = %s\nwrk.path = %s\n", luaString(r.Method), luaString(r.Path))
		if r.Body != "" {
			fmt.Fprintf(&b, "wrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = %s\n", luaString(r.Body))
		}
	} else {
		b.WriteString("local list = {\n")
		for _, r := range s.Requests {
			body := "nil"
			if r.Body != "" {
				body = luaString(r.Body)
			}
			fmt.Fprintf(&b, "  {%s, %s, %s},\n", luaString(r.Method), luaString(r.Path), body)
		}
		b.WriteString(`}
local threads = 0
setup = function(thread)
  thread:set("offset", threads)
  threads = threads + 1
end
local reqs = {}
local i = 0
init = function(args)
  for k, r in ipairs(list) do
    local headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
    if r[3] then headers["Content-Type"] = "application/json" end
    reqs[k] = wrk.format(r[1], r[2], headers, r[3])
  end
  i = ((offset or 0) * 7919) % #reqs
end
request = function()
  i = i + 1
  if i > #reqs then i = 1 end
  return reqs[i]
end
`)
	}
	b.WriteString(`done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("` + resultMark + ` requests=%d duration_us=%d p50_us=%d p99_us=%d status_errors=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
`)
	return b.String()
}

// luaString quotes s as a Lua string literal.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sample is what one wrk run measured.
type sample struct {
	Requests int64
	Duration time.Duration
	P50, P99 time.Duration
	// StatusErrors counts answers of status 400 or more; SocketErrors
	// counts connect, read and write errors and timeouts.
	StatusErrors, SocketErrors int64
	// CPU is the CPU time the target's processes used during the run
	// (not its database's), 0 when unknown.
	CPU time.Duration
	// DBCPU is the CPU time the database processes used during the run,
	// when DB says it was measured (a target that uses a database, with
	// the database processes known).
	DBCPU time.Duration
	DB    bool
}

// CPUPerRequest returns the target's CPU time per request, or 0.
func (s sample) CPUPerRequest() time.Duration {
	if s.Requests == 0 {
		return 0
	}
	return s.CPU / time.Duration(s.Requests)
}

// DBCPUPerRequest returns the database's CPU time per request, or 0.
func (s sample) DBCPUPerRequest() time.Duration {
	if s.Requests == 0 {
		return 0
	}
	return s.DBCPU / time.Duration(s.Requests)
}

// RPS returns the requests per second of s.
func (s sample) RPS() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Requests) / s.Duration.Seconds()
}

// parseResult reads the resultMark line of wrk's output.
func parseResult(out []byte) (sample, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != resultMark {
			continue
		}
		v := map[string]int64{}
		for _, f := range fields[1:] {
			k, val, ok := strings.Cut(f, "=")
			n, err := strconv.ParseInt(val, 10, 64)
			if !ok || err != nil {
				return sample{}, fmt.Errorf("wrk result: bad field %q", f)
			}
			v[k] = n
		}
		for _, k := range []string{"requests", "duration_us", "p50_us", "p99_us", "status_errors", "connect_errors", "read_errors", "write_errors", "timeouts"} {
			if _, ok := v[k]; !ok {
				return sample{}, fmt.Errorf("wrk result: no %s in %q", k, sc.Text())
			}
		}
		return sample{
			Requests:     v["requests"],
			Duration:     time.Duration(v["duration_us"]) * time.Microsecond,
			P50:          time.Duration(v["p50_us"]) * time.Microsecond,
			P99:          time.Duration(v["p99_us"]) * time.Microsecond,
			StatusErrors: v["status_errors"],
			SocketErrors: v["connect_errors"] + v["read_errors"] + v["write_errors"] + v["timeouts"],
		}, nil
	}
	return sample{}, fmt.Errorf("wrk printed no %s line:\n%s", resultMark, out)
}

// wrkRunner runs wrk with the same settings for every target.
type wrkRunner struct {
	Threads, Connections int
	Timeout              time.Duration
	CPU                  string // pin wrk to this CPU list; "" leaves it free
	Dir                  string // where scripts are written
	runs                 int
}

// run drives url with s for d and returns what wrk measured.
func (w *wrkRunner) run(ctx context.Context, url string, s script, d time.Duration) (sample, error) {
	w.runs++
	file := fmt.Sprintf("%s/run-%d.lua", w.Dir, w.runs)
	if err := os.WriteFile(file, []byte(s.lua()), 0o600); err != nil {
		return sample{}, err
	}
	defer os.Remove(file)
	args := []string{
		"-t", strconv.Itoa(w.Threads), "-c", strconv.Itoa(w.Connections),
		"-d", wrkSeconds(d), "--timeout", wrkSeconds(w.Timeout),
		"-s", file, url,
	}
	name := "wrk"
	if w.CPU != "" {
		args = append([]string{"-c", w.CPU, "wrk"}, args...)
		name = "taskset"
	}
	cmd := exec.CommandContext(ctx, name, args...) // #nosec G204 -- wrk (under taskset) with the harness's own settings
	out, err := cmd.CombinedOutput()
	if err != nil {
		return sample{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	return parseResult(out)
}

// wrkSeconds writes d as whole seconds, at least one, as wrk reads them.
func wrkSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10) + "s"
}
