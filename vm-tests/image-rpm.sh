#!/bin/sh
# vm-tests/image-rpm.sh: the packages method and the Container Toolkit on
# rpm roots with REAL dnf 4 and rpm, in a chroot, against local HTTPS
# repositories in NVIDIA's rpm layout, one per repository the plan names:
#   <mirror>/compute/cuda/repos/<rhel9|rhel8|amzn2023>/x86_64/  (repodata/, modules)
#   <mirror>/compute/cuda/repos/<...>/x86_64/D42D0685.pub
#   <mirror>/libnvidia-container/stable/rpm/x86_64/    (repodata/, repomd.xml.asc)
#   <mirror>/libnvidia-container/gpgkey
# built here with rpmbuild: small real rpm packages under NVIDIA's names,
# epochs, versions, release tags (.el9, .el8, .amzn2023), dependencies and
# Provides (vm-tests/lib-nvidia-rpm.sh), at the plan's version and a newer
# one, the driver's packages signed and every repomd.xml signed by the
# test key in tests/data/test-repo-key (its fingerprint is pinned only in
# the test build, build/asan/gpuboot), with the nvidia-driver module
# streams (requiring the family's platform) added by modifyrepo_c.
#
# THE TEST ROOTS ARE NOT RHEL, ROCKY, ALMA OR AMAZON LINUX MACHINES. One
# Debian 12 root (mmdebstrap, minbase) carrying Debian's dnf 4.14,
# python3-dnf, dnf-plugins-core (versionlock) and rpm 4.18, copied per
# family and given that family's own /etc/os-release
# (tests/data/os-release/, sources in its README), apt's front-ends
# removed (so detect finds dnf), and an rpm database seeded with stand-ins
# for what such an image has: the release package (the release version
# dnf reads), the kernel package owning boot/vmlinuz-<kver>, and the
# packages Debian's own files stand in for (bash, python3-dnf's
# versionlock plugin as RHEL names it). The package manager, its resolver,
# module streams (dnf's platform from the os-release's PLATFORM_ID),
# signature checks and versionlock are the real ones.
#
# What it proves, per family (vm-tests/image-rpm-dnf.sh says it in full):
# RHEL 9, RHEL 8, Rocky 9, Alma 9 and Amazon Linux 2023: the key checked
# against the pin and imported, the stream enabled, exact versions,
# versionlock, the toolkit, a rerun with zero effects; on RHEL 9 also a
# wrong key, the toolkit's wrong key, a tampered repomd.xml, a missing
# version, latest-dkms already enabled, rpm's lock held, and an HGX H100;
# RHEL 10: --method packages refused (exit 10: no key pinned for rhel10).
#
# Then the same for SLES 15 with REAL zypper 1.14 on a second test root
# (vm-tests/image-rpm-sles15.sh, which says what it proves; THE TEST ROOT IS
# NOT A SLES MACHINE either). PARTS="rhel9 rhel8 rocky9 alma9 amzn2023
# rhel10 sles15" (the default) picks the parts; the toolkit's repository
# and the mirror are made either way. vm-tests/lib-check.sh: the scratch
# directory, check() and the "nothing installed" questions they share.
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
lc_name=image-rpm
. vm-tests/lib-check.sh
srv=$work/srv
export GNUPGHOME=$work/gnupg
export ASAN_OPTIONS=detect_leaks=0
PARTS=" ${PARTS:-rhel9 rhel8 rocky9 alma9 amzn2023 rhel10 sles15} "
want() { case $PARTS in *" $1 "*) return 0 ;; esac; return 1; }

. vm-tests/lib-nvidia-rpm.sh
nv_rpm_sign_setup

# ---- the families: one Debian-built root, its os-release and seed per row ----
# family ID sets L (the label), OSR (tests/data/os-release/OSR, the
# distribution's own file), KEVR/KVER (a kernel of that release), NV_DIST
# (the release tag of NVIDIA's packages there), NV_PLATFORM (its
# PLATFORM_ID, which the module streams require), the release package
# dnf reads $releasever from, and the kernel package (AL2023: kernel).
family() {
	F=$1
	case $1 in
	rhel9) set -- "RHEL 9" rhel-9.4 5.14.0-427.13.1.el9_4 el9 el9 redhat-release 9.4 0.5.el9 9 kernel-core ;;
	rhel8) set -- "RHEL 8" rhel-8.10 4.18.0-553.el8_10 el8 el8 redhat-release 8.10 1.0.el8 8 kernel-core ;;
	rocky9) set -- "Rocky 9" rocky-9.4 5.14.0-427.13.1.el9_4 el9 el9 rocky-release 9.4 1.7.el9 9 kernel-core ;;
	alma9) set -- "Alma 9" almalinux-9.4 5.14.0-427.13.1.el9_4 el9 el9 almalinux-release 9.4 1.el9 9 kernel-core ;;
	amzn2023) set -- "AL2023" amzn-2023 6.1.72-96.166.amzn2023 amzn2023 al2023 system-release 2023.8.20250721 1.amzn2023 2023 kernel ;;
	rhel10) set -- "RHEL 10" rhel-10.0 6.12.0-55.9.1.el10_0 el10 el10 redhat-release 10.0 0.1.el10 10 kernel-core ;;
	*) return 1 ;;
	esac
	L=$1 OSR=$2 KEVR=$3 NV_DIST=$4 NV_PLATFORM=$5 RELP=$6 RELV=$7 RELR=$8 RELVER=$9
	shift 9
	KPKG=$1 KVER=$KEVR.x86_64
}

# make_root DIR: the cached Debian root made the current family's test root (above).
make_root() {
	cp -a "$img/root" "$1"
	rm -f "$1"/usr/bin/apt "$1"/usr/bin/apt-get "$1"/usr/bin/apt-cache "$1"/usr/bin/apt-mark
	rm -f "$1/etc/os-release"
	cp "tests/data/os-release/$OSR" "$1/etc/os-release" || return 1
	# rpm's database where RHEL keeps it (Debian's rpm: ~/.rpmdb)
	mkdir -p "$1/etc/rpm"
	# Debian's dnf enables its "local" plugin (a repository of what was
	# installed): RHEL ships it off
	sed -i "s/^enabled.*/enabled = 0/" "$1/etc/dnf/plugins/local.conf"
	printf '%%_dbpath /var/lib/rpm\n' >"$1/etc/rpm/macros.dbpath"
	# RHEL's dnf.conf (Debian's skips an unavailable repository and
	# takes the not-best candidate)
	printf '[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n' \
		>"$1/etc/dnf/dnf.conf"
	mkdir -p "$1/etc/yum.repos.d" "$1/var/lib/rpm" "$1/etc/rpm" "$1/srv" "$1/lib/modules/$KVER"
	[ -d "$work/base-$F" ] || nv_base_repo_rpm "$work/base-$F" "$KVER" "$KEVR" || return 1
	[ -d "$work/seed-$F" ] || nv_seed_rpms "$work/seed-$F" "$KVER" "$KEVR" "$RELP" "$RELV" "$RELR" "$RELVER" "$KPKG" || return 1
	cp -a "$work/base-$F" "$1/srv/baseos"
	printf '[baseos]\nname=stand-in for %s BaseOS, AppStream and EPEL\nbaseurl=file:///srv/baseos\nenabled=1\ngpgcheck=0\n' "$L" \
		>"$1/etc/yum.repos.d/baseos.repo"
	cp "$work/seed-$F"/*.rpm "$1/tmp/"
	chroot "$1" rpm -i --nodeps --justdb /tmp/bash-5.1.8-9.el9.x86_64.rpm &&
		chroot "$1" rpm -i --nodeps "/tmp/$RELP-$RELV-$RELR.x86_64.rpm" "/tmp/$KPKG-$KEVR.x86_64.rpm" || return 1
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
# plan_of ROOT GPU: DV, REPO, RARCH, TV and PKGS from the plan for GPU there.
plan_of() {
	"$GB" --root "$1" plan --json --target-gpu "$2" --profile "$work/test.profile" --method packages >"$work/plan.json" ||
		{ echo "image-rpm: plan failed"; cat "$work/plan.json"; return 1; }
	eval "$(python3 -c "
import json
p=json.load(open('$work/plan.json'))
d=p['driver']
print('DV=%s REPO=%s RARCH=%s TV=%s' % (d['version'], d['repository'], d['repository_arch'], p['toolkit']['version']))
print('PKGS=\"%s\"' % ' '.join(d['packages']))")"
}
family rhel9
make_root "$work/planroot" || { echo "image-rpm: the test root could not be made"; exit 1; }
plan_of "$work/planroot" T4 || exit 1
rm -rf "$work/planroot"
B=${DV%%.*}
NEWER=$B.199.01

# ---- the repositories: the toolkit's, then each family's driver repository as it comes ----
ctk=$srv/good/libnvidia-container/stable/rpm/x86_64
nv_toolkit_repo_rpm "$ctk" "$TV"
gpg --batch --quiet --passphrase '' --quick-gen-key "wrong key <wrong@localhost>" ed25519 sign never 2>/dev/null
gpg --batch --armor --export "wrong@localhost" >"$work/wrong.pub"
# The toolkit's repository with another key at its key's URL (badctk/),
# and its repomd.xml changed after signing (a byte added; tampered/).
mkdir -p "$srv/badctk" "$srv/tampered" "$srv/bad"
cp -a "$srv/good/libnvidia-container" "$srv/badctk/"
cp "$work/wrong.pub" "$srv/badctk/libnvidia-container/gpgkey"
cp -a "$srv/good/libnvidia-container" "$srv/tampered/"
cp -a "$srv/good/libnvidia-container" "$srv/bad/"
echo '<!-- -->' >>"$srv/tampered/libnvidia-container/stable/rpm/x86_64/repodata/repomd.xml"

# driver_repo: the current family's driver repository in NVIDIA's layout
# (the plan's REPO: rhel9 serves RHEL 9, Rocky 9 and Alma 9), with its wrong-key
# (bad/), tampered (tampered/) and wrong-toolkit-key (badctk/) mirrors.
driver_repo() {
	cuda=compute/cuda/repos/$REPO/$RARCH
	[ -d "$srv/good/$cuda" ] && return 0
	nv_driver_repo_rpm "$srv/good/$cuda" "$DV" "$NEWER" || return 1
	for m in bad tampered badctk; do
		mkdir -p "$srv/$m/$cuda"
		cp -a "$srv/good/$cuda/." "$srv/$m/$cuda/"
	done
	cp "$work/wrong.pub" "$srv/bad/$cuda/D42D0685.pub"
	# a newer primary's checksum, as a mirror serving its own metadata would
	sed -i 's/<revision>\([0-9]*\)</<revision>\11</' "$srv/tampered/$cuda/repodata/repomd.xml"
}

: >"$work/requests.log"
REQUEST_LOG=$work/requests.log python3 tests/https-server.py "$srv" "$TMP/good.pem" "$TMP/good.key" "$TMP/ports" 2>"$work/server.log" &
SRV=$!
for i in $(seq 50); do [ -s "$TMP/ports" ] && break; sleep 0.1; done
read -r PORT _ <"$TMP/ports"

. vm-tests/image-rpm-dnf.sh
for f in rhel9 rhel8 rocky9 alma9 amzn2023 rhel10; do
	want $f || continue
	family $f
	echo "image-rpm: $L ($OSR, kernel $KVER, packages .$NV_DIST, platform $NV_PLATFORM)"
	if [ $f = rhel10 ]; then
		dnf_rhel10
	else
		dnf_family
	fi
done

want sles15 && . vm-tests/image-rpm-sles15.sh

echo "image-rpm: $(($(date +%s) - t0)) s"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
