# The runfile method end to end in an image root, for real: a generated
# makeself runfile (tests/make-runfile, recording installer), unpacked by
# gpuboot, its nvidia-installer run chrooted into the image (sh, mkdir,
# uname and their libraries copied in) for two kernels without DKMS: the
# full install for the first, --kernel-module-only for the second. The
# flags, the modules, the journal, and a rerun with zero effects.
. tests/integration/lib.sh
[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
T=build/asan/tools/install-tool
[ -x "$T" ] || skip "$T missing (make test builds it)"
R=$TMP/img
K1=6.8.0-40-generic K2=6.8.0-41-generic V=580.95.05
mkdir -p "$R/bin" "$R/usr/bin" "$R/etc" "$R/boot" "$R/lib/modules/$K1" "$R/lib/modules/$K2"
: >"$R/boot/vmlinuz-$K1"
: >"$R/boot/vmlinuz-$K2"
for b in sh mkdir uname; do
	p=$(command -v "$b")
	cp "$p" "$R/bin/$b"
	for l in $(ldd "$p" | grep -o '/[^ ]*'); do
		mkdir -p "$R$(dirname "$l")"
		cp -L "$l" "$R$l"
	done
done
MAKE_RUNFILE_RECORDING=1 MAKE_RUNFILE_ROOT='' tests/make-runfile "$TMP/d.run" "$V"
run() { "$T" --method runfile --root "$R" --state "$TMP/s" --runfile "$TMP/d.run" --version "$V" --flavor proprietary \
	--kernel "$K1" --kernel "$K2" --dkms no; }
expect_exit 0 run
A=$R/var/log/fake-installer.args
grep -qx -- "--kernel-module-type=proprietary" "$A" || fail "no module type: $(cat "$A")"
grep -qx -- "--no-dkms" "$A" || fail "no --no-dkms"
grep -qx -- "--kernel-name=$K1" "$A" || fail "no --kernel-name=$K1"
grep -qx -- "--kernel-name=$K2" "$A" || fail "no --kernel-name=$K2"
[ "$(grep -cx -- "--kernel-module-only" "$A")" = 1 ] || fail "--kernel-module-only once"
grep -qx -- "--log-file-name=/var/lib/gpuboot/nvidia-installer.log" "$A" || fail "log file"
for k in $K1 $K2; do [ -f "$R/lib/modules/$k/kernel/drivers/video/nvidia.ko" ] || fail "no module for $k"; done
grep -q '"chroot"' "$TMP/s/journal.json" || fail "journal has no chroot"
grep -q "effects=[1-9]" "$TMP/err" || fail "no effects: $(cat "$TMP/err")"
[ ! -e "$R/var/lib/gpuboot/runfile/driver-$V" ] || fail "the unpacked tree stayed"
expect_exit 0 run
grep -q "effects=0" "$TMP/err" || fail "rerun: $(cat "$TMP/err")"
[ "$(grep -cx -- "--" "$A")" = 2 ] || fail "the installer ran again on a rerun"
# A failing installer: exit status and output in the journal, the log named.
rm -f "$R/var/lib/gpuboot/runfile-driver"
echo 5 >"$R/etc/fake-installer-exit"
expect_exit 1 run
grep -q "generated failure" "$TMP/err" || fail "failure output: $(cat "$TMP/err")"
grep -q "nvidia-installer.log" "$TMP/err" || fail "log not named"
python3 -c "
import json; d = json.load(open('$TMP/s/journal.json'))
s = [x for x in d['steps'] if x.get('id', '').startswith('nvidia-installer:')][-1]
assert s['state'] == 'failed' and s.get('exit_status') == 5, s" || fail "journal of the failure"
echo ok
