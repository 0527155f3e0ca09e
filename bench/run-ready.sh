#!/bin/sh
# gpuboot run on a GPU machine that is already ready (a driver installed and
# loaded that satisfies the profile): whole-process wall time, beside
# `nvidia-smi` alone measured in the same run, as a ratio.
# usage: bench/run-ready.sh [RUNS] [TIER]   (run as root on the GPU machine;
#        GB=build/gpuboot by default; results go to $OUT or ./bench-out)
# docs/plan.md records the figures.
set -u
RUNS=${1:-10}
TIER=${2:-passive}
GB=${GB:-build/gpuboot}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
S=$(mktemp -d)
now() { date +%s%N; }
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
: >"$OUT/run-ms.txt"
: >"$OUT/smi-ms.txt"
rcs=""
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	t0=$(now)
	"$GB" run --tier "$TIER" --state-dir "$S" --run-dir "$S/run" >"$OUT/run.out" 2>"$OUT/run.err"
	rc=$?
	t1=$(now)
	nvidia-smi >/dev/null 2>&1
	t2=$(now)
	rcs="$rcs $rc"
	echo $(((t1 - t0) / 1000000)) >>"$OUT/run-ms.txt"
	echo $(((t2 - t1) / 1000000)) >>"$OUT/smi-ms.txt"
done
cp "$S/status.json" "$OUT/status.json"
cp "$S/journal.json" "$OUT/journal.json"
"$GB" status --state-dir "$S" >"$OUT/status.txt" 2>&1
r=$(med <"$OUT/run-ms.txt")
s=$(med <"$OUT/smi-ms.txt")
{
	echo "gpuboot run --tier $TIER: median $r ms over $RUNS runs (exit codes:$rcs)"
	echo "nvidia-smi alone, same runs: median $s ms"
	awk -v r="$r" -v s="$s" 'BEGIN { printf "ratio run/nvidia-smi: %.2f\n", r / s }'
} | tee "$OUT/summary.txt"
rm -rf "$S"
