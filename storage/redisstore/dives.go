package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// PutDive implements storage.Store.
func (s *Store) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.writeDive(ctx, "put dive", putDiveScript, d, a)
}

// CreateDive implements storage.Store.
func (s *Store) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.writeDive(ctx, "create dive", createDiveScript, d, a)
}

// writeDive runs the script (putDiveScript or createDiveScript) that
// writes d, with a's event.
func (s *Store) writeDive(ctx context.Context, op string, script *redis.Script, d storage.Dive, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	doc := diveDoc{Title: d.Title, Version: d.Version, Resources: toResourceDocs(d.RequiredResources)}
	v, err := s.run(ctx, script, d.Org, withAudit(a, d.ID, encode(doc))...).Result()
	return status(op, v, err)
}

// GetDive implements storage.Store.
func (s *Store) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.c.HGet(ctx, s.orgBase(org)+"dives", id).Result()
	if errors.Is(err, redis.Nil) {
		return storage.Dive{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Dive{}, failed("get dive", err)
	}
	return diveFrom(org, id, v)
}

// GetEmbedTarget implements storage.Store, in one round trip.
func (s *Store) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var t storage.EmbedTarget
	v, err := s.run(ctx, embedTargetScript, org, diveID, folded).Slice()
	if err != nil {
		return t, failed("get embed target", err)
	}
	if len(v) != 3 {
		return t, fmt.Errorf("redisstore: get embed target: unexpected reply")
	}
	if d, ok := v[0].(string); ok {
		if t.Dive, err = diveFrom(org, diveID, d); err != nil {
			return storage.EmbedTarget{}, err
		}
		t.DiveFound = true
	}
	if u, ok := v[1].(string); ok {
		if t.User, err = userFrom(org, folded, u, str(v[2])); err != nil {
			return storage.EmbedTarget{}, err
		}
		t.UserFound = true
	}
	return t, nil
}

// CreateEmbedSession implements storage.Store, in one script that drops
// the user's sessions not live at lim.LiveAt, counts the rest against
// lim.Max and stores es. Redis drops the session's keys a grace period
// after it expires. On a Cluster the session's pointer
// is reserved first, as a token's is, and released if the script refuses;
// the pointers of the sessions the script dropped are removed after it,
// in one round trip more, so that their digests are free again.
func (s *Store) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	hex := hexDigest(es.Digest)
	pointer := es.Org + "\n" + es.UserID
	ttl := s.ttl(es.CreatedAt, es.ExpiresAt)
	args := withAudit(a, es.UserID, hex, encode(toSessionDoc(es)), ttl, single(s.single), s.prefix, pointer,
		millis(es.ExpiresAt), max(lim.Max, 0), millis(lim.LiveAt))
	if s.single {
		v, err := s.run(ctx, createSessionScript, es.Org, args...).Result()
		return status("create embed session", v, err)
	}
	keys := map[string]string{s.prefix + "ses:" + hex: pointer}
	if _, err := s.reserve(ctx, keys, time.Duration(ttl)*time.Millisecond, es.CreatedAt, ""); err != nil {
		return fmt.Errorf("create embed session: %w", err)
	}
	if err := s.stepped("create embed session: reserved"); err != nil {
		return err
	}
	v, err := s.run(ctx, createSessionScript, es.Org, args...).Result()
	v, gone := dropped(v)
	if err = status("create embed session", v, err); err != nil && (isRefusal(err) || moving(err)) {
		undo, cancel := s.finishing(ctx)
		s.release(undo, keys)
		cancel()
	}
	// The sessions the script dropped as expired are gone: their
	// pointers go too, so that their digests are free (but for this
	// session's own, when it takes the digest of one it dropped).
	gone = slices.DeleteFunc(gone, func(h string) bool { return h == hex })
	s.dropSessionPointers(ctx, pointer, gone)
	return err
}

// dropSessionPointers removes, on a Cluster, the pointer keys of the
// sessions of digests hexes, which the user pointer ("<org>\n<uid>")
// no longer holds, while they point at that user. It is best effort, in
// one round trip: such keys point at nothing.
func (s *Store) dropSessionPointers(ctx context.Context, pointer string, hexes []string) {
	if len(hexes) == 0 {
		return
	}
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, h := range hexes {
			dropIDScript.Eval(ctx, p, []string{s.prefix + "ses:" + h}, pointer)
		}
		return nil
	})
}

// EmbedSessionByDigest implements storage.Store.
func (s *Store) EmbedSessionByDigest(ctx context.Context, d storage.Digest) (storage.EmbedSession, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	hex := hexDigest(d)
	var org, rec string
	var err error
	if s.single {
		var v []any
		v, err = sessionScript.Run(ctx, s.c, []string{s.prefix + "ses:" + hex}, s.prefix, hex).Slice()
		if err == nil {
			if len(v) != 2 {
				return storage.EmbedSession{}, fmt.Errorf("redisstore: embed session by digest: unexpected reply")
			}
			org, rec = str(v[0]), str(v[1])
		}
	} else {
		var pointer string
		pointer, err = s.c.Get(ctx, s.prefix+"ses:"+hex).Result()
		if err == nil {
			var uid string
			var ok bool
			org, uid, ok = strings.Cut(unmark(pointer), "\n")
			if !ok {
				return storage.EmbedSession{}, fmt.Errorf("redisstore: corrupt session pointer")
			}
			rec, err = s.c.Get(ctx, s.orgBase(org)+"ses:"+uid+":"+hex).Result()
		}
	}
	if errors.Is(err, redis.Nil) {
		return storage.EmbedSession{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.EmbedSession{}, failed("embed session by digest", err)
	}
	return sessionFrom(org, d, rec)
}
