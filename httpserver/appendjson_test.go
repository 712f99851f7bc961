package httpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// tokenJSON is a token in the wire form of the OpenAPI document, for
// encoding/json: the reference that appendToken must match.
type tokenJSON struct {
	Token       string `json:"token,omitempty"`
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	ExpireAt    string `json:"expire_at,omitempty"`
	CreatedTS   string `json:"created_ts"`
	ReadOnly    bool   `json:"read_only"`
	TokenType   string `json:"token_type"`
}

func tokenToJSON(t orgadmin.Token) tokenJSON {
	out := tokenJSON{
		Token:       t.Value,
		ID:          t.ID,
		Name:        t.Name,
		Description: t.Description,
		CreatedTS:   orgadmin.FormatTime(t.CreatedAt),
		ReadOnly:    t.ReadOnly(),
		TokenType:   string(t.Type),
	}
	if !t.ExpireAt.IsZero() {
		out.ExpireAt = orgadmin.FormatTime(t.ExpireAt)
	}
	return out
}

// userJSON and userPageJSON are a page of list users in the wire form of
// the OpenAPI document, for encoding/json: the reference that userPage
// must match.
type userJSON struct {
	ID               string   `json:"id"`
	Username         string   `json:"username"`
	IsServiceAccount bool     `json:"is_service_account"`
	Roles            []string `json:"roles"`
	CreatedTS        string   `json:"created_ts"`
	Description      string   `json:"description,omitempty"`
	Email            string   `json:"email,omitempty"`
	FirstName        string   `json:"first_name,omitempty"`
	LastName         string   `json:"last_name,omitempty"`
}

type userPageJSON struct {
	Users         []userJSON `json:"users"`
	TotalCount    int        `json:"total_count"`
	NextPageToken *string    `json:"next_page_token"`
}

func userPageToJSON(p orgadmin.UserPage) userPageJSON {
	out := userPageJSON{Users: []userJSON{}, TotalCount: p.TotalCount}
	for _, u := range p.Users {
		out.Users = append(out.Users, userJSON{
			ID:               u.ID,
			Username:         u.Username,
			IsServiceAccount: u.IsServiceAccount,
			Roles:            []string{string(u.Role)},
			CreatedTS:        orgadmin.FormatTime(u.CreatedAt),
			Description:      u.Description,
			Email:            u.Email,
			FirstName:        u.FirstName,
			LastName:         u.LastName,
		})
	}
	if p.NextPageToken != "" {
		out.NextPageToken = &p.NextPageToken
	}
	return out
}

// wireForm is what encoding/json writes of the wire form of an answer
// that writes its own JSON.
func wireForm(t *testing.T, v jsonAppender) string {
	t.Helper()
	var ref any
	switch v := v.(type) {
	case tokenAnswer:
		ref = tokenToJSON(orgadmin.Token(v))
	case tokenList:
		list := struct {
			Tokens []tokenJSON `json:"tokens"`
		}{Tokens: []tokenJSON{}}
		for _, tok := range v {
			list.Tokens = append(list.Tokens, tokenToJSON(tok))
		}
		ref = list
	case userPage:
		ref = userPageToJSON(orgadmin.UserPage(v))
	default:
		t.Fatalf("no wire form for %T", v)
	}
	var b bytes.Buffer
	require.NoError(t, json.NewEncoder(&b).Encode(ref))
	return b.String()
}

// The answers that write their own JSON write what encoding/json writes.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " backslash \`, "<tag>&amp;", "tab\t\x01\x7f", "ünïcødé ✓ 🦆", "\u2028\u2029", "bad \xff utf-8", "oat_AbC123"}
	at := time.Date(2026, 6, 19, 12, 0, 0, 123_456_789, time.FixedZone("east", 3600))
	var tokens []orgadmin.Token
	for i, s := range odd {
		tokens = append(tokens,
			orgadmin.Token{Value: s, ID: s, Name: s, Description: s, ExpireAt: at, CreatedAt: at.Add(-time.Hour), Type: orgadmin.TokenType(s)},
			orgadmin.Token{ID: "id", CreatedAt: at, Type: orgadmin.TokenReadWrite, Name: s},
			orgadmin.Token{ID: s, CreatedAt: time.Date(10000+i, 1, 1, 0, 0, 0, 0, time.UTC), Type: orgadmin.TokenReadScaling},
		)
	}
	values := []jsonAppender{tokenList(nil), tokenList{}, tokenList(tokens), userPage{}, userPage{Users: []orgadmin.User{}, TotalCount: 7}}
	for _, tok := range tokens {
		values = append(values, tokenAnswer(tok), tokenList{tok})
	}
	var users []orgadmin.User
	for i, s := range odd {
		users = append(users,
			orgadmin.User{ID: s, Org: s, Username: s, Description: s, IsServiceAccount: true, Role: orgadmin.Role(s),
				Privileges: []string{s}, Email: s, FirstName: s, LastName: s, CreatedAt: at},
			orgadmin.User{ID: "id", Username: s, Role: orgadmin.RoleAdmin, CreatedAt: at.Add(time.Duration(i) * time.Millisecond), LastName: s},
			orgadmin.User{ID: s, Username: "u", Role: orgadmin.RoleMember, CreatedAt: time.Date(10000+i, 1, 1, 0, 0, 0, 0, time.UTC), Email: s},
		)
		values = append(values, userPage{Users: users[len(users)-3:], TotalCount: i, NextPageToken: s})
	}
	values = append(values, userPage{Users: users, TotalCount: len(users)})
	for _, v := range values {
		require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
	}
}

// The header values writeJSON assigns are shared by every answer; answers
// whose handler or middleware adds to or sets them, concurrently, change
// their own only. (With room to append, two answers adding at once would
// write the same element: -race fails the test.)
func TestAnswerHeadersStayShared(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				rec := httptest.NewRecorder()
				writeJSON(rec, http.StatusOK, tokenList{})
				assert.Equal(t, []string{"application/json"}, rec.Header().Values("Content-Type"))
				assert.Equal(t, []string{"no-store"}, rec.Header().Values("Cache-Control"))
				rec.Header().Add("Content-Type", "text/plain")
				rec.Header().Add("Cache-Control", "private")
				rec.Header().Set("Cache-Control", "max-age=60")
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, []string{"application/json"}, jsonContentType)
	assert.Equal(t, []string{"no-store"}, noStore)
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("oat_x", "id", "name", "desc", "read_write", int64(1_781_870_400_123), int64(0))
	f.Fuzz(func(t *testing.T, value, id, name, desc, typ string, created, expire int64) {
		tok := orgadmin.Token{Value: value, ID: id, Name: name, Description: desc, Type: orgadmin.TokenType(typ),
			CreatedAt: time.UnixMilli(created)}
		if expire != 0 {
			tok.ExpireAt = time.UnixMilli(expire)
		}
		for _, v := range []jsonAppender{tokenAnswer(tok), tokenList{tok, tok}} {
			require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
		}
		// The same strings as a user's fields, and created as its time.
		u := orgadmin.User{ID: id, Username: name, Description: desc, Email: value, FirstName: typ, LastName: desc,
			Role: orgadmin.Role(typ), IsServiceAccount: expire%2 == 0, CreatedAt: time.UnixMilli(created)}
		for _, v := range []jsonAppender{userPage{Users: []orgadmin.User{u}, TotalCount: int(expire), NextPageToken: value}, userPage{Users: []orgadmin.User{u, u}}} {
			require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
		}
	})
}
