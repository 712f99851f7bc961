package mongostore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOperationsWaitTheirTurn checks Options.MaxInFlight without a server:
// an operation beyond the bound waits, gets its timeout only when its
// turn comes, gives up when its context ends first or when no turn comes
// within MaxTurnWaits timeouts, and an operation run inside another runs
// in that one's turn.
func TestOperationsWaitTheirTurn(t *testing.T) {
	s := &Store{timeout: time.Minute, turns: make(chan struct{}, 1)}

	first, end := s.op(context.Background())
	require.NoError(t, first.Err())

	// Inside the first, no second turn is needed: with a bound of one it
	// would never come.
	inner, endInner := s.op(first)
	require.NoError(t, inner.Err())
	endInner()

	// Another waits until the first ends, and its timeout counts from
	// then.
	got := make(chan time.Time)
	go func() {
		ctx, end := s.op(context.Background())
		defer end()
		deadline, _ := ctx.Deadline()
		got <- deadline
	}()
	select {
	case <-got:
		t.Fatal("a second operation ran beside the first")
	case <-time.After(50 * time.Millisecond):
	}
	ended := time.Now()
	end()
	deadline := <-got
	require.False(t, deadline.Before(ended.Add(s.timeout)), "the timeout started before the turn came")

	// One whose context ends while it waits gives up with that context.
	_, end = s.op(context.Background())
	defer end()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	waited, endWaited := s.op(ctx)
	defer endWaited()
	require.ErrorIs(t, waited.Err(), context.Canceled)

	// One that gets no turn within MaxTurnWaits timeouts gives up, past
	// its deadline, and the turn it did not get stays with its holder.
	short := &Store{timeout: 50 * time.Millisecond, turns: make(chan struct{}, 1)}
	_, endHeld := short.op(context.Background())
	start := time.Now()
	late, endLate := short.op(context.Background())
	require.ErrorIs(t, late.Err(), context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), MaxTurnWaits*short.timeout, "gave up before its time")
	endLate()
	require.Len(t, short.turns, 1, "the turn is still held")
	endHeld()
	next, endNext := short.op(context.Background())
	require.NoError(t, next.Err())
	endNext()

	// No bound: nothing waits.
	free := &Store{timeout: time.Minute}
	for range 3 {
		ctx, end := free.op(context.Background())
		require.NoError(t, ctx.Err())
		defer end()
	}
}
