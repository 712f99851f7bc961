package sqlstore

import (
	"strconv"
	"strings"
)

// column is a column of a table as a query reads it; zero is what a LEFT
// JOIN that found no row reads instead of NULL (empty for a column that
// is NULL-able anyway and scanned as such).
type column struct{ name, zero string }

var userColumns = []column{
	{"org", "''"}, {"id", "''"}, {"username", "''"}, {"folded", "''"}, {"description", "''"},
	{"service_account", "false"}, {"role", "''"}, {"privileges", ""}, {"email", "''"},
	{"first_name", "''"}, {"last_name", "''"}, {"created_at", "0"},
	{"rw_size", "''"}, {"rw_flock", "0"}, {"rw_cooldown", "0"},
	{"rs_size", "''"}, {"rs_flock", "0"}, {"rs_cooldown", "0"},
}

var tokenColumns = []column{
	{"id", "''"}, {"digest", ""}, {"org", "''"}, {"user_id", "''"}, {"name", "''"},
	{"description", "''"}, {"type", "''"}, {"created_at", "0"}, {"expires_at", ""},
}

var sessionColumns = []column{
	{"digest", ""}, {"org", "''"}, {"dive_id", "''"}, {"version", "0"}, {"user_id", "''"},
	{"username", "''"}, {"resources", ""}, {"initial_state", ""}, {"affinity_key", "''"},
	{"created_at", "0"}, {"expires_at", "0"},
}

// cols lists columns of the table aliased alias; outer reads them as a
// LEFT JOIN may: COALESCE'd to their zero.
func cols(alias string, cs []column, outer bool) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		name := c.name
		if alias != "" {
			name = alias + "." + c.name
		}
		if outer && c.zero != "" {
			b.WriteString("COALESCE(" + name + ", " + c.zero + ")")
		} else {
			b.WriteString(name)
		}
	}
	return b.String()
}

// names lists the columns' names, for an INSERT.
func names(cs []column) string { return cols("", cs, false) }

// params lists n parameters from $first.
func params(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i))
	}
	return b.String()
}

// liveAt is the condition that the token aliased t is live at the instant
// of parameter p.
func liveAt(t, p string) string {
	return "(" + t + ".expires_at IS NULL OR " + t + ".expires_at > " + p + ")"
}

// queries are the Store's statements in its engine's spelling.
type queries struct {
	createOrg, getOrg, lockOrg string

	changeUserCount, userTaken, insertUser, getUser, setPrivileges, userExists, setInstances, deleteUser string
	// listUsers[filtered][keyset] is a page of users, with the total.
	listUsers [2][2]string
	// totalUsers[filtered] counts users.
	totalUsers [2]string

	lockUser, dropExpiredTokens, countTokens, tokenTaken, insertToken string
	credential, targetTokens, listTokens, deleteToken                 string
	// The tombstones of revoked tokens.
	revoke, unrevoke, dropRevoked, boundRevoked, revoked string

	setDuckling, listActivity string

	putDive, createDive, getDive, embedTarget string

	dropExpiredSessions, countSessions, sessionTaken, insertSession, sessionByDigest string

	addFeedback, trimFeedback, seedMarks string
}

func newQueries(d *dialect) queries {
	u := cols("u", userColumns, false)
	t := cols("t", tokenColumns, false)
	q := queries{ // #nosec G101 -- SQL statements that name token columns, no credentials
		createOrg:       "INSERT INTO orgs (id, created_at) VALUES ($1, $2)",
		getOrg:          "SELECT created_at FROM orgs WHERE id = $1",
		lockOrg:         "SELECT user_count FROM orgs WHERE id = $1 FOR UPDATE",
		changeUserCount: "UPDATE orgs SET user_count = user_count + $2 WHERE id = $1",

		userTaken:  "SELECT count(*) FROM users WHERE org = $1 AND (folded = $2 OR id = $3)",
		insertUser: "INSERT INTO users (" + names(userColumns) + ") VALUES (" + params(1, len(userColumns)) + ")",
		getUser:    "SELECT " + u + " FROM users u WHERE u.org = $1 AND u.folded = $2",
		// A compare-and-set of the privileges as stored (a JSON array, or
		// NULL for none: equal to an empty array).
		setPrivileges: "UPDATE users SET privileges = $4 WHERE org = $1 AND id = $2 AND COALESCE(privileges, '[]') = $3",
		userExists:    "SELECT count(*) FROM users WHERE org = $1 AND id = $2",
		setInstances: `UPDATE users SET rw_size = $3, rw_flock = $4, rw_cooldown = $5, rs_size = $6, rs_flock = $7, rs_cooldown = $8
	WHERE org = $1 AND id = $2`,
		deleteUser: "DELETE FROM users WHERE org = $1 AND id = $2 RETURNING " + names(userColumns),

		lockUser:          "SELECT 1 FROM users WHERE org = $1 AND id = $2 FOR UPDATE",
		dropExpiredTokens: "DELETE FROM tokens WHERE org = $1 AND user_id = $2 AND expires_at <= $3",
		countTokens:       "SELECT count(*) FROM tokens t WHERE t.org = $1 AND t.user_id = $2 AND " + liveAt("t", "$3"),
		tokenTaken:        "SELECT count(*) FROM tokens WHERE id = $1 OR digest = $2",
		insertToken:       "INSERT INTO tokens (" + names(tokenColumns) + ") VALUES (" + params(1, len(tokenColumns)) + ")",
		credential:        "SELECT " + t + ", " + u + " FROM tokens t JOIN users u ON u.org = t.org AND u.id = t.user_id WHERE t.digest = $1",
		targetTokens: "SELECT " + u + ", " + cols("t", tokenColumns, true) +
			" FROM users u LEFT JOIN tokens t ON t.org = u.org AND t.user_id = u.id AND " + liveAt("t", "$3") +
			" WHERE u.org = $1 AND u.folded = $2 ORDER BY t.created_at, t.id",
		listTokens: "SELECT " + t + " FROM tokens t WHERE t.org = $1 AND t.user_id = $2 AND " + liveAt("t", "$3") + " ORDER BY t.created_at, t.id",
		deleteToken: "DELETE FROM tokens AS t WHERE t.id = $3 AND t.org = $1 AND t.user_id = $2 AND " + liveAt("t", "$4") +
			" RETURNING digest, expires_at",
		revoke: `INSERT INTO revoked_tokens (digest, org, user_id, token_id, revoked_at, until) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (digest) DO UPDATE SET org = excluded.org, user_id = excluded.user_id, token_id = excluded.token_id,
	revoked_at = excluded.revoked_at, until = excluded.until`,
		unrevoke: "DELETE FROM revoked_tokens WHERE digest = $1",
		dropRevoked: "DELETE FROM revoked_tokens WHERE digest IN" +
			" (SELECT digest FROM revoked_tokens WHERE until <= $1 ORDER BY until LIMIT " + strconv.Itoa(revokedTrimBatch) + ")",
		// Drops the org's tombstones that end first beyond $2 of them
		// (storage.Revocation.MaxPerOrg), read from revoked_tokens_by_org.
		boundRevoked: "DELETE FROM revoked_tokens WHERE digest IN (SELECT digest FROM revoked_tokens WHERE org = $1 ORDER BY until, digest" +
			" LIMIT (SELECT CASE WHEN count(*) > $2 THEN count(*) - $2 ELSE 0 END FROM revoked_tokens WHERE org = $1))",
		revoked: "SELECT org, user_id, token_id FROM revoked_tokens WHERE digest = $1 AND until > $2",

		setDuckling: `INSERT INTO ducklings (org, user_id, id, active, at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (org, user_id, id) DO UPDATE SET active = excluded.active, at = excluded.at`,
		listActivity: "SELECT " + u + ", d.id, d.active, d.at FROM users u JOIN ducklings d ON d.org = u.org AND d.user_id = u.id" +
			" WHERE u.org = $1 ORDER BY u.folded, d.id",

		putDive: `INSERT INTO dives (org, id, title, version, resources) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (org, id) DO UPDATE SET title = excluded.title, version = excluded.version, resources = excluded.resources`,
		createDive: `INSERT INTO dives (org, id, title, version, resources) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (org, id) DO NOTHING`,
		getDive: "SELECT title, version, resources FROM dives WHERE org = $1 AND id = $2",
		embedTarget: "SELECT COALESCE(d.id, ''), COALESCE(d.title, ''), COALESCE(d.version, 0), d.resources, " +
			cols("u", userColumns, true) +
			" FROM (SELECT 1 AS one) x LEFT JOIN dives d ON d.org = $1 AND d.id = $2 LEFT JOIN users u ON u.org = $1 AND u.folded = $3",

		dropExpiredSessions: "DELETE FROM embed_sessions WHERE org = $1 AND user_id = $2 AND expires_at <= $3",
		countSessions:       "SELECT count(*) FROM embed_sessions WHERE org = $1 AND user_id = $2 AND expires_at > $3",
		sessionTaken:        "SELECT count(*) FROM embed_sessions WHERE digest = $1",
		insertSession:       "INSERT INTO embed_sessions (" + names(sessionColumns) + ") VALUES (" + params(1, len(sessionColumns)) + ")",
		sessionByDigest:     "SELECT " + names(sessionColumns) + " FROM embed_sessions WHERE digest = $1",

		addFeedback:  "INSERT INTO feedback (id, page_path, text, page_title, source, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
		trimFeedback: "DELETE FROM feedback WHERE seq <= (SELECT MAX(seq) FROM feedback) - $1",
		seedMarks:    "SELECT key FROM seed_marks WHERE org = $1",
	}
	// A page of users, from the index on (org, folded) or, filtered, on
	// (org, service_account, folded); each row carries the total (the
	// org's count, or filtered, a count of the index), so that a page that
	// is not empty takes one round trip.
	q.totalUsers[0] = "SELECT COALESCE((SELECT user_count FROM orgs WHERE id = $1), 0)"
	q.totalUsers[1] = "SELECT count(*) FROM users WHERE org = $1 AND service_account = $2"
	for f, filter := range []string{"", " AND service_account = $2"} {
		for k := range 2 {
			next := 2 + f // the next parameter's number
			where := "u.org = $1" + strings.ReplaceAll(filter, "service_account", "u.service_account")
			if k == 1 {
				where += " AND u.folded > $" + strconv.Itoa(next)
				next++
			}
			page := " LIMIT $" + strconv.Itoa(next)
			if k == 0 {
				page += " OFFSET $" + strconv.Itoa(next+1)
			}
			q.listUsers[f][k] = "SELECT (" + q.totalUsers[f] + "), " + u + " FROM users u WHERE " + where + " ORDER BY u.folded" + page
		}
	}
	// Every statement in the engine's spelling.
	for _, p := range []*string{
		&q.createOrg, &q.getOrg, &q.lockOrg,
		&q.changeUserCount, &q.userTaken, &q.insertUser, &q.getUser, &q.setPrivileges, &q.userExists, &q.setInstances, &q.deleteUser,
		&q.listUsers[0][0], &q.listUsers[0][1], &q.listUsers[1][0], &q.listUsers[1][1], &q.totalUsers[0], &q.totalUsers[1],
		&q.lockUser, &q.dropExpiredTokens, &q.countTokens, &q.tokenTaken, &q.insertToken,
		&q.credential, &q.targetTokens, &q.listTokens, &q.deleteToken,
		&q.revoke, &q.unrevoke, &q.dropRevoked, &q.boundRevoked, &q.revoked,
		&q.setDuckling, &q.listActivity,
		&q.putDive, &q.createDive, &q.getDive, &q.embedTarget,
		&q.dropExpiredSessions, &q.countSessions, &q.sessionTaken, &q.insertSession, &q.sessionByDigest,
		&q.addFeedback, &q.trimFeedback, &q.seedMarks,
	} {
		*p = d.rewrite(*p)
	}
	return q
}
