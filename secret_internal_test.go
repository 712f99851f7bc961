package orgadmin

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
	"strings"
	"testing"
)

// TestDigestOf checks digestOf against sha256.Sum256 on both sides of its
// stack buffer's size, and that values that fit it are hashed without
// allocating.
func TestDigestOf(t *testing.T) {
	for _, n := range []int{0, 1, 32, 33, maxTokenLen - 1, maxTokenLen, maxTokenLen + 1, 4 * maxTokenLen} {
		v := strings.Repeat("k", n-n/2) + strings.Repeat("\xff", n/2)
		if got, want := digestOf(v), sha256.Sum256([]byte(v)); got != want {
			t.Errorf("digestOf(%d bytes) = %x, want %x", n, got, want)
		}
	}
	v := strings.Repeat("k", maxTokenLen)
	if n := testing.AllocsPerRun(100, func() { _ = digestOf(v) }); n != 0 {
		t.Errorf("digestOf of %d bytes allocates %v times, want 0", maxTokenLen, n)
	}
}

// TestEncodeBase62MatchesBigInt checks the limb arithmetic against math/big.
func TestEncodeBase62MatchesBigInt(t *testing.T) {
	for i := range 500 {
		src := make([]byte, 32)
		if _, err := rand.Read(src); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			clear(src)
		case 1:
			for j := range src {
				src[j] = 0xff
			}
		}
		got := make([]byte, secretBodyLen)
		encodeBase62(got, src)
		want := new(big.Int).SetBytes(src).Text(62)
		// big.Int's base-62 digits are 0-9a-zA-Z; ours are 0-9A-Za-z.
		conv := make([]byte, 0, secretBodyLen)
		for range secretBodyLen - len(want) {
			conv = append(conv, '0')
		}
		for _, c := range []byte(want) {
			switch {
			case 'a' <= c && c <= 'z':
				c = c - 'a' + 'A'
			case 'A' <= c && c <= 'Z':
				c = c - 'A' + 'a'
			}
			conv = append(conv, c)
		}
		if string(got) != string(conv) {
			t.Fatalf("encodeBase62(%x) = %s, want %s", src, got, conv)
		}
	}
}

// TestEncodeBase62Checksum checks the checksum's encoding (4 bytes into
// 6 digits, a last pass of one digit) against math/big, and the padding
// of small numbers.
func TestEncodeBase62Checksum(t *testing.T) {
	for _, src := range [][]byte{{0, 0, 0, 0}, {0, 0, 0, 61}, {0, 0, 0, 62}, {0x12, 0x34, 0x56, 0x78}, {0xff, 0xff, 0xff, 0xff}} {
		got := make([]byte, secretSumLen)
		encodeBase62(got, src)
		want := new(big.Int).SetBytes(src).Text(62)
		want = strings.Repeat("0", secretSumLen-len(want)) + want
		// big.Int's base-62 digits are 0-9a-zA-Z; ours are 0-9A-Za-z.
		want = strings.Map(func(c rune) rune {
			switch {
			case 'a' <= c && c <= 'z':
				return c - 'a' + 'A'
			case 'A' <= c && c <= 'Z':
				return c - 'A' + 'a'
			}
			return c
		}, want)
		if string(got) != want {
			t.Errorf("encodeBase62(%x) = %s, want %s", src, got, want)
		}
	}
}
