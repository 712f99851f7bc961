package orgadmin

import (
	"reflect"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// TestSetUserSetsEveryField writes a record over a User whose every field
// holds something else (as a reused page's elements do): it must come out
// as it does over a zero one, so that no field of User is left as it was.
func TestSetUserSetsEveryField(t *testing.T) {
	rec := storage.User{ID: "id", Org: "org", Username: "Alice", Role: "Member", CreatedAt: time.UnixMilli(1)}
	var want User
	setUser(&want, &rec)
	got := User{
		ID: "stale", Org: "stale", Username: "stale", Description: "stale", IsServiceAccount: true,
		Role: "stale", Privileges: []string{"stale"}, Email: "stale", FirstName: "stale", LastName: "stale",
		CreatedAt: time.Unix(99, 0),
	}
	v := reflect.ValueOf(got)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the stale User leaves %s zero: give it a value", v.Type().Field(i).Name)
		}
	}
	setUser(&got, &rec)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("over a stale User: %+v, want %+v", got, want)
	}
}

// TestSetTokenSetsEveryField is TestSetUserSetsEveryField for tokens.
func TestSetTokenSetsEveryField(t *testing.T) {
	rec := storage.Token{ID: "tid", Name: "ci", Type: "read_write", CreatedAt: time.UnixMilli(1)}
	var want Token
	setToken(&want, &rec)
	got := Token{Value: "stale", ID: "stale", Name: "stale", Description: "stale",
		ExpireAt: time.Unix(99, 0), CreatedAt: time.Unix(99, 0), Type: "stale"}
	v := reflect.ValueOf(got)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the stale Token leaves %s zero: give it a value", v.Type().Field(i).Name)
		}
	}
	setToken(&got, &rec)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("over a stale Token: %+v, want %+v", got, want)
	}
}
