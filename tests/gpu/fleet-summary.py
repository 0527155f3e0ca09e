#!/usr/bin/env python3
"""Summary of tests/gpu/fleet-x2.sh's output directory: wall times and
ratios per order and repetition, where the time went, and every per-GPU
figure with all GPUs at once against the same GPU alone."""
import json
import os
import re
import sys

out = sys.argv[1]
NAMES = ("memory.read_bandwidth", "memory.copy_bandwidth", "compute.fp32", "pcie.host_to_device",
         "pcie.device_to_host", "gpu.utilization_under_load")
walls = {}
for line in open(os.path.join(out, "walls.txt")):
    m = re.match(r"([ca]-r\d+-(?:all|gpu\d+)) gpus=\S+ exit=(\d+) wall_ms=(\d+)", line)
    if m:
        walls[m.group(1)] = (int(m.group(3)), int(m.group(2)))
fig, probe = {}, {}
for f in sorted(os.listdir(out)):
    m = re.match(r"([ca]-r\d+-(?:all|gpu\d+))\.json$", f)
    if not m:
        continue
    d = json.load(open(os.path.join(out, f)))
    label = m.group(1)
    probe[label] = d.get("probe") or {}
    for c in d["checks"]:
        if c["value"] is not None and (c["name"] in NAMES or c["name"] == "peer.bandwidth"):
            fig[(label, c["name"], c["subject"].split()[0])] = (c["value"], c["threshold"], c["result"])
        if c["name"] in ("verify.parallel", "peer.bandwidth"):
            print(label, c["name"], c["subject"], c["result"], c["value"], c["threshold"], c["text"])


def rnd(d):
    return {k: round(v) for k, v in (d or {}).items()}


for label in sorted(probe):
    p = probe[label]
    print(label, "wall", walls[label][0], "exit", walls[label][1], "timings", rnd(p.get("timings_ms")))
    for a in p.get("active", []):
        x = a["active"]
        print("   gpu%d worker %.0f-%.0f ms" % (a["index"], x.get("worker_start_ms", 0), x.get("worker_end_ms", 0)),
              "phases", {k: round(v, 1) for k, v in (x.get("phases_ms") or {}).items()}, "jit %.1f" % x.get("jit_ms", 0))
for order, name in (("c", "controlled"), ("a", "alternating")):
    reps = sorted({k.split("-")[1] for k in walls if k.startswith(order + "-")}, key=lambda s: int(s[1:]))
    if not reps:
        continue
    print()
    print("order %s (%s): all / mean alone, all / slower alone; cuInit all vs alone" % (order, name))
    rs = []
    for rp in reps:
        pre = "%s-%s-" % (order, rp)
        singles = {k[len(pre):]: walls[k][0] for k in walls if k.startswith(pre + "gpu")}
        if not singles or pre + "all" not in walls:
            continue
        a = walls[pre + "all"][0]
        mean = sum(singles.values()) / len(singles)
        cu = {k: round(probe.get(pre + k, {}).get("timings_ms", {}).get("cu_init", 0)) for k in ["all"] + sorted(singles)}
        rs.append(a / mean)
        print("  %s: all %d ms, alone %s ms, %.3f, %.3f; cuInit %s" % (rp, a, singles, a / mean,
              a / max(singles.values()), cu))
    if rs:
        print("  mean %.3f, max %.3f" % (sum(rs) / len(rs), max(rs)))
print()
print("per-GPU figures, all at once / alone (same order and repetition):")
worst = {}
for (label, nm, subj), (v, th, res) in sorted(fig.items()):
    m = re.match(r"([ca]-r\d+)-all$", label)
    if not m or nm == "peer.bandwidth":
        continue
    alone = fig.get((m.group(1) + "-" + subj, nm, subj))
    if alone and alone[0]:
        q = v / alone[0]
        print("  %s %-28s %-6s all %.2f alone %.2f ratio %.4f (threshold %s, %s)" % (m.group(1), nm, subj, v,
              alone[0], q, th, res))
        lo, hi = worst.get((nm, subj), (q, q))
        worst[(nm, subj)] = (min(lo, q), max(hi, q))
print()
for (nm, subj), (lo, hi) in sorted(worst.items()):
    print("  %-28s %-6s ratio %.4f-%.4f" % (nm, subj, lo, hi))
