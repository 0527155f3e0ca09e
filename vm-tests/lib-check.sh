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

# lc_run NAME TAIL COMMAND...: COMMAND with its output in $work/NAME.out
# and $work/NAME.err, its status in rc, the last TAIL lines of its errors
# shown indented.
lc_run() {
	lc_n=$1 lc_t=$2
	shift 2
	"$@" >"$work/$lc_n.out" 2>"$work/$lc_n.err"
	rc=$?
	sed 's/^/    /' "$work/$lc_n.err" | tail -n "$lc_t"
}

# lc_run_branch NAME TAIL BRANCH COMMAND...: lc_run with lc_profile set to the
# test's profile (work/test.profile) asking for the driver BRANCH instead.
lc_run_branch() {
	lc_b=$3
	sed "s/^branch = lts/branch = $lc_b/" "$work/test.profile" >"$work/$1.profile"
	lc_profile=$work/$1.profile
	lc_n=$1 lc_t=$2
	shift 3
	lc_run "$lc_n" "$lc_t" "$@"
	lc_profile=""
}

# lc_held_run LABEL ROOT HOLDER WORDS NAME COMMAND...: COMMAND in the
# background (its output in $work/NAME.out and .err) while the process
# HOLDER holds a package manager's lock; 8 s later its errors say WORDS
# and nothing of NVIDIA's is in ROOT's rpm database; then HOLDER is
# stopped, the function named by lc_release (if set) run, and COMMAND must
# go on and exit 0. Three checks.
lc_held_run() {
	lc_l=$1 lc_root=$2 lc_h=$3 lc_w=$4 lc_n=$5
	shift 5
	"$@" >"$work/$lc_n.out" 2>"$work/$lc_n.err" &
	lc_pid=$!
	sleep 8
	check "$lc_l:   gpuboot waits, naming the holder (pid $lc_h)" grep -q "$lc_w" "$work/$lc_n.err"
	check "$lc_l:   nothing installed while it is held" lc_rpm_none "$lc_root"
	kill "$lc_h"
	wait "$lc_h" 2>/dev/null
	[ -n "${lc_release:-}" ] && "$lc_release"
	wait "$lc_pid"
	rc=$?
	check "$lc_l:   released, the run goes on and exits 0" test "$rc" = 0
}
