#!/bin/sh
# On the GPU machine: gpuboot verify's figures and truth, with PyTorch's own
# figures measured in the same run as the reference. Writes into $OUT (or ./gpu-out).
# usage: tests/gpu/h200-verify.sh [RUNS]     (docs/verification.md records the results)
set -u
FINAL=${OUT:-gpu-out}
OUT=$FINAL/r
RUNS=${1:-20}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv >"$OUT/smi-before.txt" 2>&1

# Passive tier: wall time of the whole command, 10 runs.
for i in 1 2 3 4 5 6 7 8 9 10; do
	/usr/bin/time -f "%e" -a -o "$OUT/passive-wall.txt" "$GB" verify --tier passive --state-dir "$S" --run-dir "$S/run" >/dev/null 2>&1
done
"$GB" verify --tier passive --json --state-dir "$S" --run-dir "$S/run" >"$OUT/passive.json" 2>"$OUT/passive.err"
echo "passive exit $?" >>"$OUT/summary.txt"

# Active tier, with the reference measured right after in the same call.
/usr/bin/time -f "%e" -o "$OUT/active-wall.txt" "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/active.json" 2>"$OUT/active.err"
echo "active exit $?" >>"$OUT/summary.txt"
python3 tests/gpu/reference.py >"$OUT/reference.json" 2>"$OUT/reference.err"
cp "$S/status.json" "$OUT/status.json"
"$GB" status --prometheus --state-dir "$S" >"$OUT/metrics.prom"
ls "$S/run" >"$OUT/flags.txt"
"$GB" verify --tier active --profile hpc --json --state-dir "$S" --run-dir "$S/run" >"$OUT/hpc.json" 2>"$OUT/hpc.err"
echo "hpc exit $?" >>"$OUT/summary.txt"

# Truth: consecutive runs on the healthy GPU, none may fail.
fails=0
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	/usr/bin/time -f "%e" -a -o "$OUT/truth-wall.txt" "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$S/run.json" 2>&1
	rc=$?
	python3 -c "import json,sys; d=json.load(open('$S/run.json')); print(' '.join('%s=%.1f' % (c['name'], c['value']) for c in d['checks'] if c['value'] is not None and c['name'] in ('memory.read_bandwidth','memory.copy_bandwidth','compute.fp32','pcie.host_to_device','pcie.device_to_host')))" >>"$OUT/truth-values.txt" 2>&1
	[ "$rc" -eq 0 ] || { fails=$((fails + 1)); cp "$S/run.json" "$OUT/truth-fail-$i.json"; }
done
echo "truth: $RUNS runs, $fails failed" >>"$OUT/summary.txt"

# A competing load: a PyTorch matmul loop in the background must be flagged.
python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda'); b = torch.randn(8192, 8192, device='cuda')
t = time.time()
while time.time() - t < 40:
    c = a @ b
torch.cuda.synchronize()
" >"$OUT/load.log" 2>&1 &
LOAD=$!
sleep 8
"$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/loaded.json" 2>"$OUT/loaded.err"
echo "loaded exit $? (15 expected)" >>"$OUT/summary.txt"
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null
for d in $(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null); do
	python3 tests/gpu/reference.py "$d" >"$OUT/reference-gpu$d.json" 2>&1
done
rm -rf "$S"
cat "$OUT/summary.txt"
tar czf "$FINAL/results.tgz" -C "$FINAL" r && rm -rf "$OUT"
