#!/usr/bin/env python3
"""Generate the compiled-in catalog from the real data in data/.

usage: scripts/gen-catalog.py [--data DIR] [--out FILE] [--out-data FILE]
       (FILE '-' = stdout)

- src/catalog/catalog-pci.c: the NVIDIA block (vendor 10de) of data/pci.ids.
  Each device's chip (GH100, AD104GL, ...) gives the architecture and compute
  capability; class decides at run time what is a GPU (NVSwitches share the
  chip name). Open-module support and the last (legacy) branch come from
  supported-gpus.json (`kernelopen`, `legacybranch`) and the open kernel
  modules' README table; a GPU in neither is judged by its architecture
  (the open modules support Turing and later), never "absent = unsupported".
- src/catalog/catalog-data.c: driver branches, the real driver runfiles
  (driver-runfiles.tsv, and the later releases in driver-runfiles-update.tsv),
  CUDA releases (the redistrib manifests, hashed),
  distributions and their NVIDIA repositories, Ubuntu kernels.

It reads only data/: the curated facts (branch lifecycles, CUDA minimum
drivers and dropped architectures and releases, distributions and their
repositories, per-GPU traits, compute capabilities) are data/catalog.json,
each section with what it rests on; data/SOURCES.md lists every source
with the day it was read.
"""
import argparse
import json
import os
import re
import sys

# The driver runfile tables under data/, each with its source in its header:
# the packaging repository's pins at one commit, then the rows of a later
# commit of it.
RUNFILE_TABLES = ("nvidia/driver-runfiles.tsv", "nvidia/driver-runfiles-update.tsv")

# The curated facts (data/catalog.json), loaded by load_catalog().
ARCH_BY_FAMILY = CC_BY_CHIP = CC_BY_FAMILY = None
CAT = None

CHIP_RE = re.compile(r"^((GK|GM|GP|GV|TU|GA|AD|GH|GB)\d{1,3}[A-Z]?)")


def parse_pci_ids(path):
    devs = []
    in_block = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("10de "):
                in_block = True
                continue
            if not in_block:
                continue
            if line and not line.startswith("\t") and not line.startswith("#"):
                break
            m = re.match(r"^\t([0-9a-f]{4})  (.*)$", line)
            if m:
                devs.append((m.group(1), m.group(2).strip()))
    if len(devs) < 500:
        sys.exit(f"gen-catalog: only {len(devs)} NVIDIA devices in {path}; is it pci.ids?")
    return devs


def classify(desc):
    m = CHIP_RE.match(desc)
    if not m:
        return None, None, None
    chip = m.group(1)
    # GA100GL -> GA100, AD104GL -> AD104; keep the B of GK110B / GK208B.
    base = re.match(r"^([A-Z]{2}\d{1,3}B?)", chip).group(1)
    if base.endswith("B") and base not in CC_BY_CHIP:
        base = base[:-1]
    fam = m.group(2)
    arch = ARCH_BY_FAMILY[fam]
    cc = CC_BY_CHIP.get(base)
    if cc is None and fam == "GB" and base.startswith("GB2"):
        cc = CC_BY_FAMILY["GB2"]
    if cc is None:
        cc = CC_BY_FAMILY.get(fam)
    if cc is None and fam == "GA" and base.startswith("GA10"):
        cc = "8.6"
    return base, arch, cc


def parse_supported_gpus(path):
    """devid -> (kernelopen, legacy_branch) from an R525 supported-gpus.json."""
    out = {}
    with open(path) as f:
        d = json.load(f)
    for c in d["chips"]:
        dev = int(c["devid"], 16)
        kopen = "kernelopen" in c.get("features", [])
        legacy = c.get("legacybranch")
        lb = int(legacy.split(".")[0]) if legacy else 0
        o_kopen, o_lb = out.get(dev, (False, 0))
        out[dev] = (o_kopen or kopen, max(o_lb, lb) if o_lb and lb else (o_lb or lb))
    return out


def parse_open_readme(path):
    """Device IDs in the open kernel modules' Compatible GPUs table."""
    ids = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"^\| .+\| ([0-9A-F]{4})( [0-9A-F]{4} [0-9A-F]{4})?\s*\|$", line.rstrip())
            if m:
                ids.add(int(m.group(1), 16))
    if len(ids) < 250:
        sys.exit(f"gen-catalog: only {len(ids)} IDs in {path}")
    return ids


def c_str(s):
    if s is None:
        return "NULL"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "data"))
    ap.add_argument("--out", default=os.path.join(here, "..", "src", "catalog", "catalog-pci.c"))
    ap.add_argument("--out-data", default=os.path.join(here, "..", "src", "catalog", "catalog-data.c"))
    a = ap.parse_args()
    load_catalog(a.data)

    devs = parse_pci_ids(os.path.join(a.data, "pci.ids"))
    sgpus = parse_supported_gpus(os.path.join(
        a.data, "nvidia/supported-gpus/ubuntu-focal-nvidia-driver-525-supported-gpus.json"))
    open_ids = parse_open_readme(os.path.join(a.data, "nvidia/open-gpu-kernel-modules-595.45.04-README.md"))
    out = []
    out.append("/* SPDX-License-Identifier: MIT */")
    out.append("/* GENERATED by scripts/gen-catalog.py from data/pci.ids; do not edit. */")
    out.append('#include "catalog.h"')
    out.append("")
    out.append("const struct gb_pci_name gb_pci_names[] = {")
    for dev, desc in sorted(devs):
        chip, arch, cc = classify(desc)
        m = re.search(r"\[(.*)\]", desc)
        name = m.group(1) if m else desc
        arch_c = "GB_ARCH_" + arch.upper() if arch else "GB_ARCH_UNKNOWN"
        d = int(dev, 16)
        kopen, legacy = sgpus.get(d, (False, 0))
        if kopen or d in open_ids:
            op = "GB_OPEN_LISTED"
        elif arch in ("turing", "ampere", "ada", "hopper", "blackwell"):
            op = "GB_OPEN_BY_ARCH"
        elif arch:
            op = "GB_OPEN_NO"
        else:
            op = "GB_OPEN_NO"
        out.append(f"\t{{ 0x{dev}, {c_str(chip)}, {c_str(name)}, {arch_c}, {c_str(cc)}, {op}, {legacy} }},")
    out.append("};")
    out.append("const size_t gb_pci_names_len = sizeof(gb_pci_names) / sizeof(gb_pci_names[0]);")
    write(a.out, "\n".join(out) + "\n")
    write(a.out_data, gen_data(a.data))


def write(path, text):
    if path == "-":
        sys.stdout.write(text)
        return
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def load_catalog(data):
    """data/catalog.json: the curated facts, each section with what it rests on."""
    global ARCH_BY_FAMILY, CC_BY_CHIP, CC_BY_FAMILY, CAT
    path = os.path.join(data, "catalog.json")
    with open(path, encoding="utf-8") as f:
        CAT = json.load(f)
    for sec in ("arch_by_family", "cc_by_chip", "cc_by_family", "branches", "proprietary_removed_from", "open_module_from", "cuda",
                "distros", "gpu_traits"):
        if sec not in CAT or not CAT[sec].get("source"):
            sys.exit(f"gen-catalog: {path}: section {sec} missing, or without its source")
    ARCH_BY_FAMILY = CAT["arch_by_family"]["map"]
    CC_BY_CHIP = CAT["cc_by_chip"]["map"]
    CC_BY_FAMILY = CAT["cc_by_family"]["map"]


def gen_traits():
    def b(v):
        return "true" if v else "false"
    out = ["const struct gb_gpu_traits gb_gpu_traits[] = {"]
    for t in CAT["gpu_traits"]["rows"]:
        dev = int(t["device"], 16)
        arm = t["grace"] or t["aarch64_only"]
        out.append(f"\t{{ 0x{dev:04x}, {c_str(t['aliases'])}, {b(t['grace'])}, {b(arm)}, {b(t['held_back'])}, "
                   f"{t['hgx8_nvswitches']}, {b(t['nvswitches_hidden'])}, {t['mem_mib']}, {t.get('min_branch', 0)}, "
                   f"{t.get('open_from', 0)} }},")
    out.append("};")
    out.append("const size_t gb_gpu_traits_len = sizeof(gb_gpu_traits) / sizeof(gb_gpu_traits[0]);")
    out.append("")
    return out


def sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def catalog_date(data):
    """The catalog's date: the "Catalog date:" line of data/SOURCES.md, the
    day its newest source was read. No date written there may be newer (a
    fact from a newer source raises it), so the plan's catalog-stale warning
    measures the age of the newest fact the catalog holds."""
    path = os.path.join(data, "SOURCES.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^Catalog date: (\d{4}-\d{2}-\d{2})\b", text, re.M)
    if not m:
        sys.exit(f"gen-catalog: no 'Catalog date: YYYY-MM-DD' line in {path}")
    date = m.group(1)
    # what SOURCES.md says, and what catalog.json's sections say they rest
    # on (its data, end-of-life dates included, may well be in the future)
    said = [(path, text)] + [(os.path.join(data, "catalog.json"), sec.get("source", "") + " " + " ".join(
        r.get("note", "") for r in sec.get("rows", []) if isinstance(r, dict)))
        for sec in CAT.values() if isinstance(sec, dict)]
    for table in RUNFILE_TABLES:
        p = os.path.join(data, table)
        with open(p, encoding="utf-8") as f:
            said.append((p, "".join(line for line in f if line.startswith("#"))))
    for p, t in said:
        newer = sorted(d for d in re.findall(r"\b(20\d\d-\d\d-\d\d)\b", t) if d > date)
        if newer:
            sys.exit(f"gen-catalog: {p} cites {newer[-1]}, newer than its Catalog date {date}: raise the date")
    return date


def gen_sources(data):
    """What the catalog rests on: the files of data/SOURCES.md's table (a
    real machine's capture excepted: tests read it, the catalog does not),
    each with its origin, for `gpuboot catalog` and the plan's header."""
    rows, last = [], ""
    with open(os.path.join(data, "SOURCES.md"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\| `([^`]+)` \|.*\| ([^|]+) \|$", line.rstrip("\n"))
            if not m or m.group(1).startswith("machines/"):
                continue
            origin = m.group(2).strip().replace("`", "")
            origin = last if origin == "same" else origin
            last = origin
            rows.append(f"data/{m.group(1)}: {origin}")
    rows.append("data/catalog.json: the curated facts, each section with what it rests on (data/SOURCES.md)")
    out = ["/* What it rests on: data/SOURCES.md's table. */", "const char *const gb_catalog_sources[] = {"]
    out += [f"\t{c_str(r)}," for r in rows]
    out += ["};", "const size_t gb_catalog_sources_len = sizeof(gb_catalog_sources) / sizeof(gb_catalog_sources[0]);", ""]
    return out


def gen_data(data):
    date = catalog_date(data)
    out = ["/* SPDX-License-Identifier: MIT */",
           "/* GENERATED by scripts/gen-catalog.py from data/; do not edit. */",
           '#include "catalog.h"', "",
           "/* The catalog's version and date: data/SOURCES.md, Catalog date. */",
           f"const char gb_catalog_version[] = {c_str(date.replace('-', '.'))};",
           f"const char gb_catalog_date[] = {c_str(date)};", ""]
    out += gen_sources(data)
    out += gen_traits()
    out.append("const struct gb_branch gb_branches[] = {")
    for row in CAT["branches"]["rows"]:
        b, t, eol, kmin = row["branch"], row["type"], row["end_of_life"], row["min_kernel"]
        tc = {"ltsb": "GB_BRANCH_LTSB", "production": "GB_BRANCH_PRODUCTION",
              "new-feature": "GB_BRANCH_NEW_FEATURE", "legacy": "GB_BRANCH_LEGACY"}[t]
        out.append(f"\t{{ {b}, {tc}, {c_str(eol or None)}, {c_str(kmin)} }},")
    out.append("};")
    out.append("const size_t gb_branches_len = sizeof(gb_branches) / sizeof(gb_branches[0]);")
    out.append(f"const unsigned gb_proprietary_removed_from = {CAT['proprietary_removed_from']['branch']};")
    out.append(f"const unsigned gb_open_module_from = {CAT['open_module_from']['branch']};")
    out.append("")

    # Runfiles: NVIDIA's own downloads only (no Vulkan betas, no betas),
    # from each runfile table (RUNFILE_TABLES), each with its own source.
    keep = {"PRODUCTION", "NEW_FEATURE", "TESLA", "LEGACY"}
    rows, seen = [], {}
    for table in RUNFILE_TABLES:
        path = os.path.join(data, table)
        with open(path) as f:
            for line in f:
                if line.startswith("#") or line.startswith("version\t"):
                    continue
                v, arch, cat, sha, size, url = line.rstrip("\n").split("\t")
                if arch not in ("x86_64", "aarch64") or cat not in keep:
                    continue
                if not re.match(r"^https://(us\.)?download\.nvidia\.com/", url):
                    continue
                if not re.match(r"^[0-9a-f]{64}$", sha) or not size.isdigit():
                    sys.exit(f"gen-catalog: bad runfile row {v} {arch}")
                if (v, arch) in seen:
                    sys.exit(f"gen-catalog: runfile {v} {arch} in both {seen[(v, arch)]} and {table}")
                seen[(v, arch)] = table
                rows.append((tuple(int(x) for x in v.split(".")), v, arch, cat, sha, int(size), url))
    rows.sort()
    out.append("const struct gb_runfile gb_runfiles[] = {")
    for _, v, arch, cat, sha, size, url in rows:
        out.append(f"\t{{ {c_str(v)}, {c_str(arch)}, {c_str(cat)}, {c_str(sha)}, {size}ull, {c_str(url)} }},")
    out.append("};")
    out.append("const size_t gb_runfiles_len = sizeof(gb_runfiles) / sizeof(gb_runfiles[0]);")
    out.append("")

    out.append("const struct gb_cuda_release gb_cuda_releases[] = {")
    cuda = CAT["cuda"]
    for ver, mind in cuda["min_driver"]:
        major = ver.split(".")[0]
        manifest = next((m for m in cuda["manifests"] if m.startswith(ver + ".")), None)
        mpath = os.path.join(data, f"nvidia/cuda-redist/redistrib_{manifest}.json") if manifest else None
        msha = sha256(mpath) if manifest else None
        msize = os.path.getsize(mpath) if manifest else 0
        oldest = "GB_ARCH_" + cuda["oldest_arch"][major].upper()
        out.append(f"\t{{ {c_str(ver)}, {c_str(mind)}, {oldest}, {c_str(manifest)}, {c_str(msha)}, {msize}ull }},")
    out.append("};")
    out.append("const size_t gb_cuda_releases_len = sizeof(gb_cuda_releases) / sizeof(gb_cuda_releases[0]);")
    out.append("")

    # The components of each manifest, with the platforms they exist for.
    out.append("const struct gb_cuda_component gb_cuda_components[] = {")
    for m in cuda["manifests"]:
        with open(os.path.join(data, f"nvidia/cuda-redist/redistrib_{m}.json")) as f:
            d = json.load(f)
        for name in sorted(d):
            comp = d[name]
            if not isinstance(comp, dict) or "version" not in comp:
                continue
            plats = [p for p in ("linux-x86_64", "linux-sbsa") if p in comp]
            if not plats:
                continue
            x86 = "true" if "linux-x86_64" in plats else "false"
            sbsa = "true" if "linux-sbsa" in plats else "false"
            out.append(f"\t{{ {c_str(m)}, {c_str(name)}, {c_str(comp['version'])}, {x86}, {sbsa} }},")
    out.append("};")
    out.append("const size_t gb_cuda_components_len = sizeof(gb_cuda_components) / sizeof(gb_cuda_components[0]);")
    out.append("")

    out.append("const struct gb_distro gb_distros[] = {")
    for d in CAT["distros"]["rows"]:
        out.append(f"\t{{ {c_str(d['id'])}, {c_str(d['version_id'])}, {c_str(d['repo'])}, {c_str(d['hwe_meta'])}, "
                   f"{c_str(d['ga_kernel'])}, {c_str(d['newer_kernel'])}, {c_str(d['newer_kernel_suite'])}, "
                   f"{c_str(d['distro_driver'])}, {'true' if d['distro_open'] else 'false'}, {c_str(d['key_pin'])}, "
                   f"{d['cuda_last_major']}, {'true' if d['module_streams'] else 'false'} }},")
    out.append("};")
    out.append("const size_t gb_distros_len = sizeof(gb_distros) / sizeof(gb_distros[0]);")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
