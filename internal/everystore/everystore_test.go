package everystore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
	"github.com/orgadmin/orgadmin/storage/mongostore"
	"github.com/orgadmin/orgadmin/storage/redisstore"
	"github.com/orgadmin/orgadmin/storage/sqlstore"
)

const secret = "oat_3kTq9ZvX2mLp8RwY4nBc7HdJ5sFg1Ae6Ui0OyKxQrVtNhWjM"

func TestLeaksFindsEveryEncoding(t *testing.T) {
	run := secret[10:26] // MinLeak characters from the middle
	texts := map[string]string{
		"clear":            "Authorization: Bearer " + secret,
		"a run":            `{"note":"` + run + `"}`,
		"hex":              "k:" + hex.EncodeToString([]byte(secret)),
		"upper hex":        strings.ToUpper(hex.EncodeToString([]byte("x" + secret))),
		"hex of a run":     hex.EncodeToString([]byte(secret[5:13])),
		"base64":           base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 unaligned": base64.StdEncoding.EncodeToString([]byte("ab" + secret + "cd")),
		"base64url":        base64.RawURLEncoding.EncodeToString([]byte("z" + secret)),
		"base64 of a run":  base64.StdEncoding.EncodeToString([]byte(secret[3:30])),
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			leaks := Leaks([]string{"unrelated-secret-value", secret}, []string{"nothing here", text})
			require.Len(t, leaks, 1, "text: %s", text)
			assert.Contains(t, leaks[0], "text 1 holds secret 1")
		})
	}
}

func TestLeaksIgnoresWhatIsNoSecret(t *testing.T) {
	d := sha256.Sum256([]byte(secret))
	texts := []string{
		"",
		secret[:MinLeak-1],             // too short a run
		secret[20:20+MinLeak-1] + "…!", // likewise
		hex.EncodeToString(d[:]),       // the digest is no leak
		base64.StdEncoding.EncodeToString(d[:]),
		string(d[:]),
	}
	assert.Empty(t, Leaks([]string{secret}, texts))
}

func TestLeaksOfShortSecrets(t *testing.T) {
	assert.Len(t, Leaks([]string{"tiny"}, []string{"a tiny one"}), 1)
	assert.Empty(t, Leaks([]string{"tiny"}, []string{"ti ny"}))
}

// walk reaches unexported fields behind pointers, maps, slices and
// interfaces, and shows bytes raw.
func TestWalk(t *testing.T) {
	type inner struct {
		digest [4]byte
		raw    []byte
		when   time.Time
	}
	type outer struct {
		byName map[string]*inner
		list   []any
		self   *outer
		n      int
	}
	in := &inner{digest: [4]byte{'d', 'i', 'g', '!'}, raw: []byte("raw-bytes"), when: time.Unix(0, 0)}
	o := &outer{byName: map[string]*inner{"key-one": in}, list: []any{"in-a-slice", in}, n: 42}
	o.self = o
	got := walk(o)
	for _, want := range []string{"key-one", "dig!", "raw-bytes", "in-a-slice", "42"} {
		assert.Contains(t, got, want)
	}
	assert.Equal(t, 1, strings.Count(got, "raw-bytes"), "a shared pointer is walked once")
}

// Every kind opens empty stores of its adapter's own type, unwrapped, that
// see nothing of one another, and shows what a store holds.
func TestKinds(t *testing.T) {
	types := map[string]storage.Store{
		"memory": &memstore.Store{}, "miniredis": &redisstore.Store{}, "redis": &redisstore.Store{},
		"cluster": &redisstore.Store{}, "mongo": &mongostore.Store{},
		"sqlite": &sqlstore.Store{}, "postgres": &sqlstore.Store{},
	}
	Run(t, func(t *testing.T, k Kind) {
		ctx := t.Context()
		a, b := k.Open(t), k.Open(t)
		assert.IsType(t, types[k.Name], a.Store)
		require.NoError(t, a.Store.CreateOrg(ctx, storage.Org{ID: "org-only-in-a", CreatedAt: time.Now()}, nil))
		_, err := b.Store.GetOrg(ctx, "org-only-in-a")
		require.ErrorIs(t, err, storage.ErrNotFound)
		assert.Contains(t, strings.Join(a.Contents(t), "\n"), "org-only-in-a")
		assert.NotContains(t, strings.Join(b.Contents(t), "\n"), "org-only-in-a")
	})
}
