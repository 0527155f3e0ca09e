#!/bin/sh
# make soak-fuzz: every fuzzer (build/fuzz/fuzz-*) for RUNS executions or
# SECONDS, whichever comes first, JOBS at a time, under ASan+UBSan; then
# the inputs that add coverage are merged into tests/fuzz/corpus/<target>
# (commit them), and one line per target is printed and kept in
# build/fuzz/soak-results.txt: executions, seconds, crashes, leaks.
# Crashing inputs are left in build/fuzz/artifacts/ (add each, once fixed,
# to the corpus as a regression input).
#   scripts/soak-fuzz.sh [RUNS] [SECONDS] [JOBS]
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-10000000}
SECS=${2:-3600}
JOBS=${3:-$(nproc)}
F=build/fuzz
rm -rf "$F/new" "$F/logs"
mkdir -p "$F/new" "$F/logs" "$F/artifacts" || exit 1
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ls "$F"/fuzz-* >/dev/null 2>&1 || { echo "no fuzzers in $F (make fuzz)"; exit 1; }
for b in "$F"/fuzz-*; do
	[ -x "$b" ] && echo "${b#"$F"/fuzz-}"
done | xargs -P "$JOBS" -I{} sh -c '
	mkdir -p "$0/new/{}"
	"$0/fuzz-{}" -runs="$1" -max_total_time="$2" -print_final_stats=1 -close_fd_mask=3 \
		-artifact_prefix="$0/artifacts/{}-" "$0/new/{}" tests/fuzz/corpus/{} >"$0/logs/{}.log" 2>&1
	echo "exit=$?" >>"$0/logs/{}.log"
	"$0/fuzz-{}" -merge=1 -close_fd_mask=3 tests/fuzz/corpus/{} "$0/new/{}" >"$0/logs/{}.merge.log" 2>&1' "$F" "$RUNS" "$SECS"
bad=0
for b in "$F"/fuzz-*; do
	n=${b#"$F"/fuzz-} l=$F/logs/$n.log
	[ -f "$l" ] || continue
	crashes=$(ls "$F/artifacts" | grep -c "^$n-")
	leaks=$(grep -c 'LeakSanitizer' "$l")
	[ "$crashes" -eq 0 ] && [ "$leaks" -eq 0 ] && grep -q '^exit=0$' "$l" || bad=1
	printf '%-11s execs=%s seconds=%s crashes=%s leaks=%s %s\n' "$n" \
		"$(grep -m1 'stat::number_of_executed_units' "$l" | awk '{print $2}')" \
		"$(grep -o 'Done [0-9]* runs in [0-9]* second' "$l" | awk '{print $5}')" "$crashes" "$leaks" "$(tail -n1 "$l")"
done | tee "$F/soak-results.txt"
exit $bad
