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
	report "$name" "$rc" $(($(date +%s) - t0)) "$log"
}

report() { # name rc seconds log
	case $2 in
	0) pass=$((pass + 1)); ran=$((ran + 1)); echo "PASS  $1 ($3 s)" ;;
	77) skip=$((skip + 1)); echo "SKIP  $1 ($(tail -n1 "$4"))" ;;
	*) ran=$((ran + 1)); failure "$1" "exit $2; log $4"; sed 's/^/      | /' "$4" | tail -n 30 ;;
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
# The integration tier runs GB_JOBS tests at a time (default: the CPUs, at
# most 4; GB_JOBS=1 is the old serial run). Each test has its own temporary
# directory and binds no fixed port, so they share nothing but the build;
# none asserts a time. Workers take tests from one queue, longest first (the
# order below, from the last runs' seconds), claiming each with mkdir (atomic),
# and the results are read back and counted in the queue's order.
jobs=${GB_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 4 ] && jobs=4
[ "$jobs" -ge 1 ] || jobs=1
heavy="t-alloc-torture t-plan-cases t-killpoints t-detect-races t-firstboot t-release t-mirror-volume t-plan-fixtures t-verify-fake"
queue=""
for n in $heavy; do [ -f "tests/integration/$n.sh" ] && queue="$queue $n"; done
for t in tests/integration/t-*.sh; do
	[ -f "$t" ] || continue
	n=$(basename "$t" .sh)
	case " $heavy " in *" $n "*) ;; *) queue="$queue $n" ;; esac
done
claims=$logdir/claims
mkdir -p "$claims"
worker() {
	for n in $queue; do
		mkdir "$claims/$n" 2>/dev/null || continue
		log="$logdir/integration_$n.log"
		t0=$(date +%s)
		timeout -k 5 300 sh "tests/integration/$n.sh" >"$log" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$claims/$n/result"
	done
}
echo "integration: $(echo $queue | wc -w) tests, $jobs at a time"
i=0
while [ "$i" -lt "$jobs" ]; do
	worker &
	i=$((i + 1))
done
wait
for n in $queue; do
	# No result: the worker itself died (its test is then a failure).
	read -r rc secs <"$claims/$n/result" 2>/dev/null || { rc=1 secs=0; }
	report "integration/$n" "$rc" "$secs" "$logdir/integration_$n.log"
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
