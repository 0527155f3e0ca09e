#!/usr/bin/env python3
"""The layering of src/ (docs/layers.md): each folder has a rank, and a
file may include a header of its own folder, of src/ itself (context.h,
exit-codes.h, version.h, which include only shared/) or of a folder of a
lower rank; never one of a higher rank. Prints each offending include as
FILE:LINE and exits 1. The probe (src/probe) is a separate executable and
includes nothing of gpuboot's."""
import os
import re
import sys

ORDER = ["shared", "catalog", "effect",
         # the stages, in the pipeline's order but for one: prepare installs
         # its newer kernel through install's package backends, so install
         # (and fetch, which install uses for the repositories' keys) sit
         # below it
         "detect", "plan", "fetch", "install", "prepare", "toolkit", "load", "verify", "repair", "status",
         "run", "cmd", "tools"]
RANK = {d: i for i, d in enumerate(ORDER)}
TOP = len(ORDER)  # src/main.c
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(root):
    src = os.path.join(root, "src")
    bad = []
    seen = set()
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            parts = rel.split(os.sep)
            if len(parts) == 1:
                folder, rank = None, (TOP if name == "main.c" else 0)
            else:
                folder = parts[0]
                if folder == "probe":
                    rank = -1
                elif folder not in RANK:
                    bad.append("src/%s: folder '%s' has no place in scripts/check-layers.py's order" % (rel, folder))
                    continue
                else:
                    rank = RANK[folder]
            seen.add(folder)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = INC.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    ip = inc.split("/")
                    if len(ip) == 1:
                        # same folder, or src/'s own headers from anywhere
                        if os.path.exists(os.path.join(dirpath, inc)) and folder != "probe":
                            continue
                        if os.path.exists(os.path.join(src, inc)) and rank != -1:
                            continue
                        if folder == "probe" and os.path.exists(os.path.join(dirpath, inc)):
                            continue
                        bad.append("src/%s:%d: includes \"%s\", which is not beside it" % (rel, n, inc))
                        continue
                    target = ip[0]
                    if rank == -1:
                        bad.append("src/%s:%d: the probe includes \"%s\" (it is its own executable)" % (rel, n, inc))
                    elif target not in RANK:
                        bad.append("src/%s:%d: \"%s\" is in no layer" % (rel, n, inc))
                    elif target != folder and RANK[target] > rank:
                        bad.append("src/%s:%d: %s (layer %d) includes \"%s\" of %s (layer %d): a lower layer "
                                   "must not depend on a higher one" % (rel, n, folder or "src", rank, inc, target,
                                                                        RANK[target]))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
