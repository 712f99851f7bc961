package main

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Baseline target names.
const (
	bareName  = "bare"
	redisName = "bare+redis-get"
	// The floors of the SQL stores: one lookup by primary key.
	pgName     = "bare+pg-lookup"
	sqliteName = "bare+sqlite-lookup"
)

// results holds every measured sample, one per repeat, in repeat order.
type results struct {
	samples map[key][]sample
}

type key struct{ Target, Workload string }

func (r *results) add(target, workload string, s sample) {
	if r.samples == nil {
		r.samples = map[key][]sample{}
	}
	k := key{target, workload}
	r.samples[k] = append(r.samples[k], s)
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// row is one line of the table: medians over the repeats of one target
// and workload, and their ratios to the baseline.
type row struct {
	Target, Kind, Workload string
	Skip                   string
	Runs                   int
	RPS                    float64
	P50, P99               time.Duration
	CPU                    time.Duration // per request
	Errors                 int64         // status >= 400 and socket errors, over every run
	Baseline               string
	// Ratios are medians over the repeats of the ratio within each
	// repeat, so that both figures of a ratio come from the same round.
	RatioRPS, RatioP50, RatioP99, RatioCPU float64
}

// baselineOf names the row a target's workload is compared with: the bare
// baseline, except for the Redis store's list-tokens (of either build),
// compared with the baseline that makes one Redis GET.
func baselineOf(t *target, workload string, have map[string]bool) string {
	switch {
	case t.Name == bareName:
		return ""
	case storeOf(t.Name) == "redis" && workload == listTokens && have[redisName]:
		return redisName
	case storeOf(t.Name) == "postgres" && workload == listTokens && have[pgName]:
		return pgName
	case storeOf(t.Name) == "sqlite" && workload == listTokens && have[sqliteName]:
		return sqliteName
	case have[bareName]:
		return bareName
	}
	return ""
}

// rows builds the table of targets (in order) for workloads (in order);
// a skipped target is one row at the end that says why.
func (r *results) rows(targets []*target, workloads []string) []row {
	have := map[string]bool{}
	for _, t := range targets {
		have[t.Name] = t.Skip == ""
	}
	var out, skipped []row
	for _, t := range targets {
		if t.Skip != "" {
			skipped = append(skipped, row{Target: t.Name, Kind: t.Kind, Workload: "-", Skip: t.Skip})
		}
	}
	for _, w := range workloads {
		for _, t := range targets {
			if !t.serves(w) {
				continue
			}
			rw := row{Target: t.Name, Kind: t.Kind, Workload: w}
			r.fill(&rw, baselineOf(t, w, have))
			out = append(out, rw)
		}
	}
	return append(out, skipped...)
}

// fill sets the medians and ratios of rw.
func (r *results) fill(rw *row, baseline string) {
	ss := r.samples[key{rw.Target, rw.Workload}]
	rw.Runs = len(ss)
	var rps, p50, p99, cpu []float64
	for _, s := range ss {
		rps = append(rps, s.RPS())
		p50 = append(p50, float64(s.P50))
		p99 = append(p99, float64(s.P99))
		cpu = append(cpu, float64(s.CPUPerRequest()))
		rw.Errors += s.StatusErrors + s.SocketErrors
	}
	rw.RPS = median(rps)
	rw.P50 = time.Duration(median(p50))
	rw.P99 = time.Duration(median(p99))
	rw.CPU = time.Duration(median(cpu))
	if baseline == "" {
		return
	}
	rw.Baseline = baseline
	rw.RatioRPS, rw.RatioP50, rw.RatioP99, rw.RatioCPU = r.pairedRatios(key{rw.Target, rw.Workload}, key{baseline, listTokens})
}

// pairedRatios returns the medians over repeats of a/b for requests/s,
// both latencies and the CPU time per request.
func (r *results) pairedRatios(a, b key) (rps, p50, p99, cpu float64) {
	as, bs := r.samples[a], r.samples[b]
	var xs, ys, zs, cs []float64
	for i := range min(len(as), len(bs)) {
		if bs[i].RPS() > 0 && bs[i].P50 > 0 && bs[i].P99 > 0 {
			xs = append(xs, as[i].RPS()/bs[i].RPS())
			ys = append(ys, float64(as[i].P50)/float64(bs[i].P50))
			zs = append(zs, float64(as[i].P99)/float64(bs[i].P99))
		}
		if ac, bc := as[i].CPUPerRequest(), bs[i].CPUPerRequest(); ac > 0 && bc > 0 {
			cs = append(cs, float64(ac)/float64(bc))
		}
	}
	return median(xs), median(ys), median(zs), median(cs)
}

// goal is one of the targets the figures are held to.
type goal struct {
	What     string
	Measured float64 // 0 when not measured
	// FromCPU is the same ratio as the CPU time per request predicts it
	// (b's over a's), which other work on the machine moves far less.
	FromCPU float64
	Min     float64 // 0: reported only
	Invalid bool    // a run behind it had errors
}

// fmtGoal writes a ratio with one more digit than the table, so that a
// ratio just under its goal does not read as equal to it.
func fmtGoal(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x < 0.1:
		return fmt.Sprintf("%.3gx", x)
	case x < 10:
		return fmt.Sprintf("%.3fx", x)
	}
	return fmt.Sprintf("%.1fx", x)
}

func (g goal) verdict() string {
	switch {
	case g.Measured == 0:
		return "not measured"
	case g.Invalid:
		return "invalid (errors)"
	case g.Min == 0:
		return "reported"
	case g.Measured >= g.Min:
		return "met"
	}
	return "MISSED"
}

// goals evaluates the throughput targets on the list-tokens workload.
func (r *results) goals(rows []row) []goal {
	find := func(target string) *row {
		for i := range rows {
			if rows[i].Target == target && rows[i].Workload == listTokens && rows[i].Skip == "" {
				return &rows[i]
			}
		}
		return nil
	}
	ratio := func(g goal, a, b string) goal {
		ra, rb := find(a), find(b)
		if ra == nil || rb == nil {
			return g
		}
		var cpu float64
		g.Measured, _, _, cpu = r.pairedRatios(key{a, listTokens}, key{b, listTokens})
		if cpu > 0 {
			g.FromCPU = 1 / cpu
		}
		g.Invalid = ra.Errors > 0 || rb.Errors > 0
		return g
	}
	return []goal{
		ratio(goal{What: "memory store / bare net/http", Min: 0.85}, "memory", bareName),
		ratio(goal{What: "Redis store / bare net/http + one Redis GET", Min: 0.6}, "redis", redisName),
		ratio(goal{What: "MongoDB store / bare net/http"}, "mongodb", bareName),
		ratio(goal{What: "PostgreSQL store / bare net/http + one PostgreSQL lookup"}, "postgres", pgName),
		ratio(goal{What: "SQLite store / bare net/http + one SQLite lookup"}, "sqlite", sqliteName),
		ratio(goal{What: "memory store / Prism mock", Min: 10}, "memory", "prism"),
	}
}

func fmtLatency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func fmtRatio(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x < 0.1:
		return fmt.Sprintf("%.2gx", x)
	}
	return fmt.Sprintf("%.2fx", x)
}

func fmtRPS(x float64) string {
	if x < 10 {
		return fmt.Sprintf("%.2g", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func fmtErrors(n int64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d INVALID", n)
}

// fmtBaseline names the baseline of a workload's row, and its workload
// when another.
func fmtBaseline(baseline, workload string) string {
	switch {
	case baseline == "":
		return "-"
	case workload != listTokens:
		return baseline + " (" + listTokens + ")"
	}
	return baseline
}

// cells returns the columns of rw as the table shows them.
func (rw row) cells() []string {
	if rw.Skip != "" {
		c := make([]string, len(header))
		c[0], c[1], c[2] = rw.Target, rw.Workload, "skipped: "+rw.Skip
		return c
	}
	return []string{rw.Target, rw.Workload, fmtRPS(rw.RPS), fmtLatency(rw.P50), fmtLatency(rw.P99), fmtLatency(rw.CPU),
		fmtErrors(rw.Errors), fmtBaseline(rw.Baseline, rw.Workload), fmtRatio(rw.RatioRPS), fmtRatio(rw.RatioP50), fmtRatio(rw.RatioP99), fmtRatio(rw.RatioCPU)}
}

var header = []string{"target", "workload", "req/s", "p50", "p99", "cpu/req", "errors", "baseline", "req/s ratio", "p50 ratio", "p99 ratio", "cpu/req ratio"}

// writeTable prints rows and goals as aligned text.
func writeTable(w io.Writer, rows []row, goals []goal) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, rw := range rows {
		fmt.Fprintln(tw, strings.Join(rw.cells(), "\t"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "list-tokens goal\treq/s ratio\tby cpu/req\twanted\tverdict (on req/s)")
	for _, g := range goals {
		want := "report"
		if g.Min > 0 {
			want = fmt.Sprintf(">= %gx", g.Min)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.What, fmtGoal(g.Measured), fmtGoal(g.FromCPU), want, g.verdict())
	}
	return tw.Flush()
}

// markdownTables returns rows and goals as Markdown tables.
func markdownTables(rows []row, goals []goal) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i < 2 || i == 7 {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, rw := range rows {
		c := rw.cells()
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
	b.WriteString("\n| list-tokens goal | req/s ratio | by cpu/req | wanted | verdict (on req/s) |\n|---|--:|--:|--:|---|\n")
	for _, g := range goals {
		want := "report"
		if g.Min > 0 {
			want = fmt.Sprintf("≥ %gx", g.Min)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", g.What, fmtGoal(g.Measured), fmtGoal(g.FromCPU), want, g.verdict())
	}
	return b.String()
}

// change compares the figures of a store on one workload under the
// working tree's build (after) and the -before build.
type change struct {
	Store, Workload string
	// RPS and CPU (per request) are medians over the repeats of after ÷
	// before within each repeat, as the ratios of a row are.
	RPS, CPU float64
	Errors   int64 // of both, over every run
	// Baseline is the baseline both rows are compared with, or "";
	// Before and After are their req/s ratios to it.
	Baseline      string
	Before, After float64
}

// changes pairs every measured row of a store with the row of its @before,
// in the order of rows.
func (r *results) changes(rows []row) []change {
	before := map[key]row{}
	for _, rw := range rows {
		if s, ok := strings.CutSuffix(rw.Target, beforeSuffix); ok && rw.Skip == "" {
			before[key{s, rw.Workload}] = rw
		}
	}
	var out []change
	for _, a := range rows {
		b, ok := before[key{a.Target, a.Workload}]
		if !ok {
			continue
		}
		c := change{Store: a.Target, Workload: a.Workload, Errors: a.Errors + b.Errors}
		c.RPS, _, _, c.CPU = r.pairedRatios(key{a.Target, a.Workload}, key{b.Target, b.Workload})
		if a.Baseline != "" && a.Baseline == b.Baseline {
			c.Baseline, c.Before, c.After = a.Baseline, b.RatioRPS, a.RatioRPS
		}
		out = append(out, c)
	}
	return out
}

// changesTitle introduces the after ÷ before table.
const changesTitle = "After ÷ before: each store's figures over its " + beforeSuffix + "'s, within each repeat, then the median over the repeats; " +
	"beside them, both builds' req/s ratios to the baseline (as in the table above) and their difference."

var changesHeader = []string{"after ÷ before", "workload", "req/s", "cpu/req", "errors", "baseline", "req/s ratio before", "req/s ratio after", "difference"}

// cells returns the columns of c as the after ÷ before table shows them.
func (c change) cells() []string {
	diff := "-"
	if c.Before > 0 && c.After > 0 {
		diff = fmt.Sprintf("%+.2f", c.After-c.Before)
	}
	return []string{c.Store, c.Workload, fmtRatio(c.RPS), fmtRatio(c.CPU), fmtErrors(c.Errors),
		fmtBaseline(c.Baseline, c.Workload), fmtRatio(c.Before), fmtRatio(c.After), diff}
}

// writeChanges prints the after ÷ before table as aligned text.
func writeChanges(w io.Writer, changes []change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(changesHeader, "\t"))
	for _, c := range changes {
		fmt.Fprintln(tw, strings.Join(c.cells(), "\t"))
	}
	return tw.Flush()
}

// markdownChanges returns the after ÷ before table in Markdown.
func markdownChanges(changes []change) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(changesHeader, " | ") + " |\n|---|---|--:|--:|--:|---|--:|--:|--:|\n")
	for _, c := range changes {
		b.WriteString("| " + strings.Join(c.cells(), " | ") + " |\n")
	}
	return b.String()
}

// Markers of the part of BENCHMARKS.md the harness rewrites.
const (
	sectionBegin = "<!-- loadharness:begin -->"
	sectionEnd   = "<!-- loadharness:end -->"
)

// replaceSection replaces what lies between the markers in doc with body.
func replaceSection(doc, body string) (string, error) {
	i := strings.Index(doc, sectionBegin)
	j := strings.Index(doc, sectionEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %s ... %s section to replace", sectionBegin, sectionEnd)
	}
	return doc[:i+len(sectionBegin)] + "\n" + strings.TrimSpace(body) + "\n" + doc[j:], nil
}

// colors of the chart's bars by target.
var colors = map[string]string{
	bareName:                  "#8c8c8c",
	redisName:                 "#c4c4c4",
	pgName:                    "#b0b0b0",
	sqliteName:                "#d8d8d8",
	"postgres":                "#76b7b2",
	"sqlite":                  "#b07aa1",
	"postgres" + beforeSuffix: "#b9dcd9",
	"sqlite" + beforeSuffix:   "#d8bdd1",
	"memory":                  "#4e79a7",
	"redis":                   "#e15759",
	"mongodb":                 "#59a14f",
	"prism":                   "#f28e2b",
	// The -before build: paler.
	"memory" + beforeSuffix:  "#a7bcd3",
	"redis" + beforeSuffix:   "#f0abac",
	"mongodb" + beforeSuffix: "#acd0a7",
}

// chartSVG draws the median requests/s of every measured row as
// horizontal bars, one group per workload, all on one scale, with a dashed
// line at the bare baseline's figure.
func chartSVG(rows []row, title string) string {
	const (
		width  = 760
		left   = 150 // label column
		barMax = 480
		barH   = 16
		gap    = 4
		groupH = 26
		top    = 56
	)
	type bar struct {
		label string
		value float64
		color string
		bad   bool
	}
	var groups []string
	bars := map[string][]bar{}
	scale, bare := 0.0, 0.0
	for _, rw := range rows {
		if rw.Skip != "" {
			continue
		}
		if _, ok := bars[rw.Workload]; !ok {
			groups = append(groups, rw.Workload)
		}
		c := colors[rw.Target]
		if c == "" {
			c = "#76b7b2"
		}
		bars[rw.Workload] = append(bars[rw.Workload], bar{rw.Target, rw.RPS, c, rw.Errors > 0})
		scale = max(scale, rw.RPS)
		if rw.Target == bareName {
			bare = rw.RPS
		}
	}
	x := func(v float64) float64 {
		if scale <= 0 {
			return left
		}
		return left + v/scale*barMax
	}
	height := top + 10
	for _, g := range groups {
		height += groupH + len(bars[g])*(barH+gap) + 8
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="10" y="40" fill="#555555">median requests/s, one scale; grey: the bare net/http baselines; dashed: the bare baseline's list-tokens</text>`+"\n")
	// Under the bars and their figures.
	if bare > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333333" stroke-dasharray="4 3"/>`+"\n", x(bare), top, x(bare), height-10)
	}
	y := top
	for _, g := range groups {
		y += groupH
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y-8, html.EscapeString(g))
		for _, br := range bars[g] {
			label := fmtRPS(br.value)
			if br.bad {
				label += " (errors: invalid)"
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-4, html.EscapeString(br.label))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, x(br.value)-left, barH, br.color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x(br.value)+6, y+barH-4, html.EscapeString(label))
			y += barH + gap
		}
		y += 8
	}
	b.WriteString("</svg>\n")
	return b.String()
}
