#!/bin/sh
# vm-tests/image-install.sh: the distro install method on real packages.
# Builds a Debian 12 image root with mmdebstrap (a cloud kernel, the three
# suites a Debian cloud image has, deb822 sources with "main" only), cached
# in ${GPUBOOT_VM_CACHE:-~/.cache/gpuboot-vm}/install-root-<hash of the
# recipe>; copies it; installs the NVIDIA driver into it with
# tests/tools/install-tool (image mode: chrooted apt, bind mounts, DKMS for
# the image's kernel) against Debian's real archive; checks the result from
# outside; then reruns the same install, which must change nothing.
#
# Needs root, network to deb.debian.org and security.debian.org, mmdebstrap,
# binutils (readelf) and the static build/gpuboot (make static).
# The flavour: a T4 (Turing) runs either. The default is proprietary at
# 535.309.01 because that is what Debian 12 can build today: the open
# modules exist only at 535.261.03 (bookworm/contrib), and they fail to
# build against bookworm's current kernel (6.1.0-57, 6.1.192-3 from
# bookworm-security: pci_resize_resource() gained an argument), while
# bookworm-security's 535.309.01 (a security update) is proprietary only.
# The plan says so (docs/plan.md; the catalog's distro_driver).
#
# Not part of `make test`: minutes (the DKMS build alone is ~4 minutes on
# 2 cores). Ends with "N passed, N failed"; exit 1 on a failure, 77 when it
# cannot run here.
#
# env: GPUBOOT_VM_CACHE   the cache directory
#      KEEP=1                   keep the work directory
set -u
cd "$(dirname "$0")/.."
here=$(pwd)/vm-tests
GB=${GB_STATIC:-build/gpuboot}
FLAVOR=proprietary
VERSION=535.309.01
[ "$(id -u)" = 0 ] || { echo "image-install: needs root (chroot, bind mounts), skipped"; exit 77; }
for t in mmdebstrap readelf; do
	command -v "$t" >/dev/null || { echo "image-install: $t missing, skipped"; exit 77; }
done
# ---- the image root, built once per recipe ----
build_root() {
	hash=$(sed -n '/^# ---- the image root/,/^# ---- end of the recipe/p' "$here/image-install.sh" | sha256sum | cut -c1-16)
	cache=${GPUBOOT_VM_CACHE:-${HOME:-/root}/.cache/gpuboot-vm}
	img=$cache/install-root-$hash
	if [ -f "$img/.complete" ]; then
		echo "$img"
		return 0
	fi
	mkdir -p "$cache"
	work=$(mktemp -d "$cache/work.XXXXXX")
	echo "image-install: building the Debian 12 image root (mmdebstrap, a few minutes)" >&2
	# The sources Debian's cloud images carry: bookworm, -updates and
	# -security, deb822, main only (the install enables the rest).
	if ! mmdebstrap --quiet --variant=minbase \
		--include=systemd-sysv,kmod,initramfs-tools,zstd,linux-image-cloud-amd64,ca-certificates,procps \
		--customize-hook='rm -f "$1/etc/apt/sources.list" "$1"/etc/apt/sources.list.d/*' \
		--customize-hook='printf "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://security.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n" >"$1/etc/apt/sources.list.d/debian.sources"' \
		--customize-hook='echo imageroot >"$1/etc/hostname"' \
		bookworm "$work/root" \
		"deb http://deb.debian.org/debian bookworm main" \
		"deb http://deb.debian.org/debian bookworm-updates main" \
		"deb http://security.debian.org/debian-security bookworm-security main" >&2; then
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

if [ "${1:-}" = "--build-only" ]; then
	build_root
	exit $?
fi
[ -x "$GB" ] || { echo "image-install: $GB missing (make static)"; exit 1; }

img=$(build_root) || { echo "image-install: the image root could not be built"; exit 1; }
work=$(mktemp -d /tmp/gpuboot-image-install.XXXXXX)
root=$work/root
# The state lives in the image: its first boot finishes the job from it.
state=$root/var/lib/gpuboot
cleanup() {
	# Nothing of the install may stay mounted; if something did, say so and
	# unmount it (before any rm -rf: a bound /dev is the host's).
	if grep -q " $work/" /proc/mounts; then
		echo "image-install: mounts left under $work:" >&2
		grep " $work/" /proc/mounts >&2
		grep " $work/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	fi
	grep -q " $work/" /proc/mounts && { echo "image-install: $work still has mounts; not removed" >&2; return; }
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0
check() { # description, then a shell test
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
now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.1f", $2 - $1 }'; }
# install_run LABEL ROOT NAME [OPTION...]: the image install of a T4 with
# Debian's packages into ROOT (its state in ROOT/var/lib/gpuboot), output
# in $work/NAME.out and .err; sets rc, and ts and te (its start and end).
install_run() {
	label=$1 r=$2 name=$3
	shift 3
	ts=$(now)
	"$GB" --root "$r" run --target-gpu T4 --profile minimal --method distro --state-dir "$r/var/lib/gpuboot" "$@" \
		>"$work/$name.out" 2>"$work/$name.err"
	rc=$?
	te=$(now)
	cat "$work/$name.err"
	echo "image-install: $label: exit $rc, $(secs "$ts" "$te") s"
}

cp -a "$img/root" "$root"
kver=$(ls "$root/lib/modules")
echo "image-install: root $root, kernel $kver, $FLAVOR flavour, driver $VERSION"

# ---- the install ----
install_run "first install" "$root" run1
t0=$ts t1=$te
check "the install exits 0" test "$rc" = 0
check "nothing left mounted in the root" sh -c "! grep -q ' $root/' /proc/mounts"
check "policy-rc.d removed" test ! -e "$root/usr/sbin/policy-rc.d"

# ---- checks from outside ----
case $FLAVOR in open) mod=nvidia-current-open ;; *) mod=nvidia-current ;; esac
ko=$root/lib/modules/$kver/updates/dkms/$mod.ko
modinfo_field() { # FIELD: from the module's .modinfo section, read with binutils
	readelf -p .modinfo "$ko" 2>/dev/null | sed -n "s/^ *\[ *[0-9a-f]*\] *$1=//p" | head -n1
}
check "DKMS built $mod.ko for $kver" test -f "$ko"
mver=$(modinfo_field version)
vermagic=$(modinfo_field vermagic)
echo "image-install: $mod.ko version=$mver vermagic=$vermagic"
check "module version $VERSION" test "$mver" = "$VERSION"
check "vermagic is the image's kernel $kver" sh -c "case '$vermagic' in '$kver '*) exit 0 ;; *) exit 1 ;; esac"
pkgs="nvidia-smi libcuda1 libnvidia-ml1 firmware-nvidia-gsp"
[ "$FLAVOR" = open ] && pkgs="nvidia-open-kernel-dkms $pkgs" || pkgs="nvidia-kernel-dkms $pkgs"
for p in $pkgs; do
	v=$(chroot "$root" dpkg-query -W -f '${Version}' "$p" 2>/dev/null)
	check "$p installed at $VERSION ($v)" sh -c "case '$v' in '$VERSION'-*) exit 0 ;; *) exit 1 ;; esac"
done
held=$(chroot "$root" apt-mark showhold | sort | tr '\n' ' ')
echo "image-install: held: $held"
for p in $pkgs; do
	check "$p held" sh -c "echo ' $held' | grep -q ' $p '"
done
check "linux-headers-$kver installed" sh -c "chroot '$root' dpkg-query -W 'linux-headers-$kver' >/dev/null"
check "nouveau blacklisted" grep -qx 'blacklist nouveau' "$root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf"
check "nouveau modeset=0" grep -qx 'options nouveau modeset=0' "$root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf"
check "sources: contrib non-free non-free-firmware enabled" \
	grep -qx 'Components: main contrib non-free non-free-firmware' "$root/etc/apt/sources.list.d/debian.sources"
check "the driver pinned in apt preferences" grep -q "^Pin: version $VERSION-\*" "$root/etc/apt/preferences.d/gpuboot-nvidia.pref"
j=$state/journal.json
check "journal done" python3 -c "import json,sys; d=json.load(open('$j')); sys.exit(d['state']!='done')"
check "journal: apt-get install of $mod's package at $VERSION, exit 0" python3 -c "
import json,sys
d=json.load(open('$j'))
s=[x for x in d['steps'] if x['id']=='apt-get-install'][0]
sys.exit(not (s['exit_status']==0 and [a for a in s['argv'] if a.startswith('$(echo "$pkgs" | cut -d' ' -f1)=$VERSION-')]))"
python3 -c "
import json
d=json.load(open('$j'))
for s in d['steps']:
    print('  journal: %-40s %-8s %s' % (s['id'][:40], s['state'], ' '.join(s.get('argv', []))[:110]))"
cp "$state/status.json" "$work/status1.json"
check "the status: installed, verification pending the first boot" python3 -c "
import json,sys
d=json.load(open('$work/status1.json'))
st={s['name']: s['result'] for s in d['stages']}
sys.exit(not (d['exit_code']==0 and st['install']=='ok' and st['verify']=='skipped' and st['load']=='skipped'))"
check "the status names each package with its version after, the driver's held (.install.driver.packages)" python3 -c "
import json,sys
r=json.load(open('$work/status1.json'))['install']['driver']
for p in r['packages']:
    print('  result: %-36s %-22s -> %-22s %s held=%s' % (p['name'], p['before'] or '-', p['after'] or '-', p['suite'] or '', p['held']))
sys.exit(not (r['packages'] and all(p['after'] for p in r['packages']) and [p for p in r['packages'] if p['name'] == '$(echo "$pkgs" | cut -d' ' -f1)' and p['held']]))"

# ---- the rerun changes nothing ----
install_run rerun "$root" run2
t2=$ts t3=$te
check "the rerun exits 0" test "$rc" = 0
check "the rerun keeps the installed driver" python3 -c "
import json,sys
d=json.load(open('$state/status.json'))
sys.exit(d['plan']['driver']['action']!='keep')"
check "the rerun's journal: zero effects, no command" python3 -c "
import json,sys
d=json.load(open('$j'))
sys.exit(not (d['effects_this_run']==0 and not [s for s in d['steps'] if s['kind']=='command']))"
check "nothing mounted after the rerun" sh -c "! grep -q ' $root/' /proc/mounts"

# ---- the module built once and published (#25 item 1: modules build) ----
# The image DKMS just built for: its module packed as a .deb and listed in
# a signed mirror; read back by the real dpkg-deb and dpkg (a dry run of
# its install in the image itself, which has the DKMS package: the package
# conflicts with it, as it must).
openssl genpkey -algorithm ed25519 -out "$work/mirror.pem" 2>/dev/null
t4=$(now)
"$GB" --root "$root" --state-dir "$state" modules build --out "$work/mirror" --sign-key "$work/mirror.pem" --json >"$work/mb.out" 2>"$work/mb.err"
rc=$?
t5=$(now)
echo "image-install: modules build: exit $rc, $(secs "$t4" "$t5") s"
check "modules build exits 0" test "$rc" = 0
mdeb=$(find "$work/mirror/modules" -name '*.deb' 2>/dev/null | head -1)
check "modules build: one package for $kver in the mirror" sh -c "[ -n '$mdeb' ] && [ \$(find '$work/mirror/modules' -name '*.deb' | wc -l) = 1 ]"
check "modules build: the package holds DKMS's $mod.ko byte for byte" sh -c "
rm -rf '$work/mx' && dpkg-deb -x '$mdeb' '$work/mx' && cmp '$work/mx/lib/modules/$kver/updates/gpuboot/$mod.ko' '$ko'"
check "modules build: it provides nvidia-kernel-$VERSION and depends on linux-image-$kver at its exact version" sh -c "
kv=\$(chroot '$root' dpkg-query -W -f '\${Version}' 'linux-image-$kver') &&
dpkg-deb --field '$mdeb' Provides | grep -qx 'nvidia-kernel-$VERSION' &&
dpkg-deb --field '$mdeb' Depends | grep -q \"^linux-image-$kver (= \$kv), nvidia-kernel-support--v1\""
check "modules build: the manifest lists it with the module's vermagic and the kernel package's version" python3 -c "
import json, subprocess, sys
m = json.load(open('$work/mirror/manifest.json'))['modules'][0]
kv = subprocess.run(['chroot', '$root', 'dpkg-query', '-W', '-f', '\${Version}', 'linux-image-$kver'], capture_output=True, text=True).stdout
sys.exit(not (m['kernel'] == '$kver' and m['vermagic'].strip() == '''$vermagic'''.strip() and m['kernel_package_version'] == kv and m['driver'] == '$VERSION'))"

# ---- a node installs the module from the mirror (#25 item 2) ----
# A fresh copy of the same base root, the same run with the mirror: the
# plan takes the prebuilt package for the exact kernel; apt installs it
# with the userspace; no DKMS, no compiler, no headers.
proot=$work/proot pstate=$work/proot/var/lib/gpuboot
cp -a "$img/root" "$proot"
openssl pkey -in "$work/mirror.pem" -pubout -out "$work/mirror.pub"
install_run "install from the mirror" "$proot" p1 --mirror "file://$work/mirror" --trust-key "$work/mirror.pub"
t6=$ts t7=$te
check "prebuilt: the install exits 0" test "$rc" = 0
check "prebuilt: the plan took the mirror's package (.plan.driver.module_source)" python3 -c "
import json, sys
d = json.load(open('$pstate/status.json'))['plan']['driver']
print('  ', d['module_source'], '-', d['module_source_reason'])
sys.exit(not (d['module_source'] == 'mirror' and d['prebuilt'][0]['kernel'] == '$kver'))"
check "prebuilt: $mod.ko under updates/gpuboot is DKMS's build byte for byte" cmp "$proot/lib/modules/$kver/updates/gpuboot/$mod.ko" "$ko"
check "prebuilt: depmod lists it (the package's postinst)" grep -q "^updates/gpuboot/$mod.ko:" "$proot/lib/modules/$kver/modules.dep"
check "prebuilt: no DKMS, no compiler, no kernel headers installed" sh -c "
! chroot '$proot' dpkg-query -W -f '\${Package} \${Status}\n' 2>/dev/null | grep -E '^(dkms|gcc|gcc-[0-9]+|make|linux-headers-[^ ]*|nvidia-kernel-dkms) .* installed$'"
check "prebuilt: the module package and the userspace held at $VERSION" sh -c "
held=\$(chroot '$proot' apt-mark showhold) && echo \"\$held\" | grep -qx 'gpuboot-nvidia-modules-$kver' && echo \"\$held\" | grep -qx nvidia-smi"
check "prebuilt: the journal puts the mirror's verified package into the root for apt" python3 -c "
import json, sys
m = json.load(open('$work/mirror/manifest.json'))
sha = [a['sha256'] for a in m['artifacts'] if a['path'] == m['modules'][0]['path']][0]
steps = json.load(open('$pstate/journal.json'))['steps']
f = [x for x in steps if x.get('path') == 'var/cache/gpuboot/modules/gpuboot-nvidia-modules-$kver.deb']
i = [x for x in steps if x.get('id', '').endswith('apt-get-install')]
print('  ', f and f[0].get('sha256_after'), i and ' '.join(i[0].get('argv', []))[-120:])
sys.exit(not (f and f[0].get('sha256_after') == sha and i and '/var/cache/gpuboot/modules/gpuboot-nvidia-modules-$kver.deb' in i[0].get('argv', [])))"
install_run "rerun from the mirror" "$proot" p2 --mirror "file://$work/mirror" --trust-key "$work/mirror.pub"
check "prebuilt: the rerun exits 0 with zero effects" sh -c "[ $rc = 0 ] && python3 -c \"
import json, sys
sys.exit(json.load(open('$pstate/journal.json'))['effects_this_run'] != 0)\""
size_dkms=$(du -sm --exclude=var/cache/apt --exclude=var/lib/apt/lists "$root" | cut -f1)
size_pre=$(du -sm --exclude=var/cache/apt --exclude=var/lib/apt/lists "$proot" | cut -f1)
echo "bench: install-prebuilt: DKMS $(secs "$t0" "$t1") s, prebuilt $(secs "$t6" "$t7") s, ratio $(echo "$t0 $t1 $t6 $t7" | awk '{ printf "%.2f", ($4 - $3) / ($2 - $1) }')x; installed size DKMS ${size_dkms} MiB, prebuilt ${size_pre} MiB"

# ---- prepare's newer kernel through the apt backend, on real apt ----
# What `gpuboot run` does for a [kernel] minimum Debian 12's kernel does
# not reach (GB_INSTALL_KERNEL: bookworm-backports' kernel), on a second
# copy of the image root, with install-tool (the kernel alone: no driver,
# no DKMS): the suite missing from apt's sources is named; then a kill -9
# in the middle of dpkg (as soon as the new kernel's image is unpacked)
# of every process in the root and of the tool, as a power cut would, and
# the rerun that must repair dpkg and finish; then a rerun with zero
# effects. The cloud kernel, no headers: the smallest real kernel install.
IT=${GB_INSTALL_TOOL:-build/asan/tools/install-tool}
kroot=$work/kroot kstate=$work/kstate
kpkg=linux-image-cloud-amd64
cp -a "$img/root" "$kroot"
mkdir -p "$kstate"
kernel_run() { # the install-tool's output into $work/k$1.{out,err}
	ASAN_OPTIONS=detect_leaks=0 "$IT" --method kernel --root "$kroot" --state "$kstate" --package "$kpkg" \
		--suite bookworm-backports --minimum 6.12 >"$work/k$1.out" 2>"$work/k$1.err"
}
kernel_run 0
rc=$?
cat "$work/k0.err"
check "kernel: bookworm-backports not in apt's sources: exit 1, the suite named with the line to add" \
	sh -c "[ $rc = 1 ] && grep -q 'have no suite bookworm-backports: add it' '$work/k0.err'"
check "kernel: nothing installed, nothing mounted" sh -c "
	! ls '$kroot'/boot/vmlinuz-6.12* >/dev/null 2>&1 && ! grep -q ' $kroot/' /proc/mounts"
printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	>"$kroot/etc/apt/sources.list.d/backports.sources"
rm -rf "$kstate" && mkdir -p "$kstate"
setsid sh -c 'ASAN_OPTIONS=detect_leaks=0 exec "$0" --method kernel --root "$1" --state "$2" --package "$3" --suite bookworm-backports --minimum 6.12' \
	"$IT" "$kroot" "$kstate" "$kpkg" >"$work/k1.out" 2>"$work/k1.err" &
kpid=$!
i=0
while [ $i -lt 6000 ] && kill -0 "$kpid" 2>/dev/null && ! ls "$kroot"/boot/vmlinuz-6.1[2-9]* >/dev/null 2>&1; do
	sleep 0.1
	i=$((i + 1))
done
# as a power cut would: every process in the root (apt, dpkg, the
# maintainer scripts: gpuboot runs them in their own process group), and
# the tool
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/root" 2>/dev/null)" = "$kroot" ] && kill -9 "${p#/proc/}" 2>/dev/null
done
kill -9 -- "-$kpid" 2>/dev/null
wait "$kpid" 2>/dev/null
audit=$(chroot "$kroot" dpkg --audit 2>&1 | head -n 3)
updates=$(ls "$kroot/var/lib/dpkg/updates" 2>/dev/null | grep -c '^[0-9]*$')
if [ -n "$audit" ] || [ "$updates" -gt 0 ]; then
	echo "image-install: kernel: killed in the middle of dpkg ($updates record(s) in updates/): $audit"
	killed=1
else
	echo "image-install: kernel: the kill came after dpkg had finished (nothing to repair this time)"
	killed=0
fi
grep " $kroot/" /proc/mounts | sed 's/^/image-install: kernel: left mounted by the kill: /'
kernel_run 2
rc=$?
cat "$work/k2.err"
check "kernel: the run after the kill exits 0" test "$rc" = 0
check "kernel: $kpkg from bookworm-backports, 6.12 or later" sh -c "
	v=\$(chroot '$kroot' dpkg-query -W -f '\${Version}' $kpkg); echo \"  $kpkg \$v\"; case \$v in 6.1[2-9]*bpo*|6.[2-9][0-9]*bpo*) exit 0 ;; *) exit 1 ;; esac"
check "kernel: dpkg consistent after it (dpkg --audit empty)" sh -c "[ -z \"\$(chroot '$kroot' dpkg --audit)\" ]"
if [ "$killed" = 1 ]; then
	check "kernel: the killed dpkg repaired the package manager's way first (recovered named)" \
		python3 -c "import json,sys; d=json.load(open('$work/k2.out')); print('  recovered:', d['recovered']); sys.exit(not (d['recovered'] or '').startswith('dpkg'))"
fi
check "kernel: nothing left mounted, policy-rc.d gone" sh -c "! grep -q ' $kroot/' /proc/mounts && test ! -e '$kroot/usr/sbin/policy-rc.d'"
kernel_run 3
rc=$?
check "kernel: the rerun exits 0 with zero effects" sh -c "[ $rc = 0 ] && grep -q 'effects=0' '$work/k3.err'"

echo "image-install: timings: first install $(secs "$t0" "$t1") s, rerun $(secs "$t2" "$t3") s"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
