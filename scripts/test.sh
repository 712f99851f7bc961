#!/usr/bin/env bash
# Runs every check and test of the repository: formatting, go vet,
# staticcheck, and the whole test suite with the race detector, against real
# database servers that this script starts on free loopback ports and stops
# when it exits (see scripts/services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh
trap stop_services EXIT

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== database servers"
start_services

echo "== go test -race"
go test -race -count=1 ./...
