package memstore

import "strings"

// A record keeps its strings joined in one string, with the end of each
// in an array of its own: one allocation, which the garbage collector
// marks as a single object without looking inside, and whose strings are
// read as substrings of it, shared with the caller (strings are
// immutable), without reading its bytes.

// join returns fs one after the other in one string, and sets ends[i] to
// the end of fs[i] in it; ends must be as long as fs.
func join(ends []uint32, fs []string) string {
	n := 0
	for _, f := range fs {
		n += len(f)
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range fs {
		b.WriteString(f)
		ends[i] = uint32(b.Len()) // #nosec G115 -- the strings of one record, far below 4 GiB
	}
	return b.String()
}

// cut returns the string i of s, which join made with ends.
func cut(s string, ends []uint32, i int) string {
	var start uint32
	if i > 0 {
		start = ends[i-1]
	}
	return s[start:ends[i]]
}
