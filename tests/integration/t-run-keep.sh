# gpuboot run on machines that already have a driver: a kept driver that is
# loaded skips prepare, fetch, install and load and goes straight to the
# verification (exit 0); a kept driver that is on disk but not loaded is
# loaded through libkmod (the fake operations table here), and a failed
# insert is named from its errno and the kernel's own lines (the real
# Debian 12 guest's "NVRM: No NVIDIA GPU found." gives exit 11, cause "no
# NVIDIA GPU the driver can drive"); an image root is left for its first boot.
. tests/integration/lib.sh
FAKE=$PWD/build/fake-nvidia
export GPUBOOT_PROBE_PATTERN_MIB=64 GPUBOOT_PROBE_BW_MIB=8 GPUBOOT_PROBE_LOAD_MS=50

stages() { python3 -c "
import json; d = json.load(open('$1/status.json'))
print(' '.join('%s=%s' % (s['name'], s['result']) for s in d['stages']))"; }

# 1. Loaded and satisfying: nothing changes, the verification runs, exit 0.
M=$TMP/h100
cp -a "$FIX/h100x8-ubuntu2204" "$M"
# the capture's dpkg status keeps only the toolkit's packages; its fabric
# manager (usr/bin/nv-fabricmanager, 535.183.01, running on that machine)
# is recorded here as dpkg had it, so the kept driver needs nothing
printf '\nPackage: nvidia-fabricmanager-535\nStatus: install ok installed\nArchitecture: amd64\nVersion: 535.183.01-1\n' >>"$M/var/lib/dpkg/status"
mkdir -p "$M/dev"
for n in nvidiactl nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7; do : >"$M/dev/$n"; done
S=$TMP/s1
# (--method runfile: it brings no fabric manager, so the plan cannot replace
# the ended R535 on this NVSwitch machine and keeps it, warned)
LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" run --profile minimal --method runfile --tier passive --state-dir "$S" --run-dir "$S/run"
got=$(stages "$S")
[ "$got" = "detect=ok plan=ok prepare=skipped fetch=skipped install=skipped load=skipped verify=ok" ] || fail "stages: $got"
python3 - "$S" <<'PY' || fail "status or journal of a kept run"
import json, sys, os
d = json.load(open(os.path.join(sys.argv[1], "status.json")))
assert d["plan"]["driver"]["action"] == "keep", d["plan"]["driver"]
assert d["verification"]["command"] == "run" and d["ready"]["verified"]
j = json.load(open(os.path.join(sys.argv[1], "journal.json")))
assert j["state"] == "done" and j["effects_this_run"] == 0, j["effects_this_run"]
PY
[ -e "$S/run/verified-ready" ] || fail "a verified run set no flag"
# What is kept needs no download.
expect_exit 0 "$GB" --root "$FIX/h200-ubuntu2404" fetch --dry-run --state-dir "$TMP/nofetch"
grep -q "^dry run: 0 artifact(s) listed" "$TMP/out" || fail "a kept driver and CUDA are fetched: $(cat "$TMP/out")"
# The same machine with the training profile: 535 runs no CUDA 13, so it is replaced, never silently
# (the packages method installs the fabric manager of the new driver with it).
expect_exit 0 "$GB" --root "$M" plan --json
python3 -c "
import json, sys; d = json.load(open('$TMP/out'))['driver']
assert d['action'] == 'replace' and d['installed']['version'] == '535.183.01', d
assert 'CUDA 13.0 needs >= 580.65.06' in d['action_reason'], d['action_reason']" || fail "535 under training: $(head -40 "$TMP/out")"

# 2. On disk, not loaded: the load stage inserts through libkmod, named on failure.
M=$TMP/deb
cp -a "$FIX/debian12-nvidia535-disk" "$M"
cp -a "$FIX/l4-debian12/sys" "$M/"
mkdir -p "$M/dev"
S=$TMP/s2
GPUBOOT_FAKE_OPS="root=$M,record=$TMP/ops,module:nvidia:19,kmsg:nvidia:$PWD/tests/load/debian12-no-gpu.kmsg" \
	expect_exit 11 "$GB" --root "$M" run --profile minimal --state-dir "$S" --run-dir "$S/run"
got=$(stages "$S")
[ "$got" = "detect=ok plan=ok prepare=skipped fetch=skipped install=skipped load=failed" ] || fail "stages: $got"
grep -q "^module_load nvidia" "$TMP/ops" || fail "nvidia was not loaded through the operations table: $(cat "$TMP/ops")"
grep -q "module_load nvidia_uvm" "$TMP/ops" && fail "loading went on after nvidia failed"
expect_exit 0 "$GB" status --state-dir "$S"
grep -q "^cause: *load failed: nvidia: no NVIDIA GPU the driver can drive" "$TMP/out" || fail "cause: $(cat "$TMP/out")"
grep -q "^errno: *ENODEV" "$TMP/out" || fail "errno: $(cat "$TMP/out")"
python3 - "$S/status.json" <<'PY' || fail "the load result in the status"
import json, sys
d = json.load(open(sys.argv[1]))
l = d["load"]
assert l and "NVRM: No NVIDIA GPU found." in json.dumps(l), l
PY
# ... and when the insert works, the modules are live in the fixture's world
# (--no-verify: this Debian disk has no fake NVIDIA libraries; the load is the
# subject, and t-firstboot's debian-distro row loads and verifies).
S=$TMP/s3
rm -f "$TMP/ops"
GPUBOOT_FAKE_OPS="root=$M,record=$TMP/ops" expect_exit 0 "$GB" --root "$M" run --profile minimal --no-verify --state-dir "$S" --run-dir "$S/run"
for m in nvidia nvidia_uvm nvidia_modeset; do
	grep -q "^$m .* Live" "$M/proc/modules" || fail "$m is not live after the load: $(cat "$M/proc/modules")"
done
# A rerun finds them live: nothing is inserted again.
rm -f "$TMP/ops"
GPUBOOT_FAKE_OPS="root=$M,record=$TMP/ops" expect_exit 0 "$GB" --root "$M" run --profile minimal --no-verify --state-dir "$S" --run-dir "$S/run"
! grep -q "module_load" "$TMP/ops" 2>/dev/null || fail "a rerun inserted again: $(cat "$TMP/ops")"

# 3. An image root (Packer) with the driver built in: nothing loads, verification waits for the first boot.
M=$TMP/img
cp -a "$FIX/debian12-nvidia535-disk" "$M"
S=$TMP/s4
expect_exit 0 "$GB" --root "$M" run --target-gpu T4 --profile minimal --state-dir "$S"
got=$(stages "$S")
[ "$got" = "detect=ok plan=ok prepare=skipped fetch=skipped install=skipped load=skipped verify=skipped" ] || fail "image stages: $got"
# Without --state-dir, an image keeps its state inside: its first boot reads it.
expect_exit 0 "$GB" --root "$M" run --target-gpu T4 --profile minimal
[ -f "$M/var/lib/gpuboot/status.json" ] && [ -f "$M/var/lib/gpuboot/journal.json" ] || fail "the image's state is not in the image"
# 4. nouveau drives the GPU, the kept driver is on disk: prepare unbinds and
#    unloads nouveau (nothing holds it), blacklists it, then the load runs
#    (--no-verify as in 3: no fake NVIDIA libraries on this disk).
M=$TMP/nv
cp -a "$FIX/debian12-nvidia535-disk" "$M"
cp -a "$FIX/t4-nouveau-ubuntu2204/sys" "$M/"
mkdir -p "$M/sys/module/nouveau" "$M/sys/bus/pci/drivers/nouveau" "$M/proc" "$M/dev"
echo live >"$M/sys/module/nouveau/initstate"
echo 0 >"$M/sys/module/nouveau/refcnt"
: >"$M/sys/bus/pci/drivers/nouveau/unbind"
ln -s ../../devices/0000:00:04.0 "$M/sys/bus/pci/drivers/nouveau/0000:00:04.0"
echo "nouveau 2760704 0 - Live 0x0000000000000000" >"$M/proc/modules"
S=$TMP/s5
rm -f "$TMP/ops"
GPUBOOT_FAKE_OPS="root=$M,record=$TMP/ops" expect_exit 0 "$GB" --root "$M" run --profile minimal --no-verify --state-dir "$S" --run-dir "$S/run"
got=$(stages "$S")
[ "$got" = "detect=ok plan=ok prepare=ok fetch=skipped install=skipped load=ok verify=skipped" ] || fail "nouveau stages: $got ($(cat "$TMP/err"))"
grep -q "^module_unload nouveau" "$TMP/ops" || fail "nouveau not unloaded: $(cat "$TMP/ops")"
grep -q "0000:00:04.0" "$M/sys/bus/pci/drivers/nouveau/unbind" || fail "the GPU was not unbound from nouveau"
grep -q "^blacklist nouveau" "$M/etc/modprobe.d/gpuboot-blacklist-nouveau.conf" || fail "no blacklist"
u=$(awk '/module_unload nouveau/ { print NR; exit }' "$TMP/ops")
l=$(awk '/module_load nvidia/ { print NR; exit }' "$TMP/ops")
[ -n "$u" ] && [ -n "$l" ] || fail "no nouveau unload or no nvidia load in the operations"
[ "$u" -lt "$l" ] || fail "nvidia was loaded before nouveau left"
echo ok
