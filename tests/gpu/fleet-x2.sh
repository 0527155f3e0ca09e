#!/bin/sh
# On a machine of several GPUs: the active tier on one GPU at a time
# (GPUBOOT_GPUS narrows it on purpose) and on all of them at once, REPS
# repetitions in alternating order, the wall time of each run and every
# per-GPU and peer figure; one run with CUDA_VISIBLE_DEVICES set in the
# caller's environment (the probe must not see it). Writes into $OUT.
# usage: GB=build/gpuboot tests/gpu/fleet-x2.sh [REPS]   (docs/verification.md)
set -u
OUT=${OUT:-gpu-out}
REPS=${1:-3}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
N=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
ALL=$(seq -s, 0 $((N - 1)))
{
	nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,power.limit --format=csv
	nvidia-smi topo -m
	nvidia-smi nvlink -s
} >"$OUT/machine.txt" 2>&1
nproc >>"$OUT/machine.txt"
"$GB" verify --tier passive --state-dir "$S" --run-dir "$S/run" >/dev/null 2>&1 # warm the driver

one() { # label gpus
	t0=$(date +%s%N)
	GPUBOOT_GPUS=$2 "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/$1.json" 2>"$OUT/$1.err"
	rc=$?
	t1=$(date +%s%N)
	echo "$1 gpus=$2 exit=$rc wall_ms=$(((t1 - t0) / 1000000))" >>"$OUT/walls.txt"
}
r=1
while [ "$r" -le "$REPS" ]; do
	if [ $((r % 2)) -eq 1 ]; then
		for g in $(seq 0 $((N - 1))); do one "r$r-gpu$g" "$g"; done
		one "r$r-all" "$ALL"
	else
		one "r$r-all" "$ALL"
		for g in $(seq $((N - 1)) -1 0); do one "r$r-gpu$g" "$g"; done
	fi
	r=$((r + 1))
done
# Without GPUBOOT_GPUS (every GPU) and with CUDA_VISIBLE_DEVICES=1 in the caller's environment.
CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID "$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/cvd.json" 2>"$OUT/cvd.err"
echo "cvd exit=$?" >>"$OUT/walls.txt"
cp "$S/status.json" "$OUT/cvd-status.json"
rm -rf "$S"
python3 - "$OUT" <<'PY' >"$OUT/summary.txt" 2>&1
import json, os, re, sys
out = sys.argv[1]
names = ("memory.read_bandwidth", "memory.copy_bandwidth", "compute.fp32", "pcie.host_to_device",
         "pcie.device_to_host", "gpu.utilization_under_load")
walls = {}
for line in open(os.path.join(out, "walls.txt")):
    m = re.match(r"(r\d+-\S+) gpus=\S+ exit=(\d+) wall_ms=(\d+)", line)
    if m:
        walls[m.group(1)] = (int(m.group(3)), int(m.group(2)))
fig = {}
for f in sorted(os.listdir(out)):
    if not re.match(r"r\d+-.*\.json$", f):
        continue
    d = json.load(open(os.path.join(out, f)))
    label = f[:-5]
    for c in d["checks"]:
        if c["value"] is None:
            continue
        if c["name"] in names or c["name"] == "peer.bandwidth":
            fig[(label, c["name"], c["subject"].split()[0])] = (c["value"], c["threshold"], c["result"])
        if c["name"] == "verify.parallel":
            pass
    for c in d["checks"]:
        if c["name"] in ("verify.parallel", "nvlink.links") or (c["name"] == "peer.bandwidth"):
            print(label, c["name"], c["subject"], c["result"], c["value"], c["threshold"], c["text"])
    p = d.get("probe") or {}
    print(label, "timings", p.get("timings_ms"))
    for a in p.get("active", []):
        x = a["active"]
        print(label, "gpu%d" % a["index"], "worker %.0f-%.0f ms" % (x.get("worker_start_ms", 0), x.get("worker_end_ms", 0)),
              "phases", x.get("phases_ms"), "jit %.1f" % x.get("jit_ms", 0))
print()
print("walls (ms):")
for k in sorted(walls):
    print(" ", k, walls[k])
reps = sorted({k.split("-")[0] for k in walls})
for rp in reps:
    singles = [walls[k][0] for k in walls if k.startswith(rp + "-gpu")]
    if singles and rp + "-all" in walls:
        print("%s: all %d ms, single %s ms, ratio all/max(single) %.3f" % (rp, walls[rp + "-all"][0], singles,
              walls[rp + "-all"][0] / max(singles)))
print()
print("per-GPU figures, all-at-once / alone:")
for (label, name, subj), (v, th, res) in sorted(fig.items()):
    m = re.match(r"(r\d+)-all$", label)
    if not m or name == "peer.bandwidth":
        continue
    alone = fig.get((m.group(1) + "-" + subj, name, subj))
    if alone:
        print("  %s %-28s %-6s all %.2f alone %.2f ratio %.4f (threshold %s, %s)" % (m.group(1), name, subj, v,
              alone[0], v / alone[0] if alone[0] else 0, th, res))
PY
cat "$OUT/summary.txt"
cat "$OUT/walls.txt"
(cd "$OUT" && tar czf raw.tgz r*.json r*.err cvd.json cvd.err && rm -f r*.json r*.err cvd.json cvd.err)
