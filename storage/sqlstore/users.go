package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/orgadmin/orgadmin/storage"
)

// userRow is a row of users as it is scanned.
type userRow struct {
	u          storage.User
	privileges sql.NullString
	created    int64
}

// dest returns where the columns of userColumns go, in their order.
func (r *userRow) dest() []any {
	u := &r.u
	rw, rs := &u.Instances.ReadWrite, &u.Instances.ReadScaling
	return []any{
		&u.Org, &u.ID, &u.Username, &u.FoldedUsername, &u.Description,
		&u.IsServiceAccount, &u.Role, &r.privileges, &u.Email,
		&u.FirstName, &u.LastName, &r.created,
		&rw.Size, &rw.FlockSize, &rw.CooldownSeconds,
		&rs.Size, &rs.FlockSize, &rs.CooldownSeconds,
	}
}

// user returns the scanned user, its strings as d stored them.
func (r *userRow) user(d *dialect) (storage.User, error) {
	u := r.u
	if d.escapes {
		for _, p := range []*string{&u.Org, &u.ID, &u.Username, &u.FoldedUsername, &u.Description, &u.Role,
			&u.Email, &u.FirstName, &u.LastName, &u.Instances.ReadWrite.Size, &u.Instances.ReadScaling.Size} {
			*p = unescapeNUL(*p)
		}
	}
	u.CreatedAt = fromMicros(r.created)
	u.Privileges = nil
	if r.privileges.Valid {
		if err := json.Unmarshal([]byte(r.privileges.String), &u.Privileges); err != nil {
			return storage.User{}, fmt.Errorf("decode the privileges of user %s: %w", u.ID, err)
		}
	}
	return u, nil
}

// userArgs are the values of userColumns for u.
func userArgs(u storage.User) []any {
	rw, rs := u.Instances.ReadWrite, u.Instances.ReadScaling
	return []any{
		u.Org, u.ID, u.Username, u.FoldedUsername, u.Description,
		u.IsServiceAccount, u.Role, privileges(u.Privileges), u.Email,
		u.FirstName, u.LastName, micros(u.CreatedAt),
		rw.Size, rw.FlockSize, rw.CooldownSeconds,
		rs.Size, rs.FlockSize, rs.CooldownSeconds,
	}
}

// privileges is ps as stored: a JSON array, or NULL for nil.
func privileges(ps []string) sql.NullString {
	if ps == nil {
		return sql.NullString{}
	}
	b, _ := json.Marshal(ps) // a []string always encodes
	return sql.NullString{String: string(b), Valid: true}
}

// CreateUser implements storage.Store. It locks the org's row (on
// PostgreSQL; SQLite's write transaction is exclusive already), which
// holds the count of its users, so concurrent creations are counted one
// after another; the count changes in the same transaction as the users.
func (s *Store) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.auditedTx(ctx, a, func(tx runner) error {
		var n int64
		err := tx.QueryRowContext(ctx, s.q.lockOrg, u.Org).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return err
		}
		if lim.Max > 0 && n >= int64(lim.Max) {
			if err := tx.QueryRowContext(ctx, s.q.userTaken, u.Org, u.FoldedUsername, u.ID).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return storage.ErrAlreadyExists
			}
			return storage.ErrLimitExceeded
		}
		_, err = tx.ExecContext(ctx, s.q.insertUser, userArgs(u)...)
		switch {
		case s.d.isUnique(err):
			return storage.ErrAlreadyExists
		case s.d.isForeignKey(err):
			return storage.ErrNotFound
		case err != nil:
			return err
		}
		if _, err = tx.ExecContext(ctx, s.q.changeUserCount, u.Org, 1); err != nil {
			return err
		}
		return nil
	})
	return failed("create user", err)
}

// GetUser implements storage.Store.
func (s *Store) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var r userRow
	err := s.rd().QueryRowContext(ctx, s.q.getUser, org, folded).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.User{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.User{}, failed("get user", err)
	}
	u, err := r.user(s.d)
	return u, failed("get user", err)
}

// SetPrivileges implements storage.Store: one UPDATE of the user's row
// that matches its privileges as stored, in a transaction with its audit
// event when it has one; when it changes no row, a count of the user
// tells ErrNotFound from ErrConflict.
func (s *Store) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	was := privileges(from)
	if !was.Valid {
		was.String = "[]"
	}
	if len(to) == 0 {
		to = nil
	}
	err := s.writeAudited(ctx, a, func(r runner) error {
		res, err := r.ExecContext(ctx, s.q.setPrivileges, org, userID, was.String, privileges(to))
		if err := changedOne(res, err); !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		var n int
		if err := r.QueryRowContext(ctx, s.q.userExists, org, userID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		return storage.ErrConflict
	})
	return failed("set privileges", err)
}

// SetInstances implements storage.Store: one UPDATE of the user's row, in
// a transaction with its audit event when it has one.
func (s *Store) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rw, rs := c.ReadWrite, c.ReadScaling
	err := s.writeAudited(ctx, a, func(r runner) error {
		res, err := r.ExecContext(ctx, s.q.setInstances, org, userID,
			rw.Size, rw.FlockSize, rw.CooldownSeconds, rs.Size, rs.FlockSize, rs.CooldownSeconds)
		return changedOne(res, err)
	})
	return failed("set instances", err)
}

// changedOne returns the error of an UPDATE or DELETE, or ErrNotFound when
// it changed no row.
func changedOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

// DeleteUser implements storage.Store: in one transaction, it locks the
// org's row (as CreateUser does, so that the two never wait for each other
// in opposite orders), deletes the user's row, which deletes its tokens,
// Duckling reports and embed sessions with it (ON DELETE CASCADE), and
// counts the org's users one fewer.
func (s *Store) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var r userRow
	err := s.auditedTx(ctx, a, func(tx runner) error {
		var n int64
		if err := tx.QueryRowContext(ctx, s.q.lockOrg, org).Scan(&n); err != nil {
			return err // no org: no user (sql.ErrNoRows)
		}
		if err := tx.QueryRowContext(ctx, s.q.deleteUser, org, userID).Scan(r.dest()...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q.changeUserCount, org, -1); err != nil {
			return err
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return storage.User{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.User{}, failed("delete user", err)
	}
	u, err := r.user(s.d)
	return u, failed("delete user", err)
}

// maxPage bounds the rows a page asks for, so that Limit+1 cannot
// overflow.
const maxPage = math.MaxInt32

// ListUsers implements storage.Store: one query reads the page (a row more
// than asked, to know whether more follow) and the total, from an index;
// an empty page counts in a second.
func (s *Store) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	filtered, keyset := 0, 0
	args := []any{org}
	if q.ServiceAccount != nil {
		filtered = 1
		args = append(args, *q.ServiceAccount)
	}
	countArgs := args
	if q.After != "" {
		keyset = 1
		args = append(args, q.After)
	}
	args = append(args, int64(min(max(q.Limit, 0), maxPage))+1)
	if keyset == 0 {
		args = append(args, max(q.Offset, 0))
	}
	page := storage.UserPage{Users: q.Into}
	rows, err := s.rd().QueryContext(ctx, s.q.listUsers[filtered][keyset], args...)
	if err != nil {
		return storage.UserPage{}, failed("list users", err)
	}
	defer rows.Close()
	var r userRow
	dest := append([]any{&page.Total}, r.dest()...)
	n := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return storage.UserPage{}, failed("list users", err)
		}
		if n++; n > q.Limit {
			page.More = true
			break
		}
		u, err := r.user(s.d)
		if err != nil {
			return storage.UserPage{}, failed("list users", err)
		}
		page.Users = append(page.Users, u)
	}
	if err := rows.Err(); err != nil {
		return storage.UserPage{}, failed("list users", err)
	}
	if n == 0 {
		if err := s.rd().QueryRowContext(ctx, s.q.totalUsers[filtered], countArgs...).Scan(&page.Total); err != nil {
			return storage.UserPage{}, failed("list users", err)
		}
	}
	return page, nil
}
