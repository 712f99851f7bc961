package memstore_test

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

func BenchmarkStore(b *testing.B) {
	servicetest.Benchmarks(b, func(testing.TB) storage.Store { return memstore.New() })
}
