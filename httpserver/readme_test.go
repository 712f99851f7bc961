package httpserver_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's snippets of "Mounting" and "Observability" are the code of
// the examples between their "// README" markers, so that what the
// README shows is what go test runs.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	parts := strings.Split(string(src), "\t// README\n")
	require.Greater(t, len(parts), 8)
	require.Equal(t, 1, len(parts)%2, "markers come in pairs")
	for i := 1; i < len(parts); i += 2 {
		var b strings.Builder
		for _, l := range strings.SplitAfter(parts[i], "\n") {
			b.WriteString(strings.TrimPrefix(l, "\t"))
		}
		assert.Contains(t, string(readme), "```go\n"+b.String()+"```\n")
	}
}
