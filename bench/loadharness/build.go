package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// build is one build of examples/server, whose targets run on every store.
type build struct {
	suffix  string // of its targets' names: "" or beforeSuffix
	bin     string
	redisDB int    // the Redis store's database
	mongoDB string // the MongoDB store's databases are named mongoDB_gen
}

// builds returns the working tree's build and, with -before, the before
// build. The two never share a database where they can have one each:
// each run must meet its seed and no more. A Redis Cluster has database 0
// only, so both hold their organization there (orgName tells them apart).
func (h *harness) builds() []build {
	out := []build{{bin: h.serverBin, redisDB: h.opt.redisDB, mongoDB: "loadharness_" + h.runID}}
	if h.beforeBin != "" {
		out = append(out, build{suffix: beforeSuffix, bin: h.beforeBin, redisDB: beforeRedisDB(h.opt.redisDB), mongoDB: "loadharness_" + h.runID + "_before"})
	}
	return out
}

// beforeRedisDB is the Redis database of the -before build's store: the
// one below -redis-db, or above database 0.
func beforeRedisDB(db int) int {
	if db > 0 {
		return db - 1
	}
	return db + 1
}

// resolveCommit returns the full hash of the commit rev names in the
// repository of the working directory.
func resolveCommit(ctx context.Context, rev string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output() // #nosec G204 -- a revision, not an option (parseFlags)
	if err != nil {
		return "", fmt.Errorf("not a commit of this repository: git rev-parse: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// extractTree writes the tree of commit into dir, with git archive piped
// into tar: a git worktree would be recorded in the repository, which
// another may be working in.
func extractTree(ctx context.Context, commit, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	var archiveOut, tarOut bytes.Buffer
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit) // #nosec G204 -- a commit hash of resolveCommit
	archive.Stdout, archive.Stderr = w, &archiveOut
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir) // #nosec G204 -- dir is the harness's own temporary directory
	untar.Stdin, untar.Stdout, untar.Stderr = r, &tarOut, &tarOut
	archiveErr, tarErr := archive.Start(), untar.Start()
	// Only the two hold the pipe now, so that either's end ends the other.
	_ = r.Close()
	_ = w.Close()
	if archiveErr == nil {
		archiveErr = archive.Wait()
	}
	if tarErr == nil {
		tarErr = untar.Wait()
	}
	if archiveErr != nil {
		return fmt.Errorf("git archive: %w\n%s", archiveErr, archiveOut.Bytes())
	}
	if tarErr != nil {
		return fmt.Errorf("tar: %w\n%s", tarErr, tarOut.Bytes())
	}
	return nil
}

// buildServer builds examples/server of the module in dir (the working
// directory when "") into bin.
func buildServer(ctx context.Context, dir, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/server") // #nosec G204 -- into the harness's own work directory
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./examples/server: %w\n%s", err, out)
	}
	return nil
}
