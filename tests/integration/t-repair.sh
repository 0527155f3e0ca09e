# gpuboot --repair through the real binary, once main.c has the options
# (--kernel KVER, --if-needed, --from-hook; docs/repair.md): on a copy of
# the Debian 12 disk fixture, --if-needed with the module loaded at the
# installed version exits 0 and writes nothing (no state directory, no
# status, no journal); --kernel names a kernel without headers: exit 14 and
# the headers package in the message, nothing run. Skipped (77) while the
# options are not wired.
. tests/integration/lib.sh
"$GB" --help 2>&1 | grep -q -- '--if-needed' || skip "gpuboot --repair --if-needed is not wired into main.c yet"
M=$TMP/machine
cp -a "$FIX/debian12-nvidia535-disk" "$M"
mkdir -p "$M/proc/sys/kernel" "$M/sys/module/nvidia"
echo 6.1.0-50-cloud-amd64 >"$M/proc/sys/kernel/osrelease"
echo 535.261.03 >"$M/sys/module/nvidia/version"
S=$TMP/state
expect_exit 0 "$GB" --root "$M" --state-dir "$S" --repair --if-needed
[ ! -e "$S" ] || fail "--repair --if-needed with nothing to do wrote '$S'"

K=6.1.0-57-cloud-amd64
touch "$M/boot/vmlinuz-$K"
mkdir -p "$M/lib/modules/$K" "$M/usr/src/nvidia-current-open-535.261.03"
touch "$M/usr/src/nvidia-current-open-535.261.03/dkms.conf"
printf '\nPackage: linux-image-%s\nStatus: install ok installed\nVersion: 6.1.183-1\n' "$K" >>"$M/var/lib/dpkg/status"
R=$TMP/record
# A run waiting for its reboot (the resume unit armed): a repair (gpuboot-repair.service runs at
# every boot, maybe first) keeps its own journal and never sets the run's aside.
mkdir -p "$S"
cat >"$S/journal.json" <<'EOF'
{"version": 1, "command": "run", "state": "reboot-pending", "plan_hash": "2222222222222222222222222222222222222222222222222222222222222222",
 "boots": 1, "boot_id": "cd4a152d-3256-48f1-b386-7599899ce3c2",
 "steps": [{"id": "reboot:kernel", "stage": "prepare", "kind": "reboot", "state": "done"}]}
EOF
cp "$S/journal.json" "$TMP/run-journal.json"
mkdir -p "$M/etc/systemd/system/multi-user.target.wants"
printf '[Service]\nExecStart=/usr/local/bin/gpuboot run --resume\n' >"$M/etc/systemd/system/gpuboot-resume.service"
ln -s /etc/systemd/system/gpuboot-resume.service "$M/etc/systemd/system/multi-user.target.wants/gpuboot-resume.service"
GPUBOOT_FAKE_OPS="record=$R,root=$M" expect_exit 14 "$GB" --root "$M" --state-dir "$S" --repair --kernel "$K"
[ -f "$M/etc/systemd/system/gpuboot-resume.service" ] && [ -L "$M/etc/systemd/system/multi-user.target.wants/gpuboot-resume.service" ] ||
	fail "the repair disarmed the run's resume unit"
cmp -s "$S/journal.json" "$TMP/run-journal.json" || fail "the repair touched the run's journal"
[ ! -e "$S/journal.json.prev" ] || fail "the repair set the run's journal aside"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert d['command'] == 'repair', d['command']" "$S/repair-journal.json" ||
	fail "the repair's own journal is not repair-journal.json"
grep -q "linux-headers-$K" "$TMP/out" "$TMP/err" || fail "--repair --kernel $K does not name linux-headers-$K"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); st = [s for s in d['stages'] if s['name'] == 'install'][0]; assert st['errno'] == 'ENOPKG', st" "$S/status.json" ||
	fail "the status names the repair's errno other than ENOPKG (the guest showed EOTHER)"
! grep -q '^run ' "$R" 2>/dev/null || fail "--repair --kernel $K ran a command though it cannot build"

# --repair --nodes (the udev rule's call when an NVIDIA module loads): the
# nodes and /dev/char links of what is loaded (an H200's proc/devices and
# proc/driver/nvidia, 580.159.04), made through the fake; no state
# directory, journal or status; a second call makes nothing.
N=$TMP/nodes-root
cp -a "$M" "$N"
cp -R tests/load/h200-580-nodes/proc "$N/"
S2=$TMP/nodes-state
R2=$TMP/nodes-record
GPUBOOT_FAKE_OPS="record=$R2,root=$N" expect_exit 0 "$GB" --root "$N" --state-dir "$S2" --repair --nodes
[ ! -e "$S2" ] || fail "--repair --nodes wrote the state directory '$S2'"
[ "$(grep -c '^mknod ' "$R2")" -eq 6 ] || fail "--repair --nodes did not make the 6 nodes: $(cat "$R2")"
grep -qx 'mknod dev/nvidia-caps/nvidia-cap1 0400 241:1 0:0' "$R2" || fail "the MIG config capability node is not 0400 241:1"
[ "$(readlink "$N/dev/char/238:0")" = ../nvidia-uvm ] || fail "no /dev/char/238:0 link to ../nvidia-uvm"
grep -q "6 NVIDIA device nodes: 6 made, 6 /dev/char links made" "$TMP/out" || fail "--repair --nodes did not say what it made"
GPUBOOT_FAKE_OPS="record=$R2,root=$N" expect_exit 0 "$GB" --root "$N" --state-dir "$S2" --repair --nodes
grep -q "6 NVIDIA device nodes: 0 made, 0 /dev/char links made" "$TMP/out" || fail "a second --repair --nodes changed something"
# Nothing loaded: nothing to make, not a failure (a rule can fire as a module goes away).
sed -i '/nvidia/d' "$N/proc/devices"
GPUBOOT_FAKE_OPS="record=$R2,root=$N" expect_exit 0 "$GB" --root "$N" --repair --nodes
grep -q "no NVIDIA module is loaded" "$TMP/out" || fail "--repair --nodes without a module did not say so"
# --dry-run: what it would make, nothing made
cp tests/load/h200-580-nodes/proc/devices "$N/proc/devices"
rm -rf "$N/dev"
GPUBOOT_FAKE_OPS="record=$R2,root=$N" expect_exit 0 "$GB" --root "$N" --repair --nodes --dry-run
grep -q "would make dev/nvidia-caps/nvidia-cap2 241:2 0444" "$TMP/out" || fail "--repair --nodes --dry-run did not list the nodes"
[ ! -e "$N/dev" ] || fail "--repair --nodes --dry-run made something"

# --repair --check-next-boot (automation before a reboot): the kernel the
# machine boots next and whether it has its module; reads only. The disk
# fixture's one kernel has its module: 0. A newer kernel installed without
# one: the newest under boot/ (no boot loader configuration): 14, named,
# the fix given. Then with GRUB's files (Debian 12's grub-mkconfig output,
# tests/prepare/, its two kernels renamed to this root's): a saved default
# on the old kernel boots it next: 0; the stock default (the first entry,
# the newest kernel): 14. Nothing is written anywhere.
C=$TMP/next-boot
cp -a "$FIX/debian12-nvidia535-disk" "$C"
S3=$TMP/next-state
expect_exit 0 "$GB" --root "$C" --state-dir "$S3" --repair --check-next-boot
grep -q "^next boot  6.1.0-50-cloud-amd64 (the newest kernel under boot/" "$TMP/out" || fail "next boot: $(cat "$TMP/out")"
grep -q "^ready      6.1.0-50-cloud-amd64 has the NVIDIA module 535.261.03" "$TMP/out" || fail "ready: $(cat "$TMP/out")"
touch "$C/boot/vmlinuz-6.1.0-57-cloud-amd64"
mkdir -p "$C/lib/modules/6.1.0-57-cloud-amd64"
expect_exit 14 "$GB" --root "$C" --state-dir "$S3" --repair --check-next-boot
grep -q "^NOT READY  no NVIDIA module for 6.1.0-57-cloud-amd64" "$TMP/out" && grep -q "^fix        " "$TMP/out" ||
	fail "not ready: $(cat "$TMP/out")"
mkdir -p "$C/boot/grub"
grub_as_here() { sed 's/6\.1\.0-21-amd64/6.1.0-57-cloud-amd64/g; s/6\.1\.0-18-amd64/6.1.0-50-cloud-amd64/g' "$1" >"$2"; }
grub_as_here tests/prepare/debian12-saved/boot/grub/grub.cfg "$C/boot/grub/grub.cfg"
grub_as_here tests/prepare/debian12-saved/boot/grub/grubenv "$C/boot/grub/grubenv"
expect_exit 0 "$GB" --root "$C" --state-dir "$S3" --repair --check-next-boot
grep -q "^next boot  6.1.0-50-cloud-amd64 (the boot loader's default entry)" "$TMP/out" || fail "GRUB saved: $(cat "$TMP/out")"
grub_as_here tests/prepare/debian12/boot/grub/grub.cfg "$C/boot/grub/grub.cfg"
rm "$C/boot/grub/grubenv"
expect_exit 14 "$GB" --root "$C" --state-dir "$S3" --repair --check-next-boot
grep -q "^next boot  6.1.0-57-cloud-amd64 (the boot loader's default entry)" "$TMP/out" || fail "GRUB default 0: $(cat "$TMP/out")"
[ ! -e "$S3" ] || fail "--check-next-boot wrote the state directory"
