package orgadmin

import (
	"context"
	"errors"
	"strings"

	"github.com/orgadmin/orgadmin/storage"
)

// maxOrgIDLen bounds organization ids.
const maxOrgIDLen = 128

// validOrgID reports whether id is 1 to 128 characters of ASCII letters,
// digits, '.', '_', ':' and '-'. (Ids are opaque; the restriction keeps
// them safe inside store keys.)
func validOrgID(id string) bool {
	if id == "" || len(id) > maxOrgIDLen {
		return false
	}
	return strings.IndexFunc(id, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._:-", r))
	}) < 0
}

// CreateOrg creates the organization id if it does not exist yet; creating
// an existing one changes nothing. It fails with BAD_REQUEST for a malformed
// id.
func (s *Service) CreateOrg(ctx context.Context, id string) error {
	if !validOrgID(id) {
		return badRequest(Issue{Message: "Organization id must be 1 to 128 ASCII letters, digits, '.', '_', ':' or '-'", Path: []any{"id"}, Code: IssueInvalidString})
	}
	err := s.store.CreateOrg(ctx, storage.Org{ID: id, CreatedAt: s.clock()})
	if err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return internal("create org", err)
	}
	return nil
}

// BootstrapInput names the first Admin of an organization.
type BootstrapInput struct {
	Org      string
	Username string
	// Token, when set, is the Admin's token value (16 to 512 printable ASCII
	// characters); otherwise a new token is minted.
	Token string
}

// Bootstrap makes sure the organization and its human Admin exist, and
// returns a token of that Admin: in.Token when set (seeded if new), or a new
// one. Running it again, from this or another process sharing the store,
// creates no second organization or Admin.
func (s *Service) Bootstrap(ctx context.Context, in BootstrapInput) (string, error) {
	if err := s.CreateOrg(ctx, in.Org); err != nil {
		return "", err
	}
	u, err := s.resolveUser(ctx, in.Org, in.Username)
	if ErrorCode(err) == CodeNotFound {
		_, err = s.CreateUser(ctx, in.Org, NewUser{Username: in.Username, Role: RoleAdmin})
		if ErrorCode(err) == CodeBadRequest { // created concurrently
			err = nil
		}
		if err == nil {
			u, err = s.resolveUser(ctx, in.Org, in.Username)
		}
	}
	if err != nil {
		return "", err
	}
	if u.Role != string(RoleAdmin) {
		return "", badRequest(Issue{Message: "User " + u.Username + " exists and is not an Admin", Path: []any{"username"}, Code: IssueConflict})
	}
	if in.Token != "" {
		t, err := s.SeedToken(ctx, in.Org, in.Username, SeedTokenInput{Value: in.Token, CreateTokenInput: CreateTokenInput{Name: "bootstrap"}})
		return t.Value, err
	}
	value, err := newSecret(s.rand, tokenPrefix)
	if err != nil {
		return "", internal("mint token", err)
	}
	t, err := s.insertToken(ctx, &u, value, CreateTokenInput{Name: "bootstrap"})
	return t.Value, err
}
