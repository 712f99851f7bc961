package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/orgadmin/orgadmin/internal/casefold"
)

// migrations are the schema's versions: migrations[i] brings a database at
// version i to version i+1. A released migration is never edited; a change
// of schema is a new one at the end. Each is written in PostgreSQL's
// spelling and rewritten for SQLite.
//
// Version 1 holds every table. Version 2 adds the index that listings
// filtered on service accounts read their keyset pages from. Version 3
// adds the audit events (events.go). Version 4 adds the tombstones of
// revoked tokens (tokens.go). Version 5 orders the audit events by a
// sequence per org (events.go): the events kept are numbered 1, 2, ... in
// their former order (time, then id), and each org's counter starts
// after its last. Version 6 adds the index that bounds the tombstones of
// each org (storage.Revocation.MaxPerOrg).
var migrations = []string{
	// 1
	`CREATE TABLE orgs (
	id TEXT PRIMARY KEY,
	created_at BIGINT NOT NULL,
	user_count BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE users (
	org TEXT NOT NULL REFERENCES orgs (id),
	id TEXT NOT NULL,
	username TEXT NOT NULL,
	folded TEXT COLLATE "C" NOT NULL,
	description TEXT NOT NULL,
	service_account BOOLEAN NOT NULL,
	role TEXT NOT NULL,
	privileges TEXT,
	email TEXT NOT NULL,
	first_name TEXT NOT NULL,
	last_name TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	rw_size TEXT NOT NULL,
	rw_flock BIGINT NOT NULL,
	rw_cooldown BIGINT NOT NULL,
	rs_size TEXT NOT NULL,
	rs_flock BIGINT NOT NULL,
	rs_cooldown BIGINT NOT NULL,
	PRIMARY KEY (org, id),
	UNIQUE (org, folded)
);
CREATE TABLE tokens (
	id TEXT PRIMARY KEY,
	digest BYTEA NOT NULL UNIQUE,
	org TEXT NOT NULL,
	user_id TEXT NOT NULL,
	name TEXT NOT NULL,
	description TEXT NOT NULL,
	type TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT,
	FOREIGN KEY (org, user_id) REFERENCES users (org, id) ON DELETE CASCADE
);
CREATE INDEX tokens_by_user ON tokens (org, user_id, created_at, id);
CREATE TABLE ducklings (
	org TEXT NOT NULL,
	user_id TEXT NOT NULL,
	id TEXT NOT NULL,
	active BOOLEAN NOT NULL,
	at BIGINT NOT NULL,
	PRIMARY KEY (org, user_id, id),
	FOREIGN KEY (org, user_id) REFERENCES users (org, id) ON DELETE CASCADE
);
CREATE TABLE dives (
	org TEXT NOT NULL REFERENCES orgs (id),
	id TEXT NOT NULL,
	title TEXT NOT NULL,
	version BIGINT NOT NULL,
	resources TEXT,
	PRIMARY KEY (org, id)
);
CREATE TABLE embed_sessions (
	digest BYTEA PRIMARY KEY,
	org TEXT NOT NULL,
	dive_id TEXT NOT NULL,
	version BIGINT NOT NULL,
	user_id TEXT NOT NULL,
	username TEXT NOT NULL,
	resources TEXT,
	initial_state BYTEA,
	affinity_key TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	FOREIGN KEY (org, user_id) REFERENCES users (org, id) ON DELETE CASCADE
);
CREATE INDEX embed_sessions_by_user ON embed_sessions (org, user_id, expires_at);
CREATE TABLE seed_marks (
	org TEXT NOT NULL,
	key TEXT NOT NULL,
	PRIMARY KEY (org, key)
);
CREATE TABLE feedback (
	seq BIGSERIAL PRIMARY KEY,
	id TEXT NOT NULL UNIQUE,
	page_path TEXT NOT NULL,
	text TEXT NOT NULL,
	page_title TEXT NOT NULL,
	source TEXT NOT NULL,
	created_at BIGINT NOT NULL
)`,
	// 2
	`CREATE INDEX users_by_kind ON users (org, service_account, folded)`,
	// 3
	`CREATE TABLE audit_events (
	org TEXT NOT NULL,
	at BIGINT NOT NULL,
	id TEXT COLLATE "C" NOT NULL,
	actor_id TEXT NOT NULL,
	actor_username TEXT NOT NULL,
	actor_token_id TEXT NOT NULL,
	action TEXT NOT NULL,
	target_kind TEXT NOT NULL,
	target_id TEXT NOT NULL,
	target_username TEXT NOT NULL,
	request_id TEXT NOT NULL,
	before_value TEXT,
	after_value TEXT,
	PRIMARY KEY (org, at, id)
)`,
	// 4
	`CREATE TABLE revoked_tokens (
	digest BYTEA PRIMARY KEY,
	org TEXT NOT NULL,
	user_id TEXT NOT NULL,
	token_id TEXT NOT NULL,
	revoked_at BIGINT NOT NULL,
	until BIGINT NOT NULL
);
CREATE INDEX revoked_tokens_by_until ON revoked_tokens (until)`,
	// 5
	`CREATE TABLE audit_events_by_seq (
	org TEXT NOT NULL,
	seq BIGINT NOT NULL,
	at BIGINT NOT NULL,
	id TEXT NOT NULL,
	actor_id TEXT NOT NULL,
	actor_username TEXT NOT NULL,
	actor_token_id TEXT NOT NULL,
	action TEXT NOT NULL,
	target_kind TEXT NOT NULL,
	target_id TEXT NOT NULL,
	target_username TEXT NOT NULL,
	request_id TEXT NOT NULL,
	before_value TEXT,
	after_value TEXT,
	PRIMARY KEY (org, seq)
);
INSERT INTO audit_events_by_seq (org, seq, at, id, actor_id, actor_username, actor_token_id, action,
	target_kind, target_id, target_username, request_id, before_value, after_value)
SELECT org, ROW_NUMBER() OVER (PARTITION BY org ORDER BY at, id), at, id, actor_id, actor_username, actor_token_id, action,
	target_kind, target_id, target_username, request_id, before_value, after_value
FROM audit_events;
DROP TABLE audit_events;
ALTER TABLE audit_events_by_seq RENAME TO audit_events;
CREATE INDEX audit_events_by_at ON audit_events (org, at);
ALTER TABLE orgs ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;
UPDATE orgs SET event_seq = COALESCE((SELECT MAX(seq) FROM audit_events WHERE audit_events.org = orgs.id), 0)`,
	// 6
	`CREATE INDEX revoked_tokens_by_org ON revoked_tokens (org, until)`,
	// 7: refold
	``,
}

// steps are the parts of migrations written in Go, by version: steps[v]
// runs after the statements of migrations[v-1], in the same transaction.
var steps = map[int]func(ctx context.Context, tx *sql.Tx, d *dialect) error{7: refold}

// refold re-keys every user whose folded username an earlier version
// stored under its fold (the smallest lower-case member of each rune's
// case orbit: "µ" for "Μ", "ς" for "Σ"), under the simple case folding
// that keys usernames now (casefold.Fold), so that lookups find it and
// listings order it as the Service expects. The two folds tell the same
// names apart, so a new key never meets another user's. It reads every
// user's key once.
func refold(ctx context.Context, tx *sql.Tx, d *dialect) error {
	found, err := staleUsers(ctx, tx)
	if err != nil {
		return err
	}
	update := d.rewrite("UPDATE users SET folded = $1 WHERE org = $2 AND id = $3")
	for _, u := range found {
		if _, err := tx.ExecContext(ctx, update, casefold.Fold(u.folded), u.org, u.id); err != nil {
			return fmt.Errorf("re-key user %q of org %q: %w", u.id, u.org, err)
		}
	}
	return nil
}

// staleUser is a user whose key refold changes.
type staleUser struct{ org, id, folded string }

// staleUsers reads the users whose key is stale (casefold.Stale), done
// reading before refold writes on the transaction's connection.
func staleUsers(ctx context.Context, tx *sql.Tx) ([]staleUser, error) {
	rows, err := tx.QueryContext(ctx, "SELECT org, id, folded FROM users")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []staleUser
	for rows.Next() {
		var u staleUser
		if err := rows.Scan(&u.org, &u.id, &u.folded); err != nil {
			return nil, err
		}
		if casefold.Stale(u.folded) {
			found = append(found, u)
		}
	}
	return found, rows.Err()
}

// migration returns the statements of migration i (0-based) for the
// Store's engine.
func (s *Store) migration(i int) string { return s.d.rewrite(migrations[i]) }

// Migrate brings the schema of the Store's database to the current
// version. Open calls it; calling it again does nothing. It returns an
// error when the database's version is newer than this package knows.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, len(migrations))
}

// Version returns the schema version of the Store's database.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: read schema version: %w", err)
	}
	return v, nil
}

// migrate brings the schema to version target, in one transaction that
// holds the migration lock: PostgreSQL's advisory lock, or SQLite's write
// lock (BEGIN IMMEDIATE). Two processes that start together migrate one
// after the other, and the second finds nothing to do. Each version
// applied adds its row to schema_version.
func (s *Store) migrate(ctx context.Context, target int) error {
	err := s.inTx(ctx, func(tx runner) error {
		if s.d.lockKey != "" {
			if _, err := tx.tx.ExecContext(ctx, s.d.lockKey); err != nil {
				return fmt.Errorf("take the migration lock: %w", err)
			}
		}
		if _, err := tx.tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY)"); err != nil {
			return err
		}
		var v int
		if err := tx.tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v); err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("the database's schema is at version %d, newer than this build knows (%d)", v, len(migrations))
		}
		for ; v < target; v++ {
			if q := s.migration(v); q != "" {
				if _, err := tx.tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("to version %d: %w", v+1, err)
				}
			}
			if step := steps[v+1]; step != nil {
				if err := step(ctx, tx.tx, s.d); err != nil {
					return fmt.Errorf("to version %d: %w", v+1, err)
				}
			}
			if _, err := tx.tx.ExecContext(ctx, s.d.rewrite("INSERT INTO schema_version (version) VALUES ($1)"), v+1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}
