// Package jsonobject reads what encoding/json passes over in a JSON
// text: the members of an object in the order they are written,
// duplicates included (where json.Unmarshal into a map or a struct keeps
// only the last value of a key), a key given twice at any depth, escapes
// of lone UTF-16 surrogates (which json.Unmarshal turns into U+FFFD),
// strings as escaped by their writer, and whether a number is whole as
// written (where a float64 may round it to one). The seed decoder uses
// it to name a key given twice and a number it would round, the Service
// to check and keep a free-form JSON object, and httpserver's reader of
// request bodies (which splits objects itself, copying nothing) to check
// strings and whole numbers.
package jsonobject

import (
	"bytes"
	"encoding/json"
	"iter"
	"unicode/utf16"
	"unicode/utf8"
)

// Members yields each member of raw, a JSON object: its key, unescaped,
// and its value as written. It yields nothing when raw is not an object,
// and stops at the first malformed member.
func Members(raw []byte) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			tok, err := dec.Token()
			key, ok := tok.(string)
			var v json.RawMessage
			if err != nil || !ok || dec.Decode(&v) != nil {
				return
			}
			if !yield(key, v) {
				return
			}
		}
	}
}

// DuplicateKey returns the path (keys and array indexes, from raw's top)
// of the first key that an object of raw, a valid JSON text, names twice
// at any depth, the key last; ok is false when no object does. Keys are
// compared unescaped: "a" and "\u0061" are one key.
func DuplicateKey(raw []byte) (path []any, ok bool) {
	// frame is an object or array being read: for an object, its keys
	// and whether a key comes next; for an array, its last index.
	type frame struct {
		keys    map[string]bool
		key     string
		wantKey bool
		index   int
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false // the end, or not valid JSON
		}
		if n := len(stack); n > 0 {
			top := stack[n-1]
			switch {
			case top.keys != nil && top.wantKey:
				if key, isKey := tok.(string); isKey {
					if top.keys[key] {
						for _, f := range stack[:n-1] {
							if f.keys != nil {
								path = append(path, f.key)
							} else {
								path = append(path, f.index)
							}
						}
						return append(path, key), true
					}
					top.keys[key], top.key, top.wantKey = true, key, false
					continue
				}
			case top.keys != nil:
				top.wantKey = true // a value: a key comes after it
			case tok != json.Delim(']'):
				top.index++
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{index: -1})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// Unescaped returns compact, a valid JSON text with no space between its
// tokens (json.Compact's output) and no lone surrogate escape, with each
// string that holds an escape, or U+2028 or U+2029, written again as
// encoding/json writes it without HTML escaping: with the fewest escapes
// but for those two, which it always escapes. So one value has one text,
// whichever escapes its writer chose ("\u00e9" becomes "é"; a quote, a
// backslash, a control character and U+2028 and U+2029, raw or not, are
// escaped). Numbers and the order of members are kept as written. It
// returns compact itself when no string holds an escape or either of the
// two.
func Unescaped(compact []byte) []byte {
	if bytes.IndexByte(compact, '\\') < 0 && !lineSeparators(compact) {
		return compact
	}
	out := make([]byte, 0, len(compact))
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	for i := 0; i < len(compact); i++ {
		if compact[i] != '"' {
			out = append(out, compact[i])
			continue
		}
		end, escaped := i+1, false // end: the closing quote
		for ; compact[end] != '"'; end++ {
			if compact[end] == '\\' {
				escaped = true
				end++
			}
		}
		str := compact[i : end+1]
		if escaped || lineSeparators(str) {
			var v string
			_ = json.Unmarshal(str, &v) // a string of a valid text
			enc.Reset()
			_ = e.Encode(v) // a string always encodes
			str = bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
		}
		out = append(out, str...)
		i = end
	}
	return out
}

// lineSeparators reports whether b holds U+2028 or U+2029 as UTF-8.
func lineSeparators(b []byte) bool {
	return bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029"))
}

// WholeNumber reports whether raw, a valid JSON number, is a whole
// number as written: 4, 4.0 and 4e0 are; 2.5, 4.0000000000000001 and
// 1e-400 are not, though a float64 rounds the last two to whole numbers.
// Every digit of the mantissa that the exponent leaves after the decimal
// point must be 0.
func WholeNumber(raw []byte) bool {
	i := 0
	if raw[0] == '-' {
		i++
	}
	digits := func() []byte {
		from := i
		for i < len(raw) && '0' <= raw[i] && raw[i] <= '9' {
			i++
		}
		return raw[from:i]
	}
	intPart, frac := digits(), []byte(nil)
	if i < len(raw) && raw[i] == '.' {
		i++
		frac = digits()
	}
	exp := 0
	if i < len(raw) { // e or E, a sign maybe, digits
		i++
		neg := raw[i] == '-'
		if raw[i] == '+' || neg {
			i++
		}
		for _, c := range digits() {
			exp = min(exp*10+int(c-'0'), 1<<20) // far past any mantissa
		}
		if neg {
			exp = -exp
		}
	}
	for k := max(len(intPart)+exp, 0); k < len(intPart)+len(frac); k++ {
		c := byte('0')
		if k < len(intPart) {
			c = intPart[k]
		} else {
			c = frac[k-len(intPart)]
		}
		if c != '0' {
			return false
		}
	}
	return true
}

// LoneSurrogate reports whether raw, a valid JSON text, escapes a UTF-16
// surrogate that is not half of a pair (such as \ud800), which
// encoding/json silently decodes to U+FFFD.
func LoneSurrogate(raw []byte) bool { return LoneSurrogateAt(raw) >= 0 }

// LoneSurrogateAt returns the index in raw, a valid JSON text, of the
// first escape of a lone surrogate (its backslash), or -1 when there is
// none.
func LoneSurrogateAt(raw []byte) int {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		at := i
		i++ // the escaped character, which ends the escape unless it is u
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		// A high surrogate must be followed at once by an escaped low one.
		if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
			if utf16.DecodeRune(r, hex4(raw[i+3:i+7])) != utf8.RuneError {
				i += 6
				continue
			}
		}
		return at
	}
	return -1
}

// hex4 decodes the four hexadecimal digits of a \u escape.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
