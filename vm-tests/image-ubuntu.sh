#!/bin/sh
# vm-tests/image-ubuntu.sh: Ubuntu's own archive paths with real apt: the
# HWE kernel and Canonical's signed precompiled modules
# (linux-modules-nvidia-<branch>-server[-open]-<ABI>).
#
# THE TEST ROOT IS NOT AN UBUNTU MACHINE. It is the Debian 12 root of
# vm-tests/image-install.sh (Debian's apt, dpkg and shell) carrying
# Ubuntu 22.04's real /etc/os-release, a machine's /proc and /sys taken
# from the fixture tests/fixtures/secureboot-ubuntu2204 (an A100; its
# osrelease set to the kernel each case runs), and, installed by real apt
# from a local repository in Ubuntu's archive layout, small stand-in
# packages under Ubuntu's names, versions and dependencies
# (vm-tests/lib-nvidia-repo.sh, ub_*; README, "Ubuntu's archive with real
# apt", names the real Packages entries each follows):
#   <srv>/ubuntu/dists/jammy{,-updates}/{main,restricted}/binary-amd64/Packages
#   <srv>/ubuntu/dists/jammy{,-updates}/{Release,InRelease,Release.gpg}
#   <srv>/ubuntu/pool/{main,restricted}/<l>/<source>/*.deb
# signed by the test key in tests/data/test-repo-key, served over HTTPS
# from loopback, trusted in the root by a Signed-By keyring.
#
# What it proves, from outside the root (gpuboot is the test build,
# build/asan/gpuboot, run against the root as against a machine: no
# --target-gpu, so its /proc and /sys are the fixture's):
#   1. HWE: kernel 5.15.0-25-generic, a site [kernel] minimum of 6.8:
#      the plan installs linux-generic-hwe-22.04 and needs a reboot; the
#      run installs it with real apt (linux-image-generic-hwe-22.04 and
#      linux-headers-generic-hwe-22.04 pulled, the archive's newest HWE
#      ABI 6.8.0-50), ends "reboot-needed" (exit 3) with the package in
#      the status; the rerun has zero effects;
#   2. signed precompiled modules, Secure Boot on, kernel 6.8.0-48-generic
#      while the archive's newest is 6.8.0-50: the plan names the running
#      ABI's package linux-modules-nvidia-580-server-open-6.8.0-48-generic;
#      real apt shows the flavour's metapackage would pull the 6.8.0-50
#      modules and kernel; installed as the plan says, real apt brings the
#      -48 ABI package and nvidia-kernel-common-580-server, no -50
#      package; gpuboot then keeps that driver and its rerun has zero
#      effects.
#
# Needs root (chroot), gpg, apt-ftparchive (apt-utils), dpkg-deb, openssl,
# python3, and the cached root (vm-tests/image-install.sh --build-only).
# Ends with "N passed, N failed"; exit 1 on a failure, 77 when it cannot run.
set -u
cd "$(dirname "$0")/.."
GB=${GB_TEST:-build/asan/gpuboot}
skip() { echo "image-ubuntu: $1, skipped" && exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
for t in gpg apt-ftparchive dpkg-deb openssl python3; do command -v "$t" >/dev/null || skip "$t missing"; done
[ -x "$GB" ] || { echo "image-ubuntu: $GB missing (make $GB)" && exit 1; }
img=$(vm-tests/image-install.sh --build-only) || { echo "image-ubuntu: no image root" && exit 1; }
work=$(mktemp -d /tmp/gpuboot-image-ubuntu.XXXXXX)
srv=$work/srv
export GNUPGHOME=$work/gnupg ASAN_OPTIONS=detect_leaks=0
SRV=""
unmount_under() { grep " $1/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done; }
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	unmount_under "$work"
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0
check() { # what, then the command that proves it
	what=$1 && shift
	if "$@"; then
		echo "  ok    $what" && pass=$((pass + 1))
	else
		echo "  FAIL  $what" && fail=$((fail + 1))
	fi
}

# ---- Ubuntu's archive: jammy (the release) and jammy-updates ----
. vm-tests/lib-nvidia-repo.sh
nv_sign_setup
U=$srv/ubuntu
: >"$work/ub-jammy.list"
: >"$work/ub-jammy-updates.list"
# linux-image-<ABI>-generic: its modules directory and a stand-in vmlinuz
kimage() { # suite source abi version
	ub_deb "$U" "$1" main "$2" "linux-image-$3" "$4" "" "" "boot/vmlinuz-$3" "stand-in kernel $3"
	ub_deb "$U" "$1" main "$2" "linux-modules-$3" "$4" "" "" "lib/modules/$3/modules.order" ""
	ub_deb "$U" "$1" main "$2" "linux-headers-$3" "$4" "" "" "usr/src/linux-headers-$3/Makefile" ""
}
kimage jammy linux 5.15.0-25-generic 5.15.0-25.25
ub_deb "$U" jammy main linux-meta linux-image-generic 5.15.0.25.27 "linux-image-5.15.0-25-generic"
for abi in 48 50; do
	kimage jammy-updates linux-hwe-6.8 "6.8.0-$abi-generic" "6.8.0-$abi.$abi~22.04.1"
done
# the HWE metapackages at the newest ABI (linux-meta-hwe-6.8 6.8.0.50.50~22.04.1)
mv=6.8.0.50.50~22.04.1
ub_deb "$U" jammy-updates main linux-meta-hwe-6.8 linux-generic-hwe-22.04 "$mv" \
	"linux-image-generic-hwe-22.04 (= $mv), linux-headers-generic-hwe-22.04 (= $mv)"
ub_deb "$U" jammy-updates main linux-meta-hwe-6.8 linux-image-generic-hwe-22.04 "$mv" "linux-image-6.8.0-50-generic"
ub_deb "$U" jammy-updates main linux-meta-hwe-6.8 linux-headers-generic-hwe-22.04 "$mv" "linux-headers-6.8.0-50-generic"
# nvidia-graphics-drivers-580-server (restricted), Ubuntu's own version
nv=580.95.05-0ubuntu0.22.04.2
ub_deb "$U" jammy-updates restricted nvidia-graphics-drivers-580-server nvidia-kernel-common-580-server "$nv" ""
ub_deb "$U" jammy-updates restricted nvidia-graphics-drivers-580-server nvidia-driver-580-server-open "$nv" \
	"nvidia-kernel-common-580-server (= $nv)"
# linux-restricted-modules-hwe-6.8: the ABI packages and the flavour's
# metapackages (which follow the newest ABI)
for abi in 48 50; do
	ub_deb "$U" jammy-updates restricted linux-restricted-modules-hwe-6.8 \
		"linux-modules-nvidia-580-server-open-6.8.0-$abi-generic" "6.8.0-$abi.$abi~22.04.1+1" \
		"linux-image-6.8.0-$abi-generic | linux-image-unsigned-6.8.0-$abi-generic, nvidia-kernel-common-580-server (<= 580.95.05-1), nvidia-kernel-common-580-server (>= 580.95.05)" \
		"" "lib/modules/6.8.0-$abi-generic/kernel/nvidia-580srv-open/nvidia.ko" "stand-in signed module"
done
for m in generic generic-hwe-22.04; do
	ub_deb "$U" jammy-updates restricted linux-restricted-modules-hwe-6.8 \
		"linux-modules-nvidia-580-server-open-$m" 6.8.0-50.50~22.04.1+1 \
		"linux-modules-nvidia-580-server-open-6.8.0-50-generic (= 6.8.0-50.50~22.04.1+1)"
done
ub_sign_archive "$U" jammy jammy-updates

# ---- the server ----
TMP=$work/tls
nv_serve "$srv"

# ---- the test root ----
# newroot DIR KERNEL SECUREBOOT(0|1): the Debian root as Ubuntu 22.04,
# Ubuntu's archive its only source, the fixture's /proc and /sys with
# KERNEL running, linux-image-generic's GA kernel installed by real apt.
newroot() {
	R=$1
	cp -a "$img/root" "$R"
	rm -rf "$R"/lib/modules/* "$R"/boot/vmlinuz-* "$R"/boot/initrd.img-* "$R/etc/os-release"
	# Ubuntu 22.04's real os-release, as the fixture machine has it
	cp tests/fixtures/secureboot-ubuntu2204/etc/os-release "$R/etc/os-release"
	rm -f "$R/etc/apt/sources.list" "$R"/etc/apt/sources.list.d/*
	gpg --batch --yes --dearmor -o "$R/usr/share/keyrings/test-ubuntu-archive.gpg" tests/data/test-repo-key/public.asc
	printf 'deb [signed-by=/usr/share/keyrings/test-ubuntu-archive.gpg] https://127.0.0.1:%s/ubuntu %s main restricted\n' \
		"$PORT" jammy "$PORT" jammy-updates >"$R/etc/apt/sources.list"
	cp "$TMP/ca.pem" "$R/usr/local/share/ca-certificates/gpuboot-test-ca.crt"
	chroot "$R" update-ca-certificates >/dev/null 2>&1
	cp -a tests/fixtures/secureboot-ubuntu2204/proc tests/fixtures/secureboot-ubuntu2204/sys "$R/"
	echo "$2" >"$R/proc/sys/kernel/osrelease"
	[ "$3" = 1 ] || { rm -rf "$R/sys/firmware/efi" && echo '[none] integrity confidentiality' >"$R/sys/kernel/security/lockdown"; }
	mkdir -p "$R/lib/modules/$2"
	chroot "$R" sh -c 'apt-get update -q && apt-get install -y -q linux-image-generic' >"$work/newroot.log" 2>&1 ||
		{ echo "image-ubuntu: the root's apt failed:"; tail -n 5 "$work/newroot.log"; exit 1; }
}
installed() { chroot "$1" dpkg-query -W -f '${Version}' "$2" 2>/dev/null; }
cat >"$work/test.profile" <<'EOF'
[profile]
description = R580 open, no CUDA

[driver]
branch = 580

[cuda]
policy = none

[toolkit]
install = no

[verify]
tier = passive
EOF
printf '[kernel]\nminimum = 6.8\n' >"$work/gpuboot.conf"

# ---- 1. the HWE kernel ----
H=$work/hwe
newroot "$H" 5.15.0-25-generic 0
gbh() { "$GB" --root "$H" "$@" --profile "$work/test.profile" --config "$work/gpuboot.conf"; }
gbh plan --json >"$work/hwe-plan.json" 2>"$work/hwe-plan.err"
check "HWE: the plan installs linux-generic-hwe-22.04 and needs a reboot" python3 -c "
import json,sys
k=json.load(open('$work/hwe-plan.json'))['kernel']
print('    plan: kernel', k['action'], k.get('package'), 'reboot', k['reboot_required'])
sys.exit(not (k['action']=='install-hwe' and k['package']=='linux-generic-hwe-22.04' and k['reboot_required']))"
gbh run --mirror "https://127.0.0.1:$PORT/" --ca-file "$TMP/ca.pem" >"$work/hwe.out" 2>"$work/hwe.err"
rc=$?
sed 's/^/    /' "$work/hwe.err" | tail -n 4
check "HWE: the run exits 3 (reboot needed)" test "$rc" = 3
check "HWE: real apt installed linux-generic-hwe-22.04 $mv" test "$(installed "$H" linux-generic-hwe-22.04)" = "$mv"
check "HWE:   and pulled linux-image-6.8.0-50-generic, linux-headers-6.8.0-50-generic" \
	sh -c "[ -n '$(installed "$H" linux-image-6.8.0-50-generic)' ] && [ -n '$(installed "$H" linux-headers-6.8.0-50-generic)' ]"
check "HWE:   not the older HWE ABI 6.8.0-48" test -z "$(installed "$H" linux-image-6.8.0-48-generic)"
check "HWE: status: prepare reboot-needed, its kernel linux-generic-hwe-22.04 installed now" python3 -c "
import json,sys
d=json.load(open('$H/var/lib/gpuboot/status.json'))
st={s['name']: s for s in d['stages']}
k=d['prepare']['kernel']
print('    status: exit', d['exit_code'], 'prepare', st['prepare']['result'], 'kernel', k)
sys.exit(not (st['prepare']['result']=='reboot-needed' and k['package']=='linux-generic-hwe-22.04' and k['installed_now']))"
check "HWE: nothing left mounted" sh -c "! grep -q ' $H/' /proc/mounts"
gbh run --mirror "https://127.0.0.1:$PORT/" --ca-file "$TMP/ca.pem" >"$work/hwe2.out" 2>"$work/hwe2.err"
rc=$?
check "HWE: the rerun (not rebooted yet) exits 3 again" test "$rc" = 3
check "HWE: the rerun has zero effects (no second apt-get install)" python3 -c "
import json,sys
sys.exit(json.load(open('$H/var/lib/gpuboot/journal.json'))['effects_this_run'] != 0)"

# ---- 2. the signed precompiled modules of the running kernel ----
S=$work/sb
newroot "$S" 6.8.0-48-generic 1
chroot "$S" apt-get install -y -q linux-image-6.8.0-48-generic >>"$work/newroot.log" 2>&1
gbs() { "$GB" --root "$S" "$@" --profile "$work/test.profile"; }
gbs plan --json >"$work/sb-plan.json" 2>"$work/sb-plan.err"
rc=$?
want=linux-modules-nvidia-580-server-open-6.8.0-48-generic
check "SB: the plan names the running ABI's package $want (exit 10: installed first)" sh -c \
	"[ $rc = 10 ] && grep -q '($want with nvidia-driver-580-server-open' '$work/sb-plan.json'"
check "SB:   not the flavour's metapackage" sh -c "! grep -q 'server-open-generic ' '$work/sb-plan.json'"
chroot "$S" apt-get install -s linux-modules-nvidia-580-server-open-generic >"$work/sb-meta.sim" 2>&1
check "SB: real apt: the flavour's metapackage would pull the 6.8.0-50 modules and kernel" sh -c \
	"grep -q '^Inst linux-modules-nvidia-580-server-open-6.8.0-50-generic' '$work/sb-meta.sim' && grep -q '^Inst linux-image-6.8.0-50-generic' '$work/sb-meta.sim'"
chroot "$S" apt-get install -y -q "$want" nvidia-driver-580-server-open >"$work/sb-apt.out" 2>&1
check "SB: real apt installs the plan's two packages" test "$(installed "$S" "$want")" = "6.8.0-48.48~22.04.1+1"
check "SB:   with nvidia-kernel-common-580-server $nv" test "$(installed "$S" nvidia-kernel-common-580-server)" = "$nv"
check "SB:   the module for the running kernel" test -f "$S/lib/modules/6.8.0-48-generic/kernel/nvidia-580srv-open/nvidia.ko"
check "SB:   no 6.8.0-50 package (modules or kernel)" sh -c \
	"! chroot '$S' dpkg-query -W -f '\${Package} \${Status}\n' 2>/dev/null | grep -q '6.8.0-50.* installed'"
# the reboot: the kernel loads Canonical's signed module (as the fixtures
# of machines running a driver show it)
mkdir -p "$S/proc/driver/nvidia" "$S/sys/module/nvidia"
echo 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (buildd@lcy02-amd64-010)  Tue Sep 23 10:00:00 UTC 2025' >"$S/proc/driver/nvidia/version"
echo 580.95.05 >"$S/sys/module/nvidia/version"
echo "    installed: $(chroot "$S" dpkg-query -W -f '${Package} ' 'linux-*nvidia*' 'nvidia-*' 'linux-image-6*' 2>/dev/null)"
gbs plan --json >"$work/sb-kept.json" 2>"$work/sb-kept.err"
rc=$?
check "SB: gpuboot keeps the installed driver, Ubuntu's signed modules named" python3 -c "
import json,sys
p=json.load(open('$work/sb-kept.json'))
print('    plan: exit $rc, driver', p['driver']['action'], p['driver'].get('version'), 'secure_boot', p['secure_boot'])
sys.exit(not ($rc==0 and p['driver']['action']=='keep' and p['secure_boot']['strategy']=='ubuntu-signed-modules' and p['secure_boot']['package']=='$want'))"
for i in 1 2; do
	gbs run --mirror "https://127.0.0.1:$PORT/" --ca-file "$TMP/ca.pem" --no-verify >"$work/sb-run$i.out" 2>"$work/sb-run$i.err"
	rc=$?
	sed 's/^/    /' "$work/sb-run$i.err" | tail -n 2
	check "SB: run $i exits 0 with zero effects, no command" sh -c "[ $rc = 0 ] && python3 -c \"
import json,sys
d=json.load(open('$S/var/lib/gpuboot/journal.json'))
sys.exit(not (d['effects_this_run']==0 and not [s for s in d['steps'] if s['kind']=='command']))\""
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
