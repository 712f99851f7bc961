package httpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// The types below are the answers in the wire form of the OpenAPI
// document, for encoding/json: the reference every answer's appendJSON
// must match.

// wireTime is the wire form of a time.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// tokenJSON is a token, with its value only on creation.
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
		CreatedTS:   wireTime(t.CreatedAt),
		ReadOnly:    t.ReadOnly(),
		TokenType:   string(t.Type),
	}
	if !t.ExpireAt.IsZero() {
		out.ExpireAt = wireTime(t.ExpireAt)
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
			CreatedTS:        wireTime(u.CreatedAt),
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

type sideJSON struct {
	InstanceSize    string `json:"instance_size"`
	FlockSize       *int   `json:"flock_size,omitempty"`
	CooldownSeconds *int   `json:"cooldown_seconds,omitempty"`
}

type configJSON struct {
	ReadWrite   sideJSON `json:"read_write"`
	ReadScaling sideJSON `json:"read_scaling"`
}

type accountJSON struct {
	Username  string `json:"username"`
	Ducklings []struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"ducklings"`
}

type issueJSON struct {
	Message string        `json:"message"`
	Path    orgadmin.Path `json:"path"` // its own MarshalJSON
	Code    string        `json:"code"`
}

type errorJSON struct {
	Message string       `json:"message"`
	Code    string       `json:"code"`
	Issues  *[]issueJSON `json:"issues,omitempty"`
}

// wireForm is what encoding/json writes of the wire form of an answer.
func wireForm(t *testing.T, v answer) string {
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
		ref = userPageToJSON(v.UserPage)
	case serviceAccountAnswer:
		ref = struct {
			Username    string `json:"username"`
			Description string `json:"description,omitempty"`
		}{v.Username, v.Description}
	case deletedUserAnswer:
		ref = struct {
			Username string `json:"username"`
		}{v.Username}
	case configAnswer:
		side := func(s orgadmin.InstanceSide, scaling bool) sideJSON {
			out := sideJSON{InstanceSize: string(s.Size)}
			if scaling {
				out.FlockSize = &s.FlockSize
			}
			if cd, ok := s.Cooldown.Get(); ok {
				n := int(cd / time.Second)
				out.CooldownSeconds = &n
			}
			return out
		}
		ref = configJSON{side(v.ReadWrite, false), side(v.ReadScaling, true)}
	case activeAccounts:
		accs := []accountJSON{}
		for _, a := range v {
			acc := accountJSON{Username: a.Username}
			require.NoError(t, json.Unmarshal([]byte("[]"), &acc.Ducklings))
			for _, d := range a.Ducklings {
				acc.Ducklings = append(acc.Ducklings, struct {
					ID     string `json:"id"`
					Type   string `json:"type"`
					Status string `json:"status"`
				}{d.ID, string(d.Type), string(d.Status)})
			}
			accs = append(accs, acc)
		}
		ref = struct {
			Accounts []accountJSON `json:"accounts"`
		}{accs}
	case emptyAnswer:
		ref = struct{}{}
	case embedSessionAnswer:
		ref = struct {
			Session string `json:"session"`
		}{string(v)}
	case feedbackAnswer:
		ref = struct {
			FeedbackID string `json:"feedback_id"`
		}{string(v)}
	case healthAnswer:
		ref = struct {
			Status string `json:"status"`
		}{string(v)}
	case errorBody:
		e := errorJSON{Message: v.Message, Code: string(v.Code)}
		if v.Issues != nil {
			issues := []issueJSON{}
			for _, is := range v.Issues {
				issues = append(issues, issueJSON{is.Message, is.Path, string(is.Code)})
			}
			e.Issues = &issues
		}
		ref = e
	default:
		t.Fatalf("no wire form for %T", v)
	}
	var b bytes.Buffer
	require.NoError(t, json.NewEncoder(&b).Encode(ref))
	return b.String()
}

// Every answer writes what encoding/json writes of its wire form.
func TestAnswersMatchEncodingJSON(t *testing.T) {
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
	values := []answer{tokenList(nil), tokenList{}, tokenList(tokens), userPage{}, userPage{UserPage: orgadmin.UserPage{Users: []orgadmin.User{}, TotalCount: 7}},
		emptyAnswer{}, activeAccounts(nil), activeAccounts{}, healthAnswer("ok"),
		errorBody{Message: "Not Found", Code: orgadmin.CodeNotFound},
		errorBody{Message: "Bad Request", Code: orgadmin.CodeBadRequest, Issues: []orgadmin.Issue{}},
		configAnswer{ReadWrite: orgadmin.InstanceSide{Size: "pulse"}, ReadScaling: orgadmin.InstanceSide{Size: "giga", FlockSize: 0, Cooldown: orgadmin.Some(86400 * time.Second)}},
		configAnswer{ReadWrite: orgadmin.InstanceSide{Size: "mega", Cooldown: orgadmin.Some(time.Duration(-1) * time.Second)}, ReadScaling: orgadmin.InstanceSide{FlockSize: 64}},
	}
	for _, s := range odd {
		values = append(values, serviceAccountAnswer{Username: s, Description: s}, deletedUserAnswer{Username: s},
			embedSessionAnswer(s), feedbackAnswer(s), healthAnswer(s),
			configAnswer{ReadWrite: orgadmin.InstanceSide{Size: orgadmin.Size(s)}, ReadScaling: orgadmin.InstanceSide{Size: orgadmin.Size(s), FlockSize: len(s)}},
			activeAccounts{{Username: s}, {Username: s, Ducklings: []orgadmin.Duckling{{ID: s, Type: orgadmin.DucklingType(s), Status: orgadmin.DucklingState(s)}, {ID: "rw", Type: "read_write", Status: "active"}}}},
			errorBody{Message: s, Code: orgadmin.Code(s), Issues: []orgadmin.Issue{{Message: s, Path: orgadmin.Path{}, Code: orgadmin.IssueCode(s)}, {Message: "m", Path: orgadmin.NewPath(s, 0, "x", 12), Code: "c"}}},
		)
	}
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
		values = append(values, userPage{UserPage: orgadmin.UserPage{Users: users[len(users)-3:], TotalCount: i, NextPageToken: s}})
	}
	values = append(values, userPage{UserPage: orgadmin.UserPage{Users: users, TotalCount: len(users)}})
	for _, v := range values {
		require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
	}
}

// writeJSON sends an answer whole, with its length and the headers every
// JSON answer carries.
func TestWriteJSON(t *testing.T) {
	for _, n := range []int{0, 2000, 5000, 100_000} {
		rec := httptest.NewRecorder()
		page := userPage{UserPage: orgadmin.UserPage{Users: make([]orgadmin.User, n/100)}}
		writeJSON(rec, http.StatusTeapot, page)
		want := wireForm(t, page)
		assert.Equal(t, http.StatusTeapot, rec.Code)
		assert.Equal(t, want, rec.Body.String())
		assert.Equal(t, fmt.Sprint(len(want)), rec.Header().Get("Content-Length"))
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	}
}

func FuzzAnswers(f *testing.F) {
	f.Add("oat_x", "id", "name", "desc", "read_write", int64(1_781_870_400_123), int64(0))
	f.Fuzz(func(t *testing.T, value, id, name, desc, typ string, created, expire int64) {
		tok := orgadmin.Token{Value: value, ID: id, Name: name, Description: desc, Type: orgadmin.TokenType(typ),
			CreatedAt: time.UnixMilli(created)}
		if expire != 0 {
			tok.ExpireAt = time.UnixMilli(expire)
		}
		for _, v := range []answer{tokenAnswer(tok), tokenList{tok, tok}, serviceAccountAnswer{Username: name, Description: desc},
			errorBody{Message: value, Code: orgadmin.Code(id), Issues: []orgadmin.Issue{{Message: name, Path: orgadmin.NewPath(desc, int(expire%1000)), Code: orgadmin.IssueCode(typ)}}}} {
			require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
		}
		// The same strings as a user's fields, and created as its time.
		u := orgadmin.User{ID: id, Username: name, Description: desc, Email: value, FirstName: typ, LastName: desc,
			Role: orgadmin.Role(typ), IsServiceAccount: expire%2 == 0, CreatedAt: time.UnixMilli(created)}
		for _, v := range []answer{userPage{UserPage: orgadmin.UserPage{Users: []orgadmin.User{u}, TotalCount: int(expire), NextPageToken: value}}, userPage{UserPage: orgadmin.UserPage{Users: []orgadmin.User{u, u}}}} {
			require.Equal(t, wireForm(t, v), string(append(v.appendJSON(nil), '\n')))
		}
	})
}
