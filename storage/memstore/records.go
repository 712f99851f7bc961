package memstore

import (
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// userRec is a stored user: a storage.User less its org's ID and its
// privileges (Store.privileges), with its strings joined in s, and the
// ends of its list of tokens.
type userRec struct {
	s       string // the strings at uID, uUsername, ... (below)
	ends    [uFields]uint32
	created time.Time
	rw, rs  sideNums
	// tokens and lastToken are the ends of the user's token list, ordered
	// by CreatedAt, then ID, and linked through tokenRec.next.
	tokens, lastToken ref
	ntokens           int
	org               uint32 // in Store.orgList
	serviceAccount    bool
}

// The strings of a userRec, in s.
const (
	uID = iota
	uUsername
	uFolded
	uRole
	uDescription
	uEmail
	uFirstName
	uLastName
	uRWSize
	uRSSize
	uFields
)

// sideNums are the numbers of a storage.InstanceSide; its Size is in s.
type sideNums struct{ flock, cooldown int }

// str returns the string i of e.
func (e *userRec) str(i int) string { return cut(e.s, e.ends[:], i) }

// set stores in e every field of u but its org and privileges, with the
// names given.
func (e *userRec) set(u storage.User, username, folded string) {
	fs := [uFields]string{
		uID:          u.ID,
		uUsername:    username,
		uFolded:      folded,
		uRole:        u.Role,
		uDescription: u.Description,
		uEmail:       u.Email,
		uFirstName:   u.FirstName,
		uLastName:    u.LastName,
		uRWSize:      u.Instances.ReadWrite.Size,
		uRSSize:      u.Instances.ReadScaling.Size,
	}
	e.s = join(e.ends[:], fs[:])
	e.created = u.CreatedAt
	e.serviceAccount = u.IsServiceAccount
	e.rw = sideNums{u.Instances.ReadWrite.FlockSize, u.Instances.ReadWrite.CooldownSeconds}
	e.rs = sideNums{u.Instances.ReadScaling.FlockSize, u.Instances.ReadScaling.CooldownSeconds}
}

// record returns the storage.User e holds, of the org orgID, without its
// privileges. Its strings are shared with the store, which never changes
// them.
func (e *userRec) record(orgID string) storage.User {
	var u storage.User
	e.recordInto(&u, orgID)
	return u
}

// recordInto sets every field of *u but its privileges to those of the
// user e holds, of the org orgID, as record returns them.
func (e *userRec) recordInto(u *storage.User, orgID string) {
	u.Privileges = nil
	u.ID, u.Org, u.Username, u.FoldedUsername = e.str(uID), orgID, e.str(uUsername), e.str(uFolded)
	u.Description, u.IsServiceAccount, u.Role = e.str(uDescription), e.serviceAccount, e.str(uRole)
	u.Email, u.FirstName, u.LastName = e.str(uEmail), e.str(uFirstName), e.str(uLastName)
	u.CreatedAt = e.created
	u.Instances = storage.InstanceConfig{
		ReadWrite:   storage.InstanceSide{Size: e.str(uRWSize), FlockSize: e.rw.flock, CooldownSeconds: e.rw.cooldown},
		ReadScaling: storage.InstanceSide{Size: e.str(uRSSize), FlockSize: e.rs.flock, CooldownSeconds: e.rs.cooldown},
	}
}

// tokenRec is a stored token: a storage.Token less its Org and UserID,
// which its user holds, with its strings joined in s.
type tokenRec struct {
	s                string // the strings at tID, tName, ... (below)
	ends             [tFields]uint32
	digest           storage.Digest
	created, expires time.Time
	user             ref
	next             ref // the user's next token
}

// The strings of a tokenRec, in s.
const (
	tID = iota
	tName
	tDescription
	tType
	tFields
)

// newTokenRec returns the record of t, of the user u.
func newTokenRec(t storage.Token, u ref) tokenRec {
	r := tokenRec{
		digest:  t.Digest,
		created: t.CreatedAt,
		expires: t.ExpiresAt,
		user:    u,
	}
	fs := [tFields]string{tID: t.ID, tName: t.Name, tDescription: t.Description, tType: t.Type}
	r.s = join(r.ends[:], fs[:])
	return r
}

// str returns the string i of t.
func (t *tokenRec) str(i int) string { return cut(t.s, t.ends[:], i) }

// record returns the storage.Token t holds, of the user userID of the org
// orgID.
func (t *tokenRec) record(orgID, userID string) storage.Token {
	var r storage.Token
	t.recordInto(&r, orgID, userID)
	return r
}

// recordInto sets every field of *r to those of the token t holds, as
// record returns them, field by field (see userRec.recordInto).
func (t *tokenRec) recordInto(r *storage.Token, orgID, userID string) {
	r.ID, r.Org, r.UserID, r.Digest = t.str(tID), orgID, userID, t.digest
	r.Name, r.Description, r.Type = t.str(tName), t.str(tDescription), t.str(tType)
	r.CreatedAt, r.ExpiresAt = t.created, t.expires
}

// less orders the tokens of a user: by CreatedAt, then ID.
func (t *tokenRec) less(other *tokenRec) bool {
	if c := t.created.Compare(other.created); c != 0 {
		return c < 0
	}
	return t.str(tID) < other.str(tID)
}

// liveAt reports whether t has not expired at the instant at, as
// storage.Token.LiveAt does.
func (t *tokenRec) liveAt(at time.Time) bool {
	return t.expires.IsZero() || at.Before(t.expires)
}
