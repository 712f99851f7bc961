package mongostore

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// ducklingDoc is the latest report of one Duckling; its id is
// key(org, user id, Duckling id).
type ducklingDoc struct {
	ID     string    `bson:"_id"`
	Org    string    `bson:"org"`
	UID    string    `bson:"uid"`
	DID    string    `bson:"did"`
	Active bool      `bson:"active"`
	At     time.Time `bson:"at"`
}

func ducklingToDoc(d storage.Duckling) ducklingDoc {
	return ducklingDoc{ID: key(d.Org, d.UserID, d.ID), Org: d.Org, UID: d.UserID, DID: d.ID, Active: d.Active, At: d.At}
}

func (d ducklingDoc) record() storage.Duckling {
	return storage.Duckling{Org: d.Org, UserID: d.UID, ID: d.DID, Active: d.Active, At: d.At}
}

// SetDuckling implements storage.Store. Like CreateToken, it checks the
// user before and after writing, and removes a report that lost the race
// with DeleteUser.
func (s *Store) SetDuckling(ctx context.Context, d storage.Duckling) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	if _, err := s.liveUser(ctx, d.Org, d.UserID); err != nil {
		return wrap("set duckling: user", err)
	}
	doc := ducklingToDoc(d)
	if err := replace(ctx, s.ducklings, doc.ID, doc); err != nil {
		// Upserts of one report keep colliding only while writers that
		// lost the race with DeleteUser remove it again: the user is gone.
		if mongo.IsDuplicateKeyError(err) {
			if _, uerr := s.liveUser(ctx, d.Org, d.UserID); uerr != nil {
				return wrap("set duckling: user", uerr)
			}
		}
		return wrap("set duckling", err)
	}
	if _, err := s.liveUser(ctx, d.Org, d.UserID); err != nil {
		_, _ = s.ducklings.DeleteOne(ctx, bson.D{{Key: "_id", Value: doc.ID}})
		return wrap("set duckling: user", err)
	}
	return nil
}

// replace stores doc under id in coll, replacing any document there. Two
// concurrent upserts of one id may collide on the insert; the loser
// replaces again.
func replace(ctx context.Context, coll *mongo.Collection, id string, doc any) error {
	filter := bson.D{{Key: "_id", Value: id}}
	for attempt := 0; ; attempt++ {
		_, err := coll.ReplaceOne(ctx, filter, doc, options.Replace().SetUpsert(true))
		if err == nil || !mongo.IsDuplicateKeyError(err) || attempt == 3 {
			return err
		}
	}
}

// ListActivity implements storage.Store. It reads the org's Duckling
// reports, then their users by id; reports of users that are gone or
// being deleted are left out.
func (s *Store) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	cur, err := s.ducklings.Find(ctx, bson.D{{Key: "org", Value: org}})
	if err != nil {
		return nil, wrap("list activity", err)
	}
	var ducks []ducklingDoc
	if err := cur.All(ctx, &ducks); err != nil {
		return nil, wrap("list activity", err)
	}
	byUser := make(map[string][]storage.Duckling)
	var ids bson.A
	for _, d := range ducks {
		if _, ok := byUser[d.UID]; !ok {
			ids = append(ids, key(org, d.UID))
		}
		byUser[d.UID] = append(byUser[d.UID], d.record())
	}
	out := make([]storage.Activity, 0, len(byUser))
	if len(ids) == 0 {
		return out, nil
	}
	cur, err = s.users.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, wrap("list activity: users", err)
	}
	var users []userDoc
	if err := cur.All(ctx, &users); err != nil {
		return nil, wrap("list activity: users", err)
	}
	for _, u := range users {
		if u.alive(org, u.UID) {
			out = append(out, storage.Activity{User: u.record(), Ducklings: byUser[u.UID]})
		}
	}
	slices.SortFunc(out, func(a, b storage.Activity) int {
		return strings.Compare(a.User.FoldedUsername, b.User.FoldedUsername)
	})
	return out, nil
}
