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

// Floor target names: the least a server can do for each workload on
// each store (baseline.Floor), one lookup of the bearer's digest.
const (
	bareName  = "bare"           // in a map: the memory store's floor
	redisName = "bare+redis-get" // one Redis GET
	// One GET through a Redis Cluster client.
	clusterName = "bare+cluster-get"
	mongoName   = "bare+mongo-find" // one MongoDB find by _id
	// The floors of the SQL stores: one lookup by primary key.
	pgName     = "bare+pg-lookup"
	sqliteName = "bare+sqlite-lookup"
)

// floors name the floor of each store.
var floors = map[string]string{
	"memory":        bareName,
	"redis":         redisName,
	"redis-cluster": clusterName,
	"mongodb":       mongoName,
	"postgres":      pgName,
	"sqlite":        sqliteName,
}

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
// and workload, and their ratios to its floor.
type row struct {
	Target, Kind, Workload string
	Skip                   string
	Runs                   int
	RPS                    float64
	P50, P99               time.Duration
	CPU                    time.Duration // per request
	// DBCPU is the database processes' CPU time per request, when DB
	// says it was measured.
	DBCPU  time.Duration
	DB     bool
	Errors int64 // status >= 400 and socket errors, over every run
	Floor  string
	// Ratios are medians over the repeats of the ratio within each
	// repeat, so that both figures of a ratio come from the same round.
	RatioRPS, RatioP50, RatioP99, RatioCPU float64
}

// baselineOf names the target a target's workload is compared with, in
// the same repeat and on the same workload: a store (of either build) its
// store's floor (memory: bare, redis: bare+redis-get, mongodb:
// bare+mongo-find, postgres and sqlite: their lookup by primary key), the
// other floors and Prism the bare one; "" when that did not run, and for
// the bare floor.
func baselineOf(t *target, workload string, have map[string]bool) string {
	f := bareName
	if t.Kind == kindStore {
		f = floors[storeOf(t.Name)]
	}
	if t.Name == f || !have[f] {
		return ""
	}
	return f
}

// rows builds the table of targets for workloads (in order): for each
// workload, each floor and the stores held to it, then the other targets,
// in the order of targets; a skipped target is one row at the end that
// says why.
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
		for _, t := range byFloor(targets, w, have) {
			rw := row{Target: t.Name, Kind: t.Kind, Workload: w}
			r.fill(&rw, baselineOf(t, w, have))
			out = append(out, rw)
		}
	}
	return append(out, skipped...)
}

// byFloor returns the targets that serve w, each floor followed by the
// stores held to it on w, in the order of targets.
func byFloor(targets []*target, w string, have map[string]bool) []*target {
	var out []*target
	placed := map[*target]bool{}
	for _, t := range targets {
		if !t.serves(w) || placed[t] {
			continue
		}
		out = append(out, t)
		placed[t] = true
		if t.Kind != kindFloor {
			continue
		}
		for _, s := range targets {
			if s.Kind == kindStore && s.serves(w) && !placed[s] && baselineOf(s, w, have) == t.Name {
				out = append(out, s)
				placed[s] = true
			}
		}
	}
	return out
}

// fill sets the medians and ratios of rw.
func (r *results) fill(rw *row, floor string) {
	ss := r.samples[key{rw.Target, rw.Workload}]
	rw.Runs = len(ss)
	var rps, p50, p99, cpu, db []float64
	for _, s := range ss {
		rps = append(rps, s.RPS())
		p50 = append(p50, float64(s.P50))
		p99 = append(p99, float64(s.P99))
		cpu = append(cpu, float64(s.CPUPerRequest()))
		if s.DB {
			db = append(db, float64(s.DBCPUPerRequest()))
		}
		rw.Errors += s.StatusErrors + s.SocketErrors
	}
	rw.RPS = median(rps)
	rw.P50 = time.Duration(median(p50))
	rw.P99 = time.Duration(median(p99))
	rw.CPU = time.Duration(median(cpu))
	rw.DB, rw.DBCPU = len(db) > 0, time.Duration(median(db))
	if floor == "" {
		return
	}
	rw.Floor = floor
	rw.RatioRPS, rw.RatioP50, rw.RatioP99, rw.RatioCPU = r.pairedRatios(key{rw.Target, rw.Workload}, key{floor, rw.Workload})
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

// goalRatios are what each store's requests/s over its floor's, on the
// same workload in one run, must reach; and every answer a success, with
// no socket error, at -connections (32).
var goalRatios = map[string]map[string]float64{
	"memory":  {listTokens: 0.8, getConfig: 0.8, setConfig: 0.8, createToken: 0.8, listUsers: 0.7},
	"redis":   {listTokens: 0.7, getConfig: 0.7, setConfig: 0.6, createToken: 0.6, listUsers: 0.5},
	"mongodb": {listTokens: 0.5, getConfig: 0.5, setConfig: 0.3, createToken: 0.3, listUsers: 0.1},
}

// goalStores are the stores with goals, in the order the goals table
// lists them; reportedStores are held to their floor without a goal, and
// listed when they ran.
var (
	goalStores     = []string{"memory", "redis", "mongodb"}
	reportedStores = []string{"redis-cluster", "postgres", "sqlite"}
)

// prismGoal is how many times the memory store's list-tokens throughput
// must be Prism's.
const prismGoal = 10

// goal is one of the targets the figures are held to: a store's
// requests/s over its floor's on one workload.
type goal struct {
	Store, Workload, Floor string
	// Ran says both the store and its floor ran the workload; Measured
	// is then the ratio, 0 when the store answered nothing in time.
	Ran      bool
	Measured float64
	// FromCPU is the same ratio as the CPU time per request predicts it
	// (the floor's over the store's), which other work on the machine
	// moves far less.
	FromCPU float64
	Min     float64 // 0: reported only
	// Errors counts the store's answers of status 400 or more and socket
	// errors over every run; FloorErrors the floor's, which make the
	// ratio invalid.
	Errors, FloorErrors int64
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

// fmtShort writes by how much a ratio falls short of its goal, to three
// decimals or two significant digits.
func fmtShort(x float64) string {
	if x >= 0.001 {
		return fmt.Sprintf("%.3fx", x)
	}
	return fmt.Sprintf("%.2gx", x)
}

// verdict says whether g is met: its ratio at least Min and no errors.
// A missed goal says by how much, and how many failed answers.
func (g goal) verdict() string {
	switch {
	case !g.Ran:
		return "not measured"
	case g.FloorErrors > 0:
		return fmt.Sprintf("invalid: %d errors of the floor", g.FloorErrors)
	}
	var why []string
	if g.Min > 0 && g.Measured < g.Min {
		why = append(why, "by "+fmtShort(g.Min-g.Measured))
	}
	if g.Errors > 0 {
		why = append(why, fmt.Sprintf("%d non-2xx", g.Errors))
	}
	switch {
	case g.Min == 0 && g.Errors > 0:
		return fmt.Sprintf("reported (%d non-2xx)", g.Errors)
	case g.Min == 0:
		return "reported"
	case len(why) == 0:
		return "met"
	}
	return "MISSED " + strings.Join(why, ", ")
}

// want writes the goal's minimum, with ge as "at least".
func (g goal) want(ge string) string {
	if g.Min == 0 {
		return "report"
	}
	return fmt.Sprintf("%s %gx", ge, g.Min)
}

// goals evaluates every store's goal on every workload of rows (the
// stores without a run say "not measured"), the SQL stores' ratios when
// they ran, and the memory store over Prism when Prism was asked for.
func (r *results) goals(rows []row) []goal {
	find := func(target, workload string) *row {
		for i := range rows {
			if rows[i].Target == target && rows[i].Workload == workload && rows[i].Skip == "" {
				return &rows[i]
			}
		}
		return nil
	}
	var workloads []string
	prism := false
	for _, rw := range rows {
		if rw.Skip == "" && !slices.Contains(workloads, rw.Workload) {
			workloads = append(workloads, rw.Workload)
		}
		prism = prism || rw.Target == "prism"
	}
	ratio := func(g goal) goal {
		a, b := find(g.Store, g.Workload), find(g.Floor, g.Workload)
		if a == nil || b == nil {
			return g
		}
		var cpu float64
		g.Ran = true
		g.Measured, _, _, cpu = r.pairedRatios(key{a.Target, g.Workload}, key{b.Target, g.Workload})
		if cpu > 0 {
			g.FromCPU = 1 / cpu
		}
		g.Errors, g.FloorErrors = a.Errors, b.Errors
		return g
	}
	var out []goal
	for _, s := range goalStores {
		for _, w := range workloads {
			out = append(out, ratio(goal{Store: s, Workload: w, Floor: floors[s], Min: goalRatios[s][w]}))
		}
	}
	for _, s := range reportedStores {
		for _, w := range workloads {
			if g := ratio(goal{Store: s, Workload: w, Floor: floors[s]}); g.Ran {
				out = append(out, g)
			}
		}
	}
	if prism {
		out = append(out, ratio(goal{Store: "memory", Workload: listTokens, Floor: "prism", Min: prismGoal}))
	}
	return out
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

// fmtName writes a name, or "-" for none.
func fmtName(name string) string {
	if name == "" {
		return "-"
	}
	return name
}

// cells returns the columns of rw as the table shows them.
func (rw row) cells() []string {
	if rw.Skip != "" {
		c := make([]string, len(header))
		c[0], c[1], c[2] = rw.Target, rw.Workload, "skipped: "+rw.Skip
		return c
	}
	db := "-"
	if rw.DB {
		db = fmtLatency(rw.DBCPU)
		if rw.DBCPU == 0 {
			db = "0"
		}
	}
	return []string{rw.Target, rw.Workload, fmtRPS(rw.RPS), fmtLatency(rw.P50), fmtLatency(rw.P99), fmtLatency(rw.CPU), db,
		fmtErrors(rw.Errors), fmtName(rw.Floor), fmtRatio(rw.RatioRPS), fmtRatio(rw.RatioP50), fmtRatio(rw.RatioP99), fmtRatio(rw.RatioCPU)}
}

var header = []string{"target", "workload", "req/s", "p50", "p99", "cpu/req", "db cpu/req", "errors", "floor", "req/s ratio", "p50 ratio", "p99 ratio", "cpu/req ratio"}

// goalsHeader heads the goals table.
var goalsHeader = []string{"goal: store", "workload", "floor", "req/s ratio", "by cpu/req", "wanted", "non-2xx", "verdict (on req/s)"}

// cells returns the columns of g as the goals table shows them, with ge
// for "at least".
func (g goal) cells(ge string) []string {
	errs, measured := "-", fmtGoal(g.Measured)
	if g.Ran {
		errs = fmt.Sprint(g.Errors)
		if g.Measured == 0 {
			measured = "0x"
		}
	}
	return []string{g.Store, g.Workload, g.Floor, measured, fmtGoal(g.FromCPU), g.want(ge), errs, g.verdict()}
}

// writeTable prints rows and goals as aligned text.
func writeTable(w io.Writer, rows []row, goals []goal) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, rw := range rows {
		fmt.Fprintln(tw, strings.Join(rw.cells(), "\t"))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, strings.Join(goalsHeader, "\t"))
	for _, g := range goals {
		fmt.Fprintln(tw, strings.Join(g.cells(">="), "\t"))
	}
	return tw.Flush()
}

// markdownTables returns rows and goals as Markdown tables.
func markdownTables(rows []row, goals []goal) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i < 2 || header[i] == "floor" {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, rw := range rows {
		b.WriteString("| " + strings.Join(rw.cells(), " | ") + " |\n")
	}
	b.WriteString("\n| " + strings.Join(goalsHeader, " | ") + " |\n|---|---|---|--:|--:|--:|--:|---|\n")
	for _, g := range goals {
		b.WriteString("| " + strings.Join(g.cells("≥"), " | ") + " |\n")
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
	// Floor is the floor both rows are compared with, or "";
	// Before and After are their req/s ratios to it.
	Floor         string
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
		if a.Floor != "" && a.Floor == b.Floor {
			c.Floor, c.Before, c.After = a.Floor, b.RatioRPS, a.RatioRPS
		}
		out = append(out, c)
	}
	return out
}

// changesTitle introduces the after ÷ before table.
const changesTitle = "After ÷ before: each store's figures over its " + beforeSuffix + "'s, within each repeat, then the median over the repeats; " +
	"beside them, both builds' req/s ratios to the floor (as in the table above) and their difference."

var changesHeader = []string{"after ÷ before", "workload", "req/s", "cpu/req", "errors", "floor", "req/s ratio before", "req/s ratio after", "difference"}

// cells returns the columns of c as the after ÷ before table shows them.
func (c change) cells() []string {
	diff := "-"
	if c.Before > 0 && c.After > 0 {
		diff = fmt.Sprintf("%+.2f", c.After-c.Before)
	}
	return []string{c.Store, c.Workload, fmtRatio(c.RPS), fmtRatio(c.CPU), fmtErrors(c.Errors),
		fmtName(c.Floor), fmtRatio(c.Before), fmtRatio(c.After), diff}
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
	bareName:                       "#8c8c8c",
	redisName:                      "#c4c4c4",
	clusterName:                    "#bcbcbc",
	mongoName:                      "#a0a0a0",
	pgName:                         "#b0b0b0",
	sqliteName:                     "#d8d8d8",
	"postgres":                     "#76b7b2",
	"sqlite":                       "#b07aa1",
	"postgres" + beforeSuffix:      "#b9dcd9",
	"sqlite" + beforeSuffix:        "#d8bdd1",
	"memory":                       "#4e79a7",
	"redis":                        "#e15759",
	"redis-cluster":                "#9c755f",
	"redis-cluster" + beforeSuffix: "#cdb7aa",
	"mongodb":                      "#59a14f",
	"prism":                        "#f28e2b",
	// The -before build: paler.
	"memory" + beforeSuffix:  "#a7bcd3",
	"redis" + beforeSuffix:   "#f0abac",
	"mongodb" + beforeSuffix: "#acd0a7",
}

// chartSVG draws the median requests/s of every measured row as
// horizontal bars, one group per workload, and in it each floor (grey)
// with the targets held to it right under it, drawn to its scale: the
// floor's bar has the full width, so that a target's bar is as long as its
// ratio to the floor (up to 1.3), with a dashed mark at the goal's ratio.
// A target with no floor in the run is drawn to the scale of the
// workload's fastest one.
func chartSVG(rows []row, goals []goal, title string) string {
	const (
		width  = 860
		left   = 170 // label column
		full   = 440 // a floor's bar
		barMax = full * 13 / 10
		barH   = 15
		gap    = 3
		unitH  = 8 // between units
		groupH = 26
		top    = 60
	)
	type bar struct {
		row   row
		ratio float64 // of full; 1 for a floor
		goal  float64 // the goal's ratio, or 0
	}
	type unit struct {
		floor string // "" for none
		bars  []bar
	}
	var groups []string
	units := map[string][]*unit{}
	fastest := map[string]float64{}
	for _, rw := range rows {
		if rw.Skip != "" {
			continue
		}
		if _, ok := units[rw.Workload]; !ok {
			groups = append(groups, rw.Workload)
		}
		fastest[rw.Workload] = max(fastest[rw.Workload], rw.RPS)
		var anchor *unit
		for _, u := range units[rw.Workload] {
			if rw.Kind != kindFloor && u.floor != "" && u.floor == rw.Floor {
				anchor = u
			}
		}
		switch {
		case rw.Kind == kindFloor:
			units[rw.Workload] = append(units[rw.Workload], &unit{floor: rw.Target, bars: []bar{{row: rw, ratio: 1}}})
		case anchor != nil:
			b := bar{row: rw, ratio: rw.RatioRPS}
			for _, g := range goals {
				if g.Store == storeOf(rw.Target) && g.Workload == rw.Workload && g.Floor == anchor.floor {
					b.goal = g.Min
				}
			}
			anchor.bars = append(anchor.bars, b)
		default:
			units[rw.Workload] = append(units[rw.Workload], &unit{bars: []bar{{row: rw, ratio: -1}}})
		}
	}
	height := top + 10
	for _, g := range groups {
		height += groupH
		for _, u := range units[g] {
			height += len(u.bars)*(barH+gap) + unitH
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="10" y="40" fill="#555555">median requests/s; grey: each store's floor, full width; under it, what is held to it, drawn to its scale;</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="54" fill="#555555">a bar's length is its ratio to the floor (the figure in brackets); dashed: the goal</text>`+"\n")
	y := top
	for _, g := range groups {
		y += groupH
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y-8, html.EscapeString(g))
		for _, u := range units[g] {
			for _, br := range u.bars {
				rw := br.row
				ratio := br.ratio
				if ratio < 0 && fastest[g] > 0 {
					ratio = rw.RPS / fastest[g]
				}
				w := min(max(ratio, 0)*full, barMax)
				c := colors[rw.Target]
				if c == "" {
					c = "#76b7b2"
				}
				label := fmtRPS(rw.RPS)
				if u.floor != "" && rw.Target != u.floor {
					label += " (" + fmtRatio(rw.RatioRPS) + ")"
				}
				if rw.Errors > 0 {
					label += " (errors: invalid)"
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-3, html.EscapeString(rw.Target))
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, w, barH, c)
				end := float64(left) + w
				if br.goal > 0 {
					gx := float64(left) + br.goal*full
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333333" stroke-dasharray="3 2"/>`+"\n", gx, y-1, gx, y+barH+1)
					end = max(end, gx)
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", end+6, y+barH-3, html.EscapeString(label))
				y += barH + gap
			}
			y += unitH
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}
