package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMedian(t *testing.T) {
	assert.Equal(t, 0.0, median(nil))
	assert.Equal(t, 5.0, median([]float64{5}))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	xs := []float64{3, 1, 2}
	median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "the input is left as it was")
}

// ms returns a sample of rps requests per second and the given latencies
// in milliseconds.
func ms(rps int64, p50, p99 float64) sample {
	return sample{Requests: rps, Duration: time.Second,
		P50: time.Duration(p50 * float64(time.Millisecond)), P99: time.Duration(p99 * float64(time.Millisecond))}
}

func testTargets() []*target {
	both := map[string]script{listTokens: {}, createToken: {}}
	return []*target{
		{Name: bareName, Kind: kindFloor, scripts: both},
		{Name: redisName, Kind: kindFloor, scripts: both, db: true},
		{Name: "prism", Kind: kindPrism, Skip: "npx not found"},
		{Name: "memory", Kind: kindStore, scripts: both},
		{Name: "redis", Kind: kindStore, scripts: both, db: true},
		{Name: "mongodb", Kind: kindStore, Skip: "no MongoDB"},
	}
}

// withCPU returns s with cpu of CPU time per request, and db of the
// database's when db > 0.
func withCPU(s sample, cpu, db time.Duration) sample {
	s.CPU = time.Duration(s.Requests) * cpu
	if db > 0 {
		s.DBCPU, s.DB = time.Duration(s.Requests)*db, true
	}
	return s
}

func testResults() *results {
	var r results
	// Three repeats; the ratios are taken within each repeat, on the
	// same workload.
	for _, s := range []sample{ms(10000, 1, 10), ms(20000, 1, 10), ms(12000, 2, 20)} {
		r.add(bareName, listTokens, withCPU(s, 40*time.Microsecond, 0))
	}
	for _, s := range []sample{ms(4000, 4, 40), ms(5000, 5, 50), ms(6000, 6, 60)} {
		r.add(redisName, listTokens, s)
	}
	for _, s := range []sample{ms(9000, 2, 20), ms(15000, 2, 20), ms(10800, 4, 40)} {
		r.add("memory", listTokens, withCPU(s, 60*time.Microsecond, 0))
	}
	for _, s := range []sample{ms(2400, 8, 80), ms(3500, 10, 100), ms(3600, 12, 120)} {
		r.add("redis", listTokens, s)
	}
	for range 3 {
		r.add(bareName, createToken, ms(10000, 1, 10))
		r.add(redisName, createToken, withCPU(ms(2000, 4, 40), 30*time.Microsecond, 20*time.Microsecond))
	}
	for _, s := range []sample{ms(5000, 3, 30), ms(6000, 3, 30), ms(7000, 3, 30)} {
		r.add("memory", createToken, s)
	}
	bad := ms(1000, 5, 50)
	bad.StatusErrors = 7
	for _, s := range []sample{bad, ms(1000, 5, 50), ms(1000, 5, 50)} {
		r.add("redis", createToken, withCPU(s, 90*time.Microsecond, 50*time.Microsecond))
	}
	return &r
}

func TestRowsTakeMediansAndPairedRatios(t *testing.T) {
	rows := testResults().rows(testTargets(), []string{listTokens, createToken})
	byKey := map[string]row{}
	var order []string
	for _, rw := range rows {
		byKey[rw.Target+" "+rw.Workload] = rw
		order = append(order, rw.Target+" "+rw.Workload)
	}
	assert.Equal(t, []string{
		"bare list-tokens", "memory list-tokens", "bare+redis-get list-tokens", "redis list-tokens",
		"bare create-token", "memory create-token", "bare+redis-get create-token", "redis create-token",
		"prism -", "mongodb -",
	}, order, "each store right under its floor")

	mem := byKey["memory list-tokens"]
	assert.Equal(t, 10800.0, mem.RPS)
	assert.Equal(t, 2*time.Millisecond, mem.P50)
	assert.Equal(t, bareName, mem.Floor)
	// Per repeat: 0.9, 0.75, 0.9 -> 0.9 (the ratio of the medians would be 0.9 too,
	// but the paired one ignores which repeat was noisy).
	assert.InDelta(t, 0.9, mem.RatioRPS, 1e-9)
	assert.InDelta(t, 2.0, mem.RatioP50, 1e-9)
	assert.Equal(t, 60*time.Microsecond, mem.CPU)
	assert.InDelta(t, 1.5, mem.RatioCPU, 1e-9)
	assert.False(t, mem.DB, "the memory store has no database")
	assert.Zero(t, byKey["redis list-tokens"].RatioCPU, "no CPU figures, no ratio")

	red := byKey["redis list-tokens"]
	assert.Equal(t, redisName, red.Floor, "the Redis store is held to the floor with one Redis GET")
	assert.InDelta(t, 0.6, red.RatioRPS, 1e-9) // 0.6, 0.7, 0.6
	assert.Equal(t, "", byKey["bare list-tokens"].Floor)
	assert.Equal(t, bareName, byKey["bare+redis-get list-tokens"].Floor, "the other floors beside the bare one")
	assert.InDelta(t, 0.4, byKey["bare+redis-get list-tokens"].RatioRPS, 1e-9) // 0.4, 0.25, 0.5

	create := byKey["memory create-token"]
	assert.Equal(t, bareName, create.Floor)
	assert.InDelta(t, 0.6, create.RatioRPS, 1e-9, "over the floor's create-token, not its list-tokens") // 0.5, 0.6, 0.7
	rc := byKey["redis create-token"]
	assert.Equal(t, redisName, rc.Floor)
	assert.InDelta(t, 0.5, rc.RatioRPS, 1e-9)
	assert.InDelta(t, 3.0, rc.RatioCPU, 1e-9)
	assert.Equal(t, int64(7), rc.Errors)
	assert.True(t, rc.DB)
	assert.Equal(t, 50*time.Microsecond, rc.DBCPU)
	assert.Equal(t, 20*time.Microsecond, byKey["bare+redis-get create-token"].DBCPU)
	assert.False(t, byKey["redis list-tokens"].DB, "no database figures in those runs")
	assert.Equal(t, "no MongoDB", byKey["mongodb -"].Skip)
}

// TestBaselineOf: every store, of either build, is held on every workload
// to its own store's floor, when it ran; the other floors and Prism to
// the bare one.
func TestBaselineOf(t *testing.T) {
	all := map[string]bool{bareName: true, redisName: true, clusterName: true, mongoName: true, pgName: true, sqliteName: true}
	want := map[string]string{"memory": bareName, "redis": redisName, "redis-cluster": clusterName, "mongodb": mongoName, "postgres": pgName, "sqlite": sqliteName}
	assert.Len(t, want, len(allStores), "every store has its floor")
	for store, floor := range want {
		for _, w := range allWorkloads {
			for _, name := range []string{store, store + beforeSuffix} {
				assert.Equal(t, floor, baselineOf(&target{Name: name, Kind: kindStore}, w, all), "%s %s", name, w)
				others := map[string]bool{}
				for f := range all {
					others[f] = f != floor
				}
				assert.Equal(t, "", baselineOf(&target{Name: name, Kind: kindStore}, w, others), "%s %s without its floor: no other", name, w)
			}
		}
	}
	for _, f := range []string{redisName, clusterName, mongoName, pgName, sqliteName} {
		assert.Equal(t, bareName, baselineOf(&target{Name: f, Kind: kindFloor}, getConfig, all), f)
	}
	assert.Equal(t, bareName, baselineOf(&target{Name: "prism", Kind: kindPrism}, listTokens, all))
	assert.Equal(t, "", baselineOf(&target{Name: bareName, Kind: kindFloor}, listTokens, all))
	assert.Equal(t, "", baselineOf(&target{Name: redisName, Kind: kindFloor}, listTokens, map[string]bool{redisName: true}))
}

func TestGoals(t *testing.T) {
	r := testResults()
	goals := r.goals(r.rows(testTargets(), []string{listTokens, createToken}))
	type verdict struct {
		store, workload, floor string
		min                    float64
		verdict                string
	}
	var got []verdict
	for _, g := range goals {
		got = append(got, verdict{g.Store, g.Workload, g.Floor, g.Min, g.verdict()})
	}
	assert.Equal(t, []verdict{
		{"memory", listTokens, bareName, 0.8, "met"},
		{"memory", createToken, bareName, 0.8, "MISSED by 0.200x"},
		{"redis", listTokens, redisName, 0.7, "MISSED by 0.100x"},
		{"redis", createToken, redisName, 0.6, "MISSED by 0.100x, 7 non-2xx"},
		{"mongodb", listTokens, mongoName, 0.5, "not measured"},
		{"mongodb", createToken, mongoName, 0.3, "not measured"},
		{"memory", listTokens, "prism", 10, "not measured"},
	}, got)
	assert.InDelta(t, 0.9, goals[0].Measured, 1e-9)
	assert.InDelta(t, 1/1.5, goals[0].FromCPU, 1e-9, "40 µs of CPU per request for the bare floor, 60 for the memory store")
	assert.Zero(t, goals[2].FromCPU)
	assert.InDelta(t, 1/3.0, goals[3].FromCPU, 1e-9)
	assert.Equal(t, int64(7), goals[3].Errors)

	assert.Equal(t, "met", goal{Ran: true, Measured: 0.8, Min: 0.8}.verdict())
	assert.Equal(t, "MISSED 1 non-2xx", goal{Ran: true, Measured: 0.95, Min: 0.8, Errors: 1}.verdict(), "any failed answer misses")
	assert.Equal(t, "MISSED by 0.001x", goal{Ran: true, Measured: 0.799, Min: 0.8}.verdict())
	assert.Equal(t, "MISSED by 0.0001x", goal{Ran: true, Measured: 0.7999, Min: 0.8}.verdict(), "however little")
	assert.Equal(t, "MISSED by 0.100x", goal{Ran: true, Min: 0.1}.verdict(), "no answer in time")
	assert.Equal(t, "not measured", goal{Min: 0.1}.verdict())
	assert.Equal(t, "invalid: 2 errors of the floor", goal{Ran: true, Measured: 0.9, Min: 0.8, FloorErrors: 2}.verdict())
	assert.Equal(t, "reported", goal{Ran: true, Measured: 0.01}.verdict())
	assert.Equal(t, "reported (3 non-2xx)", goal{Ran: true, Measured: 0.01, Errors: 3}.verdict())
	assert.Equal(t, []string{"mongodb", listUsers, mongoName, "0x", "-", ">= 0.1x", "0", "MISSED by 0.100x"},
		goal{Store: "mongodb", Workload: listUsers, Floor: mongoName, Ran: true, Min: 0.1}.cells(">="))
	assert.Equal(t, "0.599x", fmtGoal(0.5994))
	assert.Equal(t, "0.00331x", fmtGoal(0.003312))
	assert.Equal(t, "26.3x", fmtGoal(26.27))
	assert.Equal(t, "-", fmtGoal(0))
}

// TestGoalsTargets: the goals are the product's, store by store and
// workload by workload.
func TestGoalsTargets(t *testing.T) {
	assert.Equal(t, map[string]map[string]float64{
		"memory":  {listTokens: 0.8, getConfig: 0.8, setConfig: 0.8, createToken: 0.8, listUsers: 0.7},
		"redis":   {listTokens: 0.7, getConfig: 0.7, setConfig: 0.6, createToken: 0.6, listUsers: 0.5},
		"mongodb": {listTokens: 0.5, getConfig: 0.5, setConfig: 0.3, createToken: 0.3, listUsers: 0.1},
	}, goalRatios)
	for _, s := range goalStores {
		assert.Len(t, goalRatios[s], len(allWorkloads), s)
	}
}

// TestGoalsOfSQLStores: the SQL stores and the Redis Cluster, which have
// no goal, are listed over their floors when they ran, and only then.
func TestGoalsOfSQLStores(t *testing.T) {
	targets := []*target{
		{Name: bareName, Kind: kindFloor, scripts: map[string]script{getConfig: {}}},
		{Name: clusterName, Kind: kindFloor, scripts: map[string]script{getConfig: {}}, db: true},
		{Name: pgName, Kind: kindFloor, scripts: map[string]script{getConfig: {}}, db: true},
		{Name: "memory", Kind: kindStore, scripts: map[string]script{getConfig: {}}},
		{Name: "redis-cluster", Kind: kindStore, scripts: map[string]script{getConfig: {}}, db: true},
		{Name: "postgres", Kind: kindStore, scripts: map[string]script{getConfig: {}}, db: true},
	}
	var r results
	r.add(bareName, getConfig, ms(10000, 1, 10))
	r.add(clusterName, getConfig, ms(3000, 1, 10))
	r.add(pgName, getConfig, ms(4000, 1, 10))
	r.add("memory", getConfig, ms(9000, 1, 10))
	r.add("redis-cluster", getConfig, ms(2000, 1, 10))
	bad := ms(1000, 1, 10)
	bad.SocketErrors = 2
	r.add("postgres", getConfig, bad)
	goals := r.goals(r.rows(targets, []string{getConfig}))
	require.Len(t, goals, 5, "memory, redis and mongodb, then the Cluster and postgres; no sqlite, no prism")
	assert.Equal(t, "met", goals[0].verdict())
	assert.Equal(t, "not measured", goals[1].verdict())
	cl := goals[3]
	assert.Equal(t, "redis-cluster", cl.Store)
	assert.Equal(t, clusterName, cl.Floor)
	assert.InDelta(t, 2.0/3, cl.Measured, 1e-9)
	assert.Equal(t, "reported", cl.verdict())
	pg := goals[4]
	assert.Equal(t, "postgres", pg.Store)
	assert.Equal(t, pgName, pg.Floor)
	assert.InDelta(t, 0.25, pg.Measured, 1e-9)
	assert.Equal(t, "reported (2 non-2xx)", pg.verdict())
}

func TestTables(t *testing.T) {
	r := testResults()
	rows := r.rows(testTargets(), []string{listTokens, createToken})
	goals := r.goals(rows)
	var b bytes.Buffer
	require.NoError(t, writeTable(&b, rows, goals))
	text := b.String()
	assert.Regexp(t, `target\s+workload\s+req/s\s+p50\s+p99\s+cpu/req\s+db cpu/req\s+errors\s+floor\s+req/s ratio`, text)
	assert.Regexp(t, `\nmemory\s+list-tokens\s+10800\s+2.00ms\s+20.00ms\s+60µs\s+-\s+0\s+bare\s+0.90x\s+2.00x\s+2.00x\s+1.50x\n`, text)
	assert.Regexp(t, `\nredis\s+create-token\s+1000\s+5.00ms\s+50.00ms\s+90µs\s+50µs\s+7 INVALID\s+bare\+redis-get\s+0.50x\s+1.25x\s+1.25x\s+3.00x\n`, text)
	assert.Regexp(t, `\nbare\+redis-get\s+create-token\s+2000\s+4.00ms\s+40.00ms\s+30µs\s+20µs\s+0\s+bare\s+0.20x`, text)
	assert.Regexp(t, `mongodb\s+-\s+skipped: no MongoDB`, text)
	assert.Regexp(t, `goal: store\s+workload\s+floor\s+req/s ratio\s+by cpu/req\s+wanted\s+non-2xx\s+verdict \(on req/s\)\n`, text)
	assert.Regexp(t, `\nmemory\s+list-tokens\s+bare\s+0.900x\s+0.667x\s+>= 0.8x\s+0\s+met\n`, text)
	assert.Regexp(t, `\nredis\s+create-token\s+bare\+redis-get\s+0.500x\s+0.333x\s+>= 0.6x\s+7\s+MISSED by 0.100x, 7 non-2xx\n`, text)
	assert.Regexp(t, `\nmongodb\s+list-tokens\s+bare\+mongo-find\s+-\s+-\s+>= 0.5x\s+-\s+not measured\n`, text)

	md := markdownTables(rows, goals)
	lines := strings.Split(strings.TrimSpace(md), "\n")
	cols := strings.Count(lines[0], "|")
	assert.Equal(t, len(header)+1, cols)
	for _, l := range lines[:len(rows)+2] {
		assert.Equal(t, cols, strings.Count(l, "|"), l)
	}
	assert.Equal(t, "|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|", lines[1])
	gl := lines[len(rows)+3:]
	require.Len(t, gl, 2+len(goals))
	for _, l := range gl {
		assert.Equal(t, len(goalsHeader)+1, strings.Count(l, "|"), l)
	}
	assert.Contains(t, md, "| memory | list-tokens | 10800 | 2.00ms | 20.00ms | 60µs | - | 0 | bare | 0.90x | 2.00x | 2.00x | 1.50x |")
	assert.Contains(t, md, "| redis | create-token | bare+redis-get | 0.500x | 0.333x | ≥ 0.6x | 7 | MISSED by 0.100x, 7 non-2xx |")
	assert.Contains(t, md, "| memory | list-tokens | prism | - | - | ≥ 10x | - | not measured |")
}

func TestReplaceSection(t *testing.T) {
	doc := "# Benchmarks\n\nintro\n" + sectionBegin + "\nold figures\n" + sectionEnd + "\n\nmore\n"
	out, err := replaceSection(doc, "\nnew figures\n")
	require.NoError(t, err)
	assert.Equal(t, "# Benchmarks\n\nintro\n"+sectionBegin+"\nnew figures\n"+sectionEnd+"\n\nmore\n", out)
	again, err := replaceSection(out, "new figures")
	require.NoError(t, err)
	assert.Equal(t, out, again)
	_, err = replaceSection("# no markers\n", "x")
	assert.Error(t, err)
}

func TestChartIsWellFormedSVG(t *testing.T) {
	r := testResults()
	rows := r.rows(testTargets(), []string{listTokens, createToken})
	svg := chartSVG(rows, r.goals(rows), "a <title> & more")
	dec := xml.NewDecoder(strings.NewReader(svg))
	rects, lines, texts := 0, 0, []string{}
	widths := map[string]string{}
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "rect":
				rects++
				for _, a := range e.Attr {
					if a.Name.Local == "width" && len(texts) > 0 {
						widths[texts[len(texts)-1]+" "+fmt.Sprint(rects)] = a.Value
					}
				}
			case "line":
				lines++
			}
			inText = e.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	assert.Equal(t, 1+8, rects, "the background and one bar per measured row")
	assert.Equal(t, 4, lines, "the goal of each store's bar on each workload")
	assert.Contains(t, texts, "a <title> & more")
	assert.Contains(t, texts, "10800 (0.90x)", "a store's figure and its ratio to its floor")
	assert.Contains(t, texts, "1000 (0.50x) (errors: invalid)")
	assert.Contains(t, texts, "2000", "a floor anchors its own unit, and has no ratio there")
	assert.NotContains(t, svg, "mongodb", "skipped targets have no bar")
	// Each bar's name, in order: each store right under its floor.
	var names []string
	for _, x := range texts {
		if x == bareName || x == redisName || x == "memory" || x == "redis" {
			names = append(names, x)
		}
	}
	assert.Equal(t, []string{bareName, "memory", redisName, "redis", bareName, "memory", redisName, "redis"}, names)
	// A floor's bar is full width; a store's is its ratio of it.
	assert.Equal(t, "440.0", widths[bareName+" 2"])
	assert.Equal(t, "396.0", widths["memory 3"], "0.9 of the floor")
	assert.Equal(t, "440.0", widths[redisName+" 4"], "the Redis floor anchors its own unit")
	assert.Equal(t, "264.0", widths["redis 5"], "0.6 of its floor")
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "-", fmtLatency(0))
	assert.Equal(t, "750µs", fmtLatency(750*time.Microsecond))
	assert.Equal(t, "1.50ms", fmtLatency(1500*time.Microsecond))
	assert.Equal(t, "2.25s", fmtLatency(2250*time.Millisecond))
	assert.Equal(t, "0.85x", fmtRatio(0.849999))
	assert.Equal(t, "0.013x", fmtRatio(0.0131))
	assert.Equal(t, "-", fmtRatio(0))
	assert.Equal(t, "1234", fmtRPS(1234.4))
	assert.Equal(t, "2.5", fmtRPS(2.5))
}

func TestFailuresAddUpOverRepeats(t *testing.T) {
	var f failures
	f.add("mongodb", setConfig, map[int]int{500: 3}, "set instances: timeout")
	f.add("mongodb", listUsers, map[int]int{500: 1}, "")
	f.add("mongodb", setConfig, map[int]int{500: 2, 400: 1}, "a later cause")
	assert.Equal(t, []string{
		"mongodb set-config: the server logged failed requests (400×1, 500×5); the first cause: set instances: timeout",
		"mongodb list-users: the server logged failed requests (500×1)",
	}, f.notes())
}

// testBeforeTargets are testTargets with the -before build of each store
// right after it: memory@before serves what memory does, redis@before
// only list-tokens, and mongodb@before is skipped with mongodb.
func testBeforeTargets() []*target {
	var out []*target
	for _, t := range testTargets() {
		out = append(out, t)
		switch t.Name {
		case "memory":
			out = append(out, &target{Name: "memory@before", Kind: kindStore, scripts: map[string]script{listTokens: {}, createToken: {}}})
		case "redis":
			out = append(out, &target{Name: "redis@before", Kind: kindStore, scripts: map[string]script{listTokens: {}}})
		case "mongodb":
			out = append(out, &target{Name: "mongodb@before", Kind: kindStore, Skip: "no MongoDB"})
		}
	}
	return out
}

// testBeforeResults are testResults with the samples of the @before
// targets.
func testBeforeResults() *results {
	r := testResults()
	for _, s := range []sample{ms(10000, 2, 20), ms(15000, 2, 20), ms(9000, 4, 40)} {
		s.CPU = time.Duration(s.Requests) * 50 * time.Microsecond
		r.add("memory@before", listTokens, s)
	}
	for _, s := range []sample{ms(4000, 3, 30), ms(6000, 3, 30), ms(7000, 3, 30)} {
		r.add("memory@before", createToken, s)
	}
	for _, s := range []sample{ms(2000, 8, 80), ms(5000, 10, 100), ms(3000, 12, 120)} {
		r.add("redis@before", listTokens, s)
	}
	return r
}

func TestChangesPairEachStoreWithItsBefore(t *testing.T) {
	r := testBeforeResults()
	rows := r.rows(testBeforeTargets(), []string{listTokens, createToken})
	for _, rw := range rows {
		if rw.Target == "redis@before" {
			assert.Equal(t, redisName, rw.Floor, "the Redis store of either build is held to the floor with one Redis GET")
		}
	}
	changes := r.changes(rows)
	require.Len(t, changes, 3, "redis@before has no create-token and mongodb@before was skipped: no pair")

	mem := changes[0]
	assert.Equal(t, "memory", mem.Store)
	assert.Equal(t, listTokens, mem.Workload)
	// Per repeat: 9000/10000, 15000/15000, 10800/9000 -> 0.9, 1, 1.2 ->
	// 1, where the ratio of the medians would say 10800/10000.
	assert.InDelta(t, 1.0, mem.RPS, 1e-9)
	assert.InDelta(t, 1.2, mem.CPU, 1e-9, "60 µs of CPU per request after, 50 before")
	assert.Equal(t, bareName, mem.Floor)
	assert.InDelta(t, 0.75, mem.Before, 1e-9) // 1, 0.75, 0.75
	assert.InDelta(t, 0.9, mem.After, 1e-9)
	assert.Zero(t, mem.Errors)

	red := changes[1]
	assert.Equal(t, "redis", red.Store)
	assert.InDelta(t, 1.2, red.RPS, 1e-9) // 1.2, 0.7, 1.2
	assert.Zero(t, red.CPU, "no CPU figures, no ratio")
	assert.Equal(t, redisName, red.Floor)
	assert.InDelta(t, 0.5, red.Before, 1e-9) // 0.5, 1, 0.5
	assert.InDelta(t, 0.6, red.After, 1e-9)

	create := changes[2]
	assert.Equal(t, createToken, create.Workload)
	assert.InDelta(t, 1.0, create.RPS, 1e-9) // 1.25, 1, 1
	assert.Equal(t, bareName, create.Floor)
	assert.InDelta(t, 0.6, create.Before, 1e-9, "over the floor's create-token") // 0.4, 0.6, 0.7
	assert.InDelta(t, 0.6, create.After, 1e-9)                                   // 0.5, 0.6, 0.7
}

func TestChangesTables(t *testing.T) {
	r := testBeforeResults()
	rows := r.rows(testBeforeTargets(), []string{listTokens, createToken})
	for i := range rows {
		if rows[i].Target == "memory@before" && rows[i].Workload == createToken {
			rows[i].Errors = 2
		}
	}
	changes := r.changes(rows)
	var b bytes.Buffer
	require.NoError(t, writeChanges(&b, changes))
	text := b.String()
	assert.Regexp(t, `after ÷ before\s+workload\s+req/s\s+cpu/req\s+errors\s+floor\s+req/s ratio before\s+req/s ratio after\s+difference\n`, text)
	assert.Regexp(t, `memory\s+list-tokens\s+1.00x\s+1.20x\s+0\s+bare\s+0.75x\s+0.90x\s+\+0.15\n`, text)
	assert.Regexp(t, `redis\s+list-tokens\s+1.20x\s+-\s+0\s+bare\+redis-get\s+0.50x\s+0.60x\s+\+0.10\n`, text)
	assert.Regexp(t, `memory\s+create-token\s+1.00x\s+-\s+2 INVALID\s+bare\s+0.60x\s+0.60x\s+\+0.00\n`, text)
	assert.Equal(t, 4, strings.Count(text, "\n"))

	md := markdownChanges(changes)
	lines := strings.Split(strings.TrimSpace(md), "\n")
	require.Len(t, lines, 2+3)
	for _, l := range lines {
		assert.Equal(t, 10, strings.Count(l, "|"), l)
	}
	assert.Contains(t, md, "| memory | list-tokens | 1.00x | 1.20x | 0 | bare | 0.75x | 0.90x | +0.15 |")

	// Without ratios to a floor, no difference.
	assert.Equal(t, []string{"memory", getConfig, "0.98x", "-", "0", "-", "-", "-", "-"},
		change{Store: "memory", Workload: getConfig, RPS: 0.98}.cells())
}

// TestWriteMarkdown rewrites the marked section with the command, the
// floors, the table and the goals, and leaves the rest of the file alone.
func TestWriteMarkdown(t *testing.T) {
	file := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	require.NoError(t, os.WriteFile(file, []byte("# Benchmarks\n\n"+sectionBegin+"\nold\n"+sectionEnd+"\n\nafter\n"), 0o600))
	t.Setenv("LOADHARNESS_COMMAND", "scripts/loadharness.sh -duration 1s")
	r := testResults()
	rows := r.rows(testTargets(), []string{listTokens, createToken})
	h := &harness{opt: settings{markdown: file, repeats: 3, duration: time.Second, threads: 1, connections: 32},
		workloads: []string{listTokens, createToken}, pinning: "not pinned"}
	require.NoError(t, h.writeMarkdown(t.Context(), rows, r.goals(rows), nil))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	doc := string(b)
	assert.True(t, strings.HasPrefix(doc, "# Benchmarks\n\n"+sectionBegin+"\nMeasured "), doc)
	assert.True(t, strings.HasSuffix(doc, sectionEnd+"\n\nafter\n"), doc)
	assert.NotContains(t, doc, "old")
	assert.Contains(t, doc, "```sh\nscripts/loadharness.sh -duration 1s\n```")
	assert.Contains(t, doc, floorsNote)
	assert.Contains(t, doc, "`bare+mongo-find` with one find by `_id`")
	assert.Contains(t, doc, "| redis | create-token | 1000 | 5.00ms | 50.00ms | 90µs | 50µs | 7 INVALID | bare+redis-get | 0.50x | 1.25x | 1.25x | 3.00x |")
	assert.Contains(t, doc, "| redis | create-token | bare+redis-get | 0.500x | 0.333x | ≥ 0.6x | 7 | MISSED by 0.100x, 7 non-2xx |")
}
