package servicetest

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// Scale measures a store holding an org of n users, for each n of sizes,
// so that the figures of a small org and a big one come out of one run,
// side by side (benchstat -col /users). For each n, under "users=n":
//
//   - create builds the org on a fresh store through the Service: n
//     service accounts, then one token each (CreateUser, CreateToken). Its
//     time per op is the time of the whole build; heap-B and inuse-B are
//     the live heap (runtime.MemStats HeapAlloc and HeapInuse, after a
//     collection) the built org holds, and objects the number of heap
//     objects in it, which every collection marks.
//   - authenticate authenticates tokens of users spread over the org, in
//     turn.
//   - page_first, page_cursor_90pct and page_offset_90pct list pages of
//     100 users: the first, and the one nine tenths of the way in, by
//     page token and by offset.
//
// Each also reports cpu-ns/op, the CPU time the process spent per
// operation (garbage collection included; on Unix), which other load on
// the machine disturbs far less than the time per op.
//
// The build of a million users takes tens of seconds: run Scale with the
// default -benchtime, which builds each org once.
func Scale(b *testing.B, newStore func(testing.TB) storage.Store, sizes ...int) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) { scale(b, newStore, n) })
	}
}

// bigOrg is an org built by buildOrg.
type bigOrg struct {
	world
	// tokens are values of tokens of users spread evenly over the org.
	tokens []string
}

// sampleTokens is how many token values a bigOrg keeps for authenticate.
const sampleTokens = 1024

func scale(b *testing.B, newStore func(testing.TB) storage.Store, n int) {
	var org *bigOrg
	b.Run("create", func(b *testing.B) {
		before := liveHeap()
		loop(b, func() {
			org = nil
			org = buildOrg(b, newStore(b), n)
		})
		after := liveHeap()
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-B")
		b.ReportMetric(float64(after.HeapInuse)-float64(before.HeapInuse), "inuse-B")
		b.ReportMetric(float64(after.HeapObjects)-float64(before.HeapObjects), "objects")
		runtime.KeepAlive(org)
	})
	if org == nil { // create was filtered out
		org = buildOrg(b, newStore(b), n)
	}
	ctx := context.Background()
	b.Run("authenticate", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		loop(b, func() {
			i++
			if _, err := org.svc.Authenticate(ctx, org.tokens[i%len(org.tokens)]); err != nil {
				b.Fatal(err)
			}
		})
	})
	deepAt := n * 9 / 10
	deep, err := org.svc.ListUsers(ctx, org.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Some(deepAt - 100)})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opt  orgadmin.ListUsersOptions
	}{
		{"page_first", orgadmin.ListUsersOptions{}},
		{"page_cursor_90pct", orgadmin.ListUsersOptions{PageToken: deep.NextPageToken}},
		{"page_offset_90pct", orgadmin.ListUsersOptions{Offset: orgadmin.Some(deepAt)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			page := func() {
				page, err := org.svc.ListUsers(ctx, org.admin, bc.opt)
				if err != nil || len(page.Users) != 100 {
					b.Fatal(len(page.Users), err)
				}
			}
			untilSteady(page)
			loop(b, page)
		})
	}
}

// buildOrg creates, on s, the org of newWorld and n service accounts
// u0000000, u0000001, ..., each with one token, through the Service.
func buildOrg(b *testing.B, s storage.Store, n int) *bigOrg {
	b.Helper()
	ctx := context.Background()
	org := &bigOrg{world: newWorld(b, s)}
	names := func(i int) string { return fmt.Sprintf("u%07d", i) }
	for i := range n {
		if _, err := org.svc.CreateUser(ctx, "bench", orgadmin.NewUser{Username: names(i), IsServiceAccount: true}); err != nil {
			b.Fatal(err)
		}
	}
	step := max(1, n/sampleTokens)
	in := orgadmin.CreateTokenInput{Name: "ci"}
	for i := range n {
		tok, err := org.svc.CreateToken(ctx, org.admin, names(i), in)
		if err != nil {
			b.Fatal(err)
		}
		if i%step == 0 {
			org.tokens = append(org.tokens, tok.Value)
		}
	}
	return org
}

// loop runs body in b's loop and reports the process CPU time per
// iteration as cpu-ns/op, where it can be read.
func loop(b *testing.B, body func()) {
	cpu0, ok0 := cpuTime()
	for b.Loop() {
		body()
	}
	if cpu1, ok1 := cpuTime(); ok0 && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// untilSteady runs body, which allocates, until the heap has grown to its
// goal and been collected twice (or for 10 s at most). The benchmark
// runner collects before each benchmark, which on a big store leaves
// hundreds of megabytes free; the runtime gives them back to the system,
// and the process takes them again, page fault by page fault, as the heap
// grows back to its goal. Charged to the first operations measured, that
// cost of the runner's is no cost of theirs.
func untilSteady(body func()) {
	numGC := func() uint32 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.NumGC
	}
	deadline := time.Now().Add(10 * time.Second)
	for gc := numGC(); numGC() < gc+2 && time.Now().Before(deadline); {
		for range 100 {
			body()
		}
	}
}

// liveHeap returns the memory statistics after a full collection.
func liveHeap() runtime.MemStats {
	runtime.GC()
	runtime.GC() // a second cycle frees what the first one's finalizers let go
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
