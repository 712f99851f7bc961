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
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.orgs.InsertOne(ctx, orgDoc{ID: o.ID, Created: o.CreatedAt})
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
