#!/usr/bin/env bash
# Runs every check and test of the repository: formatting, go vet,
# staticcheck, gosec, and the whole test suite with the race detector, against real
# database servers that this script starts on free loopback ports and stops
# when it exits (see scripts/services.sh); then each fuzz target for a few
# seconds (scripts/fuzz.sh). ORGADMIN_TEST_ON_DISK=1 keeps the databases'
# files on disk, under TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."

# The database servers' files and the tests' temporary files (SQLite
# databases among them) go to memory when /dev/shm has room: a test has no
# use for durability, and waiting for the disk took a third of the time of
# the SQL and MongoDB tests. The Go build's own files stay where they were.
shm_dir=
if [ -z "${ORGADMIN_TEST_ON_DISK:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
  [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge $((4 * 1024 * 1024)) ]; then
  export GOTMPDIR=${GOTMPDIR:-${TMPDIR:-/tmp}}
  shm_dir=$(mktemp -d /dev/shm/orgadmin-test.XXXXXX)
  chmod 711 "$shm_dir" # PostgreSQL runs as its own user below it
  export TMPDIR=$shm_dir
fi
. scripts/services.sh
trap 'stop_services; if [ -n "$shm_dir" ]; then rm -rf "$shm_dir"; fi' EXIT
build_ferretdb
build_toxiproxy

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...
# The library and its programs build on 32-bit platforms too, where int
# is 32 bits (a build, not a vet of the tests: a third of the time).
GOARCH=386 go build ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== gosec"
# Not the nested module scripts/ferretdb (FerretDB's launcher, which does
# not load as part of this module); test files are left out, as gosec
# does by default. A justified exclusion is a #nosec with its reason on
# its line.
go run github.com/securego/gosec/v2/cmd/gosec@v2.30.0 -quiet -color=false \
  -exclude-dir=scripts/ferretdb ./...

echo "== spectral (lint of the OpenAPI document)"
if ! command -v npx >/dev/null 2>&1; then
  echo "npx (Node.js 18 or later) is needed to lint httpserver/openapi.json" >&2
  exit 1
fi
npx --yes @stoplight/spectral-cli@6.15.0 lint --fail-severity=warn \
  --ruleset .spectral.yaml httpserver/openapi.json

echo "== database servers"
start_services

echo "== go test -race"
# A package may take several minutes under the race detector on a busy
# machine (httpserver, mongostore on FerretDB); the default 10-minute
# timeout would fail it for time alone.
go test -race -count=1 -timeout 20m ./...

echo "== fuzz (five targets a day, a few seconds each)"
scripts/fuzzlib_test.sh
# Five targets a day, in turn: each is fuzzed every three days, and CI
# stays short. Every target's seed corpus runs in go test above anyway.
FUZZMAX=${FUZZMAX:-5} FUZZBUDGET=${FUZZBUDGET:-30} scripts/fuzz.sh
