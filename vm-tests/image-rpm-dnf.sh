# vm-tests/image-rpm-dnf.sh (sourced by vm-tests/image-rpm.sh, which sets
# the family, the mirror, the certificates, the profile and check()): one
# dnf family's part, on a test root with REAL dnf 4.14 and rpm 4.18 and that
# family's own /etc/os-release (tests/data/os-release/, each file's source
# in its README).
#
# dnf_family, for RHEL 9, RHEL 8, Rocky 9, Alma 9 and Amazon Linux 2023:
# the install for a T4 (the stream <branch>-dkms, cuda-drivers): the key
# checked against the pin and imported, the stream enabled (dnf's own
# state; dnf's platform module is the os-release's PLATFORM_ID, which the
# streams require), every package at the plan's version with NVIDIA's
# release tag there although a newer one is in the same stream,
# versionlock, the module built, the toolkit's four packages at one version
# and locked; a rerun with zero effects. RHEL 9 alone also runs what does
# not depend on the family: a wrong key, a tampered repomd.xml, a version
# the repository lacks, the toolkit's repository under a wrong key,
# rpm's transaction lock held, another stream (latest-dkms) already
# enabled, and an HGX H100 (the open stream, nvidia-open, the fabric
# manager).
#
# dnf_rhel10: what the plan does for RHEL 10 today: NVIDIA's rhel10
# repository has no module streams, and the catalog pins no key for it, so
# --method packages is refused (exit 10) before anything is fetched or
# written, and the default method is the runfile, saying why.

# dnf_run MIRROR [ARGS]: gpuboot run for a T4 on the family's root, with
# the profile $lc_profile (the test's).
dnf_run() {
	m=$1
	shift
	"$GB" --root "$root" run --target-gpu T4 --profile "${lc_profile:-$work/test.profile}" --method packages \
		--mirror "https://127.0.0.1:$PORT/$m" --ca-file "$TMP/ca.pem" --state-dir "$state" "$@"
}
rq() { lc_rq "$root" "$1"; }

# dnf_refusals: the refusals that do not depend on the family (RHEL 9's root).
dnf_refusals() {
	# ---- 1. a wrong key at the key's URL ----
	lc_run bad 2 dnf_run bad/
	check "$L: a wrong key fingerprint: refused, exit 13" test "$rc" = 13
	check "$L:   the error names the pin" grep -q "not the pinned" "$work/bad.err"
	check "$L:   no key file, no repo file written" sh -c "! ls '$root'/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-* '$root'/etc/yum.repos.d/gpuboot-* 2>/dev/null"
	check "$L:   no key in rpm's database" sh -c "! chroot '$root' rpm -q gpg-pubkey >/dev/null 2>&1"
	check "$L:   nothing installed, nothing mounted" lc_none "$root"
	lc_reset "$root" "$work/pristine"

	# ---- 2. tampered metadata: the toolkit's repomd.xml no longer its signature's ----
	lc_run tampered 3 dnf_run tampered/
	check "$L: a tampered repomd.xml: refused, exit 13" test "$rc" = 13
	check "$L:   dnf's own words: the signature of repomd.xml" grep -q "dnf refused .*repomd.xml GPG signature verification" "$work/tampered.err"
	check "$L:   no toolkit package installed" sh -c "[ -z \"\$(chroot '$root' rpm -qa '*container*')\" ]"
	check "$L:   nothing mounted" lc_unmounted "$root"
	lc_reset "$root" "$work/pristine"

	# ---- 3. the toolkit's repository under another key ----
	lc_run badctk 2 dnf_run badctk/
	check "$L: the toolkit's key not the pinned one: refused, exit 13" test "$rc" = 13
	check "$L:   the error names the toolkit's pin" grep -q "container-toolkit" "$work/badctk.err"
	check "$L:   no toolkit package, no toolkit repo file, no toolkit key" sh -c "[ -z \"\$(chroot '$root' rpm -qa '*container*')\" ] && ! ls '$root'/etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo '$root'/etc/pki/rpm-gpg/*container* 2>/dev/null"
	check "$L:   nothing mounted" lc_unmounted "$root"
	lc_reset "$root" "$work/pristine"

	# ---- 4. a version the repository lacks ----
	lc_run_branch missing 2 "$B.95.05" dnf_run good/
	check "$L: a version the repository lacks: refused (exit $rc)" test "$rc" = 1
	check "$L:   the error names the version" grep -q "$B.95.05 (not this version\|$B.95.05 (no such" "$work/missing.err"
	check "$L:   nothing installed, nothing mounted" lc_none "$root"
	lc_reset "$root" "$work/pristine"

	# ---- 5. another stream enabled by real dnf: latest-dkms ----
	# as NVIDIA's guide has it for the newest driver (dnf config-manager
	# --add-repo, dnf module enable nvidia-driver:latest-dkms); the
	# repository's file removed after, its stream's state kept
	printf '[cuda-%s-x86_64]\nname=cuda\nbaseurl=https://127.0.0.1:%s/good/compute/cuda/repos/%s/%s\nenabled=1\ngpgcheck=0\n' \
		"$REPO" "$PORT" "$REPO" "$RARCH" >"$root/etc/yum.repos.d/cuda-$REPO.repo"
	chroot "$root" dnf -y -q module enable nvidia-driver:latest-dkms >"$work/latest.dnf" 2>&1
	rc=$?
	rm -f "$root/etc/yum.repos.d/cuda-$REPO.repo"
	check "$L: real dnf enables nvidia-driver:latest-dkms (exit $rc)" grep -qx 'stream=latest-dkms' "$root/etc/dnf/modules.d/nvidia-driver.module"
	lc_run latest 2 dnf_run good/
	check "$L:   gpuboot refuses to switch the stream silently (exit $rc)" sh -c "[ $rc != 0 ] && grep -q 'nvidia-driver:latest-dkms is enabled' '$work/latest.err'"
	check "$L:   it names dnf module switch-to" grep -q "dnf module switch-to nvidia-driver:$B-dkms" "$work/latest.err"
	check "$L:   the stream is still latest-dkms; nothing installed" sh -c "grep -qx 'stream=latest-dkms' '$root/etc/dnf/modules.d/nvidia-driver.module' && [ -z \"\$(chroot '$root' rpm -qa '*nvidia*' 'cuda-drivers*')\" ]"
	lc_reset "$root" "$work/pristine"

	# ---- 6. rpm's transaction lock held: waited for, named ----
	# by a process holding the fcntl lock rpm takes (rpm's own: rpm -i
	# in the root cannot take it, shown first), released after a few seconds
	python3 -c "
import fcntl,time
f=open('$root/var/lib/rpm/.rpm.lock','a')
fcntl.lockf(f, fcntl.LOCK_EX)
print('held', flush=True)
time.sleep(600)" >"$work/holder.out" &
	holder=$!
	for i in $(seq 50); do [ -s "$work/holder.out" ] && break; sleep 0.1; done
	cp "$work/seed-$F/bash-5.1.8-9.el9.x86_64.rpm" "$root/tmp/"
	timeout 3 chroot "$root" rpm -i --justdb --nodeps --replacepkgs /tmp/bash-5.1.8-9.el9.x86_64.rpm >"$work/rpmlock.out" 2>&1
	rm -f "$root/tmp/bash-5.1.8-9.el9.x86_64.rpm"
	check "$L: rpm itself finds its transaction lock held (/var/lib/rpm/.rpm.lock)" grep -q "transaction lock on /var/lib/rpm/.rpm.lock" "$work/rpmlock.out"
	lc_release=""
	lc_held_run "$L" "$root" "$holder" "var/lib/rpm/.rpm.lock' is held by pid $holder" lock dnf_run good/
	lc_reset "$root" "$work/pristine"
}

dnf_family() {
	root=$work/root-$F
	state=$root/var/lib/gpuboot
	make_root "$root" || { check "$L: the test root is made" false; return; }
	plan_of "$root" T4 || { check "$L: the plan is made" false; return; }
	fB=${DV%%.*}
	echo "image-rpm: $L: plan: driver $DV from $REPO/$RARCH ($PKGS), toolkit $TV; newer: $fB.199.01"
	driver_repo || { check "$L: the driver repository is made" false; return; }
	cp -a "$root" "$work/pristine"
	[ "$F" = rhel9 ] && dnf_refusals
	# the os-release is what dnf's platform comes from: rhel9's streams
	# (platform:el9) cannot be enabled on another (asked, not done)
	r9=compute/cuda/repos/rhel9/$RARCH
	if [ "$NV_PLATFORM" != el9 ] && [ -d "$srv/good/$r9" ]; then
		chroot "$root" dnf -q --disablerepo='*' --repofrompath="nv9,https://127.0.0.1:$PORT/good/$r9" \
			--setopt=nv9.gpgcheck=0 --assumeno module enable nvidia-driver:"$B-dkms" >"$work/plat.out" 2>&1
		check "$L: dnf's platform is $NV_PLATFORM (os-release): rhel9's streams do not enable here" \
			grep -q "nothing provides module(platform:el9)" "$work/plat.out"
		rm -rf "$root/var/cache/dnf/nv9-"*
	fi

	# ---- the install ----
	t_inst=$(date +%s)
	lc_run run1 4 dnf_run good/
	t_inst=$(($(date +%s) - t_inst))
	check "$L: the install exits 0 ($t_inst s)" test "$rc" = 0
	check "$L: nothing left mounted" lc_unmounted "$root"
	kf=$root/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-$REPO-$RARCH
	check "$L: the key file holds the pinned key" sh -c "gpg --batch --show-keys --with-colons '$kf' 2>/dev/null | grep -q '^fpr:::::::::$fpr:'"
	lid=$(echo "$fpr" | tail -c 9 | tr 'A-F' 'a-f')
	check "$L: rpm -q gpg-pubkey: the pinned key imported ($lid)" sh -c "chroot '$root' rpm -q gpg-pubkey --qf '%{VERSION}\n' | grep -qx '$lid'"
	check "$L: the repo file: $REPO, gpgcheck=1, its own key" sh -c "grep -qx gpgcheck=1 '$root/etc/yum.repos.d/gpuboot-cuda-$REPO-$RARCH.repo' && grep -qx 'gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-cuda-$REPO-$RARCH' '$root/etc/yum.repos.d/gpuboot-cuda-$REPO-$RARCH.repo' && grep -q 'compute/cuda/repos/$REPO/$RARCH' '$root/etc/yum.repos.d/gpuboot-cuda-$REPO-$RARCH.repo'"
	stream=${PKGS#@nvidia-driver:}
	stream=${stream%% *}
	check "$L: the module stream nvidia-driver:$stream enabled (dnf's own state)" sh -c "grep -qx 'stream=$stream' '$root/etc/dnf/modules.d/nvidia-driver.module' && grep -qx 'state=enabled' '$root/etc/dnf/modules.d/nvidia-driver.module'"
	check "$L: dnf module list --enabled names it" sh -c "chroot '$root' dnf -q -C module list --enabled nvidia-driver 2>/dev/null | grep -q '$stream \[e\]'"
	for p in cuda-drivers nvidia-driver nvidia-driver-libs nvidia-driver-cuda nvidia-driver-cuda-libs kmod-nvidia-latest-dkms nvidia-kmod-common; do
		want=3:$DV-1.$NV_DIST
		[ $p = cuda-drivers ] && want=0:$DV-1
		check "$L: $p at $want (not $fB.199.01)" test "$(rq $p)" = "$want"
	done
	check "$L: kernel-devel at the kernel's $KEVR" test "$(rq kernel-devel)" = "0:$KEVR"
	check "$L: the module for $KVER (the DKMS stand-in ran)" test -f "$root/lib/modules/$KVER/extra/nvidia.ko.xz"
	vl=$root/etc/dnf/plugins/versionlock.list
	for p in cuda-drivers nvidia-driver nvidia-driver-cuda kmod-nvidia-latest-dkms; do
		check "$L: versionlock: $p" grep -q "^$p-[0-9:]*$DV-" "$vl"
	done
	check "$L: dnf's versionlock list reads them" sh -c "chroot '$root' dnf -q -C versionlock list 2>/dev/null | grep -q '^nvidia-driver-3:$DV-1.$NV_DIST'"
	check "$L: dnf upgrade would change nothing (the locks hold)" sh -c "chroot '$root' dnf -q -C --assumeno upgrade >'$work/upgrade.out' 2>&1; ! grep -q '$fB.199.01' '$work/upgrade.out'"
	for p in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
		check "$L: $p at $TV-1 (not 1.99.0), locked" sh -c "[ '$(rq $p)' = '0:$TV-1' ] && grep -q '^$p-[0-9:]*$TV-1' '$vl'"
	done
	check "$L: the toolkit's repo file: repo_gpgcheck=1, gpgcheck=0" sh -c "grep -qx repo_gpgcheck=1 '$root/etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo' && grep -qx gpgcheck=0 '$root/etc/yum.repos.d/gpuboot-nvidia-container-toolkit.repo'"
	check "$L: nouveau blacklisted" grep -qx 'blacklist nouveau' "$root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf"
	nv_check_done "$L: " "$state" dnf-install "cuda-drivers-$DV-1"

	# ---- the rerun ----
	dnf_run good/ >"$work/run2.out" 2>"$work/run2.err"
	rc=$?
	nv_check_idle "$L: the rerun exits 0 with zero effects, no command" "$rc" "$state"
	lc_umount_under "$root"
	[ "$F" = rhel9 ] && dnf_hgx
	rm -rf "$root" "$work/pristine"
}

# dnf_hgx: an HGX H100 (2330x8): the open stream, nvidia-open and the fabric manager.
dnf_hgx() {
	H=$work/hgx
	cp -a "$work/pristine" "$H"
	hgx_run() {
		"$GB" --root "$H" run --target-gpu 2330x8 --profile "$work/test.profile" --method packages \
			--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" --state-dir "$H/var/lib/gpuboot"
	}
	lc_run hgx 2 hgx_run
	hq() { lc_rq "$H" "$1"; }
	check "$L: HGX: the install exits 0" test "$rc" = 0
	check "$L: HGX: the stream $B-open enabled" grep -qx "stream=$B-open" "$H/etc/dnf/modules.d/nvidia-driver.module"
	for p in nvidia-open kmod-nvidia-open-dkms nvidia-driver nvidia-driver-cuda; do
		check "$L: HGX: $p at 3:$DV-1.$NV_DIST, locked" sh -c "[ '$(hq $p)' = '3:$DV-1.$NV_DIST' ] && grep -q '^$p-3:$DV-1.$NV_DIST' '$H/etc/dnf/plugins/versionlock.list'"
	done
	check "$L: HGX: nvidia-fabricmanager at $DV-1, locked; nv-fabricmanager there" sh -c "[ '$(hq nvidia-fabricmanager)' = '0:$DV-1' ] && grep -q '^nvidia-fabricmanager-0:$DV-1' '$H/etc/dnf/plugins/versionlock.list' && [ -x '$H/usr/bin/nv-fabricmanager' ]"
	check "$L: HGX: no kmod-nvidia-latest-dkms" sh -c "! chroot '$H' rpm -q kmod-nvidia-latest-dkms >/dev/null 2>&1"
	hgx_run >"$work/hgx2.out" 2>"$work/hgx2.err"
	rc=$?
	nv_check_idle "$L: HGX: the rerun exits 0 with zero effects" "$rc" "$H/var/lib/gpuboot"
	lc_umount_under "$H"
	rm -rf "$H"
}

dnf_rhel10() {
	root=$work/root-$F
	state=$root/var/lib/gpuboot
	make_root "$root" || { check "$L: the test root is made" false; return; }
	"$GB" --root "$root" plan --json --target-gpu T4 --profile "$work/test.profile" --method packages \
		>"$work/r10plan.json" 2>"$work/r10plan.err"
	rc=$?
	check "$L: plan --method packages: refused, exit 10 (rc $rc)" python3 -c "
import json,sys
p=json.load(open('$work/r10plan.json'))
sys.exit(not (p['refusal']['code']==10 and 'rhel10 repository with a key gpuboot does not pin yet' in p['refusal']['reason']))"
	"$GB" --root "$root" plan --json --target-gpu T4 --profile "$work/test.profile" >"$work/r10def.json" 2>/dev/null
	check "$L: the default method is the runfile, naming the unpinned key" python3 -c "
import json,sys
d=json.load(open('$work/r10def.json'))['driver']
sys.exit(not (d['method']=='runfile' and 'rhel10 repository with a key gpuboot does not pin yet' in d['method_reason']))"
	n0=$(grep -vc '/catalog.json$' "$work/requests.log")
	lc_run r10 2 dnf_run good/
	check "$L: run --method packages: refused, exit 10" test "$rc" = 10
	check "$L:   nothing asked of the repositories (the mirror's catalog.json only)" test "$(grep -vc '/catalog.json$' "$work/requests.log")" = "$n0"
	check "$L:   no key, no repo file, nothing installed, nothing mounted" sh -c "! ls '$root'/etc/pki/rpm-gpg/RPM-GPG-KEY-gpuboot-* '$root'/etc/yum.repos.d/gpuboot-* 2>/dev/null && ! chroot '$root' rpm -q gpg-pubkey >/dev/null 2>&1" 
	check "$L:   nothing of NVIDIA's in rpm's database" lc_none "$root"
	rm -rf "$root"
}
