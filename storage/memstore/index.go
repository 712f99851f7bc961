package memstore

import (
	"slices"
	"sort"
	"strings"
)

// chunkSize bounds the length of one chunk of a userIndex. Inserting moves
// at most this many pointers, and a split rebuilds the chunk counts, which
// costs len/chunkSize, at most once per chunkSize/2 inserts.
const chunkSize = 512

// userIndex is an ordered set of users, by folded username, kept as a
// list of sorted chunks of refs, with a Fenwick tree of the chunk
// lengths. Insert and delete cost O(log n + chunkSize) amortized; seeking
// a key or an offset costs O(log n). key returns the folded username of a
// user; an index with it set and nothing else is empty.
type userIndex struct {
	key    func(ref) string
	chunks [][]ref
	counts fenwick // of len(chunks[i])
	n      int
}

// Len returns the number of users.
func (x *userIndex) Len() int { return x.n }

// chunkFor returns the index of the first chunk whose last key is >= key,
// or len(chunks) when every key is smaller.
func (x *userIndex) chunkFor(key string) int {
	return sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return x.key(c[len(c)-1]) >= key
	})
}

// search returns where key is or would be in c, and whether it is there.
func (x *userIndex) search(c []ref, key string) (int, bool) {
	return slices.BinarySearchFunc(c, key, func(u ref, key string) int { return strings.Compare(x.key(u), key) })
}

// Insert adds u; it reports false when a user of the same folded username
// was present.
func (x *userIndex) Insert(u ref) bool {
	if len(x.chunks) == 0 {
		x.chunks = [][]ref{{u}}
		x.counts = x.counts.rebuild(x.chunks)
		x.n = 1
		return true
	}
	key := x.key(u)
	ci := x.chunkFor(key)
	if ci == len(x.chunks) {
		ci-- // after every key: append to the last chunk
	}
	c := x.chunks[ci]
	i, found := x.search(c, key)
	if found {
		return false
	}
	c = slices.Insert(c, i, u)
	x.n++
	if len(c) <= chunkSize {
		x.chunks[ci] = c
		x.counts.add(ci, 1)
		return true
	}
	// Split into two halves of their own, so that neither keeps the other's
	// spare capacity alive.
	half := len(c) / 2
	x.chunks[ci] = slices.Clone(c[:half])
	x.chunks = slices.Insert(x.chunks, ci+1, slices.Clone(c[half:]))
	x.counts = x.counts.rebuild(x.chunks)
	return true
}

// Delete removes the user of folded username key; it reports false when
// there was none.
func (x *userIndex) Delete(key string) bool {
	ci := x.chunkFor(key)
	if ci == len(x.chunks) {
		return false
	}
	c := x.chunks[ci]
	i, found := x.search(c, key)
	if !found {
		return false
	}
	c = slices.Delete(c, i, i+1)
	x.n--
	if len(c) == 0 {
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
		x.counts = x.counts.rebuild(x.chunks)
		return true
	}
	x.chunks[ci] = c
	x.counts.add(ci, -1)
	return true
}

// position identifies a user by chunk and index within the chunk.
type position struct{ chunk, i int }

// After returns the position of the first user whose folded username is
// > key.
func (x *userIndex) After(key string) position {
	ci := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return x.key(c[len(c)-1]) > key
	})
	if ci == len(x.chunks) {
		return position{ci, 0}
	}
	c := x.chunks[ci]
	return position{ci, sort.Search(len(c), func(i int) bool { return x.key(c[i]) > key })}
}

// At returns the position of the user at offset (0-based).
func (x *userIndex) At(offset int) position {
	if offset >= x.n {
		return position{len(x.chunks), 0}
	}
	ci, i := x.counts.find(offset)
	return position{ci, i}
}

// Scan calls fn for each user from p on, in order, until fn returns false.
func (x *userIndex) Scan(p position, fn func(u ref) bool) {
	for ci := p.chunk; ci < len(x.chunks); ci++ {
		c := x.chunks[ci]
		start := 0
		if ci == p.chunk {
			start = p.i
		}
		for _, u := range c[start:] {
			if !fn(u) {
				return
			}
		}
	}
}

// fenwick is a binary indexed tree of the chunk lengths of a userIndex:
// its element k (1-based) holds the sum of the lengths of chunks
// k-lowbit(k) to k-1 (0-based).
type fenwick []int

// rebuild returns the tree of the lengths of chunks, built in
// O(len(chunks)) in f's memory when it is large enough.
func (f fenwick) rebuild(chunks [][]ref) fenwick {
	f = slices.Grow(f[:0], len(chunks)+1)[:len(chunks)+1]
	clear(f)
	for i, c := range chunks {
		k := i + 1
		f[k] += len(c)
		if up := k + k&-k; up < len(f) {
			f[up] += f[k]
		}
	}
	return f
}

// add adds delta to the length of chunk i.
func (f fenwick) add(i, delta int) {
	for k := i + 1; k < len(f); k += k & -k {
		f[k] += delta
	}
}

// find returns the chunk that holds offset, which must be less than the
// sum of the lengths, and the offset within that chunk.
func (f fenwick) find(offset int) (chunk, rest int) {
	step := 1
	for step*2 < len(f) {
		step *= 2
	}
	k := 0 // the number of whole chunks before offset
	for ; step > 0; step /= 2 {
		if next := k + step; next < len(f) && f[next] <= offset {
			k = next
			offset -= f[next]
		}
	}
	return k, offset
}
