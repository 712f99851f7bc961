package everystore

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// MinLeak is the shortest run of a secret's characters, in any of the
// encodings Leaks knows, that counts as a leak.
const MinLeak = 16

// Leaks returns one line for each text in which one of secrets appears:
// whole or as a run of at least MinLeak characters, in clear, in hex
// (either case) or in base64 (standard or URL alphabet, padded or not,
// starting at any byte of the secret). Secrets shorter than MinLeak count
// only whole, in clear.
func Leaks(secrets, texts []string) []string {
	runs := map[string]string{} // run of an encoded secret → what it is
	var short []string
	for i, s := range secrets {
		if len(s) < MinLeak {
			short = append(short, s)
			continue
		}
		for name, enc := range encodings(s) {
			for j := 0; j+MinLeak <= len(enc); j++ {
				runs[enc[j:j+MinLeak]] = fmt.Sprintf("secret %d (%.8s…) in %s", i, s, name)
			}
		}
	}
	var out []string
	for ti, text := range texts {
		if what, at, ok := find(runs, text); ok {
			out = append(out, fmt.Sprintf("text %d holds %s at byte %d: …%s…", ti, what, at, clip(text, at)))
			continue
		}
		for _, s := range short {
			if at := strings.Index(text, s); at >= 0 {
				out = append(out, fmt.Sprintf("text %d holds %q at byte %d", ti, s, at))
			}
		}
	}
	return out
}

// encodings returns the forms of s that Leaks looks for. A base64 form
// drops its last four characters, which may depend on what follows the
// secret in a longer encoded text.
func encodings(s string) map[string]string {
	m := map[string]string{
		"clear":     s,
		"hex":       hex.EncodeToString([]byte(s)),
		"upper hex": strings.ToUpper(hex.EncodeToString([]byte(s))),
	}
	for k := range 3 {
		for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "base64url": base64.URLEncoding} {
			e := enc.EncodeToString([]byte(s[k:]))
			m[fmt.Sprintf("%s from byte %d", name, k)] = e[:len(e)-4]
		}
	}
	return m
}

// find returns the first run of text that is a key of runs.
func find(runs map[string]string, text string) (what string, at int, ok bool) {
	for i := 0; i+MinLeak <= len(text); i++ {
		if what, ok := runs[text[i:i+MinLeak]]; ok {
			return what, i, true
		}
	}
	return "", 0, false
}

// clip returns up to 40 bytes of text around at.
func clip(text string, at int) string {
	return text[max(at-12, 0):min(at+28, len(text))]
}
