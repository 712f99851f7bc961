package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

func kind(serviceAccount bool) string {
	if serviceAccount {
		return "sa"
	}
	return "hu"
}

// CreateUser implements storage.Store. One script checks the username,
// counts the org's users against lim and stores the user, atomically: on
// one server or a Cluster (the org's keys share a slot), whatever the
// number of processes.
func (s *Store) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, createUserScript, u.Org, withAudit(a, u.FoldedUsername, u.ID,
		encode(toUserDoc(u)), encode(toInstDoc(u.Instances)), kind(u.IsServiceAccount), lim.Max)...).Result()
	return status("create user", v, err)
}

// GetUser implements storage.Store.
func (s *Store) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, getUserScript, org, folded).Slice()
	if errors.Is(err, redis.Nil) {
		return storage.User{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.User{}, failed("get user", err)
	}
	return userFrom(org, folded, str(v[0]), str(v[1]))
}

// SetPrivileges implements storage.Store: it reads the user's record,
// compares its privileges, and writes the record with the new ones in a
// script that checks the record is still the one read.
func (s *Store) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, userByIDScript, org, userID).StringSlice()
	if errors.Is(err, redis.Nil) {
		return storage.ErrNotFound
	}
	if err != nil {
		return failed("set privileges: read", err)
	}
	if len(v) != 2 {
		return fmt.Errorf("redisstore: set privileges: unexpected reply of %d values", len(v))
	}
	u, err := userFrom(org, v[0], v[1], "")
	if err != nil {
		return err
	}
	if !slices.Equal(u.Privileges, from) && len(u.Privileges)+len(from) > 0 {
		return storage.ErrConflict
	}
	u.Privileges = to
	res, err := s.run(ctx, setPrivilegesScript, org, withAudit(a, userID, v[1], encode(toUserDoc(u)))...).Result()
	return status("set privileges", res, err)
}

// SetInstances implements storage.Store.
func (s *Store) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, setInstancesScript, org, withAudit(a, userID, encode(toInstDoc(c)))...).Result()
	return status("set instances", v, err)
}

// DeleteUser implements storage.Store. One script removes the user and all
// it owns from the org's slot, so from then on none of it can be read or
// used. On a Cluster the pointer keys of its tokens and sessions, in other
// slots, are removed afterwards; until then (or for ever, if the process
// dies first) they point at nothing. A token's digest pointer goes only
// while it names a token of this user: once the token is gone, a creation
// of the same value may have taken the pointer over (see CreateToken), and
// it stays that token's.
func (s *Store) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, deleteUserScript, org, withAudit(a, userID, single(s.single), s.prefix)...).Slice()
	if errors.Is(err, redis.Nil) {
		return storage.User{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.User{}, failed("delete user", err)
	}
	if len(v) < 4 {
		return storage.User{}, fmt.Errorf("redisstore: delete user: unexpected reply of %d values", len(v))
	}
	u, err := userFrom(org, str(v[3]), str(v[0]), str(v[1]))
	if err != nil {
		return storage.User{}, err
	}
	if gone, _ := v[2].([]any); len(gone) > 0 {
		if err := s.stepped("delete user: pointers"); err != nil {
			return u, nil
		}
		// The user is gone whatever happens here: a pointer left behind
		// points at nothing and expires or stays inert. A caller that
		// leaves now does not leave them behind.
		fctx, cancel := s.finishing(ctx)
		defer cancel()
		_ = s.dropPointersOf(fctx, org, userID, gone)
	}
	return u, nil
}

// dropPointersOf deletes the global keys gone (without prefix), those
// of the tokens and sessions of the deleted user userID of org, in one
// pipeline: a token's digest key only while it names a token of that
// user (dropUserTokenScript), the others (ids and session digests, which
// nothing else takes) at once.
func (s *Store) dropPointersOf(ctx context.Context, org, userID string, gone []any) error {
	owner := org + "\n" + userID + "\n"
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range gone {
			key := str(k)
			if strings.HasPrefix(key, "tok:") {
				dropUserTokenScript.Eval(ctx, p, []string{s.prefix + key}, owner)
				continue
			}
			p.Del(ctx, s.prefix+key)
		}
		return nil
	})
	return err
}

// finishing returns the context of the steps that complete a change
// already made (removing, on a Cluster, the pointers of what it deleted):
// not ended by its caller's cancellation, which would leave them behind
// for ever when they have no expiry, but bounded by the Store's timeout.
func (s *Store) finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
}

// stepped reports whether a test stops a Cluster-mode operation at step.
func (s *Store) stepped(step string) error {
	if s.step == nil {
		return nil
	}
	return s.step(step)
}

// ListUsers implements storage.Store. A page of all users is one ZRANGE
// of recs, whose members hold the records, with the counts of recs and
// of the users hash, in one MULTI/EXEC: no script, and one string per
// user to parse. When the counts differ (an org written by an earlier
// version, which kept no recs), it builds recs once and reads again.
// Every write of this version keeps recs a subset of the users, so equal
// counts mean the same users; a process of an earlier version still
// writing to the same Redis would leave its changes to existing users out
// of recs (not its creations, which change the count), so upgrade every
// process before the pages are read. A page of service accounts or
// humans is one script.
func (s *Store) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	// No sorted set holds 2^53 members: a larger offset is past the end
	// anyway, and clamping it keeps the ranks exact integers.
	first := int64(min(int64(q.Offset), 1<<53))
	if q.ServiceAccount == nil {
		return s.listAllUsers(ctx, org, q, first)
	}
	v, err := s.run(ctx, listUsersScript, org, kind(*q.ServiceAccount), q.After,
		strconv.FormatInt(first, 10), strconv.FormatInt(first+int64(q.Limit), 10), strconv.Itoa(q.Limit+1)).Slice()
	if err != nil {
		return storage.UserPage{}, failed("list users", err)
	}
	total, _ := v[0].(int64)
	names, _ := v[1].([]any)
	users, _ := v[2].([]any)
	insts, _ := v[3].([]any)
	if len(users) != len(names) || len(insts) != len(names) {
		return storage.UserPage{}, fmt.Errorf("redisstore: list users: unexpected reply")
	}
	page := storage.UserPage{Users: slices.Grow(q.Into, min(len(users), q.Limit)), Total: int(total)}
	for i, raw := range users {
		if len(page.Users)-len(q.Into) == q.Limit {
			page.More = true
			break
		}
		u, err := userFrom(org, str(names[i]), str(raw), str(insts[i]))
		if err != nil {
			return storage.UserPage{}, err
		}
		page.Users = append(page.Users, u)
	}
	return page, nil
}

// listAllUsers reads a page of all users from recs.
func (s *Store) listAllUsers(ctx context.Context, org string, q storage.UserQuery, first int64) (storage.UserPage, error) {
	base := s.orgBase(org)
	r := redis.ZRangeArgs{Key: base + "recs", Start: first, Stop: first + int64(q.Limit)}
	if q.After != "" {
		// Every member of the user q.After starts with q.After and a NUL
		// byte, below q.After and the byte 1, which no username holds.
		r = redis.ZRangeArgs{Key: base + "recs", Start: "[" + q.After + "\x01", Stop: "+", ByLex: true, Count: int64(q.Limit) + 1}
	}
	for migrated := false; ; migrated = true {
		var members *redis.StringSliceCmd
		var recs, users *redis.IntCmd
		var err error
		for wait := firstMoveWait; ; {
			_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				members = p.ZRangeArgs(ctx, r)
				recs = p.ZCard(ctx, base+"recs")
				users = p.HLen(ctx, base+"users")
				return nil
			})
			if !again(ctx, err, &wait) {
				break
			}
		}
		if err != nil {
			return storage.UserPage{}, failed("list users", err)
		}
		if recs.Val() != users.Val() && !migrated {
			if err := s.run(ctx, migrateRecsScript, org).Err(); err != nil {
				return storage.UserPage{}, failed("list users: build recs", err)
			}
			continue
		}
		ms := members.Val()
		page := storage.UserPage{Users: slices.Grow(q.Into, min(len(ms), q.Limit)), Total: int(recs.Val())}
		for _, m := range ms {
			if len(page.Users)-len(q.Into) == q.Limit {
				page.More = true
				break
			}
			folded, rec, ok := strings.Cut(m, "\x00")
			user, inst, ok2 := strings.Cut(rec, "\n")
			if !ok || !ok2 {
				return storage.UserPage{}, fmt.Errorf("redisstore: list users: corrupt member of %q", folded)
			}
			u, err := userFrom(org, folded, user, inst)
			if err != nil {
				return storage.UserPage{}, err
			}
			page.Users = append(page.Users, u)
		}
		return page, nil
	}
}

// str returns v as a string; a nil reply (a missing field) is "".
func str(v any) string {
	s, _ := v.(string)
	return s
}
