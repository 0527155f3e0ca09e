#!/bin/sh
# vm-tests/image-rpm.sh: the packages method and the Container Toolkit on
# an rpm root with REAL dnf 4 and rpm, in a chroot, against a local HTTPS
# repository in NVIDIA's rpm layout:
#   <mirror>/compute/cuda/repos/rhel9/x86_64/          (repodata/, modules)
#   <mirror>/compute/cuda/repos/rhel9/x86_64/D42D0685.pub
#   <mirror>/libnvidia-container/stable/rpm/x86_64/    (repodata/, repomd.xml.asc)
#   <mirror>/libnvidia-container/gpgkey
# built here with rpmbuild: small real rpm packages under NVIDIA's names,
# epochs, versions, dependencies and Provides (vm-tests/lib-nvidia-rpm.sh),
# at the plan's version and a newer one, the driver's packages signed and
# every repomd.xml signed by the test key in tests/data/test-repo-key (its
# fingerprint is pinned only in the test build, build/asan/gpuboot), with
# the nvidia-driver module streams added by modifyrepo_c.
#
# THE TEST ROOT IS NOT A RHEL MACHINE. It is a Debian 12 root (mmdebstrap,
# minbase) carrying Debian's dnf 4.14, python3-dnf, dnf-plugins-core
# (versionlock) and rpm 4.18, with RHEL 9.4's /etc/os-release, apt's
# front-ends removed (so detect finds dnf), and an rpm database seeded with
# stand-ins for what a RHEL 9 image has: redhat-release (the release
# version dnf reads), a kernel-core owning boot/vmlinuz-<kver>, and the
# packages Debian's own files stand in for (bash, coreutils, python3-dnf's
# versionlock plugin as RHEL names it). The package manager, its resolver,
# module streams, signature checks and versionlock are the real ones.
#
# What it proves, from outside the root, for a T4 (stream 580-dkms,
# cuda-drivers) and an HGX H100 (580-open, nvidia-open, the fabric
# manager) and the toolkit:
#   - a wrong key at the key's URL: exit 13, no key file, no repo file,
#     nothing in rpm's database;
#   - a tampered repomd.xml (its signature no longer matches): refused,
#     nothing installed;
#   - a driver version the repository lacks: refused before anything is
#     installed;
#   - the install: the key imported (rpm -q gpg-pubkey), the module stream
#     enabled, every package at the plan's version although a newer one is
#     in the same stream, versionlock entries, the module "built" for the
#     kernel, the toolkit's four packages at one version and locked;
#   - a rerun: zero effects.
#
# Then the same for SLES 15 with REAL zypper 1.14 on a second test root
# (vm-tests/image-rpm-sles15.sh, which says what it proves; THE TEST ROOT IS
# NOT A SLES MACHINE either). PARTS="rhel9 sles15" (the default) picks the
# parts; the repositories and the mirror are made either way.
#
# Needs root (chroot), rpmbuild, createrepo_c, modifyrepo_c, gpg, openssl,
# python3, mmdebstrap and network to deb.debian.org the first time (the roots
# are cached in ${GPUBOOT_VM_CACHE:-~/.cache/gpuboot-vm}/rpm-root-<hash> and
# zypper-root-<hash>).
# Install them with scripts/install-deps.sh --rpm. Ends with "N passed, N
# failed"; exit 1 on a failure, 77 when it cannot run.
set -u
cd "$(dirname "$0")/.."
here=$(pwd)/vm-tests
GB=${GB_TEST:-build/asan/gpuboot}
[ "$(id -u)" = 0 ] || { echo "image-rpm: needs root (chroot), skipped"; exit 77; }
for t in mmdebstrap rpmbuild rpmsign createrepo_c modifyrepo_c gpg openssl python3; do
	command -v "$t" >/dev/null || { echo "image-rpm: $t missing (scripts/install-deps.sh --rpm), skipped"; exit 77; }
done

# ---- the test root ----
# build_root NAME PACKAGES: the cached Debian 12 root carrying PACKAGES
# (rpm: dnf and its versionlock plugin; zypper: zypper, whose Debian
# package dnf-plugins-core Breaks, so a root of its own).
build_root() {
	hash=$( (sed -n '/^# ---- the test root/,/^# ---- end of the recipe/p' "$here/image-rpm.sh" && echo "$1 $2") | sha256sum | cut -c1-16)
	cache=${GPUBOOT_VM_CACHE:-${HOME:-/root}/.cache/gpuboot-vm}
	img=$cache/$1-root-$hash
	if [ -f "$img/.complete" ]; then
		echo "$img"
		return 0
	fi
	mkdir -p "$cache"
	work=$(mktemp -d "$cache/work.XXXXXX")
	echo "image-rpm: building the Debian 12 root with $2 (mmdebstrap, a few minutes)" >&2
	if ! mmdebstrap --quiet --variant=minbase --include="$2,rpm,ca-certificates,procps,kmod" \
		bookworm "$work/root" "deb http://deb.debian.org/debian bookworm main" >&2; then
		rm -rf "$work"
		return 1
	fi
	touch "$work/.complete"
	rm -rf "$img"
	mv "$work" "$img"
	chmod 0755 "$img"
	echo "$img"
}
# ---- end of the recipe ----

DNF_PKGS=dnf,python3-dnf,dnf-plugins-core
if [ "${1:-}" = "--build-only" ]; then
	build_root rpm $DNF_PKGS && build_root zypper zypper
	exit $?
fi
[ -x "$GB" ] || { echo "image-rpm: $GB missing (make $GB)"; exit 1; }
t0=$(date +%s)
img=$(build_root rpm $DNF_PKGS) || { echo "image-rpm: no test root"; exit 1; }
work=$(mktemp -d /tmp/gpuboot-image-rpm.XXXXXX)
srv=$work/srv
export GNUPGHOME=$work/gnupg
export ASAN_OPTIONS=detect_leaks=0
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	if grep -q " $work/" /proc/mounts; then
		echo "image-rpm: mounts left under $work:" >&2
		grep " $work/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
PARTS=" ${PARTS:-rhel9 sles15} "
want() { case $PARTS in *" $1 "*) return 0 ;; esac; return 1; }
pass=0 fail=0
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

KVER=5.14.0-427.13.1.el9_4.x86_64
KEVR=5.14.0-427.13.1.el9_4
. vm-tests/lib-nvidia-rpm.sh
nv_rpm_sign_setup
nv_base_repo_rpm "$work/base" "$KVER" "$KEVR"
nv_seed_rpms "$work/seed" "$KVER" "$KEVR"

# make_root DIR: the cached Debian root made a RHEL 9 test root (above).
make_root() {
	cp -a "$img/root" "$1"
	rm -f "$1"/usr/bin/apt "$1"/usr/bin/apt-get "$1"/usr/bin/apt-cache "$1"/usr/bin/apt-mark
	rm -f "$1/etc/os-release"
	cat >"$1/etc/os-release" <<'OSR'
NAME="Red Hat Enterprise Linux"
VERSION="9.4 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow) -- gpuboot's Debian-built test root"
OSR
	# rpm's database where RHEL keeps it (Debian's rpm: ~/.rpmdb)
	mkdir -p "$1/etc/rpm"
	# Debian's dnf enables its "local" plugin (a repository of what was
	# installed): RHEL ships it off
	sed -i "s/^enabled.*/enabled = 0/" "$1/etc/dnf/plugins/local.conf"
	printf '%%_dbpath /var/lib/rpm\n' >"$1/etc/rpm/macros.dbpath"
	# RHEL 9's dnf.conf (Debian's skips an unavailable repository and
	# takes the not-best candidate)
	printf '[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n' \
		>"$1/etc/dnf/dnf.conf"
	mkdir -p "$1/etc/yum.repos.d" "$1/var/lib/rpm" "$1/etc/rpm" "$1/srv" "$1/lib/modules/$KVER"
	cp -a "$work/base" "$1/srv/rhel-9-baseos"
	printf '[rhel-9-baseos]\nname=stand-in for RHEL 9 BaseOS, AppStream and EPEL\nbaseurl=file:///srv/rhel-9-baseos\nenabled=1\ngpgcheck=0\n' \
		>"$1/etc/yum.repos.d/rhel-9-baseos.repo"
	cp "$work"/seed/*.rpm "$1/tmp/"
	chroot "$1" rpm -i --nodeps --justdb /tmp/bash-5.1.8-9.el9.x86_64.rpm &&
		chroot "$1" rpm -i --nodeps /tmp/redhat-release-9.4-0.5.el9.x86_64.rpm "/tmp/kernel-core-$KEVR.x86_64.rpm" || return 1
	rm -f "$1"/tmp/*.rpm
	cp "$TMP/ca.pem" "$1/usr/local/share/ca-certificates/gpuboot-test-ca.crt"
	chroot "$1" update-ca-certificates >/dev/null 2>&1
}

# ---- the plan: the versions and names the repository must carry ----
cat >"$work/test.profile" <<'PROF'
[profile]
description = the driver and the Container Toolkit, no CUDA

[driver]
branch = lts

[cuda]
policy = none

[toolkit]
install = always

[verify]
tier = passive
PROF
TMP=$work/tls
mkdir -p "$TMP"
. tests/integration/lib-tls.sh
make_certs
root=$work/root
make_root "$root" || { echo "image-rpm: the test root could not be made"; exit 1; }
"$GB" --root "$root" plan --json --target-gpu T4 --profile "$work/test.profile" --method packages >"$work/plan.json" ||
	{ echo "image-rpm: plan failed"; cat "$work/plan.json"; exit 1; }
eval "$(python3 -c "
import json
p=json.load(open('$work/plan.json'))
d=p['driver']
print('DV=%s REPO=%s RARCH=%s TV=%s' % (d['version'], d['repository'], d['repository_arch'], p['toolkit']['version']))
print('PKGS=\"%s\"' % ' '.join(d['packages']))")"
HGX_PKGS=$("$GB" --root "$root" plan --json --target-gpu 2330x8 --profile "$work/test.profile" --method packages |
	python3 -c "import json,sys; print(' '.join(json.load(sys.stdin)['driver']['packages']))")
B=${DV%%.*}
NEWER=$B.199.01
echo "image-rpm: kernel $KVER; plan: driver $DV from $REPO/$RARCH ($PKGS), toolkit $TV; HGX: $HGX_PKGS; newer: $NEWER"

# ---- the repositories ----
cuda=$srv/good/compute/cuda/repos/$REPO/$RARCH
ctk=$srv/good/libnvidia-container/stable/rpm/x86_64
nv_driver_repo_rpm "$cuda" "$DV" "$NEWER"
nv_toolkit_repo_rpm "$ctk" "$TV"
t_repo=$(date +%s)
# The wrong-key mirror: the same repositories, another key at the key's URL.
mkdir -p "$srv/bad"
cp -a "$srv/good/compute" "$srv/good/libnvidia-container" "$srv/bad/"
gpg --batch --quiet --passphrase '' --quick-gen-key "wrong key <wrong@localhost>" ed25519 sign never 2>/dev/null
gpg --batch --armor --export "wrong@localhost" >"$srv/bad/compute/cuda/repos/$REPO/$RARCH/D42D0685.pub"
# The tampered mirror: the driver's repomd.xml changed after it was signed
# (a newer primary's checksum, as a mirror serving its own metadata would),
# and the toolkit's repomd.xml changed after signing (a byte added).
mkdir -p "$srv/tampered"
cp -a "$srv/good/compute" "$srv/good/libnvidia-container" "$srv/tampered/"
tc=$srv/tampered/compute/cuda/repos/$REPO/$RARCH/repodata
sed -i 's/<revision>\([0-9]*\)</<revision>\11</' "$tc/repomd.xml"
echo '<!-- -->' >>"$srv/tampered/libnvidia-container/stable/rpm/x86_64/repodata/repomd.xml"

python3 tests/https-server.py "$srv" "$TMP/good.pem" "$TMP/good.key" "$TMP/ports" 2>"$work/server.log" &
SRV=$!
for i in $(seq 50); do [ -s "$TMP/ports" ] && break; sleep 0.1; done
read -r PORT _ <"$TMP/ports"
cp -a "$root" "$work/pristine"
state=$root/var/lib/gpuboot
run() { # mirror-suffix, then extra arguments
	m=$1
	shift
	"$GB" --root "$root" run --target-gpu T4 --profile "$work/test.profile" --method packages \
		--mirror "https://127.0.0.1:$PORT/$m" --ca-file "$TMP/ca.pem" --state-dir "$state" "$@"
}
rq() { chroot "$root" rpm -q --qf '%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n' "$1" 2>/dev/null; }
none_installed() { # nothing of NVIDIA's in rpm's database
	[ -z "$(chroot "$root" rpm -qa '*nvidia*' 'cuda-drivers*' 2>/dev/null)" ]
}
none_installed_unmounted() { # and nothing left mounted under the root
	none_installed && ! grep -q " $root/" /proc/mounts
}

# ---- RHEL 9 (dnf) ----
if want rhel9; then
# ---- 1. a wrong key at the key's URL ----
run bad/ >"$work/bad.out" 2>"$work/bad.err"
rc=$?
sed 's/^/    /' "$work/bad.err" | tail -n 2
check "a wrong key fingerprint: refused, exit 13" test "$rc" = 13
check "  the error names the pin" grep -q "not the pinned" "$work/bad.err"
check "  no key file, no repo file written" sh -c "! ls '$root'/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-* '$root'/etc/yum.repos.d/gpuboot-* 2>/dev/null"
check "  no key in rpm's database" sh -c "! chroot '$root' rpm -q gpg-pubkey >/dev/null 2>&1"
check "  nothing installed, nothing mounted" none_installed_unmounted
rm -rf "$state"

# ---- 2. tampered metadata: the toolkit's repomd.xml no longer its signature's ----
run tampered/ >"$work/tampered.out" 2>"$work/tampered.err"
rc=$?
sed 's/^/    /' "$work/tampered.err" | tail -n 3
check "a tampered repomd.xml: refused, exit 13" test "$rc" = 13
check "  dnf's own words: the signature of repomd.xml" grep -q "dnf refused .*repomd.xml GPG signature verification" "$work/tampered.err"
check "  no toolkit package installed" sh -c "[ -z \"\$(chroot '$root' rpm -qa '*container*')\" ]"
check "  nothing mounted" sh -c "! grep -q ' $root/' /proc/mounts"
rm -rf "$root" "$state" && cp -a "$work/pristine" "$root"

# ---- 3. a version the repository lacks ----
sed "s/^branch = lts/branch = $B.95.05/" "$work/test.profile" >"$work/missing.profile"
"$GB" --root "$root" run --target-gpu T4 --profile "$work/missing.profile" --method packages \
	--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" --state-dir "$state" \
	>"$work/missing.out" 2>"$work/missing.err"
rc=$?
sed 's/^/    /' "$work/missing.err" | tail -n 2
check "a version the repository lacks: refused (exit $rc)" test "$rc" = 1
check "  the error names the version" grep -q "$B.95.05 (not this version\|$B.95.05 (no such" "$work/missing.err"
check "  nothing installed" none_installed
check "  nothing mounted" sh -c "! grep -q ' $root/' /proc/mounts"
rm -rf "$root" "$state" && cp -a "$work/pristine" "$root"

# ---- 4. the install ----
t_inst=$(date +%s)
run good/ >"$work/run1.out" 2>"$work/run1.err"
rc=$?
t_inst=$(($(date +%s) - t_inst))
sed 's/^/    /' "$work/run1.err" | tail -n 4
check "the install exits 0 ($t_inst s)" test "$rc" = 0
check "nothing left mounted" sh -c "! grep -q ' $root/' /proc/mounts"
kf=$root/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-$REPO-$RARCH
check "the key file holds the pinned key" sh -c "gpg --batch --show-keys --with-colons '$kf' 2>/dev/null | grep -q '^fpr:::::::::$fpr:'"
lid=$(echo "$fpr" | tail -c 9 | tr 'A-F' 'a-f')
check "rpm -q gpg-pubkey: the pinned key imported ($lid)" sh -c "chroot '$root' rpm -q gpg-pubkey --qf '%{VERSION}\n' | grep -qx '$lid'"
check "the repo file: gpgcheck=1, its own key" sh -c "grep -qx gpgcheck=1 '$root/etc/yum.repos.d/gpuboot-cuda-$REPO-$RARCH.repo' && grep -qx 'gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-$REPO-$RARCH' '$root/etc/yum.repos.d/gpuboot-cuda-$REPO-$RARCH.repo'"
stream=${PKGS#@nvidia-driver:}
stream=${stream%% *}
check "the module stream nvidia-driver:$stream enabled (dnf's own state)" sh -c "grep -qx 'stream=$stream' '$root/etc/dnf/modules.d/nvidia-driver.module' && grep -qx 'state=enabled' '$root/etc/dnf/modules.d/nvidia-driver.module'"
check "dnf module list --enabled names it" sh -c "chroot '$root' dnf -q -C module list --enabled nvidia-driver 2>/dev/null | grep -q '$stream \[e\]'"
for p in cuda-drivers nvidia-driver nvidia-driver-libs nvidia-driver-cuda nvidia-driver-cuda-libs kmod-nvidia-latest-dkms nvidia-kmod-common; do
	want=3:$DV-1.el9
	[ $p = cuda-drivers ] && want=0:$DV-1
	check "$p at $want (not $NEWER)" test "$(rq $p)" = "$want"
done
check "kernel-devel at the kernel's $KEVR" test "$(rq kernel-devel)" = "0:$KEVR"
check "the module for $KVER (the DKMS stand-in ran)" test -f "$root/lib/modules/$KVER/extra/nvidia.ko.xz"
vl=$root/etc/dnf/plugins/versionlock.list
for p in cuda-drivers nvidia-driver nvidia-driver-cuda kmod-nvidia-latest-dkms; do
	check "versionlock: $p" grep -q "^$p-[0-9:]*$DV-" "$vl"
done
check "dnf's versionlock list reads them" sh -c "chroot '$root' dnf -q -C versionlock list 2>/dev/null | grep -q '^nvidia-driver-3:$DV-1.el9'"
check "dnf upgrade would change nothing (the locks hold)" sh -c "chroot '$root' dnf -q -C --assumeno upgrade >'$work/upgrade.out' 2>&1; ! grep -q '$NEWER' '$work/upgrade.out'"
for p in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
	check "$p at $TV-1 (not 1.99.0), locked" sh -c "[ '$(rq $p)' = '0:$TV-1' ] && grep -q '^$p-[0-9:]*$TV-1' '$vl'"
done
check "the toolkit's repo file: repo_gpgcheck=1, gpgcheck=0" sh -c "grep -qx repo_gpgcheck=1 '$root/etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo' && grep -qx gpgcheck=0 '$root/etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo'"
check "nouveau blacklisted" grep -qx 'blacklist nouveau' "$root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf"
nv_check_done "" "$state" dnf-install "cuda-drivers-$DV-1"

# ---- 5. the rerun ----
run good/ >"$work/run2.out" 2>"$work/run2.err"
rc=$?
nv_check_idle "the rerun exits 0 with zero effects, no command" "$rc" "$state"

# ---- 6. an HGX H100 (2330x8): the open stream, nvidia-open and the fabric manager ----
H=$work/hgx
cp -a "$work/pristine" "$H"
hgx_run() {
	"$GB" --root "$H" run --target-gpu 2330x8 --profile "$work/test.profile" --method packages \
		--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" --state-dir "$H/var/lib/gpuboot"
}
hgx_run >"$work/hgx.out" 2>"$work/hgx.err"
rc=$?
sed 's/^/    /' "$work/hgx.err" | tail -n 2
hq() { chroot "$H" rpm -q --qf '%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n' "$1" 2>/dev/null; }
check "HGX: the install exits 0" test "$rc" = 0
check "HGX: the stream $B-open enabled" grep -qx "stream=$B-open" "$H/etc/dnf/modules.d/nvidia-driver.module"
for p in nvidia-open kmod-nvidia-open-dkms nvidia-driver nvidia-driver-cuda; do
	check "HGX: $p at 3:$DV-1.el9, locked" sh -c "[ '$(hq $p)' = '3:$DV-1.el9' ] && grep -q '^$p-3:$DV-1.el9' '$H/etc/dnf/plugins/versionlock.list'"
done
check "HGX: nvidia-fabricmanager at $DV-1, locked; nv-fabricmanager there" sh -c "[ '$(hq nvidia-fabricmanager)' = '0:$DV-1' ] && grep -q '^nvidia-fabricmanager-0:$DV-1' '$H/etc/dnf/plugins/versionlock.list' && [ -x '$H/usr/bin/nv-fabricmanager' ]"
check "HGX: no kmod-nvidia-latest-dkms" sh -c "! chroot '$H' rpm -q kmod-nvidia-latest-dkms >/dev/null 2>&1"
hgx_run >"$work/hgx2.out" 2>"$work/hgx2.err"
rc=$?
nv_check_idle "HGX: the rerun exits 0 with zero effects" "$rc" "$H/var/lib/gpuboot"
grep " $H/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
fi

want sles15 && . vm-tests/image-rpm-sles15.sh

echo "image-rpm: $(($(date +%s) - t0)) s"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
