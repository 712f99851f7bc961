package memstore

import "math"

// ref names a record of a table: its slot. 0 names none.
type ref uint32

// A table chunk holds 1 << tableBits records: 4 096.
const (
	tableBits     = 12
	tableChunkLen = 1 << tableBits
	tableMask     = tableChunkLen - 1
)

// table holds records of type T by value, in chunks of tableChunkLen, so that a
// million records are a few hundred objects for the garbage collector, not
// a million. A record keeps its slot, its ref, while it lives; removed
// slots are used again. Slot 0 is never given out.
//
// The last chunk grows as records are added, and may move as it does: a
// *T from at is valid only until the next add on the same table.
type table[T any] struct {
	chunks [][]T
	free   []ref
	next   ref // the next slot never given out; 0 before the first add
}

// add returns the slot of a new zero record.
func (t *table[T]) add() ref {
	if n := len(t.free); n > 0 {
		r := t.free[n-1]
		t.free = t.free[:n-1]
		return r
	}
	if t.next == 0 {
		t.next = 1 // slot 0 names none
		t.chunks = [][]T{make([]T, 1, 16)}
	}
	if t.next == math.MaxUint32 {
		panic("memstore: no slot left in a table (2^32 records of one kind)")
	}
	r := t.next
	last := len(t.chunks) - 1
	if len(t.chunks[last]) == tableChunkLen {
		t.chunks = append(t.chunks, make([]T, 0, 16))
		last++
	}
	c := t.chunks[last]
	if len(c) == cap(c) { // grow by doubling, up to tableChunkLen exactly
		grown := make([]T, len(c), min(2*cap(c), tableChunkLen))
		copy(grown, c)
		c = grown
	}
	t.chunks[last] = c[:len(c)+1]
	t.next++
	return r
}

// at returns the record of slot r.
func (t *table[T]) at(r ref) *T {
	return &t.chunks[r>>tableBits][r&tableMask]
}

// remove zeroes the record of slot r and frees the slot.
func (t *table[T]) remove(r ref) {
	var zero T
	*t.at(r) = zero
	t.free = append(t.free, r)
}
