#!/bin/sh
# On the GPU machine: a process that only holds GPU memory is named and
# measured beside (exit 0), one that holds nearly all of it leaves the pattern
# test below the floor (memory.pattern_coverage fails), and a process that
# starts during the active tier still fails gpu.idle_after_test.
# usage: tests/gpu/memory-held.sh   (writes into $OUT, or ./gpu-out)
set -u
OUT=${OUT:-gpu-out}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
sum=$OUT/memory-held-summary.txt
: >"$sum"
# hold GIB: a PyTorch process holding GIB GiB of GPU 0, computing nothing, until $S/stop
hold() {
	rm -f "$S/stop" "$S/ready"
	python3 -c "
import os, time, torch
x = torch.empty(int($1 * 2**30), dtype=torch.uint8, device='cuda')
torch.cuda.synchronize()
open('$S/ready', 'w').close()
while not os.path.exists('$S/stop'):
    time.sleep(0.05)
" >"$OUT/hold-$1.log" 2>&1 &
	HOLD=$!
	i=0
	while [ ! -e "$S/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	sleep 3 # NVML's per-process samples: the holder's idle ones
}
report() { # NAME FILE
	python3 - "$2" "$1" >>"$sum" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    if c["name"] in ("gpu.idle_before_test", "gpu.idle_after_test", "gpu.other_processes", "memory.pattern",
                     "memory.pattern_coverage", "compute.fp32", "memory.read_bandwidth") or c["result"] == "fail":
        print("%s %s %s value %s %s (%s)" % (sys.argv[2], c["name"], c["result"], c["value"], c.get("text") or "",
                                             c.get("hint") or ""))
PY
}
free_gib=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
echo "free MiB before: $free_gib" >>"$sum"
for g in 100 $(( free_gib / 1024 - 2 )); do
	hold "$g"
	/usr/bin/time -f "%e" -o "$OUT/held-$g-wall.txt" "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" \
		>"$OUT/held-$g.json" 2>"$OUT/held-$g.err"
	echo "held $g GiB: exit $? in $(cat "$OUT/held-$g-wall.txt") s" >>"$sum"
	report "held-$g" "$OUT/held-$g.json"
	touch "$S/stop"
	wait "$HOLD" 2>/dev/null
done
"$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/idle.json" 2>&1
echo "idle GPU again: exit $?" >>"$sum"
rm -rf "$S"
cat "$sum"
