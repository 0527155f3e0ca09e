# Shared helpers for integration tests (sourced).
set -eu
GB=${GB_ASAN:-build/asan/gpuboot}
FIX=tests/fixtures
EXP=tests/expected
TMP=$(mktemp -d /tmp/gpuboot-it.XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT

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

# with_fabricmanager ROOT VERSION: NVIDIA's fabric manager installed in ROOT
# at VERSION as its package leaves it (nvidia-fabricmanager-BRANCH in dpkg's
# database, its unit): a machine with NVSwitches needs it at the driver's
# exact version, or the load stage refuses (docs/load.md#daemons).
with_fabricmanager() {
	printf '\nPackage: nvidia-fabricmanager-%s\nStatus: install ok installed\nVersion: %s-1\n' "${2%%.*}" "$2" >>"$1/var/lib/dpkg/status"
	mkdir -p "$1/lib/systemd/system"
	printf '[Unit]\nDescription=NVIDIA fabric manager service\n' >"$1/lib/systemd/system/nvidia-fabricmanager.service"
}

# with_planned_fabricmanager ROOT [PLAN-ARGS...]: an NVSwitch machine whose
# plan installs a driver by a method that brings no fabric manager (runfile,
# Debian's own packages) is refused until the fabric manager of that version
# is there: put it there, at the version the refusal names, for tests of
# everything after the plan.
with_planned_fabricmanager() {
	r=$1
	shift
	v=$("$GB" --root "$r" plan "$@" 2>&1 | sed -n "s/.*the fabric manager must run at the driver's version \([0-9.]*\),.*/\1/p" | head -n 1)
	[ -n "$v" ] || return 0
	with_fabricmanager "$r" "$v"
}

# bundle_driver BUNDLE: the driver version of a tests/make-bundle bundle's plan.
bundle_driver() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["driver"]["version"])' "$1/plan.json"
}
