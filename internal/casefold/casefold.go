// Package casefold is the Unicode simple case folding that keys usernames
// (orgadmin.FoldUsername), shared with the storage adapters that re-key
// what an earlier version stored under another fold.
package casefold

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Fold returns the simple case folding of s (the C and S mappings of
// CaseFolding.txt). An ASCII string without upper-case letters is returned
// as is, without allocating.
//
// Fold gives every member of a case orbit (unicode.SimpleFold) the same
// rune, so Fold(t) == Fold(s) for any t that folds equal to s: Fold of a
// key stored under another choice of one rune per orbit is the key under
// this one.
func Fold(s string) string {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		b.WriteRune(Rune(r))
	}
	return b.String()
}

// Rune is the simple case folding of r: the lower case of r's upper case
// when that is in r's case orbit, which leaves alone the letters whose
// upper case folds elsewhere (the Kelvin sign folds to "k", but "ı" to
// itself). Cherokee alone folds to upper case, as CaseFolding.txt has it
// since its lower-case letters were encoded after its upper-case ones.
func Rune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	if unicode.Is(unicode.Cherokee, r) {
		return unicode.ToUpper(r)
	}
	t := unicode.ToLower(unicode.ToUpper(r))
	if t == r {
		return r
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == t {
			return t
		}
	}
	return r
}

// Stale reports whether key, a folded username as an earlier version
// stored it, is not the key Fold gives now: the store must re-key it under
// Fold(key).
func Stale(key string) bool { return Fold(key) != key }

// Earlier is the fold that earlier versions keyed usernames by: each rune
// became the smallest lower-case member of its case orbit (the micro sign
// for "Μ", final sigma for "Σ", lower-case Cherokee). It gives every
// member of an orbit one rune too, so Fold(Earlier(s)) == Fold(s): a key
// stored under it is re-keyed under Fold of itself, and two users' keys
// differ under one fold exactly when they differ under the other. What
// the stores hold they re-key; the root package reads seed marks, opaque
// to the stores, under both.
func Earlier(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		best, bestLower := r, unicode.IsLower(r)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if lower := unicode.IsLower(f); lower && !bestLower || lower == bestLower && f < best {
				best, bestLower = f, lower
			}
		}
		b.WriteRune(best)
	}
	return b.String()
}
