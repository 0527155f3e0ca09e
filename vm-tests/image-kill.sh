#!/bin/sh
# vm-tests/image-kill.sh: the image install on Debian's real packages,
# killed for real. Each point copies the Debian 12 image root that
# vm-tests/image-install.sh builds (mmdebstrap, cached), starts
#   gpuboot --root R run --target-gpu T4 --profile minimal --method distro
# and, when its trigger fires (a named thing running: apt's http method, a
# .deb in partial/, dpkg-deb, a maintainer script, the compiler under DKMS,
# update-initramfs, ldconfig, the hold, ...), stops the whole process tree
# and SIGKILLs it at once, as a power cut or the OOM killer would: gpuboot,
# apt, dpkg, DKMS and the compiler alike. Then the same command again,
# which must converge: exit 0, the module built for the image's kernel with
# the plan's version, the packages at the plan's version and held, dpkg
# --audit empty, no mount left under the root, a status that parses and says
# installed (pending its first boot) with a journal that says done.
# One point fills the image's filesystem instead (a tmpfs of too little
# size): the error must name the filesystem and the space, and the rerun
# after it is grown must converge.
#
# Not part of `make test` (an hour and more on 2 cores: every rerun after a
# kill before DKMS finished builds the module again): `make soak-realkill`.
# Prints a line per point and "N points, N kills, N failures, T s";
# exit 1 on a failure, 77 when it cannot run here.
#
# env: POINTS="name ..."  only these points (default: all, in order)
#      GB_STATIC             the binary (default build/gpuboot)
#      KEEP=1                keep the work directory
set -u
cd "$(dirname "$0")/.."
GB=${GB_STATIC:-build/gpuboot}
VERSION=535.309.01
[ "$(id -u)" = 0 ] || { echo "image-kill: needs root (chroot, bind mounts), skipped"; exit 77; }
for t in mmdebstrap readelf pgrep; do
	command -v "$t" >/dev/null || { echo "image-kill: $t missing, skipped"; exit 77; }
done
[ -x "$GB" ] || { echo "image-kill: $GB missing (make static)"; exit 1; }
img=$(vm-tests/image-install.sh --build-only) || { echo "image-kill: the image root could not be built"; exit 1; }
work=$(mktemp -d /tmp/gpuboot-image-kill.XXXXXX)
seed=$work/seed # apt's lists and .debs of a finished install: later points download less
cleanup() {
	grep " $work/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# name|trigger: a shell test run every 0.1 s while the first run lives
POINT_LIST='apt-partial-deb|ls "$R"/var/cache/apt/archives/partial/*.deb >/dev/null 2>&1
apt-http|proc_cmd "apt-get install" && proc_named http
apt-get-update|proc_cmd "apt-get update"
dpkg-deb|proc_named dpkg-deb
dpkg-unpack|proc_cmd "dpkg .*--unpack"
maintainer-script|proc_cmd "/var/lib/dpkg/info/.*\.postinst"
dkms|proc_named dkms
dkms-compiler|proc_named cc1
dkms-compiler-late|proc_named_for cc1 60
depmod|proc_named depmod
update-initramfs|proc_named update-initramfs
mkinitramfs-compress|proc_named zstd
ldconfig|proc_named ldconfig
apt-mark-hold|proc_cmd "apt-mark hold"
firstboot-unit|grep -q gpuboot-firstboot.service "$R/var/lib/gpuboot/journal.json" 2>/dev/null
full-disk|full_disk'

. vm-tests/lib-kill.sh
FIRST_SEEN=
proc_named_for() { # named $1, seen for $2 s
	proc_named "$1" || return 1
	now=$(date +%s)
	[ -n "$FIRST_SEEN" ] || FIRST_SEEN=$now
	[ $((now - FIRST_SEEN)) -ge "$2" ]
}
full_disk() { return 1; } # the full-disk point kills nothing: the disk stops it

run_gb() {
	"$GB" --root "$R" run --target-gpu T4 --profile minimal --method distro
}

pass=0 fail=0 kills=0 points=0
t_all=$(date +%s)
failed() {
	fail=$((fail + 1))
	echo "  FAIL  $name: $*"
}
check_converged() { # after the rerun
	kver=$(ls "$R/lib/modules")
	ko=$R/lib/modules/$kver/updates/dkms/nvidia-current.ko
	[ "$rc" = 0 ] || { failed "the rerun exited $rc: $(tail -3 "$work/$name.rerun.err" | tr '\n' ' ')"; return; }
	[ -f "$ko" ] || { failed "no module for $kver"; return; }
	mver=$(readelf -p .modinfo "$ko" 2>/dev/null | sed -n 's/^ *\[ *[0-9a-f]*\] *version=//p' | head -n1)
	vmagic=$(readelf -p .modinfo "$ko" 2>/dev/null | sed -n 's/^ *\[ *[0-9a-f]*\] *vermagic=//p' | head -n1)
	[ "$mver" = "$VERSION" ] || { failed "module version '$mver'"; return; }
	case $vmagic in "$kver "*) ;; *) failed "vermagic '$vmagic' is not $kver"; return ;; esac
	held=$(chroot "$R" apt-mark showhold | tr '\n' ' ')
	for p in nvidia-kernel-dkms nvidia-smi libcuda1 libnvidia-ml1 firmware-nvidia-gsp; do
		v=$(chroot "$R" dpkg-query -W -f '${Version} ${Status}' "$p" 2>/dev/null)
		case $v in "$VERSION"-*" install ok installed" | "$VERSION"-*" hold ok installed") ;; *)
			failed "$p is '$v'"
			return
			;;
		esac
		case " $held" in *" $p "*) ;; *) failed "$p not held"; return ;; esac
	done
	audit=$(chroot "$R" dpkg --audit 2>&1)
	[ -z "$audit" ] || { failed "dpkg --audit: $audit"; return; }
	if grep -q " $R/" /proc/mounts; then
		failed "mounts left: $(grep -c " $R/" /proc/mounts)"
		return
	fi
	[ ! -e "$R/usr/sbin/policy-rc.d" ] || { failed "policy-rc.d left"; return; }
	python3 - "$R/var/lib/gpuboot" <<'PY' || { failed "status/journal: $(head -c 400 "$R/var/lib/gpuboot/status.json")"; return; }
import json, sys
d = json.load(open(sys.argv[1] + "/status.json"))
j = json.load(open(sys.argv[1] + "/journal.json"))
assert d["result"] == "installed-pending-first-boot" and d["exit_code"] == 0, (d["result"], d["exit_code"])
assert j["state"] == "done", j["state"]
PY
	pass=$((pass + 1))
	echo "  ok    $name: converged ($(cat "$work/$name.note"))"
}

echo "$POINT_LIST" | while IFS='|' read -r name trigger; do
	[ -n "${POINTS:-}" ] && ! echo " $POINTS " | grep -q " $name " && continue
	echo "$name" >>"$work/ran"
done
[ -f "$work/ran" ] || { echo "image-kill: no point selected"; exit 1; }
for name in $(cat "$work/ran"); do
	trigger=$(echo "$POINT_LIST" | sed -n "s/^$name|//p")
	points=$((points + 1))
	R=$work/$name/root
	mkdir -p "$work/$name"
	if [ "$name" = full-disk ]; then
		# the image on a filesystem with room for the root and not for the install
		size=$(du -sm "$img/root" | cut -f1)
		mount -t tmpfs -o size=$((size + 300))m gpuboot-full "$work/$name"
		mkdir -p "$R"
	fi
	cp -a "$img/root/." "$R/"
	# after the first points, apt's cache of a finished install (not for
	# the points about downloading)
	case $name in apt-partial-deb | apt-http | apt-get-update | full-disk) ;; *)
		[ -d "$seed" ] && cp -a "$seed/lists/." "$R/var/lib/apt/lists/" && cp -a "$seed/archives/." "$R/var/cache/apt/archives/"
		;;
	esac
	t0=$(date +%s)
	FIRST_SEEN=
	run_gb >"$work/$name.run.out" 2>"$work/$name.run.err" &
	PID=$!
	kill_on "$trigger" 0.1
	rc1=$kill_rc
	t1=$(date +%s)
	if [ "$name" = full-disk ]; then
		err=$(grep -m1 'error:' "$work/$name.run.err")
		echo "$err" | grep -q "No space left\|is full" && echo "$err" | grep -q "$work/$name\|gpuboot-full" ||
			failed "the full disk's error: $(tail -3 "$work/$name.run.err" | tr '\n' ' ')"
		echo "first run exit $rc1 at a full disk ($((t1 - t0)) s): $err" | cut -c1-300 >"$work/$name.note"
		mount -o remount,size=8g "$work/$name"
	elif [ -z "$fired" ]; then
		echo "never fired (the run ended first, exit $rc1)" >"$work/$name.note"
	else
		kills=$((kills + 1))
		echo "killed after $((t1 - t0)) s" >"$work/$name.note"
	fi
	left=$(grep -c " $R/" /proc/mounts)
	echo "  ..    $name: $(cat "$work/$name.note"); $left mount(s) left by the killed run"
	"$GB" --root "$R" run --target-gpu T4 --profile minimal --method distro >"$work/$name.rerun.out" 2>"$work/$name.rerun.err"
	rc=$?
	t2=$(date +%s)
	echo "rerun $((t2 - t1)) s" >>"$work/$name.note"
	sed -n 's/.*gpuboot: warning: //p' "$work/$name.rerun.err" | head -3 | sed 's/^/        rerun said: /'
	check_converged
	if [ ! -d "$seed" ] && [ "$rc" = 0 ]; then
		mkdir -p "$seed/lists" "$seed/archives"
		cp -a "$R/var/lib/apt/lists/." "$seed/lists/"
		rm -f "$seed/lists/lock"
		cp "$R"/var/cache/apt/archives/*.deb "$seed/archives/" 2>/dev/null
	fi
	grep " $R/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	[ "$name" = full-disk ] && umount -l "$work/$name"
	[ -n "${KEEP:-}" ] || rm -rf "${work:?}/$name"
done
echo "image-kill: $points points, $kills kills, $fail failures, $(($(date +%s) - t_all)) s"
[ "$fail" = 0 ]
