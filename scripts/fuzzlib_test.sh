#!/usr/bin/env bash
# Tests scripts/fuzzlib.sh: deadline_only lets through exactly the output
# of a run whose only error is the fuzzing coordinator's own deadline, and
# nothing that reports a failing input, a failing check or a panic.
# Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/fuzzlib.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/orgadmin-fuzzlib.XXXXXX")
trap 'rm -rf "$dir"' EXIT
failed=0

# expect WANT NAME: runs deadline_only on standard input, which it must
# pass (WANT=pass) or refuse (WANT=refuse).
expect() {
  cat >"$dir/$2"
  got=refuse
  if deadline_only "$dir/$2"; then got=pass; fi
  if [ "$got" != "$1" ]; then
    echo "deadline_only: $2: got $got, want $1" >&2
    failed=1
  fi
}

expect pass "the coordinator's deadline" <<'OUT'
fuzz: elapsed: 0s, gathering baseline coverage: 0/12 completed
fuzz: elapsed: 3s, execs: 1523 (507/sec), new interesting: 0 (total: 12)
--- FAIL: FuzzCreateServiceAccount (3.02s)
    context deadline exceeded
FAIL
OUT

# Each output below has the deadline's line, and one thing more that
# must fail the run, so that each condition of deadline_only is needed.
expect refuse "a failing check" <<'OUT'
--- FAIL: FuzzBearerToken (3.00s)
    context deadline exceeded
    fuzz_test.go:33: want 401
FAIL
OUT

expect refuse "a failing input written" <<'OUT'
--- FAIL: FuzzCreateToken (3.00s)
    context deadline exceeded
    Failing input written to testdata/fuzz/FuzzCreateToken/3f2a
FAIL
OUT

expect refuse "a panic" <<'OUT'
--- FAIL: FuzzSeed (3.00s)
    context deadline exceeded
panic: runtime error: index out of range [3] with length 3
FAIL
OUT

expect refuse "a second failure" <<'OUT'
--- FAIL: FuzzPageToken (3.00s)
    context deadline exceeded
--- FAIL: FuzzPageToken (0.20s)
    fuzzing process hung or terminated unexpectedly: exit status 2
FAIL
OUT

expect refuse "another error alone" <<'OUT'
--- FAIL: FuzzPageToken (0.20s)
    fuzzing process hung or terminated unexpectedly: exit status 2
FAIL
OUT

if [ "$failed" != 0 ]; then
  exit 1
fi
echo "fuzzlib: deadline_only passes and refuses as it should"
