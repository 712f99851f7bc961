package casefold

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// What the stores' re-keying relies on, for every rune: Fold of the key
// Earlier gave is the key Fold gives (so a stored key is re-keyed without
// its username), and both folds give one key per case orbit (so no key
// re-keyed meets another user's). And a key is stale exactly where the
// two folds differ.
func TestEarlierKeysRekeyUnderFold(t *testing.T) {
	differ := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		old, now := Earlier(s), Fold(s)
		if Fold(old) != now {
			t.Fatalf("%U: Fold(Earlier) = %q, Fold = %q", r, Fold(old), now)
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if Earlier(string(f)) != old || Fold(string(f)) != now {
				t.Fatalf("%U and %U, of one orbit, have two keys", r, f)
			}
		}
		if Stale(old) != (old != now) {
			t.Fatalf("%U: Stale(%q) = %v", r, old, Stale(old))
		}
		if old != now {
			differ++
		}
	}
	// µ Μ μ, Σ ς σ, ᲈ Ꙋ ꙋ, the circled letters, the Roman numerals and
	// Cherokee: what the earlier fold keyed otherwise.
	if differ != 265 {
		t.Errorf("the folds differ on %d runes, want 265", differ)
	}
}

func TestEarlierKeysOfTheNamesThatMoved(t *testing.T) {
	for _, c := range []struct{ name, earlier, now string }{
		{"Μαρία", "\u00B5αρία", "μαρία"},
		{"Σοφός", "ςοφός", "σοφόσ"},
		{"Ꭰli", "ꭰli", "Ꭰli"},
		{"Ꙋna", "ᲈna", "ꙋna"},
		{"Ángel", "ángel", "ángel"},
	} {
		if got := Earlier(c.name); got != c.earlier {
			t.Errorf("Earlier(%q) = %q, want %q", c.name, got, c.earlier)
		}
		if got := Fold(c.name); got != c.now {
			t.Errorf("Fold(%q) = %q, want %q", c.name, got, c.now)
		}
	}
}
