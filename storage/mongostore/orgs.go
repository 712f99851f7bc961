package mongostore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// orgDoc is an organization; its id is the org's.
type orgDoc struct {
	ID      string    `bson:"_id"`
	Created time.Time `bson:"created"`
	// Ev is the id of the event of its creation, if audited.
	Ev string `bson:"ev,omitempty"`
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	_, err = s.orgs.InsertOne(ctx, orgDoc{ID: o.ID, Created: o.CreatedAt, Ev: eventID(a)})
	return wrap("create org", err)
}

// GetOrg implements storage.Store.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var d orgDoc
	if err := s.orgs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		return storage.Org{}, wrap("get org", err)
	}
	return storage.Org{ID: d.ID, CreatedAt: d.Created}, nil
}

// orgExists reports whether the org id exists.
func (s *Store) orgExists(ctx context.Context, id string) (bool, error) {
	err := s.orgs.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(idOnly)).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// seedMarksDoc holds the seed marks of one org; its id is the org's. One
// document is read in one round trip by id; it holds some 200 000 marks
// before it reaches the server's document size limit, far beyond any
// fixture.
type seedMarksDoc struct {
	Org  string   `bson:"_id"`
	Keys []string `bson:"keys"`
}

// MarkSeeded implements storage.Store.
func (s *Store) MarkSeeded(ctx context.Context, org string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	filter := bson.D{{Key: "_id", Value: org}}
	update := bson.D{{Key: "$addToSet", Value: bson.D{{Key: "keys", Value: bson.D{{Key: "$each", Value: keys}}}}}}
	_, err := s.seedMarks.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		// Two upserts of the org's first marks collided on the insert
		// (servers started together with one fixture): the document
		// exists now, and the loser's update finds it.
		_, err = s.seedMarks.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	}
	return wrap("mark seeded", err)
}

// SeedMarks implements storage.Store.
func (s *Store) SeedMarks(ctx context.Context, org string) ([]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var d seedMarksDoc
	err := s.seedMarks.FindOne(ctx, bson.D{{Key: "_id", Value: org}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("seed marks", err)
	}
	return d.Keys, nil
}
