package httpserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An answer of any length goes out with its Content-Length, never chunked:
// net/http measures the ones its buffer holds whole (netHTTPBuffered bytes),
// writeJSON the longer ones. The lengths around the edge check that the
// edge is where net/http has it.
func TestWriteJSONSendsContentLength(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, encodedJSON(body))
	}))
	defer srv.Close()
	for _, n := range []int{1, netHTTPBuffered - 2, netHTTPBuffered - 1, netHTTPBuffered, netHTTPBuffered + 1, 5 * netHTTPBuffered} {
		body = append(bytes.Repeat([]byte("x"), n), '\n') // n+1 bytes, as encodedJSON ends
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Len(t, got, n+1)
		assert.Equal(t, int64(n+1), resp.ContentLength, "answer of %d bytes", n+1)
		assert.Empty(t, resp.TransferEncoding, "answer of %d bytes", n+1)
	}
}
