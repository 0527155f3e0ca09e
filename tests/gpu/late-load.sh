#!/bin/sh
# On the GPU machine: a process that starts during the active tier is
# flagged (gpu.idle_after_test), and healthy runs stay green.
# usage: tests/gpu/late-load.sh [RUNS]   (writes into $OUT, or ./gpu-out;
# docs/verification.md records the results)
set -u
OUT=${OUT:-gpu-out}
RUNS=${1:-5}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
sum=$OUT/late-load-summary.txt
: >"$sum"

# Healthy: RUNS active runs, each must exit 0 with the new check passing.
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	/usr/bin/time -f "%e" -a -o "$OUT/healthy-wall.txt" "$GB" verify --tier active --json --state-dir "$S" \
		--run-dir "$S/run" >"$OUT/healthy-$i.json" 2>"$OUT/healthy-$i.err"
	echo "healthy run $i exit $?" >>"$sum"
done

# Late: PyTorch imported first (no CUDA context yet), then told to start
# its context and a matmul loop just after verify starts: the process is
# not on the GPU when verify counts them first, and is during the tier.
rm -f "$S/go"
python3 -c "
import os, time, torch
while not os.path.exists('$S/go'):
    time.sleep(0.005)
t0 = time.time()
a = torch.randn(8192, 8192, device='cuda'); b = torch.randn(8192, 8192, device='cuda')
print('context and tensors after %.0f ms' % ((time.time() - t0) * 1e3), flush=True)
t = time.time()
while time.time() - t < 15:
    c = a @ b
torch.cuda.synchronize()
" >"$OUT/late-load.log" 2>&1 &
LOAD=$!
sleep 5 # the import
"$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/late.json" 2>"$OUT/late.err" &
V=$!
sleep 0.05
touch "$S/go"
wait "$V"
echo "late-load run exit $? (15 expected)" >>"$sum"
kill "$LOAD" 2>/dev/null
wait "$LOAD" 2>/dev/null
python3 - "$OUT/late.json" >>"$sum" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    if c["name"] in ("gpu.idle_before_test", "gpu.idle_after_test", "compute.fp32", "memory.read_bandwidth"):
        print("late-load %s %s value %s (%s)" % (c["name"], c["result"], c["value"], c.get("hint") or ""))
PY
cat "$OUT/late-load.log" >>"$sum"
rm -rf "$S"
cat "$sum"
