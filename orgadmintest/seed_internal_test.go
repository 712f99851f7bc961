package orgadmintest

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// cloneSeed copies every slice and pointer of a Seed, those of fields
// added later included: the test fills every field, changes every value
// the original holds, and requires the copy unchanged.
func TestCloneSeedSharesNothing(t *testing.T) {
	var sd, want orgadmin.Seed
	setAll(reflect.ValueOf(&sd).Elem(), "a", 1, true)
	setAll(reflect.ValueOf(&want).Elem(), "a", 1, true)
	c := cloneSeed(sd)
	require.Equal(t, want, c)
	changeAll(reflect.ValueOf(&sd).Elem())
	require.NotEqual(t, want, sd, "every value changed")
	require.Equal(t, want, c)
}

// setAll gives every field reachable from v a value: one element to each
// slice, a value to each pointer.
func setAll(v reflect.Value, s string, f float64, b bool) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Float64:
		v.SetFloat(f)
	case reflect.Bool:
		v.SetBool(b)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		setAll(v.Elem(), s, f, b)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setAll(v.Index(0), s, f, b)
	case reflect.Struct:
		for i := range v.NumField() {
			setAll(v.Field(i), s, f, b)
		}
	default:
		panic("setAll: a field of kind " + v.Kind().String() + ": teach setAll and cloneSeed about it")
	}
}

// changeAll changes, in place, every value reachable from v.
func changeAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Pointer:
		changeAll(v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			changeAll(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			changeAll(v.Field(i))
		}
	}
}
