package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtractTree extracts this package's directory (git archive takes the
// working directory's part of the tree) as it is at HEAD.
func TestExtractTree(t *testing.T) {
	ctx := context.Background()
	head, err := resolveCommit(ctx, "HEAD")
	if err != nil {
		t.Skip("not in a git checkout:", err)
	}
	assert.Regexp(t, `^[0-9a-f]{40}$`, head)
	_, err = resolveCommit(ctx, "no-such-revision-of-loadharness")
	assert.ErrorContains(t, err, "not a commit")

	dir := filepath.Join(t.TempDir(), "tree")
	require.NoError(t, extractTree(ctx, head, dir))
	_, err = os.Stat(filepath.Join(dir, "main.go"))
	assert.NoError(t, err)
	assert.ErrorContains(t, extractTree(ctx, "0000000000000000000000000000000000000000", filepath.Join(t.TempDir(), "none")), "git archive")
}
