package orgadmin_test

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/orgadmin/orgadmin"
)

func TestFoldUsername_ASCIICaseFolding(t *testing.T) {
	assert.Equal(t, "alice", orgadmin.FoldUsername("Alice"))
	assert.Equal(t, "alice", orgadmin.FoldUsername("ALICE"))
	assert.Equal(t, "alice", orgadmin.FoldUsername("alice"))
	assert.Equal(t, "a_b9z", orgadmin.FoldUsername("A_B9Z"))
	assert.Equal(t, "", orgadmin.FoldUsername(""))
}

func TestFoldUsername_SimpleFoldingOfNonASCII(t *testing.T) {
	equal := []struct{ a, b string }{
		{"ΣΑΣ", "σας"},            // final sigma folds with sigma
		{"ΣΑΣ", "σασ"},            // and so does medial sigma
		{"\u212Aelvin", "kelvin"}, // Kelvin sign
		{"\u212A", "K"},
		{"ſam", "sam"}, // long s
		{"ſam", "SAM"},
		{"ÄÖÜ", "äöü"},
		{"ǅ", "ǆ"}, // titlecase dz
		{"ǅ", "Ǆ"},
		{"Ωmega", "\u2126mega"}, // Ohm sign
	}
	for _, c := range equal {
		assert.Equalf(t, orgadmin.FoldUsername(c.a), orgadmin.FoldUsername(c.b), "%q vs %q", c.a, c.b)
	}
	differ := []struct{ a, b string }{
		{"Straße", "STRASSE"}, // simple folding does not expand ß
		{"Straße", "strasse"},
		{"ı", "i"}, // dotless i is not in i's simple-folding orbit
		{"İ", "i"}, // nor is dotted capital I
		{"é", "e"},
	}
	for _, c := range differ {
		assert.NotEqualf(t, orgadmin.FoldUsername(c.a), orgadmin.FoldUsername(c.b), "%q vs %q", c.a, c.b)
	}
	assert.Equal(t, "kelvin", orgadmin.FoldUsername("\u212Aelvin"), "the Kelvin sign folds to the letter k")
	assert.Equal(t, "sam", orgadmin.FoldUsername("ſam"), "long s folds to s")
}

func TestFoldUsername_Idempotent(t *testing.T) {
	for _, s := range []string{"Alice", "ALICE", "alice", "ΣΑΣ", "σας", "\u212A", "ſ", "Straße", "ẞ", "ǅ", "Ωmega", "İstanbul", "ﬃ", "Ǆungla", "日本語", "a٣_B"} {
		once := orgadmin.FoldUsername(s)
		assert.Equalf(t, once, orgadmin.FoldUsername(once), "fold(fold(%q))", s)
	}
}

func TestFoldUsername_FoldedASCIIDoesNotAllocate(t *testing.T) {
	name := strings.Repeat("already_folded_9", 10)
	var out string
	allocs := testing.AllocsPerRun(100, func() { out = orgadmin.FoldUsername(name) })
	assert.Equal(t, 0.0, allocs)
	assert.Equal(t, name, out)
}

func TestValidUsername_LengthInCodePoints(t *testing.T) {
	assert.True(t, orgadmin.ValidUsername("a"), "1 code point")
	assert.True(t, orgadmin.ValidUsername("é"), "1 code point of 2 bytes")
	max := strings.Repeat("é", 255) // 510 bytes, 255 code points
	assert.True(t, orgadmin.ValidUsername(max), "255 code points")
	assert.True(t, orgadmin.ValidUsername(strings.Repeat("日", 255)), "255 code points of 3 bytes")
	assert.False(t, orgadmin.ValidUsername(""), "0 code points")
	assert.False(t, orgadmin.ValidUsername(max+"é"), "256 code points")
	assert.False(t, orgadmin.ValidUsername(strings.Repeat("a", 256)), "256 ASCII")
	assert.True(t, orgadmin.ValidUsername(strings.Repeat("a", 255)), "255 ASCII")
}

func TestValidUsername_LetterThenLettersDigitsUnderscore(t *testing.T) {
	valid := []string{
		"alice", "Alice_2", "a_", "émile", "日本語", "Σοφία", "a٣", // Arabic-Indic digit three
		"x1_2_3", "ǅx", "a\u0966", // Devanagari digit zero
	}
	for _, s := range valid {
		assert.Truef(t, orgadmin.ValidUsername(s), "%q", s)
	}
	invalid := []string{
		"1alice", "_alice", "٣a", // a digit or underscore first
		"al-ice", "al ice", "al.ice", "alice ", " alice", "al@ice", "a/b",
		"a\xff", "\xffa", "a\xc3", // invalid UTF-8
		"aⅫ",      // letter number (Nl), not a decimal digit
		"a²",      // superscript two (No)
		"a\u0301", // combining mark (Mn)
		"a\u200b", // zero-width space
	}
	for _, s := range invalid {
		assert.Falsef(t, orgadmin.ValidUsername(s), "%q", s)
	}
}

func TestFoldUsername_EveryRuneFoldsWithItsSimpleFoldingOrbit(t *testing.T) {
	bad, checked := 0, 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.RuneLen(r) < 0 || unicode.SimpleFold(r) == r {
			continue // a surrogate, or a rune alone in its orbit
		}
		checked++
		f := orgadmin.FoldUsername(string(r))
		ok := utf8.RuneCountInString(f) == 1 && // simple folding maps one rune to one rune
			orgadmin.FoldUsername(f) == f && // idempotent
			orgadmin.FoldUsername(string(unicode.SimpleFold(r))) == f // one key per orbit
		if !ok {
			bad++
			if bad <= 10 {
				t.Errorf("rune %U: folds to %q", r, f)
			}
		}
	}
	assert.Zero(t, bad)
	assert.Greater(t, checked, 2000, "every rune with a case-folding partner")
}

// The folds that a choice of one orbit member per orbit could get wrong:
// CaseFolding.txt picks the lower case, but for Cherokee the upper case,
// and ignores the micro sign, final sigma and the Cyrillic "ᲈ" in favour
// of the letters they are variants of. The order of names follows.
func TestFoldUsername_IsCaseFoldingNotAnyOrbitMember(t *testing.T) {
	cases := []struct{ in, want string }{
		{"\u00B5", "\u03BC"}, // micro sign: Greek small mu
		{"\u039C", "\u03BC"}, // Greek capital mu
		{"\u03BC", "\u03BC"},
		{"\u03A3", "\u03C3"}, // capital sigma: small sigma
		{"\u03C2", "\u03C3"}, // final sigma: small sigma
		{"\u1C88", "\uA64B"}, // Cyrillic small unblended uk: monograph uk
		{"\uA64A", "\uA64B"},
		{"\u13A0", "\u13A0"}, // Cherokee A stays upper case
		{"\uAB70", "\u13A0"}, // Cherokee small a: A
		{"\u13F8", "\u13F0"}, // Cherokee small ye: YE
		{"\u1E9E", "\u00DF"}, // capital sharp s: ß
		{"\u0130", "\u0130"}, // dotted capital I folds to itself (simple)
		{"\u0131", "\u0131"}, // dotless i: itself
		{"\u212A", "k"},      // Kelvin sign
		{"\u2126", "\u03C9"}, // Ohm sign: small omega
		{"Μαρία", "μαρία"},
		{"ΣΟΦΟΣ", "σοφοσ"},
	}
	for _, c := range cases {
		assert.Equalf(t, c.want, orgadmin.FoldUsername(c.in), "fold(%q)", c.in)
	}
	names := []string{"Μαρία", "Ángel", "zoe", "Ꭰli", "ꭰmy", "Ꙋna"}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(orgadmin.FoldUsername(a), orgadmin.FoldUsername(b)) })
	assert.Equal(t, []string{"zoe", "Ángel", "Μαρία", "Ꭰli", "ꭰmy", "Ꙋna"}, names)
}

// TestFoldUsername_MatchesCaseFoldingTxt checks every code point against
// the C and S mappings of the Unicode Character Database's CaseFolding.txt
// (Debian: unicode-data), when the machine has the file of the Unicode
// version Go's tables are built from.
func TestFoldUsername_MatchesCaseFoldingTxt(t *testing.T) {
	const path = "/usr/share/unicode/CaseFolding.txt"
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no %s (Debian: apt-get install unicode-data)", path)
	}
	defer f.Close()
	fold := map[rune]rune{}
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first && !strings.Contains(line, "CaseFolding-"+unicode.Version+".txt") {
			t.Skipf("%s is not of Unicode %s: %q", path, unicode.Version, line)
		}
		fields := strings.Split(line, "; ")
		if strings.HasPrefix(line, "#") || len(fields) < 3 || (fields[1] != "C" && fields[1] != "S") {
			continue
		}
		from, err1 := strconv.ParseUint(fields[0], 16, 32)
		to, err2 := strconv.ParseUint(fields[2], 16, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", line)
		}
		fold[rune(from)] = rune(to)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	assert.Greater(t, len(fold), 1400)
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.RuneLen(r) < 0 {
			continue
		}
		want, ok := fold[r]
		if !ok {
			want = r
		}
		if got := orgadmin.FoldUsername(string(r)); got != string(want) {
			if bad++; bad <= 10 {
				t.Errorf("fold(%U) = %q, CaseFolding.txt says %U", r, got, want)
			}
		}
	}
	assert.Zero(t, bad)
}
