package orgadmin

import (
	"context"
	"crypto/sha256"
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
// an existing one changes nothing. An org id is 1 to 128 ASCII letters,
// digits, '.', '_', ':' or '-', and case-sensitive ("Acme" and "acme" are
// two organizations); anything else is a BAD_REQUEST naming id.
func (s *Service) CreateOrg(ctx context.Context, id string) error {
	if !validOrgID(id) {
		return badRequest(orgIDIssue("id"))
	}
	aud, ev, err := s.audited(ctx, id, system, change{action: ActionOrgCreate, kind: TargetOrg, targetID: id})
	if err != nil {
		return err
	}
	err = s.store.CreateOrg(ctx, storage.Org{ID: id, CreatedAt: ev.At}, aud)
	switch {
	case errors.Is(err, storage.ErrAlreadyExists):
		return nil
	case err != nil:
		return internal(ctx, "create org", err)
	}
	s.emit(ctx, ev)
	return nil
}

// orgIDIssue is the refusal of a malformed organization id at path.
func orgIDIssue(path string) Issue {
	return Issue{Message: "Organization id must be 1 to 128 ASCII letters, digits, '.', '_', ':' or '-'", Path: NewPath(path), Code: IssueInvalidString}
}

// BootstrapInput names the first Admin of an organization.
type BootstrapInput struct {
	// Org is the organization's id, which CreateOrg describes.
	Org      string
	Username string
	// Token, when set, is the Admin's token value (16 to 512 printable ASCII
	// characters, no space: a bearer credential has none); otherwise a new
	// token is minted.
	Token string
}

// BootstrapTokenName is the name of the token Bootstrap gives the Admin.
const BootstrapTokenName = "bootstrap"

// Bootstrap makes sure the organization and its human Admin exist, and
// returns the Admin's bootstrap token: in.Token when set, else a newly
// minted one. That token is the Admin's only bootstrap token: Bootstrap
// revokes the Admin's other live tokens named BootstrapTokenName, so that
// calling it again, from this or another process sharing the store (a
// restart), neither accumulates credentials nor creates a second
// organization or Admin. Of processes that call it at once, each returns
// its own token, and only the latest made (by creation time, then id)
// stays live. Tokens of other names are never touched.
//
// The revocation comes first, so a previous bootstrap token always makes
// room for the new one. When the Admin holds the maximum number of live
// tokens and none of them is a bootstrap token, Bootstrap mints none and
// returns "" and no error: the Admin has tokens enough, and revoking one
// makes room for the next call.
//
// It fails with BAD_REQUEST, and writes nothing, for a malformed
// organization id, username or in.Token (not 16 to 512 printable ASCII
// characters without a space), and when in.Token is another user's token
// or was revoked from another user (while the store remembers the
// revocation; one revoked from this Admin is given again). It fails with
// BAD_REQUEST, and revokes nothing, when the user exists and is not an
// Admin, or when it is missing and the organization holds the maximum
// number of users (Config.MaxUsersPerOrg).
func (s *Service) Bootstrap(ctx context.Context, in BootstrapInput) (string, error) {
	if err := checkBootstrapInput(in); err != nil {
		return "", err // before CreateOrg: a malformed input writes nothing
	}
	if err := s.checkBootstrapToken(ctx, in); err != nil {
		return "", err // before CreateOrg too: a refused start changes nothing
	}
	if err := s.CreateOrg(ctx, in.Org); err != nil {
		return "", err
	}
	u, err := s.resolveUser(ctx, in.Org, in.Username)
	if ErrorCode(err) == CodeNotFound {
		_, err = s.CreateUser(ctx, in.Org, NewUser{Username: in.Username, Role: RoleAdmin})
		if taken(err) { // created concurrently
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
		return "", badRequest(Issue{Message: "User " + u.Username + " exists and is not an Admin", Path: NewPath("username"), Code: IssueAlreadyExists})
	}
	value := in.Token
	if value == "" {
		if value, err = s.newSecret(tokenPrefix); err != nil {
			return "", internal(ctx, "mint token", err)
		}
	}
	held, kept, err := s.revokeBootstrapTokens(ctx, &u, sha256.Sum256([]byte(value)), false)
	switch {
	case err != nil:
		return "", err
	case kept: // the Admin holds this value already
		return value, nil
	case held >= s.maxTokens:
		return "", nil
	}
	var t Token
	if in.Token != "" {
		t, err = s.seedToken(ctx, in.Org, in.Username, SeedTokenInput{Value: in.Token, CreateTokenInput: CreateTokenInput{Name: BootstrapTokenName}}, true)
	} else {
		t, err = s.insertToken(ctx, &u, value, CreateTokenInput{Name: BootstrapTokenName}, system, ActionTokenCreate)
	}
	if err != nil {
		return "", err
	}
	// Processes started together each revoked the bootstrap tokens they
	// found, then made their own: each now keeps the latest it finds, so
	// that of theirs only the latest stays.
	if _, _, err := s.revokeBootstrapTokens(ctx, &u, storage.Digest{}, true); err != nil {
		return "", err
	}
	return t.Value, nil
}

// checkBootstrapInput refuses a username that breaks the username rule
// and a token value that breaks the rule of seeded values. (CreateOrg
// checks the organization id before it writes.)
func checkBootstrapInput(in BootstrapInput) error {
	var is issues
	if !validOrgID(in.Org) {
		is = append(is, orgIDIssue("org"))
	}
	is.checkUsername(in.Username, "username")
	if in.Token != "" {
		var ts issues
		SeedTokenInput{Value: in.Token, CreateTokenInput: CreateTokenInput{Name: BootstrapTokenName}}.check(&ts)
		for _, t := range ts {
			is.add(t.Code, t.Message, "token")
		}
	}
	return is.err()
}

// checkBootstrapToken refuses in.Token, well-formed (checkBootstrapInput),
// when it is the token of another user than in's: of another
// organization, or of another username. A user holding a token exists,
// so a token of in's username is the token of the user Bootstrap finds.
// It refuses too a value revoked from another user than in's (while the
// store remembers the revocation): one revoked from in's user is the
// caller's word, and is given again.
func (s *Service) checkBootstrapToken(ctx context.Context, in BootstrapInput) error {
	if in.Token == "" {
		return nil
	}
	a, err := s.store.ReadAccess(ctx, storage.AccessQuery{Digest: digestOf(in.Token), LiveAt: s.clock()})
	switch {
	case errors.Is(err, storage.ErrRevoked):
		var userID string
		switch u, err := s.store.GetUser(ctx, in.Org, FoldUsername(in.Username)); {
		case err == nil:
			userID = u.ID
		case !errors.Is(err, storage.ErrNotFound):
			return internal(ctx, "check user", err)
		}
		if revokedFromAnother(a, in.Org, userID) {
			return badRequest(revokedValueIssue("token"))
		}
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return internal(ctx, "check token", err)
	case a.Credential.User.Org != in.Org || a.Credential.User.FoldedUsername != FoldUsername(in.Username):
		return badRequest(Issue{Message: "Token value already in use", Path: NewPath("token"), Code: IssueAlreadyExists})
	}
	return nil
}

// revokeBootstrapTokens revokes the live tokens of u named
// BootstrapTokenName but one: the one of digest keep or, when latest, the
// latest of them (by creation time, then id, as ListTokens orders them).
// It returns how many live tokens u holds then and whether keep's is one
// of them.
func (s *Service) revokeBootstrapTokens(ctx context.Context, u *storage.User, keep storage.Digest, latest bool) (held int, kept bool, err error) {
	now := s.clock()
	ts, err := s.store.ListTokens(ctx, u.Org, u.ID, now)
	if err != nil {
		return 0, false, internal(ctx, "list tokens", err)
	}
	for _, t := range ts {
		if latest && t.Name == BootstrapTokenName {
			keep = t.Digest
		}
	}
	held = len(ts)
	for _, t := range ts {
		switch {
		case t.Digest == keep:
			kept = true
		case t.Name == BootstrapTokenName:
			aud, ev, err := s.audited(ctx, u.Org, system, change{action: ActionTokenDelete, kind: TargetToken, targetID: t.ID, targetUsername: u.Username})
			if err != nil {
				return 0, false, err
			}
			err = s.store.DeleteToken(ctx, u.Org, u.ID, t.ID, s.revocation(now), aud)
			if err != nil && !errors.Is(err, storage.ErrNotFound) { // gone already: as good
				return 0, false, internal(ctx, "revoke token", err)
			}
			if err == nil {
				s.emit(ctx, ev)
			}
			held--
		}
	}
	return held, kept, nil
}
