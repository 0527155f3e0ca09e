#!/usr/bin/env python3
"""The hostile mirror at volume (tests/integration/t-mirror-volume.sh):
seeded random fault sequences (tests/https-server.py's /seq/ paths) across a
full fetch of several artifacts by build/asan/tools/fetch-tool. After each:
every artifact the tool calls verified is in the cache with its sha256,
every other is absent, nothing is left in cache/tmp, the exit code is 0 when
all are verified and 13 otherwise, and a sequence of only transient faults
within the retry budget is recovered.

usage: mirror_volume.py TOOL CAFILE BASE_URL WWW STATE N SEED  (then "PATH" lines of
artifacts on stdin, relative to WWW)"""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import time

TRANSIENT = ["truncate", "reset", "500", "429", "503", "norange"]
PERMANENT = ["flip", "extra", "404", "redirect-http"]
RETRIES = 5  # fetch-tool's budget is 6 attempts: 5 transient faults then a good answer


def main():
    tool, ca, base, www, state, n, seed = sys.argv[1:8]
    n, rng = int(n), random.Random(int(seed))
    arts = [p for p in sys.stdin.read().split() if p]
    real = {p: hashlib.sha256(open(os.path.join(www, p), "rb").read()).hexdigest() for p in arts}
    sizes = {p: os.path.getsize(os.path.join(www, p)) for p in arts}
    fails, verified, refused, t0 = 0, 0, 0, time.time()
    stall = os.environ.get("MIRROR_STALL") == "1"
    for i in range(n):
        shutil.rmtree(state, ignore_errors=True)
        argv, seqs = [tool, state, ca], {}
        for k, p in enumerate(arts):
            faults = [rng.choice(TRANSIENT + (["stall"] if stall else [])) for _ in range(rng.randint(0, 4))]
            if rng.random() < 0.2:
                faults.insert(rng.randint(0, len(faults)), rng.choice(PERMANENT))
            if rng.random() < 0.05:
                faults = [rng.choice(TRANSIENT) for _ in range(RETRIES + 1)]  # past the retry budget
            seqs[p] = faults
            spec = ",".join(faults) or "ok"
            argv += ["%s/seq/%d-%d-%d/%s/%s" % (base, int(seed), i, k, spec, p), real[p], str(sizes[p])]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        lines = r.stdout.splitlines()
        why = []
        if len(lines) != len(arts):
            why.append("%d result lines for %d artifacts" % (len(lines), len(arts)))
        for p, line in zip(arts, lines):
            cached = os.path.join(state, "cache", "sha256", real[p])
            ok = line.startswith("OK")
            if ok:
                verified += 1
                if not os.path.isfile(cached):
                    why.append("%s verified but not in the cache" % p)
            else:
                refused += 1
                if os.path.exists(cached):
                    why.append("%s refused but in the cache" % p)
                f = seqs[p]
                if len(f) <= RETRIES and not any(x in PERMANENT for x in f):
                    why.append("%s: only transient faults %s, not recovered: %s" % (p, f, line))
        cdir = os.path.join(state, "cache", "sha256")
        for f in os.listdir(cdir) if os.path.isdir(cdir) else []:
            h = hashlib.sha256(open(os.path.join(cdir, f), "rb").read()).hexdigest()
            if h != f or f not in real.values():
                why.append("the cache holds %s, sha256 %s: an unverified byte" % (f, h))
        tmp = os.path.join(state, "cache", "tmp")
        if os.path.isdir(tmp) and os.listdir(tmp):
            why.append("partial downloads left: %s" % os.listdir(tmp))
        want = 0 if all(x.startswith("OK") for x in lines) and lines else 13
        if r.returncode != want:
            why.append("exit %d, expected %d" % (r.returncode, want))
        if why:
            fails += 1
            print("FAILURE sequence %d %s: %s\n%s" % (i, seqs, "; ".join(why), r.stdout + r.stderr[-2000:]))
    print("mirror: %d sequences (seed %s), %d artifacts verified, %d refused, %d failures, %.0f s"
          % (n, seed, verified, refused, fails, time.time() - t0))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
