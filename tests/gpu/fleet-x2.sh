#!/bin/sh
# On a machine of several GPUs: the active tier on one GPU at a time
# (--gpus narrows it on purpose) and on all of them at once, REPS
# repetitions in two orders, the wall time of each run and every per-GPU and
# peer figure; one run with CUDA_VISIBLE_DEVICES set in the caller's
# environment (the probe must not see it). Writes into $OUT.
#
# Two orders, because cuInit's time depends on the run before (it
# initialises every GPU whatever the narrowing, and takes ~95 ms longer per
# GPU the previous process did not use, on the H200 pair):
#   c (controlled): every measured run follows an untimed active run on all
#      GPUs, so each starts from the same driver state: cond, all, gpuA,
#      cond, gpuB (A, B alternate);
#   a (alternating, as in fleet-x2-run1/run2): gpu0, gpu1, all; then all,
#      gpu1, gpu0; the "all" run always follows a single-GPU run.
# usage: GB=build/gpuboot tests/gpu/fleet-x2.sh [REPS]   (docs/verification.md)
set -u
OUT=${OUT:-gpu-out}
REPS=${1:-5}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
N=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
ALL=$(seq -s, 0 $((N - 1)))
{
	nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,power.limit,persistence_mode --format=csv
	nvidia-smi topo -m
	nvidia-smi nvlink -s
} >"$OUT/machine.txt" 2>&1
nproc >>"$OUT/machine.txt"
"$GB" verify --tier passive --state-dir "$S" --run-dir "$S/run" >/dev/null 2>&1 # warm the driver

one() { # label gpus
	t0=$(date +%s%N)
	"$GB" verify --tier active --gpus "$2" --json --state-dir "$S" --run-dir "$S/run" >"$OUT/$1.json" 2>"$OUT/$1.err"
	rc=$?
	t1=$(date +%s%N)
	echo "$1 gpus=$2 exit=$rc wall_ms=$(((t1 - t0) / 1000000))" >>"$OUT/walls.txt"
}
r=1
while [ "$r" -le "$REPS" ]; do
	if [ $((r % 2)) -eq 1 ]; then first=0; else first=$((N - 1)); fi
	one "c-r$r-cond0" "$ALL"
	one "c-r$r-all" "$ALL"
	for g in $(seq 0 $((N - 1))); do
		g=$(((g + first) % N))
		one "c-r$r-gpu$g" "$g"
		[ "$g" -eq $(((first + N - 1) % N)) ] || one "c-r$r-cond$((g + 1))" "$ALL"
	done
	r=$((r + 1))
done
r=1
while [ "$r" -le "$REPS" ]; do
	if [ $((r % 2)) -eq 1 ]; then
		for g in $(seq 0 $((N - 1))); do one "a-r$r-gpu$g" "$g"; done
		one "a-r$r-all" "$ALL"
	else
		one "a-r$r-all" "$ALL"
		for g in $(seq $((N - 1)) -1 0); do one "a-r$r-gpu$g" "$g"; done
	fi
	r=$((r + 1))
done
# Without --gpus (every GPU) and with CUDA_VISIBLE_DEVICES=1 in the caller's environment.
CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/cvd.json" 2>"$OUT/cvd.err"
echo "cvd exit=$?" >>"$OUT/walls.txt"
cp "$S/status.json" "$OUT/cvd-status.json"
rm -rf "$S"
python3 "$(dirname "$0")/fleet-summary.py" "$OUT" >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
(cd "$OUT" && tar czf raw.tgz ./*-r*.json ./*-r*.err cvd.json cvd.err && rm -f ./*-r*.json ./*-r*.err cvd.json cvd.err)
