package orgadmin

import (
	"testing"

	"github.com/orgadmin/orgadmin/storage"
)

// put keeps an array cleared, so that it keeps no record alive, and only
// up to maxRecycled records; get gives back an empty slice.
func TestRecyclerClearsAndBounds(t *testing.T) {
	var r recycler[storage.User]
	h := r.get()
	if len(*h) != 0 {
		t.Fatalf("get: %d records", len(*h))
	}
	recs := append(*h, storage.User{ID: "a"}, storage.User{ID: "b"}, storage.User{ID: "c"})
	r.put(h, recs[:2]) // the store read three records, the operation kept two
	for i, u := range recs {
		if u.ID != "" {
			t.Errorf("record %d kept alive after put: %q", i, u.ID)
		}
	}
	if len(*h) != 0 || cap(*h) != cap(recs) {
		t.Errorf("put kept len %d cap %d, want 0 and %d", len(*h), cap(*h), cap(recs))
	}

	big := make([]storage.User, 1, maxRecycled+1)
	big[0].ID = "big"
	h = new([]storage.User)
	r.put(h, big)
	if cap(*h) != 0 || big[0].ID != "big" {
		t.Error("an array of more than maxRecycled records was kept")
	}
}
