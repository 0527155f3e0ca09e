# vm-tests/lib-check.sh (sourced): what the rpm test scripts
# (vm-tests/image-rpm.sh and the parts it sources) share: the scratch
# directory and its cleanup, the check counter, and the "nothing of
# NVIDIA's here" questions asked of a test root. Needs lc_name (the
# script's name); sets work (a new directory under /tmp) and pass, fail;
# installs the EXIT trap.
# SRV: the loopback server's pid, killed at the end when set.

work=$(mktemp -d "/tmp/gpuboot-$lc_name.XXXXXX")
SRV=""

pass=0 fail=0

# lc_umount_under DIR: lazily unmount what is still mounted below DIR.
lc_umount_under() {
	grep " $1/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
}

lc_cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	if grep -q " $work/" /proc/mounts; then
		echo "$lc_name: mounts left under $work:" >&2
		lc_umount_under "$work"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap lc_cleanup EXIT

# check LABEL COMMAND...: one named check, counted.
check() {
	d=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
		echo "  ok    $d"
	else
		fail=$((fail + 1))
		echo "  FAIL  $d"
	fi
}

# lc_rpm_none ROOT: nothing of NVIDIA's in ROOT's rpm database.
lc_rpm_none() {
	[ -z "$(chroot "$1" rpm -qa '*nvidia*' 'cuda-drivers*' 2>/dev/null)" ]
}

# lc_unmounted ROOT: nothing left mounted under ROOT.
lc_unmounted() {
	! grep -q " $1/" /proc/mounts
}

# lc_none ROOT: nothing installed, nothing mounted.
lc_none() {
	lc_rpm_none "$1" && lc_unmounted "$1"
}

# lc_reset ROOT PRISTINE: ROOT as PRISTINE again.
lc_reset() {
	rm -rf "$1" && cp -a "$2" "$1"
}

# lc_rq ROOT PACKAGE: its EPOCH:VERSION-RELEASE in ROOT's rpm database.
lc_rq() {
	chroot "$1" rpm -q --qf '%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n' "$2" 2>/dev/null
}
