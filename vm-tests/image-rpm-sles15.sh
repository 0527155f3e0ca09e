# vm-tests/image-rpm-sles15.sh (sourced by vm-tests/image-rpm.sh, after its
# dnf families; its check (vm-tests/lib-check.sh), mirror, certificates,
# profile and the toolkit's repository): the packages method and the Container Toolkit on a SLES 15
# SP5 test root with REAL zypper 1.14 (libzypp 17) and rpm, in a chroot,
# against NVIDIA's sles15 layout on the same loopback HTTPS mirror:
#   <mirror>/compute/cuda/repos/sles15/x86_64/     (repodata/, repomd.xml.asc)
#   <mirror>/compute/cuda/repos/sles15/x86_64/D42D0685.pub
#   <mirror>/libnvidia-container/stable/rpm/x86_64/ (the RHEL part's)
#
# THE TEST ROOT IS NOT A SLES MACHINE. It is a Debian 12 root (mmdebstrap,
# minbase) carrying Debian's zypper 1.14.42 with libzypp 17.25 and rpm
# 4.18, with SLES 15 SP5's /etc/os-release (tests/data/os-release/sles-15.5),
# apt's front-ends removed (so detect finds zypper), and an rpm database
# seeded with stand-ins for what a SLES 15 image has: sles-release,
# kernel-default owning boot/vmlinuz-<kver>, bash. The package manager, its
# resolver, its signature checks of repomd.xml and of each package against
# the keys in rpm's database, and its locks are the real ones.
#
# What it proves, for a T4 (the plan's metapackage at the driver version)
# and the toolkit: a wrong key refused (exit 13) with nothing written or
# installed; a tampered repomd.xml refused by zypper (exit 13) with nothing
# installed; a version the repository lacks refused before the install;
# zypp's lock (/run/zypp.pid of a live process) waited for and named while
# nothing runs; the install: the key imported, every package at the plan's
# version although a newer is there, the KMP's module under updates/,
# zypper addlock of each (zypper's own `locks`), the toolkit's four at one
# version and locked; a rerun with zero effects.

SKVER=5.14.21-150500.55.39-default
SKV=5.14.21-150500.55.39.1
zimg=$(build_root zypper zypper) || { echo "image-rpm: no zypper test root"; exit 1; }
nv_sles_base_repo_rpm "$work/sles-base" "$SKVER" "$SKV"
nv_sles_seed_rpms "$work/sles-seed" "$SKVER" "$SKV"

# make_sles_root DIR: the cached Debian root with zypper made a SLES 15 test root.
make_sles_root() {
	cp -a "$zimg/root" "$1"
	rm -f "$1"/usr/bin/apt "$1"/usr/bin/apt-get "$1"/usr/bin/apt-cache "$1"/usr/bin/apt-mark
	rm -f "$1/etc/os-release"
	cp tests/data/os-release/sles-15.5 "$1/etc/os-release"
	mkdir -p "$1/etc/rpm" "$1/var/lib/rpm" "$1/etc/zypp/repos.d" "$1/srv" "$1/lib/modules/$SKVER" "$1/run"
	printf '%%_dbpath /var/lib/rpm\n' >"$1/etc/rpm/macros.dbpath"
	cp -a "$work/sles-base" "$1/srv/sles-15-base"
	printf '[sle-module-basesystem]\nname=stand-in for SLE 15 SP5 Basesystem\nenabled=1\nautorefresh=0\nbaseurl=file:///srv/sles-15-base\ntype=rpm-md\ngpgcheck=0\n' \
		>"$1/etc/zypp/repos.d/sle-module-basesystem.repo"
	cp "$work"/sles-seed/*.rpm "$1/tmp/"
	chroot "$1" rpm -i --nodeps --justdb /tmp/bash-4.4-150400.27.3.2.x86_64.rpm &&
		chroot "$1" rpm -i --nodeps /tmp/sles-release-15.5-150500.58.1.x86_64.rpm "/tmp/kernel-default-$SKV.x86_64.rpm" || return 1
	rm -f "$1"/tmp/*.rpm
	cp "$TMP/ca.pem" "$1/usr/local/share/ca-certificates/gpuboot-test-ca.crt"
	chroot "$1" update-ca-certificates >/dev/null 2>&1
}

S=$work/sles
make_sles_root "$S" || { echo "image-rpm: the SLES test root could not be made"; exit 1; }
"$GB" --root "$S" plan --json --target-gpu T4 --profile "$work/test.profile" --method packages >"$work/splan.json" ||
	{ echo "image-rpm: the SLES plan failed"; cat "$work/splan.json"; exit 1; }
eval "$(python3 -c "
import json
p=json.load(open('$work/splan.json'))
d=p['driver']
print('SDV=%s SREPO=%s SRARCH=%s STV=%s' % (d['version'], d['repository'], d['repository_arch'], p['toolkit']['version']))
print('SPKGS=\"%s\"' % ' '.join(d['packages']))")"
SNEWER=${SDV%%.*}.199.01
echo "image-rpm: SLES kernel $SKVER; plan: driver $SDV from $SREPO/$SRARCH ($SPKGS), toolkit $STV; newer: $SNEWER"
scuda=compute/cuda/repos/$SREPO/$SRARCH
nv_sles_driver_repo_rpm "$srv/good/$scuda" "$SKVER" "$SDV" "$SNEWER" "$SKV"
[ -d "$srv/good/libnvidia-container/stable/rpm/x86_64" ] && [ "$STV" = "$TV" ] ||
	{ echo "image-rpm: the toolkit's repository is the RHEL part's ($TV), the SLES plan's is $STV"; exit 1; }
mkdir -p "$srv/bad/$scuda" "$srv/tampered/$scuda"
cp -a "$srv/good/$scuda/." "$srv/bad/$scuda/"
cp "$work/wrong.pub" "$srv/bad/$scuda/D42D0685.pub"
cp -a "$srv/good/$scuda/." "$srv/tampered/$scuda/"
sed -i 's/<revision>\([0-9]*\)</<revision>\11</' "$srv/tampered/$scuda/repodata/repomd.xml"
cp -a "$S" "$work/spristine"

sstate=$S/var/lib/gpuboot
srun() { # mirror-suffix, then extra arguments; the profile $lc_profile (the test's)
	m=$1
	shift
	"$GB" --root "$S" run --target-gpu T4 --profile "${lc_profile:-$work/test.profile}" --method packages \
		--mirror "https://127.0.0.1:$PORT/$m" --ca-file "$TMP/ca.pem" --state-dir "$sstate" "$@"
}
sq() { chroot "$S" rpm -q --qf '%{VERSION}-%{RELEASE}\n' "$1" 2>/dev/null; }
s_reset() { lc_reset "$S" "$work/spristine"; }

# ---- S1. a wrong key at the key's URL ----
lc_run sbad 2 srun bad/
check "SLES: a wrong key fingerprint: refused, exit 13" test "$rc" = 13
check "SLES:   the error names the pin" grep -q "not the pinned" "$work/sbad.err"
check "SLES:   no key file, no repo file written" sh -c "! ls '$S'/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-* '$S'/etc/zypp/repos.d/gpuboot-* 2>/dev/null"
check "SLES:   no key in rpm's database" sh -c "! chroot '$S' rpm -q gpg-pubkey >/dev/null 2>&1"
check "SLES:   nothing installed, nothing mounted" lc_none "$S"
s_reset

# ---- S2. a tampered repomd.xml ----
lc_run stampered 3 srun tampered/
check "SLES: a tampered repomd.xml: refused, exit 13" test "$rc" = 13
check "SLES:   zypper's own words: the signature of repomd.xml" grep -q "zypper refused .*[Ss]ignature" "$work/stampered.err"
check "SLES:   nothing installed, nothing mounted" lc_none "$S"
s_reset

# ---- S3. a version the repository lacks ----
lc_run_branch smissing 2 "${SDV%%.*}.95.05" srun good/
check "SLES: a version the repository lacks: refused (exit $rc)" test "$rc" = 1
check "SLES:   the error names the version" grep -q "${SDV%%.*}.95.05 (no such package or version)" "$work/smissing.err"
check "SLES:   nothing installed, nothing mounted" lc_none "$S"
s_reset

# ---- S4. zypp's lock held: waited for, named; nothing runs while it is held ----
sleep 600 &
holder=$!
echo "$holder" >"$S/run/zypp.pid"
# zypper itself refuses to run (exit 7, "System management is locked by the
# application with pid N"): the path is zypp's; /proc bound so that zypper
# sees the holder alive (else it takes a dead one's lock and clears it)
mount --bind /proc "$S/proc"
chroot "$S" zypper --non-interactive --no-refresh install --dry-run cuda-drivers >"$work/zlock.out" 2>&1
rc=$?
umount "$S/proc"
check "SLES: the real zypper refuses while /run/zypp.pid's holder lives (exit $rc)" sh -c "[ $rc = 7 ] && grep -q 'locked by the application with pid $holder' '$work/zlock.out'"
echo "$holder" >"$S/run/zypp.pid"
zypp_release() { : >"$S/run/zypp.pid"; } # zypp truncates it on release
lc_release=zypp_release
lc_held_run SLES "$S" "$holder" "run/zypp.pid' is held by pid $holder" slock srun good/
lc_release=""
s_reset

# ---- S5. the install ----
t_inst=$(date +%s)
lc_run srun1 4 srun good/
t_inst=$(($(date +%s) - t_inst))
check "SLES: the install exits 0 ($t_inst s)" test "$rc" = 0
check "SLES: nothing left mounted" lc_unmounted "$S"
kf=$S/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-$SREPO-$SRARCH
lid=$(echo "$fpr" | tail -c 9 | tr "A-F" "a-f")
check "SLES: the key file holds the pinned key" sh -c "gpg --batch --show-keys --with-colons '$kf' 2>/dev/null | grep -q '^fpr:::::::::$fpr:'"
check "SLES: rpm -q gpg-pubkey: the pinned key imported ($lid)" sh -c "chroot '$S' rpm -q gpg-pubkey --qf '%{VERSION}\n' | grep -qx '$lid'"
check "SLES: zypper's repo list: gpuboot's repository, GPG check on" sh -c "chroot '$S' zypper --non-interactive --no-refresh lr -d >'$work/slr.out' 2>&1; grep 'gpuboot-cuda-$SREPO-$SRARCH' '$work/slr.out' | grep -q Yes"
meta=${SPKGS%% *}
kmp=nvidia-driver-G06-kmp-default
[ "$meta" = nvidia-open ] && kmp=nvidia-open-driver-G06-signed-cuda-kmp-default
kmpv=${SDV}_k$(echo "${SKVER%-default}" | tr - _)-1
for p in $meta nvidia-compute-G06 nvidia-compute-utils-G06 nvidia-persistenced; do
	check "SLES: $p at $SDV-1 (not $SNEWER)" test "$(sq $p)" = "$SDV-1"
done
check "SLES: the KMP $kmp at $kmpv" test "$(sq $kmp)" = "$kmpv"
check "SLES: kernel-default-devel at the kernel's $SKV" test "$(sq kernel-default-devel)" = "$SKV"
check "SLES: the module for $SKVER under updates/" test -f "$S/lib/modules/$SKVER/updates/nvidia.ko"
chroot "$S" zypper --non-interactive --no-refresh locks >"$work/slocks.out" 2>&1
for p in $meta nvidia-compute-G06 nvidia-compute-utils-G06 $kmp; do
	check "SLES: zypper locks: $p" grep -q " $p *|" "$work/slocks.out"
done
check "SLES: zypper update would change nothing (the locks hold)" sh -c "chroot '$S' zypper --non-interactive --no-refresh update --dry-run >'$work/supdate.out' 2>&1; ! grep -q '$SNEWER' '$work/supdate.out'"
for p in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
	check "SLES: $p at $STV-1 (not 1.99.0), locked" sh -c "[ '$(sq $p)' = '$STV-1' ] && grep -q ' $p *|' '$work/slocks.out'"
done
check "SLES: the toolkit's repo file: repo_gpgcheck=1, gpgcheck=0" sh -c "grep -qx repo_gpgcheck=1 '$S/etc/zypp/repos.d/gpuboot-nvidia-container-toolkit.repo' && grep -qx gpgcheck=0 '$S/etc/zypp/repos.d/gpuboot-nvidia-container-toolkit.repo'"
nv_check_done "SLES: " "$sstate" zypper-install "$meta=$SDV"

# ---- S6. the rerun ----
srun good/ >"$work/srun2.out" 2>"$work/srun2.err"
rc=$?
nv_check_idle "SLES: the rerun exits 0 with zero effects, no command" "$rc" "$sstate"
lc_umount_under "$S"
