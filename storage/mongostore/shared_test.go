package mongostore

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/sharedtest"
	"github.com/orgadmin/orgadmin/storage"
)

// Two Stores on one database, as two processes would hold them.
func TestShared(t *testing.T) {
	testURI(t)
	sharedtest.Run(t, func(t testing.TB) (storage.Store, storage.Store) {
		db := newDB(t, client(t))
		var stores [2]storage.Store
		for i := range stores {
			s, err := New(t.Context(), db, Options{Timeout: testTimeout})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			stores[i] = s
		}
		return stores[0], stores[1]
	})
}
