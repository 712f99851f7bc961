package memstore_test

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(testing.TB) storage.Store { return memstore.New() })
}

func TestServiceRaces(t *testing.T) {
	servicetest.RunRaces(t, func(testing.TB) storage.Store { return memstore.New() })
}

// Two Services on one memory store, as two servers in one process would
// share it.
func TestShared(t *testing.T) {
	servicetest.RunShared(t, func(testing.TB) (storage.Store, storage.Store) {
		s := memstore.New()
		return s, s
	})
}
