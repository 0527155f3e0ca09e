# Shared helpers for integration tests (sourced).
set -eu
GB=${GB_ASAN:-build/asan/gpuboot}
FIX=tests/fixtures
EXP=tests/expected
TMP=$(mktemp -d /tmp/gpuboot-it.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*"; exit 77; }

# expect_exit CODE cmd... : run, check the exit code, keep stdout/stderr in $TMP/out $TMP/err
expect_exit() {
	want=$1
	shift
	set +e
	"$@" >"$TMP/out" 2>"$TMP/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] || { cat "$TMP/err" >&2; fail "'$*' exited $got, expected $want"; }
}
