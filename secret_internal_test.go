package orgadmin

import (
	"crypto/rand"
	"math/big"
	"testing"
)

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
