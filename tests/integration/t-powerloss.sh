# Power loss, at the level of the system calls: every write of the status
# document, the journal and a cache entry in a whole run is a temp file
# written, fsync'd, renamed over the target, and the directory fsync'd
# before the next write of it (strace -f -y). What this proves: the order a
# journaling filesystem needs so that a power cut shows the old file or the
# new one, never a zero-length or torn one (LeakSanitizer cannot run under
# ptrace: leaks are the other tests'). What it does not: a real cut
# (a dm-flakey device dropping writes) -- see docs/reliability.md.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
command -v strace >/dev/null || skip "strace missing (make deps)"
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" >/dev/null
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"
M=$TMP/m
cp -a "$FIX/h100x8-ubuntu2204" "$M"
# Its nvidia is loaded, so the kernel lists the major (the capture did not
# read proc/devices; an H200's real one, 580.159.04)
cp tests/load/h200-580-nodes/proc/devices "$M/proc/devices"
with_fabricmanager "$M" "$(bundle_driver "$B")" # NVSwitches: the fabric manager at the driver's version
K=$(ls "$M/lib/modules")
# --no-verify: the trace is of gpuboot's durable writes; t-firstboot runs
# the same runfile install through verify.
CREATES="creates:nvidia-installer:0:lib/modules/$K/kernel/drivers/video/nvidia.ko,creates:nvidia-installer:0:usr/bin/nvidia-smi"
ASAN_OPTIONS=detect_leaks=0 GPUBOOT_FAKE_OPS="root=$M,$CREATES" expect_exit 0 strace -f -y -s 0 -o "$TMP/trace" \
	-e trace=openat,write,pwrite64,fsync,fdatasync,rename,renameat,renameat2 \
	"$GB" --root "$M" run --profile minimal --method runfile --config "$TMP/always.conf" \
	--mirror "file://$B/mirror" --trust-key "$B/key.pub" --state-dir "$TMP/s" --no-verify
python3 - "$TMP/trace" "$TMP/s" <<'PY' || fail "a durable write out of order"
import os, re, sys
trace, state = sys.argv[1], os.path.realpath(sys.argv[2])
lines = open(trace).read().splitlines()
fd = re.compile(r"\((\d+)<([^>]*)>")
ren = re.compile(r'rename(?:at2?)?\((?:[^,]*, )?"([^"]+)", (?:[^,]*, )?"([^"]+)"')
writes, synced, dirsync, counts, last = {}, set(), [], {}, {}
events = []
for i, l in enumerate(lines):
    if " = -1 " in l or "resumed>" in l and "= -1" in l:
        continue
    m = fd.search(l)
    if ("write(" in l or "pwrite64(" in l) and m:
        writes[m.group(2)] = i
        synced.discard(m.group(2))
    elif ("fsync(" in l or "fdatasync(" in l) and m:
        synced.add(m.group(2))
        dirsync.append((i, m.group(2)))
    r = ren.search(l)
    if r:
        src, dst = r.group(1), r.group(2)
        if not os.path.isabs(dst):
            continue
        name = os.path.basename(dst)
        kind = "status" if name == "status.json" else "journal" if name == "journal.json" else \
            "cache" if "/cache/sha256/" in dst else None
        if not kind or not dst.startswith(state):
            continue
        if src not in writes:
            sys.exit("%s: renamed from %s, never written" % (dst, src))
        if src not in synced:
            sys.exit("%s: %s renamed before its fsync (line %d)" % (dst, src, i + 1))
        events.append((i, kind, dst))
        counts[kind] = counts.get(kind, 0) + 1
# after each rename, the directory is synced before the next rename of that file
for n, (i, kind, dst) in enumerate(events):
    d = os.path.dirname(dst)
    nxt = next((j for j, k, t in events[n + 1:] if t == dst), len(lines))
    if not any(i < j < nxt and p == d for j, p in dirsync):
        sys.exit("%s: its directory %s not synced after the rename at line %d" % (dst, d, i + 1))
for k in ("status", "journal", "cache"):
    if not counts.get(k):
        sys.exit("no durable write of the %s seen: the test saw nothing" % k)
print("durable writes checked: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
PY
echo ok
