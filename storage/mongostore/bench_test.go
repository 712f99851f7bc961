package mongostore

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/storebench"
	"github.com/orgadmin/orgadmin/storage"
)

// BenchmarkStore runs the operation benchmarks every store shares
// (internal/storebench), on the server ORGADMIN_MONGO_URI names:
//
//	go test -run '^$' -bench . ./storage/memstore ./storage/mongostore
func BenchmarkStore(b *testing.B) {
	testURI(b)
	storebench.Run(b, func(tb testing.TB) storage.Store { return newTestStore(tb) })
}
