package main

import (
	"bytes"
	"encoding/xml"
	"io"
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
	lt := map[string]script{listTokens: {}}
	return []*target{
		{Name: bareName, Kind: kindBaseline, scripts: lt},
		{Name: redisName, Kind: kindBaseline, scripts: lt},
		{Name: "prism", Kind: kindPrism, Skip: "npx not found"},
		{Name: "memory", Kind: kindStore, scripts: map[string]script{listTokens: {}, createToken: {}}},
		{Name: "redis", Kind: kindStore, scripts: map[string]script{listTokens: {}, createToken: {}}},
		{Name: "mongodb", Kind: kindStore, Skip: "no MongoDB"},
	}
}

func testResults() *results {
	var r results
	// Three repeats; the ratios are taken within each repeat.
	for _, s := range []sample{ms(10000, 1, 10), ms(20000, 1, 10), ms(12000, 2, 20)} {
		r.add(bareName, listTokens, s)
	}
	for _, s := range []sample{ms(4000, 4, 40), ms(5000, 5, 50), ms(6000, 6, 60)} {
		r.add(redisName, listTokens, s)
	}
	for i, s := range []sample{ms(9000, 2, 20), ms(15000, 2, 20), ms(10800, 4, 40)} {
		s.CPU = time.Duration(s.Requests) * 60 * time.Microsecond
		r.samples[key{bareName, listTokens}][i].CPU = time.Duration(r.samples[key{bareName, listTokens}][i].Requests) * 40 * time.Microsecond
		r.add("memory", listTokens, s)
	}
	for _, s := range []sample{ms(2400, 8, 80), ms(3500, 10, 100), ms(3600, 12, 120)} {
		r.add("redis", listTokens, s)
	}
	for _, s := range []sample{ms(5000, 3, 30), ms(6000, 3, 30), ms(7000, 3, 30)} {
		r.add("memory", createToken, s)
	}
	bad := ms(1000, 5, 50)
	bad.StatusErrors = 7
	for _, s := range []sample{bad, ms(1000, 5, 50), ms(1000, 5, 50)} {
		r.add("redis", createToken, s)
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
		"bare list-tokens", "bare+redis-get list-tokens", "memory list-tokens", "redis list-tokens",
		"memory create-token", "redis create-token", "prism -", "mongodb -",
	}, order)

	mem := byKey["memory list-tokens"]
	assert.Equal(t, 10800.0, mem.RPS)
	assert.Equal(t, 2*time.Millisecond, mem.P50)
	assert.Equal(t, bareName, mem.Baseline)
	// Per repeat: 0.9, 0.75, 0.9 -> 0.9 (the ratio of the medians would be 0.9 too,
	// but the paired one ignores which repeat was noisy).
	assert.InDelta(t, 0.9, mem.RatioRPS, 1e-9)
	assert.InDelta(t, 2.0, mem.RatioP50, 1e-9)
	assert.Equal(t, 60*time.Microsecond, mem.CPU)
	assert.InDelta(t, 1.5, mem.RatioCPU, 1e-9)
	assert.Zero(t, byKey["redis list-tokens"].RatioCPU, "no CPU figures, no ratio")

	red := byKey["redis list-tokens"]
	assert.Equal(t, redisName, red.Baseline, "the Redis store is held to the baseline with one Redis GET")
	assert.InDelta(t, 0.6, red.RatioRPS, 1e-9) // 0.6, 0.7, 0.6
	assert.Equal(t, "", byKey["bare list-tokens"].Baseline)

	create := byKey["memory create-token"]
	assert.Equal(t, bareName, create.Baseline)
	assert.InDelta(t, 0.5, create.RatioRPS, 1e-9) // 0.5, 0.3, 0.5833
	assert.Equal(t, int64(7), byKey["redis create-token"].Errors)
	assert.Equal(t, "no MongoDB", byKey["mongodb -"].Skip)
}

// Each SQL store is held, on list-tokens, to the bare server that does one
// lookup by primary key on the same database, when it ran; to the bare
// one otherwise, and on every other workload.
func TestSQLStoresBaselines(t *testing.T) {
	have := map[string]bool{bareName: true, pgName: true, sqliteName: true}
	assert.Equal(t, pgName, baselineOf(&target{Name: "postgres"}, listTokens, have))
	assert.Equal(t, pgName, baselineOf(&target{Name: "postgres" + beforeSuffix}, listTokens, have))
	assert.Equal(t, sqliteName, baselineOf(&target{Name: "sqlite"}, listTokens, have))
	assert.Equal(t, bareName, baselineOf(&target{Name: "sqlite"}, createToken, have))
	assert.Equal(t, bareName, baselineOf(&target{Name: "postgres"}, listTokens, map[string]bool{bareName: true}))
}

func TestGoals(t *testing.T) {
	r := testResults()
	goals := r.goals(r.rows(testTargets(), []string{listTokens}))
	require.Len(t, goals, 6)
	assert.InDelta(t, 0.9, goals[0].Measured, 1e-9)
	assert.InDelta(t, 1/1.5, goals[0].FromCPU, 1e-9, "40 µs of CPU per request for the bare baseline, 60 for the memory store")
	assert.Zero(t, goals[1].FromCPU)
	assert.Equal(t, "met", goals[0].verdict())
	assert.InDelta(t, 0.6, goals[1].Measured, 1e-9)
	assert.Equal(t, "met", goals[1].verdict())
	assert.Equal(t, "not measured", goals[2].verdict())
	assert.Equal(t, "not measured", goals[3].verdict())
	assert.Equal(t, "not measured", goals[4].verdict())
	assert.Equal(t, "not measured", goals[5].verdict())
	assert.Equal(t, "MISSED", goal{Measured: 0.84, Min: 0.85}.verdict())
	assert.Equal(t, "invalid (errors)", goal{Measured: 0.9, Min: 0.85, Invalid: true}.verdict())
	assert.Equal(t, "reported", goal{Measured: 0.01}.verdict())
	assert.Equal(t, "0.599x", fmtGoal(0.5994))
	assert.Equal(t, "0.00331x", fmtGoal(0.003312))
	assert.Equal(t, "26.3x", fmtGoal(26.27))
	assert.Equal(t, "-", fmtGoal(0))
}

func TestTables(t *testing.T) {
	r := testResults()
	rows := r.rows(testTargets(), []string{listTokens, createToken})
	goals := r.goals(rows)
	var b bytes.Buffer
	require.NoError(t, writeTable(&b, rows, goals))
	text := b.String()
	assert.Regexp(t, `memory\s+list-tokens\s+10800\s+2.00ms\s+20.00ms\s+60µs\s+0\s+bare\s+0.90x\s+2.00x\s+2.00x\s+1.50x`, text)
	assert.Regexp(t, `redis\s+create-token\s+1000\s+5.00ms\s+50.00ms\s+-\s+7 INVALID\s+bare \(list-tokens\)`, text)
	assert.Regexp(t, `mongodb\s+-\s+skipped: no MongoDB`, text)
	assert.Regexp(t, `memory store / bare net/http\s+0.900x\s+0.667x\s+>= 0.85x\s+met`, text)

	md := markdownTables(rows, goals)
	lines := strings.Split(strings.TrimSpace(md), "\n")
	cols := strings.Count(lines[0], "|")
	for _, l := range lines[:len(rows)+2] {
		assert.Equal(t, cols, strings.Count(l, "|"), l)
	}
	assert.Contains(t, md, "| memory | list-tokens | 10800 | 2.00ms | 20.00ms | 60µs | 0 | bare | 0.90x | 2.00x | 2.00x | 1.50x |")
	assert.Contains(t, md, "| memory store / Prism mock | - | - | ≥ 10x | not measured |")
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
	svg := chartSVG(r.rows(testTargets(), []string{listTokens, createToken}), "a <title> & more")
	dec := xml.NewDecoder(strings.NewReader(svg))
	rects, texts := 0, []string{}
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "rect" {
				rects++
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
	assert.Equal(t, 1+6, rects, "the background and one bar per measured row")
	assert.Contains(t, texts, "a <title> & more")
	assert.Contains(t, texts, "10800")
	assert.Contains(t, texts, "1000 (errors: invalid)")
	assert.NotContains(t, svg, "mongodb", "skipped targets have no bar")
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
			assert.Equal(t, redisName, rw.Baseline, "the Redis store of either build is held to the baseline with one Redis GET")
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
	assert.Equal(t, bareName, mem.Baseline)
	assert.InDelta(t, 0.75, mem.Before, 1e-9) // 1, 0.75, 0.75
	assert.InDelta(t, 0.9, mem.After, 1e-9)
	assert.Zero(t, mem.Errors)

	red := changes[1]
	assert.Equal(t, "redis", red.Store)
	assert.InDelta(t, 1.2, red.RPS, 1e-9) // 1.2, 0.7, 1.2
	assert.Zero(t, red.CPU, "no CPU figures, no ratio")
	assert.Equal(t, redisName, red.Baseline)
	assert.InDelta(t, 0.5, red.Before, 1e-9) // 0.5, 1, 0.5
	assert.InDelta(t, 0.6, red.After, 1e-9)

	create := changes[2]
	assert.Equal(t, createToken, create.Workload)
	assert.InDelta(t, 1.0, create.RPS, 1e-9) // 1.25, 1, 1
	assert.Equal(t, bareName, create.Baseline)
	assert.InDelta(t, 0.4, create.Before, 1e-9) // 0.4, 0.3, 0.5833
	assert.InDelta(t, 0.5, create.After, 1e-9)
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
	assert.Regexp(t, `after ÷ before\s+workload\s+req/s\s+cpu/req\s+errors\s+baseline\s+req/s ratio before\s+req/s ratio after\s+difference\n`, text)
	assert.Regexp(t, `memory\s+list-tokens\s+1.00x\s+1.20x\s+0\s+bare\s+0.75x\s+0.90x\s+\+0.15\n`, text)
	assert.Regexp(t, `redis\s+list-tokens\s+1.20x\s+-\s+0\s+bare\+redis-get\s+0.50x\s+0.60x\s+\+0.10\n`, text)
	assert.Regexp(t, `memory\s+create-token\s+1.00x\s+-\s+2 INVALID\s+bare \(list-tokens\)\s+0.40x\s+0.50x\s+\+0.10\n`, text)
	assert.Equal(t, 4, strings.Count(text, "\n"))

	md := markdownChanges(changes)
	lines := strings.Split(strings.TrimSpace(md), "\n")
	require.Len(t, lines, 2+3)
	for _, l := range lines {
		assert.Equal(t, 10, strings.Count(l, "|"), l)
	}
	assert.Contains(t, md, "| memory | list-tokens | 1.00x | 1.20x | 0 | bare | 0.75x | 0.90x | +0.15 |")

	// Without baseline ratios, no difference.
	assert.Equal(t, []string{"memory", getConfig, "0.98x", "-", "0", "-", "-", "-", "-"},
		change{Store: "memory", Workload: getConfig, RPS: 0.98}.cells())
}
