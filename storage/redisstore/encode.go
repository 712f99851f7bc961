package redisstore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// The records below are how this adapter writes storage records into
// Redis: JSON with short keys, times as Unix milliseconds (0 for the zero
// time). The Lua scripts read the fields "id" of a user and "id", "d" and
// "e" of a token.

type orgDoc struct {
	ID      string `json:"id"`
	Created int64  `json:"c"`
}

type userDoc struct {
	ID          string   `json:"id"`
	Username    string   `json:"n"`
	Description string   `json:"ds,omitempty"`
	SA          bool     `json:"sa,omitempty"`
	Role        string   `json:"r"`
	Privileges  []string `json:"p,omitempty"`
	Email       string   `json:"em,omitempty"`
	FirstName   string   `json:"fn,omitempty"`
	LastName    string   `json:"ln,omitempty"`
	Created     int64    `json:"c"`
}

type sideDoc struct {
	Size     string `json:"s"`
	Flock    int    `json:"f,omitempty"`
	Cooldown int    `json:"cd,omitempty"`
}

type instDoc struct {
	RW sideDoc `json:"rw"`
	RS sideDoc `json:"rs"`
}

type tokenDoc struct {
	ID          string `json:"id"`
	Digest      string `json:"d"`
	Name        string `json:"n"`
	Description string `json:"ds,omitempty"`
	Type        string `json:"ty"`
	Created     int64  `json:"c"`
	Expires     int64  `json:"e"`
}

type diveDoc struct {
	Title     string        `json:"t,omitempty"`
	Version   int           `json:"v"`
	Resources []resourceDoc `json:"r,omitempty"`
}

type resourceDoc struct {
	URL   string `json:"u"`
	Alias string `json:"a,omitempty"`
}

type sessionDoc struct {
	DiveID       string        `json:"dv"`
	Version      int           `json:"v"`
	UserID       string        `json:"u"`
	Username     string        `json:"n"`
	Resources    []resourceDoc `json:"r,omitempty"`
	InitialState string        `json:"is,omitempty"`
	Affinity     string        `json:"af"`
	Created      int64         `json:"c"`
	Expires      int64         `json:"e"`
}

type feedbackDoc struct {
	PagePath  string `json:"pp"`
	Text      string `json:"tx"`
	PageTitle string `json:"pt,omitempty"`
	Source    string `json:"s,omitempty"`
	Created   int64  `json:"c"`
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func hexDigest(d storage.Digest) string { return hex.EncodeToString(d[:]) }

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Every document is plain strings, numbers and slices of them.
		panic(fmt.Sprintf("redisstore: encode %T: %v", v, err))
	}
	return string(b)
}

func decode(s string, v any) error {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("redisstore: corrupt %T record: %w", v, err)
	}
	return nil
}

func toUserDoc(u storage.User) userDoc {
	return userDoc{
		ID: u.ID, Username: u.Username, Description: u.Description, SA: u.IsServiceAccount,
		Role: u.Role, Privileges: u.Privileges, Email: u.Email, FirstName: u.FirstName,
		LastName: u.LastName, Created: millis(u.CreatedAt),
	}
}

func toInstDoc(c storage.InstanceConfig) instDoc {
	side := func(s storage.InstanceSide) sideDoc {
		return sideDoc{Size: s.Size, Flock: s.FlockSize, Cooldown: s.CooldownSeconds}
	}
	return instDoc{RW: side(c.ReadWrite), RS: side(c.ReadScaling)}
}

// userFrom decodes a user record and its instance configuration of org,
// whose folded username is folded.
func userFrom(org, folded, user, inst string) (storage.User, error) {
	var d userDoc
	if !readUserDoc(user, &d) {
		var err error
		if d, err = decodeAfresh[userDoc](user); err != nil {
			return storage.User{}, err
		}
	}
	var c instDoc
	if inst != "" && !readInstDoc(inst, &c) {
		var err error
		if c, err = decodeAfresh[instDoc](inst); err != nil {
			return storage.User{}, err
		}
	}
	side := func(s sideDoc) storage.InstanceSide {
		return storage.InstanceSide{Size: s.Size, FlockSize: s.Flock, CooldownSeconds: s.Cooldown}
	}
	return storage.User{
		ID: d.ID, Org: org, Username: d.Username, FoldedUsername: folded,
		Description: d.Description, IsServiceAccount: d.SA, Role: d.Role,
		Privileges: d.Privileges, Email: d.Email, FirstName: d.FirstName,
		LastName: d.LastName, CreatedAt: fromMillis(d.Created),
		Instances: storage.InstanceConfig{ReadWrite: side(c.RW), ReadScaling: side(c.RS)},
	}, nil
}

func toTokenDoc(t storage.Token) tokenDoc {
	return tokenDoc{
		ID: t.ID, Digest: hexDigest(t.Digest), Name: t.Name, Description: t.Description,
		Type: t.Type, Created: millis(t.CreatedAt), Expires: millis(t.ExpiresAt),
	}
}

func tokenFrom(org, userID, s string) (storage.Token, error) {
	var d tokenDoc
	if !readTokenDoc(s, &d) {
		var err error
		if d, err = decodeAfresh[tokenDoc](s); err != nil {
			return storage.Token{}, err
		}
	}
	t := storage.Token{
		ID: d.ID, Org: org, UserID: userID, Name: d.Name, Description: d.Description,
		Type: d.Type, CreatedAt: fromMillis(d.Created), ExpiresAt: fromMillis(d.Expires),
	}
	if n, err := hex.Decode(t.Digest[:], []byte(d.Digest)); err != nil || n != len(t.Digest) {
		return storage.Token{}, fmt.Errorf("redisstore: corrupt token %s: bad digest", d.ID)
	}
	return t, nil
}

func toResourceDocs(rs []storage.Resource) []resourceDoc {
	if len(rs) == 0 {
		return nil
	}
	out := make([]resourceDoc, len(rs))
	for i, r := range rs {
		out[i] = resourceDoc{URL: r.URL, Alias: r.Alias}
	}
	return out
}

func resourcesFrom(ds []resourceDoc) []storage.Resource {
	if len(ds) == 0 {
		return nil
	}
	out := make([]storage.Resource, len(ds))
	for i, d := range ds {
		out[i] = storage.Resource{URL: d.URL, Alias: d.Alias}
	}
	return out
}

func diveFrom(org, id, s string) (storage.Dive, error) {
	var d diveDoc
	if err := decode(s, &d); err != nil {
		return storage.Dive{}, err
	}
	return storage.Dive{ID: id, Org: org, Title: d.Title, Version: d.Version, RequiredResources: resourcesFrom(d.Resources)}, nil
}

func toSessionDoc(es storage.EmbedSession) sessionDoc {
	return sessionDoc{
		DiveID: es.DiveID, Version: es.Version, UserID: es.UserID, Username: es.Username,
		Resources: toResourceDocs(es.Resources), InitialState: string(es.InitialState),
		Affinity: es.AffinityKey, Created: millis(es.CreatedAt), Expires: millis(es.ExpiresAt),
	}
}

func sessionFrom(org string, digest storage.Digest, s string) (storage.EmbedSession, error) {
	var d sessionDoc
	if err := decode(s, &d); err != nil {
		return storage.EmbedSession{}, err
	}
	es := storage.EmbedSession{
		Digest: digest, Org: org, DiveID: d.DiveID, Version: d.Version, UserID: d.UserID,
		Username: d.Username, Resources: resourcesFrom(d.Resources), AffinityKey: d.Affinity,
		CreatedAt: fromMillis(d.Created), ExpiresAt: fromMillis(d.Expires),
	}
	if d.InitialState != "" {
		es.InitialState = []byte(d.InitialState)
	}
	return es, nil
}
