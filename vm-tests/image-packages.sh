#!/bin/sh
# vm-tests/image-packages.sh: the packages method and the Container Toolkit
# with real apt, in a chroot of a real Debian 12 image root, against a local
# HTTPS repository in NVIDIA's layout:
#   <mirror>/compute/cuda/repos/debian12/x86_64/      (flat, InRelease)
#   <mirror>/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
#   <mirror>/libnvidia-container/stable/deb/amd64/    (flat, InRelease)
#   <mirror>/libnvidia-container/gpgkey
# built here with small generated packages under NVIDIA's names, signed by
# the test key in tests/data/test-repo-key (its fingerprint is pinned only in
# the test build, build/asan/gpuboot). The image root is the cached one of
# vm-tests/image-install.sh; the Debian sources are removed from the copy so
# nothing but the local repository answers (the generated linux-headers-*
# stand in for Debian's, at the image's kernel versions).
#
# What it proves, from outside the root:
#   - a key whose fingerprint is not the pinned one is refused before
#     anything is trusted (exit 13, no keyring, no sources entry);
#   - a driver version the repository lacks is refused before anything is
#     installed (no package installed);
#   - the install: keyring and Signed-By sources, the exact versions the plan
#     pinned although newer ones are there (cuda-drivers' loose dependency
#     on libcuda1 included: the pin, not the command line, keeps it),
#     apt-mark holds, the apt pin, the unattended-upgrades blacklist, the
#     nouveau blacklist, the module "built" for the image's kernel, the
#     toolkit's four packages at one version, the journal;
#   - the rerun changes nothing (zero effects, no command);
#   - an NVSwitch host (--target-gpu 2330x8): the fabric manager installed
#     with the driver at its exact version and held, the rerun idle;
#   - a tampered index is refused (exit 13) and leaves no keyring, no sources;
#   - killed for real (the process tree SIGKILLed) inside dpkg, and at each
#     of 14 points of a fresh install (apt's update and download, a .deb in
#     partial/, dpkg-deb, dpkg's unpack and configure, a maintainer script,
#     the (stand-in) DKMS build, the headers' hook, the holds, the toolkit's
#     install and configuration, the first-boot unit), the next run
#     converges.
#
# Needs root (chroot), gpg, apt-ftparchive (apt-utils), dpkg-deb, openssl,
# python3, and the cached root (vm-tests/image-install.sh --build-only).
# Ends with "N passed, N failed"; exit 1 on a failure, 77 when it cannot run.
set -u
cd "$(dirname "$0")/.."
top=$(pwd)
GB=${GB_TEST:-build/asan/gpuboot}
[ "$(id -u)" = 0 ] || { echo "image-packages: needs root (chroot), skipped"; exit 77; }
for t in gpg apt-ftparchive dpkg-deb openssl python3; do
	command -v "$t" >/dev/null || { echo "image-packages: $t missing, skipped"; exit 77; }
done
[ -x "$GB" ] || { echo "image-packages: $GB missing (make $GB)"; exit 1; }
img=$(vm-tests/image-install.sh --build-only) || { echo "image-packages: no image root"; exit 1; }
work=$(mktemp -d /tmp/gpuboot-image-packages.XXXXXX)
root=$work/root
srv=$work/srv
export GNUPGHOME=$work/gnupg
export ASAN_OPTIONS=detect_leaks=0
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	if grep -q " $root/" /proc/mounts; then
		echo "image-packages: mounts left under $root:" >&2
		grep " $root/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
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

cp -a "$img/root" "$root"
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
# A container engine in the image: docker's daemon and a daemon.json of the
# user's own (the toolkit's runtime is merged into it, nothing else changes).
mkdir -p "$root/usr/sbin" "$root/etc/docker"
printf '#!/bin/sh\nexit 0\n' >"$root/usr/sbin/dockerd"
chmod 0755 "$root/usr/sbin/dockerd"
printf '{\n  "log-driver": "journald",\n  "registry-mirrors": [ "https://mirror.example" ]\n}\n' >"$root/etc/docker/daemon.json"
kver=$(ls "$root/lib/modules")
kimg=$(chroot "$root" dpkg-query -W -f '${Version}' "linux-image-$kver")
kmeta=$(chroot "$root" dpkg-query -W -f '${Version}' linux-image-cloud-amd64)

# ---- the plan: the versions and names the repository must carry ----
cat >"$work/test.profile" <<'EOF'
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
EOF
plan() { "$GB" --root "$root" plan --json --target-gpu T4 --profile "$work/test.profile" --method packages "$@"; }
plan >"$work/plan.json" || { echo "image-packages: plan failed"; cat "$work/plan.json"; exit 1; }
eval "$(python3 -c "
import json
p=json.load(open('$work/plan.json'))
d=p['driver']
print('DV=%s REPO=%s RARCH=%s TV=%s' % (d['version'], d['repository'], d['repository_arch'], p['toolkit']['version']))
print('PKGS=\"%s\"' % ' '.join(d['packages']))")"
# An HGX board (--target-gpu 2330x8: eight H100s and their NVSwitches): the
# same driver, the open module, and the fabric manager beside it.
HGX_PKGS=$("$GB" --root "$root" plan --json --target-gpu 2330x8 --profile "$work/test.profile" --method packages |
	python3 -c "import json,sys; print(' '.join(json.load(sys.stdin)['driver']['packages']))")
echo "image-packages: root $root, kernel $kver; plan: driver $DV from $REPO/$RARCH ($PKGS), toolkit $TV; HGX: $HGX_PKGS"
NEWER=999.1.2

# ---- the repository ----
. vm-tests/lib-nvidia-repo.sh
cuda=$srv/good/compute/cuda/repos/$REPO/$RARCH
ctk=$srv/good/libnvidia-container/stable/deb/amd64
# DKMS's work, stood in for: the module file for every kernel with headers.
# (the stand-in DKMS build takes a second, as a real one takes minutes: a
# kill inside it is a point of section 5)
nv_driver_repo "$cuda" "$DV" "$NEWER" "$(echo $PKGS $HGX_PKGS | tr ' ' '\n' | sort -u | tr '\n' ' ')" "$kver" "$kimg" "$kmeta" "sleep 1"
nv_toolkit_repo "$ctk" "$TV"
nv_sign_setup
nv_sign_repo "$cuda"
nv_sign_repo "$ctk"
# The tampered mirror: the pinned key, a signed index, and a Packages file
# that is not the one the signed index names (a byte added after signing).
mkdir -p "$srv/tampered"
cp -a "$srv/good/compute" "$srv/tampered/"
echo >>"$srv/tampered/compute/cuda/repos/$REPO/$RARCH/Packages"
# The wrong-key mirror: the same repository, another key at the key's URL.
mkdir -p "$srv/bad"
cp -a "$srv/good/compute" "$srv/bad/"
gpg --batch --quiet --passphrase '' --quick-gen-key "wrong key <wrong@localhost>" ed25519 sign never 2>/dev/null
gpg --batch --armor --export "wrong@localhost" >"$srv/bad/compute/cuda/repos/$REPO/$RARCH/3bf863cc.pub"

# ---- the server, its CA trusted inside the image (apt) and by gpuboot (--ca-file) ----
TMP=$work/tls
nv_serve "$srv"
cp "$TMP/ca.pem" "$root/usr/local/share/ca-certificates/gpuboot-test-ca.crt"
chroot "$root" update-ca-certificates >/dev/null 2>&1
cp -a "$root" "$work/pristine" # the image as every kill point starts it
state=$root/var/lib/gpuboot
run() { # mirror-suffix, then extra arguments
	m=$1
	shift
	"$GB" --root "$root" run --target-gpu T4 --profile "$work/test.profile" --method packages \
		--mirror "https://127.0.0.1:$PORT/$m" --ca-file "$TMP/ca.pem" --state-dir "$state" "$@"
}
installed() { chroot "$root" dpkg-query -W -f '${Version}' "$1" 2>/dev/null; }

# ---- 1. the wrong key ----
run bad/ >"$work/bad.out" 2>"$work/bad.err"
rc=$?
sed 's/^/    /' "$work/bad.err" | tail -n 3
check "a wrong key fingerprint: refused, exit 13" test "$rc" = 13
check "  the error names the fingerprint and the pin" grep -q "not the pinned" "$work/bad.err"
check "  no keyring written" sh -c "! ls '$root'/usr/share/keyrings/gpuboot-* 2>/dev/null"
check "  no sources entry written" sh -c "! ls '$root'/etc/apt/sources.list.d/gpuboot-* 2>/dev/null"
check "  nothing mounted" sh -c "! grep -q ' $root/' /proc/mounts"
rm -rf "$state"

# ---- 1b. a tampered index: apt refuses it; exit 13 and no trace ----
run tampered/ >"$work/tampered.out" 2>"$work/tampered.err"
rc=$?
sed 's/^/    /' "$work/tampered.err" | tail -n 2
check "a tampered index: refused before any install, exit 13" test "$rc" = 13
check "  the error says apt refused the index" grep -q "apt refused .*index" "$work/tampered.err"
check "  the keyring this run added is gone" sh -c "! ls '$root'/usr/share/keyrings/gpuboot-* 2>/dev/null"
check "  the sources entry this run added is gone" sh -c "! ls '$root'/etc/apt/sources.list.d/gpuboot-* 2>/dev/null"
check "  nothing installed" sh -c "[ -z \"\$(chroot '$root' dpkg-query -W -f '\${Status}' cuda-drivers 2>/dev/null | grep ' installed')\" ]"
check "  nothing mounted" sh -c "! grep -q ' $root/' /proc/mounts"
rm -rf "$state"

# ---- 2. a version the repository lacks ----
sed 's/^branch = lts/branch = 580.95.05/' "$work/test.profile" >"$work/missing.profile"
"$GB" --root "$root" run --target-gpu T4 --profile "$work/missing.profile" --method packages \
	--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" --state-dir "$state" \
	>"$work/missing.out" 2>"$work/missing.err"
rc=$?
sed 's/^/    /' "$work/missing.err" | tail -n 3
check "a version the repository lacks: refused (exit 1)" test "$rc" = 1
check "  the error names the version" grep -q "580.95.05 (not this version)" "$work/missing.err"
check "  nothing installed (no cuda-drivers, no libcuda1)" sh -c "[ -z \"\$(chroot '$root' dpkg-query -W -f '\${Status}' cuda-drivers libcuda1 2>/dev/null | grep ' installed')\" ]"
check "  nothing mounted" sh -c "! grep -q ' $root/' /proc/mounts"
rm -rf "$state"

# ---- 3. the install, killed for real inside dpkg, then run again ----
# The process tree (gpuboot, apt, dpkg and its maintainer scripts) stopped
# and SIGKILLed at once when dpkg runs, as a power cut would; the run
# after it repairs dpkg (dpkg --configure -a) and converges: every check
# below is of that second run.
. vm-tests/lib-kill.sh
run good/ >"$work/killed.out" 2>"$work/killed.err" &
PID=$!
kill_on 'proc_cmd "^dpkg .*--unpack\|^/usr/bin/dpkg .*--unpack\|^dpkg .*--configure\|^/usr/bin/dpkg .*--configure"' 0.02
check "the first install was killed inside dpkg" test -n "$fired"
echo "    killed: $(grep -c " $root/" /proc/mounts) mount(s) left; dpkg --audit: $(chroot "$root" dpkg --audit 2>&1 | head -n 1)"
run good/ >"$work/run1.out" 2>"$work/run1.err"
rc=$?
check "the run after the kill found it interrupted" grep -q 'interrupted in its install stage' "$work/run1.err"
echo "    the rerun: $(grep -o 'dpkg was interrupted[^:]*\|dpkg --audit: [^;]*' "$work/run1.err" | head -n 1)"
check "  dpkg --audit is empty" sh -c "[ -z \"\$(chroot '$root' dpkg --audit 2>&1)\" ]"
sed 's/^/    /' "$work/run1.err" | tail -n 5
check "the install exits 0" test "$rc" = 0
check "nothing left mounted, no policy-rc.d" sh -c "! grep -q ' $root/' /proc/mounts && [ ! -e '$root/usr/sbin/policy-rc.d' ]"
kr=$root/usr/share/keyrings/gpuboot-cuda-$REPO-$RARCH.gpg
check "keyring written, holding the pinned key" sh -c "gpg --batch --show-keys --with-colons '$kr' 2>/dev/null | grep -q '^fpr:::::::::$fpr:'"
src=$root/etc/apt/sources.list.d/gpuboot-cuda-$REPO-$RARCH.sources
check "sources: the repository, Signed-By its own keyring" sh -c "grep -qx 'URIs: https://127.0.0.1:$PORT/good/compute/cuda/repos/$REPO/$RARCH/' '$src' && grep -qx 'Signed-By: /usr/share/keyrings/gpuboot-cuda-$REPO-$RARCH.gpg' '$src'"
check "no key in apt's global trust" sh -c "! ls '$root'/etc/apt/trusted.gpg.d/ 2>/dev/null | grep -q gpuboot; [ ! -e '$root/etc/apt/trusted.gpg' ]"
for p in $PKGS; do
	check "$p at $DV-1 (not $NEWER-1)" test "$(installed "$p")" = "$DV-1"
done
check "libcuda1 at $DV-1: the pin, not 'libcuda1 (>= $DV)', chose it" test "$(installed libcuda1)" = "$DV-1"
check "nvidia-kernel-dkms at $DV-1" test "$(installed nvidia-kernel-dkms)" = "$DV-1"
check "linux-headers-$kver at $kimg" test "$(installed "linux-headers-$kver")" = "$kimg"
check "the module for $kver" test -f "$root/lib/modules/$kver/updates/dkms/nvidia-current.ko"
held=" $(chroot "$root" apt-mark showhold | tr '\n' ' ')"
for p in $PKGS nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
	check "$p held" sh -c "echo '$held' | grep -q ' $p '"
done
for p in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
	check "$p at $TV-1 (not 1.99.0-1)" test "$(installed "$p")" = "$TV-1"
done
check "apt pin: the driver at $DV" grep -q "^Pin: version $DV-\*" "$root/etc/apt/preferences.d/gpuboot-nvidia.pref"
check "apt pin: the toolkit at $TV" grep -q "^Pin: version $TV-\*" "$root/etc/apt/preferences.d/gpuboot-nvidia-container-toolkit.pref"
check "apt's policy: libcuda1's candidate is $DV-1" sh -c "chroot '$root' apt-cache policy libcuda1 | grep -q 'Candidate: $DV-1'"
check "apt's policy: libnvidia-container1's candidate is $TV-1" sh -c "chroot '$root' apt-cache policy libnvidia-container1 | grep -q 'Candidate: $TV-1'"
check "unattended-upgrades blacklist" grep -q '"^cuda-drivers\$";' "$root/etc/apt/apt.conf.d/51gpuboot-nvidia-unattended-upgrades"
check "apt reads the blacklist" sh -c "chroot '$root' apt-config dump | grep -q 'Unattended-Upgrade::Package-Blacklist:: \"^libnvidia-container1\$\"'"
check "nouveau blacklisted" grep -qx 'blacklist nouveau' "$root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf"
j=$state/journal.json
check "journal done, apt-get install of cuda-drivers=$DV-1" python3 -c "
import json,sys
d=json.load(open('$j'))
s=[x for x in d['steps'] if x['id']=='apt-get-install']
sys.exit(not (d['state']=='done' and s and s[0]['exit_status']==0 and [a for a in s[0]['argv'] if a=='cuda-drivers=$DV-1']))"
check "journal: the toolkit's steps in their own scope (toolkit/apt-get-install)" python3 -c "
import json,sys
d=json.load(open('$j'))
s=[x for x in d['steps'] if x['id']=='toolkit/apt-get-install']
sys.exit(not (s and [a for a in s[0]['argv'] if a=='nvidia-container-toolkit=$TV-1']))"
check "docker: runtimes.nvidia merged, the user's keys kept" python3 -c "
import json,sys
d=json.load(open('$root/etc/docker/daemon.json'))
sys.exit(not (d['runtimes']['nvidia']['path']=='/usr/bin/nvidia-container-runtime' and d['log-driver']=='journald' and d['registry-mirrors']==['https://mirror.example'] and 'default-runtime' not in d))"
check "CDI at every boot: gpuboot-cdi.service enabled in the image" sh -c "ls '$root'/etc/systemd/system/*.wants/gpuboot-cdi.service >/dev/null 2>&1 && grep -q 'nvidia-ctk cdi generate' '$root/etc/systemd/system/gpuboot-cdi.service'"
check "status: install ok, toolkit installed" python3 -c "
import json,sys
d=json.load(open('$state/status.json'))
st={s['name']: s['result'] for s in d['stages']}
t=d['install']['toolkit']
sys.exit(not (d['exit_code']==0 and st['install']=='ok' and t['method']=='packages' and all(p['after']=='$TV-1' for p in t['packages'])))"

# ---- 4. the rerun changes nothing ----
t0=$(date +%s.%N)
run good/ >"$work/run2.out" 2>"$work/run2.err"
rc=$?
t1=$(date +%s.%N)
sed 's/^/    /' "$work/run2.err" | tail -n 3
check "the rerun exits 0" test "$rc" = 0
check "the rerun's journal: zero effects, no command" python3 -c "
import json,sys
d=json.load(open('$j'))
sys.exit(not (d['effects_this_run']==0 and not [s for s in d['steps'] if s['kind']=='command']))"
echo "image-packages: rerun $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') s"

# ---- 4b. an NVSwitch host: the fabric manager with the driver ----
# On a fresh copy of the image: the HGX plan's packages, the fabric
# manager among them at the driver's exact version although a newer one is
# there, held with the driver; the rerun changes nothing.
H=$work/hgx
cp -a "$work/pristine" "$H"
hgx_run() {
	"$GB" --root "$H" run --target-gpu 2330x8 --profile "$work/test.profile" --method packages \
		--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" "$@"
}
hgx_run >"$work/hgx.out" 2>"$work/hgx.err"
rc=$?
sed 's/^/    /' "$work/hgx.err" | tail -n 3
check "HGX (2330x8): the plan installs nvidia-fabricmanager" sh -c "echo ' $HGX_PKGS ' | grep -q ' nvidia-fabricmanager '"
check "HGX: the install exits 0" test "$rc" = 0
check "HGX: nvidia-fabricmanager at $DV-1 (not $NEWER-1), held" test "$(chroot "$H" dpkg-query -W -f '${Version} ${Status}' nvidia-fabricmanager 2>/dev/null)" = "$DV-1 hold ok installed"
check "HGX: nvidia-open at $DV-1, held" test "$(chroot "$H" dpkg-query -W -f '${Version} ${Status}' nvidia-open 2>/dev/null)" = "$DV-1 hold ok installed"
check "HGX: its nv-fabricmanager in place" test -x "$H/usr/bin/nv-fabricmanager"
check "HGX: apt-get install named nvidia-fabricmanager=$DV-1" python3 -c "
import json,sys
d=json.load(open('$H/var/lib/gpuboot/journal.json'))
s=[x for x in d['steps'] if x['id']=='apt-get-install']
sys.exit(not (d['state']=='done' and s and 'nvidia-fabricmanager=$DV-1' in s[0]['argv']))"
check "HGX: status: install ok, the fabric manager's package at $DV-1" python3 -c "
import json,sys
d=json.load(open('$H/var/lib/gpuboot/status.json'))
p=[x for x in d['install']['driver']['packages'] if x['name']=='nvidia-fabricmanager']
sys.exit(not (d['exit_code']==0 and p and p[0]['after']=='$DV-1'))"
hgx_run >"$work/hgx2.out" 2>"$work/hgx2.err"
rc=$?
check "HGX: the rerun exits 0 with zero effects" sh -c "[ $rc = 0 ] && python3 -c \"
import json,sys
d=json.load(open('$H/var/lib/gpuboot/journal.json'))
sys.exit(not (d['effects_this_run']==0 and not [s for s in d['steps'] if s['kind']=='command']))\""
grep " $H/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
rm -rf "$H"

# ---- 5. killed for real at each point, then run again ----
# A fresh copy of the image each time; the whole process tree stopped and
# SIGKILLed when the point's trigger is seen (polled; a step too short to
# be seen is "missed", counted apart); the next run must converge: exit 0,
# the plan's versions installed and held, the module there, dpkg --audit
# empty, nothing mounted, no policy-rc.d, the status installed (pending its
# first boot) and the journal done.
kp_points='apt-get-update|proc_cmd "apt-get update"
apt-https|proc_named https || proc_named http
apt-partial-deb|ls "$R"/var/cache/apt/archives/partial/*.deb >/dev/null 2>&1
dpkg-deb|proc_named dpkg-deb
dpkg-unpack|proc_cmd "dpkg .*--unpack"
maintainer-script|proc_cmd "linux-headers-.*postinst"
headers-hook|proc_named run-parts
dpkg-configure|proc_cmd "dpkg .*--configure"
dkms-build|proc_cmd "nvidia-kernel-dkms.postinst"
apt-mark-hold|proc_cmd "apt-mark hold cuda\|apt-mark hold nvidia-driver"
toolkit-install|proc_cmd "apt-get install.*nvidia-container-toolkit="
toolkit-hold|proc_cmd "apt-mark hold.*nvidia-container"
toolkit-config|grep -q "etc/docker/daemon.json" "$R/var/lib/gpuboot/journal.json" 2>/dev/null
firstboot-unit|grep -q gpuboot-firstboot.service "$R/var/lib/gpuboot/journal.json" 2>/dev/null'
kp_kills=0 kp_missed=0 kp_fail=0 kp_n=0
t_kp=$(date +%s)
echo "$kp_points" >"$work/kp.list"
while IFS='|' read -r name trigger; do
	[ -n "${KP_ONLY:-}" ] && ! echo " $KP_ONLY " | grep -q " $name " && continue
	kp_n=$((kp_n + 1))
	R=$work/kp
	# a step shorter than the poll (apt-mark, dpkg-deb on a small package)
	# can be missed: up to three tries, each on a fresh copy
	fired= try=0
	while [ -z "$fired" ] && [ "$try" -lt 3 ]; do
		try=$((try + 1))
		rm -rf "$R" && cp -a "$work/pristine" "$R"
		"$GB" --root "$R" run --target-gpu T4 --profile "$work/test.profile" --method packages \
			--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" >"$work/kp.out" 2>"$work/kp.err" &
		PID=$!
		kill_on "$trigger"
	done
	if [ -z "$fired" ]; then
		kp_missed=$((kp_missed + 1))
		echo "    $name: missed (the run ended first, 3 tries)"
	else
		kp_kills=$((kp_kills + 1))
	fi
	"$GB" --root "$R" run --target-gpu T4 --profile "$work/test.profile" --method packages \
		--mirror "https://127.0.0.1:$PORT/good/" --ca-file "$TMP/ca.pem" >"$work/kp2.out" 2>"$work/kp2.err"
	rc=$?
	why=
	[ "$rc" = 0 ] || why="the rerun exited $rc: $(grep error: "$work/kp2.err" | tail -n 1)"
	for p in nvidia-driver-pinning-580 cuda-drivers nvidia-container-toolkit nvidia-container-toolkit-base \
		libnvidia-container-tools libnvidia-container1; do
		[ -n "$why" ] && break
		want=$DV-1
		case $p in *container*) want=$TV-1 ;; esac
		v=$(chroot "$R" dpkg-query -W -f '${Version} ${Status}' "$p" 2>/dev/null)
		[ "$v" = "$want hold ok installed" ] || why="$p is '$v', not '$want hold ok installed'"
	done
	[ -n "$why" ] || [ -f "$R/lib/modules/$kver/updates/dkms/nvidia-current.ko" ] || why="no module for $kver"
	[ -n "$why" ] || [ -z "$(chroot "$R" dpkg --audit 2>&1)" ] || why="dpkg --audit: $(chroot "$R" dpkg --audit 2>&1 | head -n 1)"
	[ -n "$why" ] || ! grep -q " $R/" /proc/mounts || why="$(grep -c " $R/" /proc/mounts) mounts left"
	[ -n "$why" ] || [ ! -e "$R/usr/sbin/policy-rc.d" ] || why="policy-rc.d left"
	[ -n "$why" ] || python3 -c "
import json,sys
d=json.load(open('$R/var/lib/gpuboot/status.json')); j=json.load(open('$R/var/lib/gpuboot/journal.json'))
sys.exit(not (d['result']=='installed-pending-first-boot' and d['exit_code']==0 and j['state']=='done'))" ||
		why="status/journal: $(head -c 300 "$R/var/lib/gpuboot/status.json")"
	grep " $R/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	if [ -n "$why" ]; then
		kp_fail=$((kp_fail + 1))
		echo "    $name: FAILED: $why"
	elif [ -n "$fired" ]; then
		rep=$(grep -o 'dpkg was interrupted[^:]*\|dpkg --audit: [^;]*' "$work/kp2.err" | head -n 1)
		echo "    $name: killed, then converged${rep:+ (the rerun repaired: $rep)}"
	fi
done <"$work/kp.list"
echo "image-packages: kill points: $kp_n points, $kp_kills kills, $kp_missed missed, $kp_fail failures, $(($(date +%s) - t_kp)) s"
check "killed at $kp_kills points of $kp_n, every rerun converged" test "$kp_fail" = 0
[ -n "${KP_ONLY:-}" ] || check "  at least 10 points fired (a kill, not a run that ended first)" test "$kp_kills" -ge 10
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
