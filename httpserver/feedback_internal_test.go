package httpserver

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// remembered returns the clients c remembers, most recently seen first, after
// checking that its map and its list hold the same clients.
func (c *clientLimits) remembered(tb testing.TB) []string {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for e := c.order.Front(); e != nil; e = e.Next() {
		cl := e.Value.(*clientLimit)
		require.Same(tb, e, c.clients[cl.key], "the map entry of %q", cl.key)
		keys = append(keys, cl.key)
	}
	require.Len(tb, c.clients, len(keys), "clients in the map and in the list")
	return keys
}

// The feedback handler remembers at most MaxFeedbackClients clients,
// however many distinct ones submit, even when none of them has its full
// budget back (the clock stands still).
func TestFeedbackClientsAreBounded(t *testing.T) {
	t.Parallel()
	c := newClientLimits(10, MaxFeedbackClients)
	now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	for i := range 3 * MaxFeedbackClients {
		require.True(t, c.limiter(fmt.Sprint("client-", i)).AllowN(now, 1), "a new client has its whole budget")
		if c.order.Len() > MaxFeedbackClients || len(c.clients) > MaxFeedbackClients {
			t.Fatalf("after %d clients: %d in the list, %d in the map; at most %d", i+1, c.order.Len(), len(c.clients), MaxFeedbackClients)
		}
	}
	assert.Len(t, c.remembered(t), MaxFeedbackClients)
}

// Making room for a new client forgets exactly one, the one seen least
// recently, whatever the state of the others: an eviction touches one
// entry, not the whole table. A client seen again moves to the front, and
// the limiter of every client kept is the same, its spending intact.
func TestFeedbackClientEvictionForgetsOneClient(t *testing.T) {
	t.Parallel()
	c := newClientLimits(2, 4)
	now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	// a and b spend their budget; c and d keep it whole.
	for _, k := range []string{"a", "b"} {
		lim := c.limiter(k)
		require.True(t, lim.AllowN(now, 1))
		require.True(t, lim.AllowN(now, 1))
	}
	limC, limD := c.limiter("c"), c.limiter("d")
	assert.Equal(t, []string{"d", "c", "b", "a"}, c.remembered(t))

	// Seen again, a is the most recent; it is still out of budget.
	assert.False(t, c.limiter("a").AllowN(now, 1))
	assert.Equal(t, []string{"a", "d", "c", "b"}, c.remembered(t))

	// e takes the place of b alone.
	assert.True(t, c.limiter("e").AllowN(now, 1))
	assert.Equal(t, []string{"e", "a", "d", "c"}, c.remembered(t))
	assert.Same(t, limC, c.limiter("c"))
	assert.Same(t, limD, c.limiter("d"))
	assert.False(t, c.limiter("a").AllowN(now, 1), "a kept its spending")
	assert.Equal(t, []string{"a", "d", "c", "e"}, c.remembered(t))

	// Each further client forgets one more, least recent first.
	for i, want := range [][]string{
		{"f", "a", "d", "c"},
		{"g", "f", "a", "d"},
		{"h", "g", "f", "a"},
	} {
		c.limiter(want[0])
		assert.Equal(t, want, c.remembered(t), "client %d", i)
	}

	// b, forgotten, starts over with a full budget.
	lim := c.limiter("b")
	assert.True(t, lim.AllowN(now, 1))
	assert.True(t, lim.AllowN(now, 1))
	assert.False(t, lim.AllowN(now, 1))
	assert.Equal(t, []string{"b", "h", "g", "f"}, c.remembered(t))
}

// Clients may come at once: the table stays within its bound and its map
// and list agree (run with -race).
func TestFeedbackClientsConcurrently(t *testing.T) {
	t.Parallel()
	c := newClientLimits(10, 50)
	now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				c.limiter(fmt.Sprint("client-", (g*37+i)%120)).AllowN(now, 1)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, c.remembered(t), 50)
}
