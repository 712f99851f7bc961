package memstore

import (
	"slices"
	"sort"
)

// chunkSize bounds the length of one chunk of a sortedIndex. Inserting moves
// at most this many strings, and locating an offset walks len/chunkSize
// chunk lengths, so both stay cheap with millions of keys.
const chunkSize = 512

// sortedIndex is an ordered set of strings kept as a list of sorted chunks.
// Insert, delete and seek cost O(log n + chunkSize); offset lookup costs
// O(n/chunkSize). The zero value is an empty index.
type sortedIndex struct {
	chunks [][]string
	n      int
}

// Len returns the number of keys.
func (x *sortedIndex) Len() int { return x.n }

// chunkFor returns the index of the first chunk whose last key is >= key,
// or len(chunks) when every key is smaller.
func (x *sortedIndex) chunkFor(key string) int {
	return sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1] >= key
	})
}

// Insert adds key; it reports false when key was present.
func (x *sortedIndex) Insert(key string) bool {
	if len(x.chunks) == 0 {
		x.chunks = append(x.chunks, []string{key})
		x.n = 1
		return true
	}
	ci := x.chunkFor(key)
	if ci == len(x.chunks) {
		ci-- // after every key: append to the last chunk
	}
	c := x.chunks[ci]
	i, found := slices.BinarySearch(c, key)
	if found {
		return false
	}
	c = slices.Insert(c, i, key)
	x.n++
	if len(c) > chunkSize {
		half := len(c) / 2
		right := slices.Clone(c[half:])
		c = slices.Clip(c[:half])
		x.chunks[ci] = c
		x.chunks = slices.Insert(x.chunks, ci+1, right)
		return true
	}
	x.chunks[ci] = c
	return true
}

// Delete removes key; it reports false when key was absent.
func (x *sortedIndex) Delete(key string) bool {
	ci := x.chunkFor(key)
	if ci == len(x.chunks) {
		return false
	}
	c := x.chunks[ci]
	i, found := slices.BinarySearch(c, key)
	if !found {
		return false
	}
	c = slices.Delete(c, i, i+1)
	x.n--
	if len(c) == 0 {
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
		return true
	}
	x.chunks[ci] = c
	return true
}

// position identifies a key by chunk and index within the chunk.
type position struct{ chunk, i int }

// After returns the position of the first key > key.
func (x *sortedIndex) After(key string) position {
	ci := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1] > key
	})
	if ci == len(x.chunks) {
		return position{ci, 0}
	}
	c := x.chunks[ci]
	return position{ci, sort.Search(len(c), func(i int) bool { return c[i] > key })}
}

// At returns the position of the key at offset (0-based).
func (x *sortedIndex) At(offset int) position {
	for ci, c := range x.chunks {
		if offset < len(c) {
			return position{ci, offset}
		}
		offset -= len(c)
	}
	return position{len(x.chunks), 0}
}

// Scan calls fn for each key from p on, in order, until fn returns false.
func (x *sortedIndex) Scan(p position, fn func(key string) bool) {
	for ci := p.chunk; ci < len(x.chunks); ci++ {
		c := x.chunks[ci]
		start := 0
		if ci == p.chunk {
			start = p.i
		}
		for _, k := range c[start:] {
			if !fn(k) {
				return
			}
		}
	}
}
