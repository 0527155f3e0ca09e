# A killed image build leaves its bind mounts (proc, sys, dev, recursively)
# in the image root, and its policy-rc.d: the next run and `gpuboot
# --root IMG cleanup` undo them, and only those gpuboot named in the
# image's var/lib/gpuboot/chroot-mounts (a Packer chroot builder's own
# mount stays). Real mounts: root only.
. tests/integration/lib.sh
[ "$(id -u)" = 0 ] || skip "needs root (real bind mounts)"
M=$TMP/img
cp -a "$FIX/l4-debian12" "$M"
mkdir -p "$M/proc" "$M/sys" "$M/dev" "$M/var/lib/gpuboot" "$M/usr/sbin" "$M/mnt/packer"
cleanup_mounts() {
	grep " $TMP/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
}
trap 'cleanup_mounts; [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
# What a run killed inside its chroot leaves: gpuboot's binds (recursive,
# slave, as src/shared/ops.c makes them), named before each mount.
killed_build() {
	for d in proc sys dev; do
		mount --rbind "/$d" "$M/$d" && mount --make-rslave "$M/$d" || skip "bind mounts refused here"
	done
	printf 'proc\nsys\ndev\n' >"$M/var/lib/gpuboot/chroot-mounts"
	printf '#!/bin/sh\n# gpuboot: an image is being built; daemons are enabled, not started.\nexit 101\n' \
		>"$M/usr/sbin/policy-rc.d"
	chmod 0755 "$M/usr/sbin/policy-rc.d"
	printf '{"schema_version": 2, "command": "run", "result": "running", "started_at": "2026-12-03T00:00:00Z", "stages": [{"name": "install", "result": "running"}]}\n' \
		>"$M/var/lib/gpuboot/status.json"
}
# The Packer builder's own mount, which gpuboot must leave.
mount -t tmpfs packer "$M/mnt/packer" || skip "tmpfs mounts refused here"
n_under() { grep -c " $M/\(proc\|sys\|dev\)" /proc/mounts || true; }

# 1. gpuboot --root IMG cleanup
killed_build
before=$(n_under)
[ "$before" -ge 3 ] || fail "the staged build has $before mounts"
expect_exit 0 "$GB" --root "$M" cleanup
grep -q "undid what a killed run left; its status now says interrupted" "$TMP/out" || fail "cleanup said: $(cat "$TMP/out")"
grep -q "3 bind mount(s), usr/sbin/policy-rc.d" "$TMP/err" || fail "cleanup's account: $(cat "$TMP/err")"
[ "$(n_under)" = 0 ] || fail "cleanup left mounts: $(grep " $M/" /proc/mounts)"
grep -q " $M/mnt/packer " /proc/mounts || fail "cleanup unmounted the builder's own mount"
[ ! -e "$M/usr/sbin/policy-rc.d" ] || fail "cleanup left gpuboot's policy-rc.d"
[ ! -e "$M/var/lib/gpuboot/chroot-mounts" ] || fail "cleanup left the record"
python3 -c "import json,sys; d=json.load(open('$M/var/lib/gpuboot/status.json')); sys.exit(d['result']!='interrupted' or d['interrupted']['stage']!='install')" ||
	fail "the status: $(cat "$M/var/lib/gpuboot/status.json")"
# Twice: nothing to do.
expect_exit 0 "$GB" --root "$M" cleanup
grep -q "nothing left behind" "$TMP/out" || fail "a second cleanup: $(cat "$TMP/out")"
# The host's own /dev/pts and /sys/fs/cgroup are still there (slave binds:
# no unmount went back to the host).
grep -q ' /dev/pts ' /proc/mounts || fail "the host lost /dev/pts"

# 2. A mount gpuboot did not name is never touched: a proc mount of the
# builder's (no record) stays.
mount -t proc proc "$M/proc"
expect_exit 0 "$GB" --root "$M" cleanup
grep -q " $M/proc " /proc/mounts || fail "cleanup unmounted a proc mount gpuboot did not make"
umount "$M/proc"

# 3. The next run undoes them before it goes on (here: an image build
# that stops, offline with nothing cached, before it runs anything: the
# real operations, whose unmount is real).
killed_build
set +e
"$GB" --root "$M" run --target-gpu T4 --profile minimal --method distro --offline \
	>"$TMP/out" 2>"$TMP/err"
set -e
grep -q "Undid what a killed run left in $M: 3 bind mount(s), usr/sbin/policy-rc.d" "$TMP/err" ||
	fail "the next run: $(cat "$TMP/err")"
[ "$(n_under)" = 0 ] || fail "the next run left mounts: $(grep " $M/" /proc/mounts)"
# 4. On the live machine's root there is nothing to clean: a usage error.
expect_exit 2 "$GB" cleanup
echo "ok: a killed build's mounts and policy-rc.d undone by cleanup and by the next run, the builder's own left"
