#!/usr/bin/env bash
# Runs every fuzz target of the module (each func FuzzXxx(f *testing.F) in
# a _test.go file) for a short time, one target at a time, as fuzzing
# requires. Called by scripts/test.sh, which runs five of them a day in
# turn (FUZZMAX) for 6 s each (FUZZBUDGET=30). The targets of a run share
# FUZZBUDGET seconds (54 unless set) evenly, at least 6 s each: a
# target's time includes gathering the coverage of its seeds, which takes
# FuzzCreateEmbedSession about 4.5 s (138 seeds), and a target given less
# would report 0 execs. Each target also costs a second to start. Run it
# alone with a FUZZTIME per target to search harder:
#
#   FUZZTIME=5m scripts/fuzz.sh
#
# A failing input is written to testdata/fuzz/<FuzzName>/ of its package
# (commit it with the fix: go test replays it from then on) and fails the
# run. Minimizing new coverage is capped (FUZZMINIMIZETIME), since the
# default of a minute per input would eat a short run.
#
# Each run starts from the committed corpora alone: the inputs it finds
# go to a fresh directory, removed at the end, not to the build cache,
# where they would pile up run after run until replaying them took the
# whole of a short run. Set FUZZCACHEDIR to keep them across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
minimizetime=${FUZZMINIMIZETIME:-100x}
# Each package's instrumented test binary is built once (go test -c -fuzz
# builds one) into bindir, and runs each of its targets from the
# package's directory, where its corpus is; a go test -fuzz per target
# would link the binary again for each.
bindir=$(mktemp -d "${TMPDIR:-/tmp}/orgadmin-fuzzbin.XXXXXX")
cachedir=${FUZZCACHEDIR:-}
if [ -z "$cachedir" ]; then
  cachedir=$(mktemp -d "${TMPDIR:-/tmp}/orgadmin-fuzz.XXXXXX")
  trap 'rm -rf "$bindir" "$cachedir"' EXIT
else
  trap 'rm -rf "$bindir"' EXIT
fi

# Each target as "package-dir name". The nested module scripts/ferretdb
# is not ours to fuzz.
targets=$(grep -rE --include='*_test.go' --exclude-dir=scripts -o '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . |
  sed -E 's|^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*|\1 \2|' | sort -u)
if [ -z "$targets" ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi
# FUZZMAX bounds the targets of one run (scripts/test.sh sets it, to keep
# CI short): they are taken in turn, a different set each day, so that
# every target is fuzzed every few days. Unset, every target runs.
total=$(wc -l <<<"$targets")
if [ -n "${FUZZMAX:-}" ] && [ "$FUZZMAX" -lt "$total" ]; then
  first=$((($(date -u +%s) / 86400 * FUZZMAX) % total))
  targets=$( (cat <<<"$targets"; cat <<<"$targets") | tail -n +"$((first + 1))" | head -n "$FUZZMAX")
  echo "$FUZZMAX of the $total fuzz targets today (FUZZMAX):"
fi
n=$(wc -l <<<"$targets")
fuzztime=${FUZZTIME:-$(((${FUZZBUDGET:-54} / n) > 6 ? ${FUZZBUDGET:-54} / n : 6))s}
echo "$n fuzz targets, $fuzztime each"

. scripts/fuzzlib.sh

root=$PWD
start=$SECONDS
while read -r dir name; do
  bin="$bindir/$(tr / _ <<<"${dir#./}").test"
  if [ ! -x "$bin" ]; then
    go test -c -fuzz=. -o "$bin" "$dir"
  fi
  out=$(mktemp)
  before=$(inputs "$dir" "$name")
  note=
  if ! (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$fuzztime" \
    -test.fuzzminimizetime="$minimizetime" -test.fuzzcachedir="$cachedir/${dir#./}") >"$out" 2>&1; then
    # Go's fuzzing coordinator before Go 1.27 can report the end of
    # -fuzztime itself as a failure, "context deadline exceeded", when a
    # worker is busy as the time runs out (go.dev/issue/75804). No input
    # fails then, and none is written; every real failure writes its input.
    if [ "$(inputs "$dir" "$name")" = "$before" ] && deadline_only "$out"; then
      note="(the coordinator's own deadline at the end; no failing input)"
    else
      cat "$out" >&2
      rm -f "$out"
      echo "fuzz: $name ($dir) failed" >&2
      exit 1
    fi
  fi
  execs=$(grep -oE 'execs: [0-9]+' "$out" | tail -n 1 || true)
  rm -f "$out"
  printf '%-26s %-22s %s%s\n' "$name" "$dir" "${execs:-execs: 0}" "${note:+ $note}"
done <<<"$targets"
cd "$root"
echo "fuzzing took $((SECONDS - start)) s"
