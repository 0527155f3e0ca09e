# Full disk, at each place a run writes: the cache (the download), the
# state directory (journal, status), the image root's staging (the unpacked
# runfile); the CUDA prefix is t-install-cuda's. Each: a small tmpfs filled
# so that stage runs out of space; the run ends nonzero, the error names the
# path, the space needed and the space there is; the machine is as it was
# and nothing is half-installed; after space is freed a rerun succeeds.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
[ "$(id -u)" = 0 ] || skip "needs root (a small tmpfs per case)"
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" >/dev/null
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"
K=$(ls "$FIX/h100x8-ubuntu2204/lib/modules")
CREATES="creates:nvidia-installer:0:lib/modules/$K/kernel/drivers/video/nvidia.ko,creates:nvidia-installer:0:usr/bin/nvidia-smi"
M=$TMP/m S=$TMP/s
MNT=
trap '[ -z "$MNT" ] || umount "$MNT" 2>/dev/null; rm -rf "$TMP"' EXIT
fresh() {
	rm -rf "$M" "$S"
	cp -a "$FIX/h100x8-ubuntu2204" "$M"
	mkdir -p "$M/boot" "$S" && : >"$M/boot/vmlinuz-$K"
}
# small DIR KIB FREE_KIB: a tmpfs of KIB on DIR with FREE_KIB left
small() {
	mount -t tmpfs -o "size=${2}k" tmpfs "$1" || skip "cannot mount a tmpfs"
	MNT=$1
	head -c "$((($2 - $3) * 1024))" /dev/zero >"$1/.filler" 2>/dev/null || true
}
unmount() { umount "$MNT" && MNT=; }
# --no-verify: the subject is the install on a full filesystem (an image
# build: --target-gpu, where verify is skipped anyway); t-firstboot's image
# rows run the same install through the first boot's verify.
gbrun() {
	GPUBOOT_FAKE_OPS="root=$M,$CREATES" expect_exit "$1" "$GB" --root "$M" run --profile minimal --method runfile \
		--config "$TMP/always.conf" --mirror "file://$B/mirror" --trust-key "$B/key.pub" --state-dir "$S" \
		--no-verify --target-gpu H100
}
snap() { (cd "$M" && find . -path ./var/lib/gpuboot -prune -o -print0 | sort -z | xargs -0 ls -ld --time-style=+); }
untouched() {
	snap >"$TMP/now"; diff "$TMP/want" "$TMP/now" >&2 || fail "$1: the machine was changed"
	[ ! -e "$M/lib/modules/$K/kernel/drivers/video/nvidia.ko" ] || fail "$1: half-installed"
	[ ! -e "$M/usr/sbin/policy-rc.d" ] || fail "$1: policy-rc.d left"
}

# 1. The cache: the runfile does not fit (the status and journal do).
fresh
snap >"$TMP/want"
small "$S" 256 52
gbrun 13
grep -q "cannot write the cache '$S/cache/tmp/.*': No space left on device (need [0-9]* bytes for driver runfile .*, [0-9]* available)" "$TMP/err" ||
	fail "cache: $(cat "$TMP/err")"
[ -z "$(ls -A "$S/cache/sha256")$(ls -A "$S/cache/tmp")" ] || fail "cache: a partial download left"
untouched cache
rm "$S/.filler"
gbrun 0
unmount

# 2. The state directory: the journal or the status document does not fit.
fresh
snap >"$TMP/want"
small "$S" 256 4
gbrun 1
grep -Eq "Failed to write the (status document|journal) '$S/(status|journal).json': No space left on device \(need (about )?[0-9]+ bytes, [0-9]+ available\)" "$TMP/err" ||
	fail "state: $(cat "$TMP/err")"
untouched state
rm "$S/.filler"
gbrun 0
unmount

# 3. The image root: the runfile unpacks into its var/lib/gpuboot.
fresh
mkdir -p "$M/var/lib/gpuboot"
snap >"$TMP/want"
small "$M/var/lib/gpuboot" 64 8
gbrun 1
grep -q "No space left on device" "$TMP/err" && grep -q "into $M/var/lib/gpuboot/runfile: " "$TMP/err" ||
	fail "staging: $(cat "$TMP/err")"
grep -Eq "needs more than the [0-9]+ bytes written so far; [0-9]+ available" "$S/status.json" || fail "staging: the space needed is not named: $(cat "$TMP/err")"
untouched staging
[ -z "$(ls "$M/var/lib/gpuboot/runfile" 2>/dev/null)" ] || fail "staging: left $(ls "$M/var/lib/gpuboot/runfile")"
rm "$M/var/lib/gpuboot/.filler"
gbrun 0
[ -e "$M/lib/modules/$K/kernel/drivers/video/nvidia.ko" ] || fail "no module after space was freed"
unmount
echo ok
