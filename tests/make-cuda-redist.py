#!/usr/bin/env python3
"""Generate the CUDA components of a plan in NVIDIA's redist layout, and
their redistrib_<version>.json in NVIDIA's format, under OUTDIR:
  OUTDIR/compute/cuda/redist/<name>/linux-x86_64/<name>-linux-x86_64-<ver>-archive.tar.xz
  OUTDIR/compute/cuda/redist/redistrib_<cuda>.json
Each archive holds one library under the archive's top directory.

usage: tests/make-cuda-redist.py PLAN_JSON OUTDIR [RANDOM_MIB]
  RANDOM_MIB: that many MiB in all of incompressible bytes, split between the
  components (a benchmark's download); default: a few KiB of text each.
Used by tests/integration/t-fetch-upstream.sh and bench/install.sh."""
import hashlib, io, json, os, sys, tarfile

plan, w = json.load(open(sys.argv[1])), sys.argv[2]
mib = int(sys.argv[3]) if len(sys.argv) > 3 else 0
cuda, comps = plan["cuda"]["version"], plan["cuda"]["components"]
doc = {"release_date": "2025-08-04", "release_label": cuda, "release_product": "cuda"}
for comp in comps:
    name, version = comp.split()
    rel = f"{name}/linux-x86_64/{name}-linux-x86_64-{version}-archive.tar.xz"
    data = os.urandom(mib * 1024 * 1024 // len(comps)) if mib else (name * 2000).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=0 if mib else 6) as t:
        i = tarfile.TarInfo(f"{name}-linux-x86_64-{version}-archive/lib/lib{name}.so.1")
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    blob = buf.getvalue()
    p = os.path.join(w, "compute/cuda/redist", rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(blob)
    doc[name] = {"name": name, "license": "CUDA Toolkit", "version": version,
                 "linux-x86_64": {"relative_path": rel, "sha256": hashlib.sha256(blob).hexdigest(),
                                  "md5": hashlib.md5(blob).hexdigest(), "size": str(len(blob))}}
os.makedirs(os.path.join(w, "compute/cuda/redist"), exist_ok=True)
open(os.path.join(w, "compute/cuda/redist", f"redistrib_{cuda}.json"), "w").write(json.dumps(doc, indent=4))
