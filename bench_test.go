package orgadmin_test

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/storebench"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The per-operation benchmarks of every store, memory included, are in
// internal/storebench (run from each adapter's package). This one keeps
// the memory store at scale: pages of 100 users of an org of 1 000 000,
// from the start and nine tenths of the way in, by cursor and by offset.
func BenchmarkListUsersMillion(b *testing.B) {
	storebench.ListUsers(b, memstore.New(), 1_000_000)
}
