# Functions of scripts/fuzz.sh, sourced by it and by scripts/fuzzlib_test.sh.

# inputs lists the inputs committed or written for target $2 of package $1.
inputs() {
  ls -1 "$1/testdata/fuzz/$2" 2>/dev/null || true
}

# deadline_only tells whether run output $1 failed with nothing but the
# coordinator's deadline: that one error and no panic or test failure.
deadline_only() {
  [ "$(grep -c -- '--- FAIL' "$1")" = 1 ] &&
    grep -qx '    context deadline exceeded' "$1" &&
    ! grep -qE 'panic:|Failing input written|_test\.go:[0-9]+:' "$1"
}
