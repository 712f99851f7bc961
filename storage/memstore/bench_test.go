package memstore_test

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/storebench"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

func BenchmarkStore(b *testing.B) {
	storebench.Run(b, func(testing.TB) storage.Store { return memstore.New() })
}
