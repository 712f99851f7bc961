package memstore

import "hash/maphash"

// strIndex maps strings (usernames, ids) to the records that hold them.
// Its map is keyed by a 64-bit hash of the string, not by the string, so
// that it holds no pointer and the garbage collector never looks inside
// it; a lookup checks the key against the record it finds. A string whose
// hash another indexed string already has (with a random seed, about once
// in 10^7 indexes of a million strings) goes to clash, a map by string.
//
// Every method takes keyOf, which returns the key of an indexed record.
type strIndex struct {
	hash   func(string) uint64
	byHash map[uint64]ref
	clash  map[string]ref
}

// newStrIndex returns an empty index hashing with seed.
func newStrIndex(seed maphash.Seed) strIndex {
	return strIndex{
		hash:   func(s string) uint64 { return maphash.String(seed, s) },
		byHash: make(map[uint64]ref),
	}
}

// find returns the record of key, or 0.
func (x *strIndex) find(key string, keyOf func(ref) string) ref {
	if r, ok := x.byHash[x.hash(key)]; ok && keyOf(r) == key {
		return r
	}
	return x.clash[key] // 0 when absent, or when clash is nil
}

// add indexes r under key, which must not be indexed.
func (x *strIndex) add(key string, r ref) {
	h := x.hash(key)
	if _, taken := x.byHash[h]; !taken {
		x.byHash[h] = r
		return
	}
	if x.clash == nil {
		x.clash = make(map[string]ref)
	}
	x.clash[key] = r
}

// remove forgets key, which must be indexed.
func (x *strIndex) remove(key string, keyOf func(ref) string) {
	h := x.hash(key)
	if r, ok := x.byHash[h]; !ok || keyOf(r) != key {
		delete(x.clash, key)
		return
	}
	delete(x.byHash, h)
	// A clashing key of the same hash takes the place it leaves, so that
	// every key in clash has its hash in byHash.
	for k, r := range x.clash {
		if x.hash(k) == h {
			delete(x.clash, k)
			x.byHash[h] = r
			return
		}
	}
}
