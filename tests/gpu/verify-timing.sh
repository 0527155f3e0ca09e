#!/bin/sh
# On the GPU machine: how long gpuboot verify takes, whole process, and that
# the short active tier stays true (issue 29, section 5).
# usage: tests/gpu/verify-timing.sh [PASSIVE_RUNS] [ACTIVE_RUNS]   (default 20 40)
# Writes into $OUT (or ./gpu-out): summary.txt (the figures), runs.txt (one
# line per active run), passive.json, active-runs.tgz (every active run's
# document), load.json (the run under a competing load), hpc.json.
# docs/verification.md records the results.
set -u
OUT=${OUT:-gpu-out}
NP=${1:-20}
NA=${2:-40}
GB=${GB:-build/gpuboot}
mkdir -p "$OUT"
S=$(mktemp -d)
R=$S/runs
mkdir -p "$R"
ms() { date +%s%N; }
sum=$OUT/summary.txt
{
	nvidia-smi --query-gpu=name,driver_version,persistence_mode,pstate,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
	echo "nproc $(nproc); JIT cache before: $(ls -d "${HOME:-/root}/.nv/ComputeCache" 2>/dev/null || echo none)"
} >"$sum" 2>&1

# Passive tier: NP runs, wall time of the whole command (ms).
i=0
while [ "$i" -lt "$NP" ]; do
	i=$((i + 1))
	a=$(ms)
	"$GB" verify --tier passive --state-dir "$S" --run-dir "$S/run" >/dev/null 2>&1
	rc=$?
	b=$(ms)
	echo "passive $i rc $rc wall_ms $(((b - a) / 1000000))" >>"$OUT/passive.txt"
done
"$GB" verify --tier passive --json --state-dir "$S" --run-dir "$S/run" >"$OUT/passive.json" 2>&1

# Active tier: NA back-to-back runs; any exit but 0 is a false failure
# (the GPU is healthy and idle).
i=0
while [ "$i" -lt "$NA" ]; do
	i=$((i + 1))
	a=$(ms)
	"$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$R/active-$i.json" 2>"$R/active-$i.err"
	rc=$?
	b=$(ms)
	echo "$i $rc $(((b - a) / 1000000))" >>"$R/walls.txt"
done

# The hpc profile (FP64 gated too), once.
a=$(ms)
"$GB" verify --tier active --profile hpc --json --state-dir "$S" --run-dir "$S/run" >"$OUT/hpc.json" 2>&1
echo "hpc rc $? wall_ms $((($(ms) - a) / 1000000))" >>"$sum"

# The gates still fail: a PyTorch matmul loop computing on the GPU.
if python3 -c "import torch" 2>/dev/null; then
	python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda'); b = torch.randn(8192, 8192, device='cuda')
t = time.time()
while time.time() - t < 12:
    c = a @ b
torch.cuda.synchronize()
" >/dev/null 2>&1 &
	L=$!
	sleep 6
	"$GB" verify --tier active --json --state-dir "$S" --run-dir "$S/run" >"$OUT/load.json" 2>&1
	echo "under a competing load: rc $? (15 expected)" >>"$sum"
	wait "$L"
fi

python3 - "$R" "$OUT" "$NA" >>"$sum" 2>&1 <<'PY'
import json, sys, statistics as st
R, O, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
walls = [l.split() for l in open(R + "/walls.txt")]
rows, fails = [], []
for i, rc, wall in walls:
    try:
        d = json.load(open("%s/active-%s.json" % (R, i)))
    except Exception as e:
        fails.append((i, rc, "no JSON: %s" % e)); continue
    p = d["probe"]; t = p["timings_ms"]; a = p["active"][0]["active"]; ph = a["phases_ms"]
    bad = [c["name"] for c in d["checks"] if c["result"] == "fail"]
    if rc != "0" or bad:
        fails.append((i, rc, ",".join(bad)))
    rows.append(dict(i=int(i), rc=int(rc), wall=int(wall), probe=p["timings_ms"]["total"], cuinit=t["cu_init"],
                     wait=t.get("cu_init_wait", 0), ctx=t["contexts"], workers=t["workers"], teardown=t["teardown"],
                     setup=ph["setup"], jit=a["jit_ms"], fma=ph["fma"], timed=a.get("fp32_timed_ms", 0),
                     slices=a.get("fp32_timed_slices", 0), fp32=a["fp32_tflops"], smin=a.get("fp32_slice_min_tflops", 0),
                     smax=a.get("fp32_slice_max_tflops", 0), util=a["utilization_max_pct"],
                     usrc=a.get("utilization_source"), uwin=a.get("utilization_window_ms", 0),
                     read=a["read_gbps"], copy=a["d2d_copy_gbps"], h2d=a["h2d_pinned_gbps"], d2h=a["d2h_pinned_gbps"],
                     hostc=ph["host_copies"], hfree=ph["host_free"], pin=ph["host_alloc"], left=ph["warmup_left"]))
with open(O + "/runs.txt", "w") as f:
    keys = list(rows[0].keys()) if rows else []
    f.write(" ".join(keys) + "\n")
    for r in rows:
        f.write(" ".join(("%.1f" % v) if isinstance(v, float) else str(v) for v in r.values()) + "\n")
def rng(k, fmt="%.0f", rs=rows):
    v = [r[k] for r in rs]
    return (fmt + "-" + fmt + " (median " + fmt + ")") % (min(v), max(v), st.median(v)) if v else "-"
p = [l.split() for l in open(O + "/passive.txt")]
pw = [int(x[5]) for x in p]
print("passive: %d runs, %d exit 0, wall %d-%d ms (median %.0f, mean %.1f)" % (
    len(pw), sum(x[3] == "0" for x in p), min(pw), max(pw), st.median(pw), st.mean(pw)))
print("active: %d runs, %d false failures %s" % (len(walls), len(fails), fails))
warm = rows[1:] if len(rows) > 1 else rows
print("active wall, all runs: " + rng("wall"))
print("active wall, runs 2-%d: %s" % (len(rows), rng("wall", rs=warm)))
print("run 1: wall %d ms, jit %.1f ms, cuInit %.0f ms" % (rows[0]["wall"], rows[0]["jit"], rows[0]["cuinit"]) if rows else "")
for k in ("probe", "cuinit", "wait", "ctx", "setup", "jit", "workers", "fma", "timed", "slices", "teardown", "pin", "left",
          "hostc", "hfree"):
    print("  %-8s %s" % (k, rng(k, "%.1f")))
for k in ("fp32", "smin", "smax", "read", "copy", "h2d", "d2h"):
    print("  %-8s %s" % (k, rng(k, "%.2f")))
print("  util     %s; source %s; window %s ms" % (rng("util"), sorted(set(r["usrc"] for r in rows), key=str), rng("uwin")))
for name in ("hpc", "load"):
    try:
        d = json.load(open("%s/%s.json" % (O, name)))
    except Exception:
        continue
    print("%s: failed %s: %s" % (name, d["failed"], "; ".join("%s %s %.2f" % (c["name"], c["result"], c["value"] or 0)
        for c in d["checks"] if c["result"] == "fail" or (c["subject"].startswith("gpu0") and c["name"] in (
            "compute.fp32", "compute.fp64", "gpu.utilization_under_load")))))
PY
tar czf "$OUT/active-runs.tgz" -C "$R" .
rm -rf "$S"
cat "$sum"
