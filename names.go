package orgadmin

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/orgadmin/orgadmin/internal/casefold"
)

// Limits of the API's inputs, as the service specification sets them.
const (
	MaxUsernameLen    = 255
	MaxDescriptionLen = 1000
	MaxTokenNameLen   = 255
	MaxFlockSize      = 64
	MaxFeedbackText   = 2000
	// MaxPrivileges bounds the privileges one user holds (NewUser,
	// GrantPrivilege), which the specification leaves unbounded.
	MaxPrivileges = 64
	// maxShortString bounds free strings the specification leaves unbounded (emails,
	// names, session names, resource URLs, feedback paths).
	maxShortString = 1024
)

// Bounds of the API's durations, which the wire carries in whole seconds.
const (
	MinTokenTTL = 300 * time.Second
	MaxTokenTTL = 31536000 * time.Second // 365 days
	MinCooldown = 60 * time.Second
	MaxCooldown = 86400 * time.Second
)

// FoldUsername returns the key under which a username is unique and sorted:
// its Unicode simple case folding (the C and S mappings of CaseFolding.txt),
// so that "Alice" and "alice" are the same user and "Μαρία" sorts after
// "Ángel", as the folded "μαρία" does. Two names fold equal exactly when
// they are equal under simple case folding. An ASCII name without
// upper-case letters is returned as is, without allocating.
func FoldUsername(s string) string { return casefold.Fold(s) }

// runeLen counts code points; invalid UTF-8 counts a rune per bad byte.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// stringFits reports whether s is valid UTF-8 of lo to hi code points:
// what checkString checks, for callers that need no issue when it is.
func stringFits(s string, lo, hi int) bool {
	n := runeLen(s)
	return lo <= n && n <= hi && utf8.ValidString(s)
}

// checkString adds issues when s is not valid UTF-8 or its length in code
// points lies outside [lo, hi].
func (is *issues) checkString(s string, lo, hi int, path ...any) bool {
	if stringFits(s, lo, hi) {
		return true
	}
	if !utf8.ValidString(s) {
		is.add(IssueInvalidString, "Invalid UTF-8", path...)
		return false
	}
	if runeLen(s) < lo {
		is.add(IssueTooSmall, fmt.Sprintf("String must contain at least %d character(s)", lo), path...)
	} else {
		is.add(IssueTooBig, fmt.Sprintf("String must contain at most %d character(s)", hi), path...)
	}
	return false
}

// checkRange adds an issue when n lies outside [lo, hi].
func (is *issues) checkRange(n, lo, hi int64, path ...any) bool {
	switch {
	case n < lo:
		is.add(IssueTooSmall, fmt.Sprintf("Number must be greater than or equal to %d", lo), path...)
		return false
	case n > hi:
		is.add(IssueTooBig, fmt.Sprintf("Number must be less than or equal to %d", hi), path...)
		return false
	}
	return true
}

// checkEnum adds an issue to is when s is not one of allowed.
func checkEnum[T ~string](is *issues, s T, allowed []T, path ...any) bool {
	if slices.Contains(allowed, s) {
		return true
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	is.add(IssueInvalidEnum, fmt.Sprintf("Invalid enum value. Expected '%s', received '%s'",
		strings.Join(names, "' | '"), truncate(string(s), 64)), path...)
	return false
}

// checkSeconds adds an issue when d is not a whole number of seconds from
// lo to hi: the form durations take on the wire.
func (is *issues) checkSeconds(d time.Duration, lo, hi int64, path ...any) bool {
	if d%time.Second != 0 {
		is.add(IssueInvalidType, fmt.Sprintf("Expected a whole number of seconds, received %v", d), path...)
		return false
	}
	return is.checkRange(int64(d/time.Second), lo, hi, path...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "\uFFFD") + "…"
}

// checkUsername adds issues when name breaks the username rule: 1 to 255
// code points, a letter first, then letters, decimal digits or underscores.
func (is *issues) checkUsername(name string, path ...any) bool {
	if !is.checkString(name, 1, MaxUsernameLen, path...) {
		return false
	}
	if !usernamePattern(name) {
		is.add(IssueInvalidString, "Username must start with a letter and contain only letters, digits and underscores", path...)
		return false
	}
	return true
}

// usernamePattern reports whether name, valid UTF-8, is a letter followed
// by letters, decimal digits or underscores.
func usernamePattern(name string) bool {
	for i, r := range name {
		if !unicode.IsLetter(r) && (i == 0 || (r != '_' && !unicode.Is(unicode.Nd, r))) {
			return false
		}
	}
	return true
}

// ValidUsername reports whether name is a valid username.
func ValidUsername(name string) bool {
	return stringFits(name, 1, MaxUsernameLen) && usernamePattern(name)
}
