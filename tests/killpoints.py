#!/usr/bin/env python3
"""Helpers of tests/integration/t-killpoints.sh.

  killpoints.py points TRACE MODE SEED SITES  the kill points to try, "site:n" a line:
                                            every passage of TRACE (MODE all), or a
                                            seeded sample: one passage of each of SITES
                                            and two journal records, and for CUDA the
                                            record before ldconfig's (MODE short)
  killpoints.py digest MACHINE STATE RECORD the end state, one line per fact, on stdout
  killpoints.py after-kill STATE SCHEMA_MD  what a kill may leave: exit 1 with the reason
"""
import hashlib
import json
import os
import random
import stat
import subprocess
import sys

STAGES = ["detect", "plan", "prepare", "fetch", "install", "load", "verify"]
FLAGS = ["driver-ready", "cuda-ready", "toolkit-ready", "verified-ready"]


def points(trace, mode, seed, sites):
    seen = {}
    pts = []
    for site in open(trace).read().split():
        seen[site] = seen.get(site, 0) + 1
        pts.append("%s:%d" % (site, seen[site]))
    if mode == "all":
        return pts
    # short: one seeded passage of each of SITES (a scenario's own), two records
    rng = random.Random(seed)
    keep = set()
    for site in sites.split(",") + ["journal"]:
        mine = [p for p in pts if p.startswith(site + ":")]
        keep.update(rng.sample(mine, min(len(mine), 2 if site == "journal" else 1)))
    if "link" in seen:
        # CUDA: the record before ldconfig's (the configuration written): the
        # rerun finds everything in place and still owes the loader's cache
        last = max(i for i, p in enumerate(pts) if p.startswith("command:"))
        keep.add("journal:%d" % (sum(p.startswith("journal:") for p in pts[:last]) - 1))
    return sorted(keep, key=pts.index)


def tree(root):
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                yield "%s link %s" % (rel, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                yield "%s dir %o" % (rel, stat.S_IMODE(st.st_mode))
            else:
                h = hashlib.sha256(open(p, "rb").read()).hexdigest()
                yield "%s file %o %s" % (rel, stat.S_IMODE(st.st_mode), h)


def digest(machine, state, record):
    out = ["machine " + x for x in tree(machine)]
    # the cache, the run dir, the state dir's own files (not their dated contents)
    for sub in ("cache", "run"):
        d = os.path.join(state, sub)
        out += ["state %s %s" % (sub, x.rsplit(" ", 1)[0] if " file " in x else x) for x in tree(d)]
    out += ["state top " + n for n in sorted(os.listdir(state))]
    for f in os.listdir(os.path.join(state, "cache", "sha256")):
        h = hashlib.sha256(open(os.path.join(state, "cache", "sha256", f), "rb").read()).hexdigest()
        out.append("cache %s %s" % (f, "verified" if h == f else "WRONG " + h))
    j = json.load(open(os.path.join(state, "journal.json")))
    out.append("journal state %s exit %s" % (j["state"], j["exit_code"]))
    out += sorted(set("journal step %s %s %s" % (s["id"], s["kind"], s["state"]) for s in j["steps"]))
    st = json.load(open(os.path.join(state, "status.json")))
    out.append("status result %s exit %s" % (st["result"], st["exit_code"]))
    out += ["status stage %s %s" % (s["name"], s["result"]) for s in st["stages"]]
    out += ["status ready %s %s" % (k, v) for k, v in sorted(st["ready"].items())]
    # the fake's effects: what was asked, once each (a resumed run asks some again)
    if os.path.exists(record):
        out += sorted(set("effect " + line for line in open(record).read().splitlines()))
    return out


def after_kill(state, schema):
    """Exit with a reason when a kill left something a reader must never see."""
    sp, jp = os.path.join(state, "status.json"), os.path.join(state, "journal.json")
    j = json.load(open(jp)) if os.path.exists(jp) else None
    done = []
    if j:
        assert j["schema_version"] == 1 and isinstance(j["steps"], list), "journal"
        done = [s["id"][6:] for s in j["steps"] if s["kind"] == "stage" and s["state"] == "done"]
    if os.path.exists(sp):
        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "status_schema.py"), sp,
                            schema], capture_output=True, text=True)
        if r.returncode:
            sys.exit("status.json fails its schema: " + r.stdout + r.stderr)
        st = json.load(open(sp))
        ended = [s["name"] for s in st["stages"] if s["result"] != "running"]
        if ended != STAGES[:len(ended)]:
            sys.exit("status stages out of order: %s" % ended)
        if st["result"] not in ("running",) and st.get("exit_code") is None:
            sys.exit("a finished status without an exit code")
        # it names the last completed stage: the journal's, or the one before
        # (the kill came between the journal record and the status write)
        if j and "resumed_at" not in j:
            if [x for x in ended if x not in done and x != "detect"]:
                sys.exit("status claims stages the journal has not done: %s vs %s" % (ended, done))
            # detect ends before the journal opens (it records detect and plan then)
            early = ended[:1] == ["detect"] and len(ended) <= 2 and set(done) <= {"detect", "plan"}
            if ended != done and ended != done[:-1] and not early:
                sys.exit("status names %s, the journal %s" % (ended, done))
    elif j:
        sys.exit("a journal but no status document")
    # the ready flags: none while the machine is being changed
    run = os.path.join(state, "run")
    flags = [f for f in FLAGS if os.path.exists(os.path.join(run, f))]
    changed = j and [s for s in j["steps"] if s["kind"] != "stage" and s["state"] != "failed"]
    if flags and changed:
        sys.exit("ready flags %s stand while the machine is changed (%s)" % (flags, changed[0]["id"]))


def main():
    if sys.argv[1] == "points":
        print("\n".join(points(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])))
    elif sys.argv[1] == "digest":
        print("\n".join(digest(sys.argv[2], sys.argv[3], sys.argv[4])))
    elif sys.argv[1] == "after-kill":
        after_kill(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
