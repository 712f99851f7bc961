package orgadmin_test

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The per-operation benchmarks of every store, memory included, are in
// internal/servicetest (run from each adapter's package). This one keeps
// the memory store at scale: pages of 100 users of an org of 1 000 000,
// from the start and nine tenths of the way in, by cursor and by offset.
func BenchmarkListUsersMillion(b *testing.B) {
	servicetest.BenchListUsers(b, memstore.New(), 1_000_000)
}

// BenchmarkScale builds an org of 1 000 users and one of 1 000 000 in
// memory, each user with a token, and reports the build time, the heap the
// org holds, and authenticate and page costs in each (see
// servicetest.Scale):
//
//	go test -run '^$' -bench Scale -benchmem . | benchstat -col /users -
func BenchmarkScale(b *testing.B) {
	servicetest.Scale(b, func(testing.TB) storage.Store { return memstore.New() }, 1_000, 1_000_000)
}
