package redisstore

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The user, instance and token records are read on every authenticated
// request, and encoding/json's reflection was the largest cost of a token
// listing after the round trip itself. The readers below decode exactly
// the JSON that encode writes for these records (flat objects of plain
// strings, integers, booleans and string arrays, and the two sides of an
// instance configuration) without reflection, and report false for
// anything else, which is then decoded by encoding/json as before: the
// result is the same either way (TestRecordReadersMatchEncodingJSON and
// FuzzRecordReaders).

// scanner reads one JSON text. Its methods do nothing once bad is set.
type scanner struct {
	s   string
	i   int
	bad bool
}

func (r *scanner) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (r *scanner) peek() byte {
	r.space()
	if r.bad || r.i >= len(r.s) {
		return 0
	}
	return r.s[r.i]
}

func (r *scanner) expect(c byte) {
	if r.peek() != c {
		r.bad = true
		return
	}
	r.i++
}

// object reads an object, calling member for each key with the scanner
// positioned on its value, which member must read.
func (r *scanner) object(member func(key string)) {
	r.expect('{')
	if r.peek() == '}' {
		r.i++
		return
	}
	for !r.bad {
		key := r.str()
		r.expect(':')
		if r.bad {
			return
		}
		member(key)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.bad = true
		}
	}
}

// str reads a string. One with escapes, control or non-UTF-8 bytes is
// left to encoding/json (bad).
func (r *scanner) str() string {
	r.expect('"')
	if r.bad {
		return ""
	}
	rest := r.s[r.i:]
	// Mostly the string is plain ASCII up to its closing quote, which
	// plainPrefix finds eight bytes at a time.
	n := plainPrefix(rest)
	if n < len(rest) && rest[n] == '"' {
		r.i += n + 1
		return rest[:n]
	}
	// An escaped quote ends v early, but v then holds its backslash.
	n = strings.IndexByte(rest, '"')
	if n < 0 {
		r.bad = true
		return ""
	}
	v := rest[:n]
	for i := 0; i < len(v); i++ {
		if c := v[i]; !plainByte[c] && c < utf8.RuneSelf { // a backslash or a control character
			r.bad = true
			return ""
		}
	}
	if !utf8.ValidString(v) {
		r.bad = true
		return ""
	}
	r.i += n + 1
	return v
}

// Each byte of these words is the same byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainPrefix returns the length of the longest prefix of s of plain
// bytes (plainByte) other than the double quote: the index of the first
// quote, backslash, control or non-ASCII byte, or len(s). It looks at
// eight bytes at once: in each test below, the lowest byte flagged is
// one that holds (a borrow flags bytes above it only), so the lowest of
// all is the first byte that is not plain.
func plainPrefix(s string) int {
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		b := s[i : i+8] // one load of eight bytes, without bounds checks
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		quote := w ^ ('"' * ones)
		slash := w ^ ('\\' * ones)
		m := w | // a byte of 0x80 or more
			(w-0x20*ones)&^w | // a control byte
			(quote-ones)&^quote | // a quote
			(slash-ones)&^slash // a backslash
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; !plainByte[c] || c == '"' {
			return i
		}
	}
	return i
}

// lit reads the text lit, exactly.
func (r *scanner) lit(lit string) {
	if r.bad || !strings.HasPrefix(r.s[r.i:], lit) {
		r.bad = true
		return
	}
	r.i += len(lit)
}

// int reads an integer that fits an int64 (no fraction, no exponent).
func (r *scanner) int() int64 {
	r.space()
	start := r.i
	if r.i < len(r.s) && r.s[r.i] == '-' {
		r.i++
	}
	for r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	digits := r.s[start:r.i]
	if r.i < len(r.s) && (r.s[r.i] == '.' || r.s[r.i] == 'e' || r.s[r.i] == 'E') {
		r.bad = true
		return 0
	}
	if len(digits) > 1 && (digits[0] == '0' || digits[:2] == "-0") {
		r.bad = true // a leading zero is not JSON
		return 0
	}
	if n := len(digits); n == 0 || n > 18 || digits == "-" {
		// No digits, or perhaps too many for an int64: ParseInt decides.
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			r.bad = true
		}
		return v
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		if c := digits[i]; c != '-' {
			v = v*10 + int64(c-'0')
		}
	}
	if digits[0] == '-' {
		v = -v
	}
	return v
}

// plainByte tells the bytes of a string that need no further look: ASCII
// but control characters and backslashes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '\\'
	}
	return t
}()

func (r *scanner) bool() bool {
	r.space()
	switch {
	case len(r.s)-r.i >= 4 && r.s[r.i:r.i+4] == "true":
		r.i += 4
		return true
	case len(r.s)-r.i >= 5 && r.s[r.i:r.i+5] == "false":
		r.i += 5
		return false
	}
	r.bad = true
	return false
}

// strs reads an array of strings, or null (nil).
func (r *scanner) strs() []string {
	if r.peek() == 'n' {
		if len(r.s)-r.i >= 4 && r.s[r.i:r.i+4] == "null" {
			r.i += 4
			return nil
		}
		r.bad = true
		return nil
	}
	r.expect('[')
	out := []string{}
	if r.peek() == ']' {
		r.i++
		return out
	}
	for !r.bad {
		out = append(out, r.str())
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return out
		default:
			r.bad = true
		}
	}
	return nil
}

// end reports whether the whole text was read without trouble.
func (r *scanner) end() bool {
	r.space()
	return !r.bad && r.i == len(r.s)
}

// readUserDoc decodes a user record into d.
func readUserDoc(s string, d *userDoc) bool {
	if readUserDocAsWritten(s, d) {
		return true
	}
	*d = userDoc{}
	r := scanner{s: s}
	r.object(func(key string) {
		switch key {
		case "id":
			d.ID = r.str()
		case "n":
			d.Username = r.str()
		case "ds":
			d.Description = r.str()
		case "sa":
			d.SA = r.bool()
		case "r":
			d.Role = r.str()
		case "p":
			d.Privileges = r.strs()
		case "em":
			d.Email = r.str()
		case "fn":
			d.FirstName = r.str()
		case "ln":
			d.LastName = r.str()
		case "c":
			d.Created = r.int()
		default:
			r.bad = true
		}
	})
	return r.end()
}

// readUserDocAsWritten reads a user record in the very form encode
// writes it (its fields in order, those left out when empty, no white
// space), the form of every record a page of users reads; any other form
// is false.
func readUserDocAsWritten(s string, d *userDoc) bool {
	r := scanner{s: s}
	r.lit(`{"id":`)
	d.ID = r.str()
	r.lit(`,"n":`)
	d.Username = r.str()
	if r.opt(`,"ds":`) {
		d.Description = r.str()
	}
	if r.opt(`,"sa":`) {
		r.lit("true")
		d.SA = true
	}
	r.lit(`,"r":`)
	d.Role = r.str()
	if r.opt(`,"p":`) {
		d.Privileges = r.strs()
	}
	if r.opt(`,"em":`) {
		d.Email = r.str()
	}
	if r.opt(`,"fn":`) {
		d.FirstName = r.str()
	}
	if r.opt(`,"ln":`) {
		d.LastName = r.str()
	}
	r.lit(`,"c":`)
	d.Created = r.int()
	r.lit(`}`)
	return !r.bad && r.i == len(r.s)
}

// opt reads the text lit if it comes next, and reports whether it did.
func (r *scanner) opt(lit string) bool {
	if r.bad || !strings.HasPrefix(r.s[r.i:], lit) {
		return false
	}
	r.i += len(lit)
	return true
}

// readInstDoc decodes an instance configuration record into d.
func readInstDoc(s string, d *instDoc) bool {
	if readInstDocAsWritten(s, d) {
		return true
	}
	*d = instDoc{}
	r := scanner{s: s}
	side := func(sd *sideDoc) {
		r.object(func(key string) {
			switch key {
			case "s":
				sd.Size = r.str()
			case "f":
				sd.Flock = r.smallInt()
			case "cd":
				sd.Cooldown = r.smallInt()
			default:
				r.bad = true
			}
		})
	}
	r.object(func(key string) {
		switch key {
		case "rw":
			side(&d.RW)
		case "rs":
			side(&d.RS)
		default:
			r.bad = true
		}
	})
	return r.end()
}

// readInstDocAsWritten reads an instance configuration record in the
// very form encode writes it; any other form is false.
func readInstDocAsWritten(s string, d *instDoc) bool {
	r := scanner{s: s}
	r.lit(`{"rw":`)
	r.sideAsWritten(&d.RW)
	r.lit(`,"rs":`)
	r.sideAsWritten(&d.RS)
	r.lit(`}`)
	return !r.bad && r.i == len(r.s)
}

// sideAsWritten reads one side of an instance configuration in the form
// encode writes it.
func (r *scanner) sideAsWritten(sd *sideDoc) {
	r.lit(`{"s":`)
	sd.Size = r.str()
	if r.opt(`,"f":`) {
		sd.Flock = r.smallInt()
	}
	if r.opt(`,"cd":`) {
		sd.Cooldown = r.smallInt()
	}
	r.lit(`}`)
}

// smallInt reads an integer that fits an int32, so that it fits an int
// everywhere.
func (r *scanner) smallInt() int {
	n := r.int()
	// #nosec G115 -- this conversion is the overflow check
	if int64(int32(n)) != n {
		r.bad = true
	}
	return int(n)
}

// readTokenDoc decodes a token record into d.
func readTokenDoc(s string, d *tokenDoc) bool {
	if readTokenDocAsWritten(s, d) {
		return true
	}
	*d = tokenDoc{}
	r := scanner{s: s}
	r.object(func(key string) {
		switch key {
		case "id":
			d.ID = r.str()
		case "d":
			d.Digest = r.str()
		case "n":
			d.Name = r.str()
		case "ds":
			d.Description = r.str()
		case "ty":
			d.Type = r.str()
		case "c":
			d.Created = r.int()
		case "e":
			d.Expires = r.int()
		default:
			r.bad = true
		}
	})
	return r.end()
}

// readTokenDocAsWritten reads a token record in the very form encode
// writes it (its fields in order, no white space), the form of every
// record a listing reads; any other form is false.
func readTokenDocAsWritten(s string, d *tokenDoc) bool {
	r := scanner{s: s}
	r.lit(`{"id":`)
	d.ID = r.str()
	r.lit(`,"d":`)
	d.Digest = r.str()
	r.lit(`,"n":`)
	d.Name = r.str()
	if r.opt(`,"ds":`) {
		d.Description = r.str()
	}
	r.lit(`,"ty":`)
	d.Type = r.str()
	r.lit(`,"c":`)
	d.Created = r.int()
	r.lit(`,"e":`)
	d.Expires = r.int()
	r.lit(`}`)
	return !r.bad && r.i == len(r.s)
}

// decodeAfresh decodes s into a new D with encoding/json: what a record
// the readers report false for is decoded with. (The readers are called
// directly: through a function value, their record would escape to the
// heap.)
func decodeAfresh[D any](s string) (D, error) {
	p := new(D)
	err := decode(s, p)
	return *p, err
}
