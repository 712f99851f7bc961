package memstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// TestStrIndexClashes runs random adds and removes on a strIndex whose
// hash sends every key to one of four values, so that almost every key
// clashes, against a plain map, and checks every key after each step.
func TestStrIndexClashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{""} // by ref
	x := strIndex{hash: func(s string) uint64 { return uint64(len(s) % 4) }, byHash: map[uint64]ref{}}
	keyOf := func(r ref) string { return keys[r] }
	want := map[string]ref{}
	for step := range 5_000 {
		k := fmt.Sprintf("k%d", rng.IntN(60))
		if r, ok := want[k]; ok && rng.IntN(2) == 0 {
			x.remove(k, keyOf)
			delete(want, k)
			keys[r] = "<removed>" // as a freed record reads
		} else if !ok {
			keys = append(keys, k)
			x.add(k, ref(len(keys)-1))
			want[k] = ref(len(keys) - 1)
		}
		if x.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(want))
		}
		for i := range 60 {
			k := fmt.Sprintf("k%d", i)
			if got := x.find(k, keyOf); got != want[k] {
				t.Fatalf("step %d: find(%q) = %d, want %d", step, k, got, want[k])
			}
		}
		for k := range x.clash {
			if _, ok := x.byHash[x.hash(k)]; !ok {
				t.Fatalf("step %d: %q clashes with no key", step, k)
			}
		}
	}
}

// TestTableSlots: slots are never 0, are used again once removed, and
// records read back, across many chunks, with removed ones zeroed.
func TestTableSlots(t *testing.T) {
	var tb table[[2]int]
	live := map[ref]int{}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 3 * tableChunkLen {
		if len(live) > 0 && rng.IntN(3) == 0 {
			for r := range live { // remove one
				tb.remove(r)
				if *tb.at(r) != [2]int{} {
					t.Fatalf("removed slot %d not zeroed", r)
				}
				delete(live, r)
				break
			}
		}
		r := tb.add()
		if _, dup := live[r]; dup || r == 0 {
			t.Fatalf("add gave slot %d, in use or 0", r)
		}
		if *tb.at(r) != [2]int{} {
			t.Fatalf("slot %d given out with a record in it", r)
		}
		*tb.at(r) = [2]int{i, -i}
		live[r] = i
	}
	for r, i := range live {
		if *tb.at(r) != [2]int{i, -i} {
			t.Fatalf("slot %d holds %v, want %v", r, *tb.at(r), [2]int{i, -i})
		}
	}
	if tb.live() != len(live) {
		t.Fatalf("live() = %d, want %d", tb.live(), len(live))
	}
	if len(tb.chunks) < 2 {
		t.Fatalf("%d chunks: the test should cross a chunk", len(tb.chunks))
	}
}

// TestTokenListsMatchModel runs random creations (at instants out of
// order, some at the limit), deletions and user deletions on a few users,
// whose slots are used again, and checks after each step every user's
// tokens, in order, and every digest, against a model.
func TestTokenListsMatchModel(t *testing.T) {
	ctx := context.Background()
	s := New()
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	if err := s.CreateOrg(ctx, storage.Org{ID: "o"}, nil); err != nil {
		t.Fatal(err)
	}
	type user struct {
		rec    storage.User
		tokens []storage.Token
	}
	users := map[string]*user{} // by ID
	gone := map[storage.Digest]bool{}
	serial := 0
	newUser := func() {
		serial++
		u := storage.User{ID: fmt.Sprintf("u%03d", serial), Org: "o", Username: fmt.Sprintf("U%d", serial), FoldedUsername: fmt.Sprintf("u%d", serial)}
		if err := s.CreateUser(ctx, u, storage.UserLimit{}, nil); err != nil {
			t.Fatal(err)
		}
		users[u.ID] = &user{rec: u}
	}
	for range 4 {
		newUser()
	}
	now := 30 // minutes after t0: what "live" means in this step
	for step := range 3_000 {
		ids := make([]string, 0, len(users))
		for id := range users {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		u := users[ids[rng.IntN(len(ids))]]
		switch op := rng.IntN(10); {
		case op < 6: // create a token, at most 5 live
			serial++
			tok := storage.Token{
				ID: fmt.Sprintf("t%05d", serial), Org: "o", UserID: u.rec.ID,
				Digest: sha256.Sum256(fmt.Append(nil, serial)), Name: "n", Type: "read_write",
				CreatedAt: at(rng.IntN(40)),
			}
			if rng.IntN(2) == 0 {
				tok.ExpiresAt = at(rng.IntN(60))
			}
			lim := storage.TokenLimit{Max: 5, LiveAt: at(now)}
			err := s.CreateToken(ctx, tok, lim, nil)
			live := slices.DeleteFunc(slices.Clone(u.tokens), func(x storage.Token) bool { return !x.LiveAt(lim.LiveAt) })
			if len(u.tokens) >= lim.Max { // the store drops the expired ones
				for _, x := range u.tokens {
					if !x.LiveAt(lim.LiveAt) {
						gone[x.Digest] = true
					}
				}
				u.tokens = live
			}
			switch {
			case len(live) >= lim.Max:
				if !errors.Is(err, storage.ErrLimitExceeded) {
					t.Fatalf("step %d: create beyond the limit: %v", step, err)
				}
			case err != nil:
				t.Fatalf("step %d: create: %v", step, err)
			default:
				u.tokens = append(u.tokens, tok)
			}
		case op < 8 && len(u.tokens) > 0: // delete one of its tokens
			i := rng.IntN(len(u.tokens))
			x := u.tokens[i]
			err := s.DeleteToken(ctx, "o", u.rec.ID, x.ID, storage.Revocation{At: at(now)}, nil)
			if !x.LiveAt(at(now)) {
				if !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("step %d: delete of an expired token: %v", step, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("step %d: delete: %v", step, err)
			}
			gone[x.Digest] = true
			u.tokens = slices.Delete(u.tokens, i, i+1)
		case op == 8: // delete the user, make another (in its slot)
			if _, err := s.DeleteUser(ctx, "o", u.rec.ID, nil); err != nil {
				t.Fatal(err)
			}
			for _, x := range u.tokens {
				gone[x.Digest] = true
			}
			delete(users, u.rec.ID)
			newUser()
		default:
			now = rng.IntN(60)
		}
		for _, u := range users {
			want := slices.SortedFunc(slices.Values(u.tokens), func(a, b storage.Token) int {
				return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
			})
			got, err := s.ListTokens(ctx, "o", u.rec.ID, at(-1)) // before any expiry: all of them
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(a, b storage.Token) bool { return a.ID == b.ID && a.Digest == b.Digest }) {
				t.Fatalf("step %d: user %s lists %v, want %v", step, u.rec.ID, tokenIDsOf(got), tokenIDsOf(want))
			}
			for _, x := range want {
				a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: x.Digest})
				if err != nil || a.Credential.Token.ID != x.ID || a.Credential.User.ID != u.rec.ID {
					t.Fatalf("step %d: token %s: %v %v", step, x.ID, a.Credential.Token.ID, err)
				}
			}
		}
		for d := range gone {
			if _, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: d}); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("step %d: a dropped token still found: %v", step, err)
			}
		}
	}
}

// live returns the number of records of t.
func (t *table[T]) live() int {
	n := -len(t.free)
	for _, c := range t.chunks {
		n += len(c)
	}
	return max(n-1, 0) // slot 0
}

// len returns the number of keys x indexes.
func (x *strIndex) len() int { return len(x.byHash) + len(x.clash) }

func tokenIDsOf(ts []storage.Token) []string {
	out := make([]string, len(ts))
	for i, x := range ts {
		out[i] = x.ID
	}
	return out
}

// Without a limit, every 1 024th token of a user drops that user's tokens
// that are no longer live, and none that is.
func TestUnlimitedCreationDropsExpiredNowAndThen(t *testing.T) {
	ctx := context.Background()
	s := New()
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	require(s.CreateOrg(ctx, storage.Org{ID: "o"}, nil))
	require(s.CreateUser(ctx, storage.User{ID: "u", Org: "o", Username: "u", FoldedUsername: "u"}, storage.UserLimit{}, nil))
	create := func(i int, expires time.Time) storage.Token {
		tok := storage.Token{ID: fmt.Sprintf("t%04d", i), Org: "o", UserID: "u", Digest: sha256.Sum256(fmt.Append(nil, i)),
			Type: "read_write", CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: expires}
		require(s.CreateToken(ctx, tok, storage.TokenLimit{LiveAt: t0.Add(time.Hour)}, nil))
		return tok
	}
	var live []string
	for i := range 1023 { // even ones expired by t0 + 1h, odd ones never
		if i%2 == 0 {
			create(i, t0.Add(time.Minute))
		} else {
			live = append(live, create(i, time.Time{}).ID)
		}
	}
	all := func() []string {
		ts, err := s.ListTokens(ctx, "o", "u", t0) // before any expiry: every token kept
		require(err)
		return tokenIDsOf(ts)
	}
	if n := len(all()); n != 1023 {
		t.Fatalf("%d tokens kept before the 1 024th, want 1023", n)
	}
	live = append(live, create(1023, time.Time{}).ID)
	if got := all(); !slices.Equal(got, live) {
		t.Fatalf("after the 1 024th: %d tokens kept, want the %d live ones", len(got), len(live))
	}
	if _, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: sha256.Sum256(fmt.Append(nil, 0))}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a dropped token still found: %v", err)
	}
}

// TestRecordIntoSetsEveryField writes a user's record over a storage.User
// whose every field holds something else (as a reused page's elements
// may): it must come out as it does over a zero one, so that no field of
// storage.User is left as it was.
func TestRecordIntoSetsEveryField(t *testing.T) {
	var e userRec
	e.set(storage.User{ID: "id", Username: "Alice", Role: "Member", CreatedAt: time.UnixMilli(1)}, "Alice", "alice")
	var want storage.User
	e.recordInto(&want, "org")
	got := filled[storage.User](t)
	e.recordInto(&got, "org")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("over a filled User: %+v, want %+v", got, want)
	}

	tr := newTokenRec(storage.Token{ID: "tid", Name: "ci", Type: "read_write", CreatedAt: time.UnixMilli(1)}, 1)
	var wantToken storage.Token
	tr.recordInto(&wantToken, "org", "uid")
	gotToken := filled[storage.Token](t)
	tr.recordInto(&gotToken, "org", "uid")
	if !reflect.DeepEqual(gotToken, wantToken) {
		t.Errorf("over a filled Token: %+v, want %+v", gotToken, wantToken)
	}
}

// filled returns a T with every field, nested ones included, set to a
// value other than its zero.
func filled[T any](t *testing.T) T {
	t.Helper()
	var u T
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString("stale")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(7)
		case reflect.Uint8:
			v.SetUint(7)
		case reflect.Array:
			for i := range v.Len() {
				fill(v.Index(i))
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fill(v.Index(0))
		case reflect.Struct:
			if v.Type() == reflect.TypeFor[time.Time]() {
				v.Set(reflect.ValueOf(time.Unix(99, 0)))
				return
			}
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		default:
			t.Fatalf("no stale value for a field of kind %s", v.Kind())
		}
	}
	fill(reflect.ValueOf(&u).Elem())
	return u
}
