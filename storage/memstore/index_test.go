package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUserIndexMatchesSortedSlice runs random inserts and deletes, enough
// to split and empty many chunks, on a userIndex and on a sorted slice,
// and checks after each batch that every offset and every key seeks to
// the same place in both.
func TestUserIndexMatchesSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{""} // by ref; ref 0 names none
	x := userIndex{key: func(r ref) string { return keys[r] }}
	var want []string
	key := func() string { return fmt.Sprintf("k%05d", rng.IntN(20_000)) }
	for batch := range 16 {
		inserting := batch%4 != 3 // three batches of inserts, then one of deletes
		for range 2_500 {
			k := key()
			i, found := slices.BinarySearch(want, k)
			if inserting {
				keys = append(keys, k)
				if got := x.Insert(ref(len(keys) - 1)); got == found {
					t.Fatalf("Insert(%q) = %v, present before: %v", k, got, found)
				}
				if !found {
					want = slices.Insert(want, i, k)
				}
			} else {
				if got := x.Delete(k); got != found {
					t.Fatalf("Delete(%q) = %v, present before: %v", k, got, found)
				}
				if found {
					want = slices.Delete(want, i, i+1)
				}
			}
		}
		checkIndex(t, &x, want)
	}
	for _, k := range slices.Clone(want) { // empty it
		if !x.Delete(k) {
			t.Fatalf("Delete(%q) = false for a present key", k)
		}
	}
	checkIndex(t, &x, nil)
}

// checkIndex checks that x holds exactly want, in order, and that At and
// After seek where they should.
func checkIndex(t *testing.T, x *userIndex, want []string) {
	t.Helper()
	if x.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", x.Len(), len(want))
	}
	var got []string
	x.Scan(position{}, func(u ref) bool { got = append(got, x.key(u)); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("Scan from the start: %d keys, not the %d expected in order", len(got), len(want))
	}
	first := func(p position) string {
		k := "<end>"
		x.Scan(p, func(u ref) bool { k = x.key(u); return false })
		return k
	}
	at := func(i int) string {
		if i < len(want) {
			return want[i]
		}
		return "<end>"
	}
	for i := 0; i <= len(want)+1; i++ {
		if got := first(x.At(i)); got != at(i) {
			t.Fatalf("At(%d) starts at %q, want %q", i, got, at(i))
		}
	}
	for _, k := range []string{"", "k", "k00000", "k09999", "k10000x", "k19999", "l"} {
		i, found := slices.BinarySearch(want, k)
		if found {
			i++
		}
		if got := first(x.After(k)); got != at(i) {
			t.Fatalf("After(%q) starts at %q, want %q", k, got, at(i))
		}
	}
	for i, k := range want {
		if got := first(x.After(k)); got != at(i+1) {
			t.Fatalf("After(%q) starts at %q, want %q", k, got, at(i+1))
		}
	}
}
