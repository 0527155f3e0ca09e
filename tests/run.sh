#!/bin/sh
# Run every test of the default tier, each in its own process with a timeout,
# and end with one line CI can read: "N passed, N failed, N skipped".
# A test exits 0 (pass), 77 (skipped: says why) or anything else (fail).
set -u
cd "$(dirname "$0")/.."
export GB_ASAN=build/asan/gpuboot GB_DEV=build/dev/gpuboot GB_STATIC=build/gpuboot
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
logdir=build/test-logs
rm -rf "$logdir"
mkdir -p "$logdir"
pass=0 fail=0 skip=0
failed=""

run() { # name timeout cmd...
	name=$1 t=$2
	shift 2
	log="$logdir/$(echo "$name" | tr '/ ' '__').log"
	timeout -k 5 "$t" "$@" >"$log" 2>&1
	rc=$?
	case $rc in
	0) pass=$((pass + 1)); echo "PASS  $name" ;;
	77) skip=$((skip + 1)); echo "SKIP  $name ($(tail -n1 "$log"))" ;;
	*) fail=$((fail + 1)); failed="$failed $name"
	   echo "FAIL  $name (exit $rc; log $log)"; sed 's/^/      | /' "$log" | tail -n 30 ;;
	esac
}

for t in build/asan/tests/test-*; do
	[ -x "$t" ] && run "unit/$(basename "$t")" 60 "$t"
done
for t in tests/integration/t-*.sh; do
	run "integration/$(basename "$t" .sh)" 300 sh "$t"
done
for f in build/fuzz/fuzz-*; do
	[ -x "$f" ] || continue
	n=$(basename "$f" | sed 's/^fuzz-//')
	# Replay the corpus: each input once, no mutation.
	run "fuzz-corpus/$n" 120 sh -c "$f -runs=0 tests/fuzz/corpus/$n/* 2>&1 | tail -n 3"
done

echo
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
