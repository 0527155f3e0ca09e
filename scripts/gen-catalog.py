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
  (driver-runfiles.tsv), CUDA releases (the redistrib manifests, hashed),
  distributions and their NVIDIA repositories, Ubuntu kernels.

Facts typed here (branch lifecycles, CUDA minimum drivers, dropped
architectures, HWE kernels) are those listed in data/SOURCES.md, each from
NVIDIA's release notes or the distribution.
"""
import argparse
import json
import os
import re
import sys

ARCH_BY_FAMILY = {
    "GK": "kepler", "GM": "maxwell", "GP": "pascal", "GV": "volta",
    "TU": "turing", "GA": "ampere", "AD": "ada", "GH": "hopper", "GB": "blackwell",
}

# Compute capability by chip (NVIDIA's CUDA GPUs table). Chips not listed
# fall back to the family default; None means unknown.
CC_BY_CHIP = {
    "GK104": "3.0", "GK106": "3.0", "GK107": "3.0", "GK110": "3.5", "GK110B": "3.5",
    "GK180": "3.5", "GK208": "3.5", "GK208B": "3.5", "GK210": "3.7", "GK20A": "3.2",
    "GM107": "5.0", "GM108": "5.0", "GM200": "5.2", "GM204": "5.2", "GM206": "5.2",
    "GP100": "6.0", "GP102": "6.1", "GP104": "6.1", "GP106": "6.1", "GP107": "6.1", "GP108": "6.1",
    "GV100": "7.0",
    "GA100": "8.0", "GA10B": "8.7",
    "GH100": "9.0",
    "GB100": "10.0", "GB102": "10.0", "GB110": "10.3", "GB112": "10.3",
    # GB10 (DGX Spark), "GB20B [GB10]" in pci.ids: 12.1 ("12.1 NVIDIA GB10
    # (DGX Spark)", NVIDIA's CUDA GPU Compute Capability page); without the B
    # it would fall into GB2's 12.0
    "GB20B": "12.1",
}
CC_BY_FAMILY = {"TU": "7.5", "GA": "8.6", "AD": "8.9", "GB2": "12.0"}

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


# Driver branches: type and end of life (NVIDIA's lifecycle, data/SOURCES.md).
# LTSB = long-term support; production; new feature (short-lived); legacy.
BRANCHES = [
    # branch, type, end of life (YYYY-MM-DD, "" when not announced), min kernel
    (470, "legacy", "2024-09-30", "3.10"),
    (525, "production", "2023-11-30", "3.10"),
    (535, "ltsb", "2026-06-30", "3.10"),
    (545, "new-feature", "2024-01-31", "3.10"),
    (550, "production", "2025-04-30", "3.10"),
    (555, "new-feature", "2024-08-31", "4.15"),
    (560, "new-feature", "2024-10-31", "4.15"),
    (565, "new-feature", "2025-01-31", "4.15"),
    (570, "production", "2026-02-28", "4.15"),
    (575, "new-feature", "2025-08-31", "4.15"),
    # R580: "End of Life June 2028" on NVIDIA's r615 and r620 pages (the
    # older v580 page said August 2028; the newer source wins)
    (580, "ltsb", "2028-06-30", "4.15"),
    (590, "new-feature", "2026-03-31", "4.15"),
    (595, "production", "2027-03-31", "4.15"),
    # R610 New Feature Branch: "End of Life August 2026" (NVIDIA's r615 page)
    (610, "new-feature", "2026-08-31", "4.15"),
    # R615: NVIDIA's data-center documentation has an r615 edition (Sep 09,
    # 2026) whose table lists no date for it (a New Feature Branch: "short-lived
    # and do not have an end-of-life date")
    (615, "new-feature", "", "4.15"),
    # R620 Long Term Support Branch: "End of Life September 2029" (NVIDIA's
    # r620 page); its installation guide (Nov 09, 2026) 4.1 "Proprietary
    # Kernel Modules Removed": from R620 on, the open module only
    (620, "ltsb", "2029-09-30", "4.15"),
]
# The first branch without the proprietary kernel module (r620 Driver
# Installation Guide, 4.1 "Proprietary Kernel Modules Removed").
PROPRIETARY_LAST_BEFORE = 620

# CUDA release -> minimum Linux driver (strict, no minor-version compatibility)
CUDA_MIN_DRIVER = [
    ("11.8", "520.61.05"), ("12.0", "525.60.13"), ("12.2", "535.54.03"), ("12.4", "550.54.14"),
    ("12.6", "560.28.03"), ("12.8", "570.26"), ("12.9", "575.51.03"), ("13.0", "580.65.06"),
    ("13.1", "590.44.01"), ("13.2", "595.45.04"),
]
# The oldest architecture each CUDA major still builds for.
CUDA_OLDEST_ARCH = {"11": "kepler", "12": "maxwell", "13": "turing"}
CUDA_MANIFESTS = ["11.8.0", "12.8.0", "13.0.0"]

# Distribution -> NVIDIA CUDA repository directory; a release not listed
# (but of a known distribution, with glibc) installs from the runfile.
DISTROS = [
    # id, version_id, repo dir, HWE meta (Ubuntu), GA kernel, newer kernel, its suite (Debian)
    ("ubuntu", "20.04", "ubuntu2004", "linux-generic-hwe-20.04", "5.4", "5.15", None),
    ("ubuntu", "22.04", "ubuntu2204", "linux-generic-hwe-22.04", "5.15", "6.8", None),
    ("ubuntu", "24.04", "ubuntu2404", "linux-generic-hwe-24.04", "6.8", "6.17", None),
    ("debian", "11", "debian11", None, "5.10", None, None),
    # Debian's newer kernel: bookworm-backports' linux-image-<arch> (6.12,
    # seen in the archive 2026-12-01); bullseye-backports is archived.
    ("debian", "12", "debian12", None, "6.1", "6.12", "bookworm-backports"),
    ("debian", "13", "debian13", None, "6.12", None, None),
]
# The NVIDIA driver a distribution packages itself (the `distro` method),
# and whether its open kernel module is usable there (data/SOURCES.md):
# bookworm's current driver is 535.309.01 from bookworm-security, proprietary
# only; its open module exists only at 535.261.03 (bookworm contrib), which
# no longer builds against bookworm's current kernel 6.1.0-57 (seen
# 2026-12-01: nv-pci.c, too few arguments to pci_resize_resource). trixie:
# 550.163.01 with nvidia-open-kernel-dkms.
DISTRO_DRIVERS = {("debian", "12"): ("535.309.01", False), ("debian", "13"): ("550.163.01", True)}
DISTROS += [
    ("rhel", "8", "rhel8", None, "4.18", None, None),
    ("rhel", "9", "rhel9", None, "5.14", None, None),
    ("rhel", "10", "rhel10", None, "6.12", None, None),
    ("amzn", "2023", "amzn2023", None, "6.1", None, None),
    ("sles", "15", "sles15", None, "5.14", None, None),
]
# The key each NVIDIA repository is signed with, by the pin's name in
# src/catalog/catalog.c (gb_repo_keys); None where gpuboot pins no key for it
# yet, and the packages method is then never planned there: debian13 is signed
# with 8793F200 and rhel10 with CDF6BA43 (NVIDIA's cuda-rhel10.repo gpgkey;
# ../shared/data/catalog-facts-2026-12.md rows 21, 22), fingerprints not
# pinned here.
REPO_KEYS = {"debian13": None, "rhel10": None}


# The last CUDA major NVIDIA supports on a release where a newer one dropped
# it (0 elsewhere): "Support for Ubuntu 20.04 has been dropped starting with
# this release" (CUDA 13.0, Deprecated or Dropped Operating Systems; NVIDIA's
# CUDA Features Archive and the 13.1/13.2 notes repeat it; the 13.0 Linux
# installation guide lists Ubuntu 22.04 and 24.04 only).
CUDA_LAST_MAJOR = {("ubuntu", "20.04"): 12}


def repo_key(repo, did):
    if repo in REPO_KEYS:
        return REPO_KEYS[repo]
    return "cuda-deb" if did in ("ubuntu", "debian") else "cuda-rpm"


# The oldest release of each distribution, its family, package manager and
# repository prefix: src/catalog/distro.c (gb_oses), one row per os-release ID.


# Curated per-GPU knowledge the plan decides from; the one place device IDs
# are written outside pci.ids (docs/plan.md gives each reason):
#   aliases    short names people type for --target-gpu ("|"-separated)
#   grace      a Grace superchip: the CPU is aarch64 (sbsa), open module only
#   held_back  kept on the proprietary module by default (cloud vendors'
#              images after GSP problems on the open one; docs/plan.md)
#   hgx8_nvsw  NVSwitches on the 8-GPU HGX board of that SXM part (NVIDIA's
#              NVSwitch platform list: HGX B300, B200, H200, H100, H800 and
#              A100 8-GPU baseboards; the counts from the Fabric Manager
#              user guide's baseboard topologies: A100 6, H100/H200 4, B200 2;
#              H800's board is H100's; B300 2 as B200, data/SOURCES.md)
#   hidden     the board's NVSwitches are not PCI functions of the host:
#              from B200 on they sit behind the board's ConnectX bridge
#              (the fabric manager and NVLSM reach them over InfiniBand),
#              so a live 8-GPU host shows none and the plan assumes them
#   mem_mib    the memory NVML reports as total (nvidia-smi -q, FB Memory
#              Usage, Total) on these parts in the clouds; 0 = not recorded,
#              then memory gates are decided at verification. H200: data/
#              machines/h200-ubuntu2404/nvidia-smi-q.txt; the others from
#              the instances' published nvidia-smi output (docs/plan.md).
# A Grace part, and the T4G (sold only with AWS Graviton2, g5g), imply an
# aarch64 host (AARCH64_ONLY).
AARCH64_ONLY = {0x1eb4}
HIDDEN_NVSWITCHES = {0x2901, 0x3182}
GPU_TRAITS = [
    # device, aliases, grace, held_back, hgx8_nvsw, mem_mib (hidden: HIDDEN_NVSWITCHES)
    (0x102d, "K80", False, False, 0, 11441),
    (0x15f8, "P100", False, False, 0, 16280),
    (0x1db1, "V100", False, True, 0, 16160),
    (0x1db5, "V100-32GB", False, True, 0, 32510),
    (0x1eb4, "T4G", False, True, 0, 15360),
    (0x1eb8, "T4", False, True, 0, 15360),
    (0x20b0, "A100-40GB", False, False, 6, 40960),
    (0x20b2, "A100", False, False, 6, 81920),
    (0x20b5, "A100-PCIE", False, False, 0, 0),
    (0x20b7, "A30", False, False, 0, 0),
    (0x2230, "RTX-A6000", False, False, 0, 0),
    (0x2236, "A10", False, False, 0, 0),
    (0x2237, "A10G", False, True, 0, 23028),
    (0x2321, "H100-NVL", False, False, 0, 0),
    (0x2324, "H800", False, False, 4, 0),
    (0x2330, "H100", False, False, 4, 81559),
    (0x2331, "H100-PCIE", False, False, 0, 0),
    (0x2335, "H200", False, False, 4, 143771),
    (0x233b, "H200-NVL", False, False, 0, 0),
    (0x2342, "GH200", True, False, 0, 0),
    (0x2348, "GH200-144G", True, False, 0, 0),
    (0x2684, "RTX 4090|RTX-4090", False, False, 0, 0),
    (0x26b9, "L40S", False, True, 0, 46068),
    (0x27b8, "L4", False, True, 0, 23034),
    (0x2901, "B200", False, False, 2, 0),
    (0x2941, "GB200", True, False, 0, 0),
    (0x2bb5, "RTX PRO 6000|RTX-PRO-6000", False, False, 0, 0),
    (0x3182, "B300", False, False, 2, 0),
    (0x31c2, "GB300", True, False, 0, 0),
]


def gen_traits():
    def b(v):
        return "true" if v else "false"
    out = ["const struct gb_gpu_traits gb_gpu_traits[] = {"]
    for dev, aliases, grace, held, nvsw, mem in GPU_TRAITS:
        arm = grace or dev in AARCH64_ONLY
        hidden = dev in HIDDEN_NVSWITCHES
        out.append(f"\t{{ 0x{dev:04x}, {c_str(aliases)}, {b(grace)}, {b(arm)}, {b(held)}, {nvsw}, {b(hidden)}, {mem} }},")
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
    newer = sorted(d for d in re.findall(r"\b(20\d\d-\d\d-\d\d)\b", text) if d > date)
    if newer:
        sys.exit(f"gen-catalog: {path} cites {newer[-1]}, newer than its Catalog date {date}: raise the date")
    return date


def gen_data(data):
    date = catalog_date(data)
    out = ["/* SPDX-License-Identifier: MIT */",
           "/* GENERATED by scripts/gen-catalog.py from data/; do not edit. */",
           '#include "catalog.h"', "",
           "/* The catalog's version and date: data/SOURCES.md, Catalog date. */",
           f"const char gb_catalog_version[] = {c_str(date.replace('-', '.'))};",
           f"const char gb_catalog_date[] = {c_str(date)};", ""]
    out += gen_traits()
    out.append("const struct gb_branch gb_branches[] = {")
    for b, t, eol, kmin in BRANCHES:
        tc = {"ltsb": "GB_BRANCH_LTSB", "production": "GB_BRANCH_PRODUCTION",
              "new-feature": "GB_BRANCH_NEW_FEATURE", "legacy": "GB_BRANCH_LEGACY"}[t]
        out.append(f"\t{{ {b}, {tc}, {c_str(eol or None)}, {c_str(kmin)} }},")
    out.append("};")
    out.append("const size_t gb_branches_len = sizeof(gb_branches) / sizeof(gb_branches[0]);")
    out.append(f"const unsigned gb_proprietary_removed_from = {PROPRIETARY_LAST_BEFORE};")
    out.append("")

    # Runfiles: NVIDIA's own downloads only (no Vulkan betas, no betas).
    keep = {"PRODUCTION", "NEW_FEATURE", "TESLA", "LEGACY"}
    rows = []
    with open(os.path.join(data, "nvidia/driver-runfiles.tsv")) as f:
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
            rows.append((tuple(int(x) for x in v.split(".")), v, arch, cat, sha, int(size), url))
    rows.sort()
    out.append("const struct gb_runfile gb_runfiles[] = {")
    for _, v, arch, cat, sha, size, url in rows:
        out.append(f"\t{{ {c_str(v)}, {c_str(arch)}, {c_str(cat)}, {c_str(sha)}, {size}ull, {c_str(url)} }},")
    out.append("};")
    out.append("const size_t gb_runfiles_len = sizeof(gb_runfiles) / sizeof(gb_runfiles[0]);")
    out.append("")

    out.append("const struct gb_cuda_release gb_cuda_releases[] = {")
    for ver, mind in CUDA_MIN_DRIVER:
        major = ver.split(".")[0]
        manifest = next((m for m in CUDA_MANIFESTS if m.startswith(ver + ".")), None)
        mpath = os.path.join(data, f"nvidia/cuda-redist/redistrib_{manifest}.json") if manifest else None
        msha = sha256(mpath) if manifest else None
        msize = os.path.getsize(mpath) if manifest else 0
        oldest = "GB_ARCH_" + CUDA_OLDEST_ARCH[major].upper()
        out.append(f"\t{{ {c_str(ver)}, {c_str(mind)}, {oldest}, {c_str(manifest)}, {c_str(msha)}, {msize}ull }},")
    out.append("};")
    out.append("const size_t gb_cuda_releases_len = sizeof(gb_cuda_releases) / sizeof(gb_cuda_releases[0]);")
    out.append("")

    # The components of each manifest, with the platforms they exist for.
    out.append("const struct gb_cuda_component gb_cuda_components[] = {")
    for m in CUDA_MANIFESTS:
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
    for did, ver, repo, hwe, ga, hwek, suite in DISTROS:
        dd, dopen = DISTRO_DRIVERS.get((did, ver), (None, False))
        dopen = "true" if dopen else "false"
        out.append(f"\t{{ {c_str(did)}, {c_str(ver)}, {c_str(repo)}, {c_str(hwe)}, {c_str(ga)}, {c_str(hwek)}, {c_str(suite)}, {c_str(dd)}, {dopen}, {c_str(repo_key(repo, did))}, {CUDA_LAST_MAJOR.get((did, ver), 0)} }},")
    out.append("};")
    out.append("const size_t gb_distros_len = sizeof(gb_distros) / sizeof(gb_distros[0]);")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
