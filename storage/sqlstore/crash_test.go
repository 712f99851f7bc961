package sqlstore

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// crashWriterEnv, in a child process of the test binary, names the
// database the child writes to until it is killed.
const crashWriterEnv = "ORGADMIN_SQLSTORE_CRASH_WRITER"

func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashWriterEnv); dsn != "" {
		crashWriter(dsn)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashWriter creates tokens from four goroutines, each with its audit
// event, each printing the id of a token once CreateToken has returned,
// until the process is killed.
func crashWriter(dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{Timeout: testdb.Timeout})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("p%d-w%d-%d", os.Getpid(), w, i)
				t := storage.Token{ID: id, Org: "crash", UserID: "u", Digest: sha256.Sum256([]byte(id)), Name: id, Type: "read_write", CreatedAt: time.UnixMilli(int64(i))}
				a := &storage.Audit{Event: storage.Event{
					ID: "e-" + id, Org: "crash", At: time.UnixMilli(int64(i)), ActorUsername: "system",
					Action: "token.create", TargetKind: "token", TargetID: id,
				}}
				if err := s.CreateToken(ctx, t, storage.TokenLimit{}, a); err != nil {
					fmt.Println("create token:", err)
					return
				}
				mu.Lock()
				fmt.Println("ack", id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// A process killed with SIGKILL while it writes to a SQLite file loses
// nothing it was told was written: every token whose CreateToken returned
// is there when the file is opened again, and the file is whole. Every
// token there has its audit event, and every event its token.
func TestKilledWriterLosesNoAcknowledgedWrite(t *testing.T) {
	dsn := testdb.SQLite(t)
	s := openTest(t, dsn)
	ctx := t.Context()
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "crash", CreatedAt: time.UnixMilli(1)}, nil))
	require.NoError(t, s.CreateUser(ctx, storage.User{ID: "u", Org: "crash", Username: "u", FoldedUsername: "u", Role: "Member"}, storage.UserLimit{}, nil))
	s.Close()

	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashWriterEnv+"="+dsn)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var acked []string
		lines := bufio.NewScanner(out)
		for len(acked) < 300 && lines.Scan() {
			id, ok := strings.CutPrefix(lines.Text(), "ack ")
			require.True(t, ok, "round %d: the writer says %q", round, lines.Text())
			acked = append(acked, id)
		}
		require.NoError(t, cmd.Process.Kill())
		for lines.Scan() { // what was acknowledged before the kill landed
			if id, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
				acked = append(acked, id)
			}
		}
		_ = cmd.Wait()
		require.GreaterOrEqual(t, len(acked), 300, "round %d: acknowledged writes", round)

		s := openTest(t, dsn)
		var ok string
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&ok))
		require.Equal(t, "ok", ok, "round %d", round)
		toks, err := s.ListTokens(ctx, "crash", "u", time.Time{})
		require.NoError(t, err)
		have := make(map[string]bool, len(toks))
		for _, tok := range toks {
			have[tok.ID] = true
		}
		for _, id := range acked {
			require.True(t, have[id], "round %d: token %s was acknowledged, then lost", round, id)
		}
		page, err := s.ListEvents(ctx, "crash", storage.EventQuery{Limit: 1 << 20})
		require.NoError(t, err)
		events := make(map[string]bool, len(page.Events))
		for _, e := range page.Events {
			require.True(t, have[e.TargetID], "round %d: event %s of a token that is not there", round, e.ID)
			events[e.TargetID] = true
		}
		for id := range have {
			require.True(t, events[id], "round %d: token %s without its event", round, id)
		}
		require.Len(t, page.Events, len(toks), "round %d: one event per token", round)
		s.Close()
	}
}
