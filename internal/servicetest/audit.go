package servicetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// Changes made concurrently through two Services sharing a store, whose
// clocks disagree, are each in the audit trail once, which both read
// alike; a reader paging from a cursor meanwhile sees exactly the events
// of the trail from its first one down, once each: every event stored
// before it began, and none stored later, whatever its time.
func testSharedAuditTrail(t *testing.T, services [2]*orgadmin.Service) {
	ctx := t.Context()
	adminToken, err := services[0].Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := services[1].Authenticate(ctx, adminToken)
	require.NoError(t, err)
	before := trail(t, services[0], admin, 1000)
	require.NotEmpty(t, before)

	// The first page is read before the changes, the others meanwhile.
	page, err := services[1].AuditEvents(ctx, admin, orgadmin.AuditQuery{Limit: orgadmin.Some(1)})
	require.NoError(t, err)
	old := page.Events

	const perWriter = 4
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
		errs   []error
	)
	for w := range 4 {
		svc := services[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perWriter {
				name := fmt.Sprintf("sa%d_%d", w, n)
				_, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: name})
				if err == nil {
					var tok orgadmin.Token
					if tok, err = svc.CreateToken(ctx, admin, name, orgadmin.CreateTokenInput{Name: "t"}); err == nil {
						err = services[(w+1)%2].DeleteToken(ctx, admin, name, tok.ID)
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					counts[orgadmin.ActionUserCreate]++
					counts[orgadmin.ActionTokenCreate]++
					counts[orgadmin.ActionTokenDelete]++
				}
				mu.Unlock()
			}
		}()
	}
	for page.NextPageToken != "" {
		page, err = services[(len(old))%2].AuditEvents(ctx, admin, orgadmin.AuditQuery{Limit: orgadmin.Some(1), PageToken: page.NextPageToken})
		require.NoError(t, err)
		old = append(old, page.Events...)
	}
	wg.Wait()
	require.Empty(t, errs)
	assert.Subset(t, ids(old), ids(before), "paging under concurrent changes skips no event")
	assert.Len(t, old, len(uniq(ids(old))), "paging under concurrent changes repeats no event")

	after := trail(t, services[0], admin, 5)
	require.NotEmpty(t, old)
	start := slices.IndexFunc(after, func(e orgadmin.AuditEvent) bool { return e.ID == old[0].ID })
	require.GreaterOrEqual(t, start, 0)
	assert.Equal(t, ids(after[start:]), ids(old), "the walk is the trail from its first event down, in order")
	assert.Equal(t, after, trail(t, services[1], admin, 1000), "both Services read one trail")
	got := map[string]int{}
	was := uniq(ids(before))
	for _, e := range after {
		if was[e.ID] {
			continue
		}
		got[e.Action]++
		assert.Equal(t, "admin", e.ActorUsername)
	}
	assert.Equal(t, counts, got, "one event per change")
	assert.Subset(t, ids(after), ids(before))
	assert.Len(t, after, len(uniq(ids(after))))
}

func uniq(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

// trail reads the whole audit trail of a's org, by pages of limit.
func trail(t testing.TB, svc *orgadmin.Service, a orgadmin.Auth, limit int) []orgadmin.AuditEvent {
	t.Helper()
	var out []orgadmin.AuditEvent
	for e, err := range svc.AllAuditEvents(t.Context(), a, orgadmin.AuditQuery{Limit: orgadmin.Some(limit)}) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func ids(es []orgadmin.AuditEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
