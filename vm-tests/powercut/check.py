#!/usr/bin/env python3
"""vm-tests/powercut: the CHECK, run first at every boot after a power cut.

gpuboot's state as the cut left it: every status.json, journal.json (and
its .prev), gpuboot.prom, nfd-features and mirror-version under the state
dir is whole (present where it must be, not zero-length, parses); no
leftover temp file stands where a real one should; every cache entry's
sha256 is its name; the file gpuboot writes under the root is absent or
whole; `gpuboot status --json` reads the state; then a rerun of the
workload resumes or restarts cleanly (exit 1 at the install, as every
run of this workload ends: the fixture has no kernel).

The control file, written in place chunk by chunk with an fsync after each
(vm-tests/powercut/control.py), goes through the same whole-file test: it
is found torn whenever the cut fell during its rewrite, which shows the
test sees a torn file when a cut leaves one. It never fails a cycle.

Prints POWERCUT-INFO lines, the status document as found
(POWERCUT-STATUS-B64, for the host's schema check) and last
"POWERCUT-CHECK <boot> ok" or "POWERCUT-CHECK <boot> FAIL <what>".
Runs on the host too (vm-tests/powercut.sh's self-test)."""
import argparse
import base64
import hashlib
import json
import os
import re
import subprocess
import sys

# gb_write_file_atomic's temp files (".<name>.<boot tag>.XXXXXX", before
# the tag ".<name>.XXXXXX") and the root writer's (".#<name>.<8 hex>"):
# never read by gpuboot.
STATE_TEMP = re.compile(r"^\.(status\.json|journal\.json(?:\.prev)?|gpuboot\.prom|nfd-features|mirror-version)"
                        r"\.(?:([0-9a-f]{8})\.)?[A-Za-z0-9]{6}$")
ROOT_TEMP = re.compile(r"^\.#(.+)\.[0-9a-f]{8}$")
KNOWN = {"status.json", "journal.json", "journal.json.prev", "gpuboot.prom", "nfd-features", "mirror-version",
         "lock", "cache"}
BLACKLIST = "etc/modprobe.d/gpuboot-blacklist-nouveau.conf"


class Check:
    def __init__(self, boot):
        self.boot = boot
        self.problems = []

    def info(self, text):
        print(f"POWERCUT-INFO {self.boot} {text}", flush=True)

    def fail(self, text):
        self.problems.append(text)


def whole_json(path):
    """(document, None) or (None, what is wrong)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, "missing"
    if not data:
        return None, "zero-length"
    try:
        return json.loads(data), None
    except ValueError as e:
        return None, f"torn: {len(data)} bytes that do not parse ({e})"


def whole_text(path, line_re):
    """None when every line of path matches line_re and the file ends with a newline, else what is wrong."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return "missing"
    if not data:
        return "zero-length"
    if not data.endswith(b"\n"):
        return f"torn: {len(data)} bytes, no final newline"
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not re.fullmatch(line_re, line):
            return f"torn: line {n} is {line[:60]!r}"
    return None


def check_documents(c, state):
    status, err = whole_json(os.path.join(state, "status.json"))
    if err:
        c.fail(f"status.json {err}")
    elif status.get("command") != "run" or not isinstance(status.get("schema_version"), int):
        c.fail("status.json parses but is not a run's status document")
    journal, err = whole_json(os.path.join(state, "journal.json"))
    if err:
        c.fail(f"journal.json {err}")
    elif not (isinstance(journal.get("steps"), list) and journal.get("plan_hash") and journal.get("state")):
        c.fail("journal.json parses but is not a journal")
    else:
        c.info(f"journal state={journal['state']} steps={len(journal['steps'])}")
    if os.path.exists(os.path.join(state, "journal.json.prev")):
        prev, err = whole_json(os.path.join(state, "journal.json.prev"))
        if err:
            c.fail(f"journal.json.prev {err}")
    for name, line_re in (("gpuboot.prom", r"# .*|[a-z_]+(\{.*\})? \S+"), ("nfd-features", r"[a-z.]+/[a-z-]+=\S*"),
                          ("mirror-version", r"[0-9]+")):
        err = whole_text(os.path.join(state, name), line_re)
        if err:
            c.fail(f"{name} {err}")
    if status:
        with open(os.path.join(state, "status.json"), "rb") as f:
            print(f"POWERCUT-STATUS-B64 {c.boot} {base64.b64encode(f.read()).decode()}", flush=True)


def check_leftovers(c, state, root, prev_tag):
    left = []
    for name in sorted(os.listdir(state)):
        if name in KNOWN:
            continue
        m = STATE_TEMP.match(name)
        if not m:
            c.fail(f"unexpected file {name} in the state dir")
            continue
        left.append(name)
        # The last boot's writes removed every temp file of the boots before
        # it: only the cut that ended it may have left one.
        if m.group(2) and prev_tag and m.group(2) != prev_tag:
            c.fail(f"{name}: a temp file of a boot before the last (this cut's boot is {prev_tag}) still stands")
    for name in ("status.json", "journal.json"):
        p = os.path.join(state, name)
        if os.path.islink(p) or not os.path.isfile(p):
            c.fail(f"{name} is not a regular file")
    cache = os.path.join(state, "cache", "sha256")
    entries = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
    for name in entries:
        with open(os.path.join(cache, name), "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != name:
            c.fail(f"cache entry {name} holds bytes of sha256 {got}")
    parts = os.listdir(os.path.join(state, "cache", "tmp")) if os.path.isdir(os.path.join(state, "cache", "tmp")) else []
    rdir = os.path.join(root, os.path.dirname(BLACKLIST))
    rleft = [n for n in os.listdir(rdir) if ROOT_TEMP.match(n)] if os.path.isdir(rdir) else []
    c.info(f"cache entries={len(entries)} (all sha256-checked) cache/tmp parts={len(parts)} "
           f"state-dir temp leftovers={len(left)} {' '.join(left)} root temp leftovers={len(rleft)}")


def check_root_file(c, root, ref):
    p = os.path.join(root, BLACKLIST)
    if not os.path.exists(p):
        c.info("root file etc/modprobe.d/gpuboot-blacklist-nouveau.conf: absent (removed by the workload, not yet rewritten)")
        return
    with open(p, "rb") as f, open(ref, "rb") as g:
        got, want = f.read(), g.read()
    if got != want:
        c.fail(f"{BLACKLIST}: {len(got)} bytes, not the {len(want)} gpuboot writes")
    else:
        c.info(f"root file {BLACKLIST}: whole")


def check_gpuboot(c, a):
    r = subprocess.run([a.gb, "status", "--state-dir", a.state, "--json"], capture_output=True, text=True)
    try:
        json.loads(r.stdout)
        ok = r.returncode == 0
    except ValueError:
        ok = False
    if not ok:
        c.fail(f"gpuboot status --json: exit {r.returncode}, {r.stderr.strip()[:200]!r}")
    # The recovery: the workload's own run, once.
    r = subprocess.run(a.rerun, capture_output=True, text=True)
    status, err = whole_json(os.path.join(a.state, "status.json"))
    stages = {s.get("name"): s.get("result") for s in (status or {}).get("stages", [])}
    if r.returncode != 1 or err or status.get("exit_code") != 1 or stages.get("install") != "failed":
        tail = (r.stderr.strip().splitlines() or [""])[-1][:200]
        c.fail(f"the rerun after the cut: exit {r.returncode} (want 1, failed at install), stages {stages}, {tail!r}")
    else:
        c.info("rerun after the cut: exit 1 at the install, as every run of the workload")


def check_system(c, fsdev):
    opts = f"/proc/fs/ext4/{fsdev}/options"
    if os.path.exists(opts):
        o = open(opts).read().split()
        c.info("fs ext4 " + " ".join(x for x in o if x.startswith("data=") or x in ("barrier", "nobarrier",
                                                                                    "auto_da_alloc", "noauto_da_alloc")))
    wc = f"/sys/block/{fsdev}/queue/write_cache"
    if os.path.exists(wc):
        c.info(f"disk {fsdev}: write cache {open(wc).read().strip()} (the guest flushes it on fsync and at each commit)")
    r = subprocess.run(["dmesg"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if f"EXT4-fs ({fsdev})" in line:
            c.info("kernel: " + line.split("]", 1)[-1].strip())
        if f"EXT4-fs error (device {fsdev})" in line:
            c.fail("kernel: " + line.strip())


def main():
    p = argparse.ArgumentParser()
    for o in ("boot", "state", "root", "ref", "control", "gb"):
        p.add_argument("--" + o, required=True)
    p.add_argument("--fsdev", default="vda")
    p.add_argument("--prev-tag", default="", help="the boot tag (8 hex digits of its boot id) of the boot the cut ended")
    p.add_argument("rerun", nargs=argparse.REMAINDER, help="-- the workload's command, run once as the recovery")
    a = p.parse_args()
    a.rerun = a.rerun[1:] if a.rerun[:1] == ["--"] else a.rerun
    if not a.rerun:
        p.error("the workload's command after --")
    c = Check(a.boot)
    check_system(c, a.fsdev)
    check_documents(c, a.state)
    check_leftovers(c, a.state, a.root, a.prev_tag)
    check_root_file(c, a.root, a.ref)
    doc, err = whole_json(a.control)
    c.info(f"control (rewritten in place, fsync per chunk): {err or 'whole'}")
    if not c.problems:
        check_gpuboot(c, a)
    print(f"POWERCUT-CHECK {c.boot} " + ("ok" if not c.problems else "FAIL " + "; ".join(c.problems)), flush=True)
    return 0 if not c.problems else 1


if __name__ == "__main__":
    sys.exit(main())
