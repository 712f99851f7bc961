package redisstore

import (
	"slices"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Decoding a user's token records is, after the round trip, the largest
// cost of a token listing, and the records change far less often than
// they are listed. So the Store keeps, for a bounded number of users, the
// last toks:<uid> it read and the records decoded from it, and decodes
// again only when toks:<uid> is not byte for byte the same. What it keeps
// is only the decoding of bytes read from Redis in the same call: the
// records, and whether they are live, are still read every time.
//
// Each list it keeps has a number of its own, never given to another: the
// Version CredentialTokens reports for the records it was decoded from.

// Bounds of the decoded lists a Store keeps: at most maxLists users, each
// with a list of at most maxListBytes; past maxLists it forgets them all
// and starts again.
const (
	maxLists     = 1024
	maxListBytes = 16 << 10
)

// decodedList is a toks:<uid> value and its records, decoded and ordered
// by creation, then id. Neither is ever changed.
type decodedList struct {
	recs    string
	tokens  []storage.Token
	version uint64
}

// listKey names a user's decoded list.
type listKey struct{ org, uid string }

// decodedTokens returns the records of recs, the toks:<uid> value of the
// user uid of org, ordered by creation, then id, and the version of the
// list it keeps them as (0 when it does not keep them). The slice is
// shared: the caller must not change it.
func (s *Store) decodedTokens(org, uid, recs string) ([]storage.Token, uint64, error) {
	k := listKey{org, uid}
	if d, ok := s.lists.Get(k); ok && d.recs == recs {
		return d.tokens, d.version, nil
	}
	ts, err := decodeTokens(org, uid, recs)
	if err != nil {
		return nil, 0, err
	}
	// Records are appended as tokens are created, so they are usually in
	// order already; sorting would still move each large record.
	if !slices.IsSortedFunc(ts, byCreation) {
		slices.SortFunc(ts, byCreation)
	}
	if len(recs) > maxListBytes {
		return ts, 0, nil
	}
	d := &decodedList{recs: recs, tokens: ts, version: s.versions.Add(1)}
	s.lists.Put(k, d)
	return ts, d.version, nil
}

// liveTokens returns a new slice of the tokens of ts live at liveAt, in
// their order.
func liveTokens(ts []storage.Token, liveAt time.Time) []storage.Token {
	out := make([]storage.Token, 0, len(ts))
	for i := range ts {
		if ts[i].LiveAt(liveAt) {
			out = append(out, ts[i])
		}
	}
	return out
}
