package everystore

import (
	"fmt"
	"reflect"
	"strings"
)

// walk returns every string, byte and number reachable from v, unexported
// fields included, each pointer, map and slice followed once; bytes are
// written as they are, so a value held as []byte or [N]byte shows in
// clear. It is how the memory store shows what it holds, with no method of
// its own for that.
func walk(v any) string {
	w := walker{seen: map[visit]bool{}}
	w.value(reflect.ValueOf(v))
	return w.b.String()
}

type walker struct {
	b    strings.Builder
	seen map[visit]bool
}

// visit is a pointer, map or slice already walked, with its type (a
// struct and its first field share an address).
type visit struct {
	ptr uintptr
	typ reflect.Type
	n   int
}

// first reports whether the pointer-like v is walked for the first time.
func (w *walker) first(v reflect.Value, n int) bool {
	k := visit{v.Pointer(), v.Type(), n}
	if w.seen[k] {
		return false
	}
	w.seen[k] = true
	return true
}

func (w *walker) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Invalid, reflect.Func, reflect.Chan, reflect.UnsafePointer:
	case reflect.String:
		w.b.WriteString(v.String())
		w.b.WriteByte('\n')
	case reflect.Bool:
		fmt.Fprintln(&w.b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fmt.Fprintln(&w.b, v.Int())
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		fmt.Fprintln(&w.b, v.Uint())
	case reflect.Uint8:
		w.b.WriteByte(byte(v.Uint())) // #nosec G115 -- a uint8's value
	case reflect.Float32, reflect.Float64:
		fmt.Fprintln(&w.b, v.Float())
	case reflect.Complex64, reflect.Complex128:
		fmt.Fprintln(&w.b, v.Complex())
	case reflect.Pointer:
		if !v.IsNil() && w.first(v, 0) {
			w.value(v.Elem())
		}
	case reflect.Interface:
		w.value(v.Elem())
	case reflect.Map:
		if v.IsNil() || !w.first(v, 0) {
			return
		}
		it := v.MapRange()
		for it.Next() {
			w.value(it.Key())
			w.value(it.Value())
		}
	case reflect.Slice:
		if v.IsNil() || !w.first(v, v.Len()) {
			return
		}
		w.elems(v)
	case reflect.Array:
		w.elems(v)
	case reflect.Struct:
		for i := range v.NumField() {
			w.value(v.Field(i))
		}
	}
}

// elems walks the elements of a slice or an array; bytes end with a line
// break, like every other value.
func (w *walker) elems(v reflect.Value) {
	for i := range v.Len() {
		w.value(v.Index(i))
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		w.b.WriteByte('\n')
	}
}
