package mongostore

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
)

// Two Stores on one database, as two processes would hold them.
func TestShared(t *testing.T) {
	testURI(t)
	servicetest.RunShared(t, func(t testing.TB) (storage.Store, storage.Store) {
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

func TestServiceRaces(t *testing.T) {
	testURI(t)
	t.Parallel() // each store has a database of its own
	var known []servicetest.KnownDefect
	if newTestStore(t).byPointer { // FerretDB v1
		known = []servicetest.KnownDefect{
			{Race: "SetInstanceConfigRacingGrantPrivilege", Why: ferretUpdateWhy},
			{Race: "GrantPrivilegesSameUser", Why: ferretUpdateWhy},
			{Race: "SetInstanceConfigRacingRecreateUser", Why: ferretUpdateWhy},
			{Race: "DeleteUserRacingRecreateUser", Why: ferretUpdateWhy + "; two deletions of one user can both succeed"},
		}
	}
	servicetest.RunRaces(t, func(t testing.TB) storage.Store { return newTestStore(t) }, known...)
}
