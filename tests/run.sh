#!/bin/sh
# Run every test of the default tier, each in its own process with a timeout,
# and end with one line CI can read: "N passed, N failed, N skipped".
# A test exits 0 (pass), 77 (skipped: says why) or anything else (fail).
# Each test's status is its own (never a pipeline's), and a tier (unit,
# integration, fuzz-corpus) in which no test ran is itself a failure: a
# missing build must not read as "0 passed, 0 failed".
#   GB_BUILD   the build directory (default build)
#   GB_CORPUS  the fuzz corpora (default tests/fuzz/corpus)
set -u
cd "$(dirname "$0")/.."
B=${GB_BUILD:-build}
CORPUS=${GB_CORPUS:-tests/fuzz/corpus}
export GB_ASAN=$B/asan/gpuboot GB_DEV=$B/dev/gpuboot GB_STATIC=$B/gpuboot
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
logdir=$B/test-logs
rm -rf "$logdir"
mkdir -p "$logdir" || exit 1
pass=0 fail=0 skip=0 ran=0
failed=""

failure() { # name message
	fail=$((fail + 1))
	failed="$failed $1"
	echo "FAIL  $1 ($2)"
}

run() { # name timeout cmd...
	name=$1 t=$2
	shift 2
	log="$logdir/$(echo "$name" | tr '/ ' '__').log"
	t0=$(date +%s)
	timeout -k 5 "$t" "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	case $rc in
	0) pass=$((pass + 1)); ran=$((ran + 1)); echo "PASS  $name (${secs} s)" ;;
	77) skip=$((skip + 1)); echo "SKIP  $name ($(tail -n1 "$log"))" ;;
	*) ran=$((ran + 1)); failure "$name" "exit $rc; log $log"; sed 's/^/      | /' "$log" | tail -n 30 ;;
	esac
}

# tier_done NAME WHERE: fail the tier when none of its tests ran.
tier_done() {
	[ "$ran" -gt 0 ] || failure "tier/$1" "no test ran: nothing in $2 (run make test)"
	ran=0
}

for t in "$B"/asan/tests/test-*; do
	[ -x "$t" ] && run "unit/$(basename "$t")" 60 "$t"
done
tier_done unit "$B/asan/tests"
for t in tests/integration/t-*.sh; do
	[ -f "$t" ] && run "integration/$(basename "$t" .sh)" 300 sh "$t"
done
tier_done integration tests/integration
for f in "$B"/fuzz/fuzz-*; do
	[ -x "$f" ] || continue
	n=$(basename "$f" | sed 's/^fuzz-//')
	# Replay the corpus: each input once, no mutation; the fuzzer's own exit
	# status decides (a crashing input fails), its output goes to the log.
	set -- "$CORPUS/$n"/*
	if [ ! -e "$1" ]; then
		failure "fuzz-corpus/$n" "no corpus in $CORPUS/$n"
		continue
	fi
	run "fuzz-corpus/$n" 120 "$f" -runs=0 "$@"
done
tier_done fuzz-corpus "$B/fuzz"

echo
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
