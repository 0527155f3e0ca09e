#!/bin/sh
# gpuboot at first boot, as a plain shell script in user-data (cloud-init
# runs user-data that starts with #! once, at first boot).
#
# Set GPUBOOT_RELEASE to where the release is hosted (NVIDIA's hosts are not
# involved: a release URL of the project, your mirror, an S3 bucket) and
# paste that release's SHA256SUMS into GPUBOOT_SHA256SUMS as it is: the
# binary for this machine (gpuboot-x86_64 or gpuboot-aarch64, chosen by
# `uname -m`) runs only when its sha256 is the pasted one
# (docs/install-gpuboot.md: check SHA256SUMS's signature once, by hand,
# before pasting it). GPUBOOT_PROFILE: training, inference, hpc, render or
# minimal. The result: /var/lib/gpuboot/status.json, the flags in
# /run/gpuboot/, this log in /var/log/gpuboot-firstboot.log. The script
# exits with gpuboot's exit code (docs/exit-codes.md), so cloud-init reports
# a failed first boot as failed; on exit 3 (a reboot is needed) it reboots
# and gpuboot-resume.service finishes the run.
set -u
GPUBOOT_RELEASE=https://downloads.example.com/gpuboot/0.1.0
GPUBOOT_SHA256SUMS='
0000000000000000000000000000000000000000000000000000000000000000  gpuboot-aarch64
0000000000000000000000000000000000000000000000000000000000000000  gpuboot-x86_64
'
GPUBOOT_PROFILE=training
exec >>/var/log/gpuboot-firstboot.log 2>&1
echo "gpuboot first boot: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
fail() {
	echo "gpuboot: $*; gpuboot was not run. See docs/install-gpuboot.md."
	exit 1
}
arch=$(uname -m)
case $arch in
x86_64 | aarch64) ;;
*) fail "no gpuboot release binary for $arch (x86_64 and aarch64 only)" ;;
esac
name=gpuboot-$arch
want=$(printf '%s\n' "$GPUBOOT_SHA256SUMS" | awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }')
case $want in
0000000000000000000000000000000000000000000000000000000000000000)
	fail "GPUBOOT_SHA256SUMS holds the example's zeros: paste the release's SHA256SUMS" ;;
*[!0-9a-f]* | "") fail "no sha256 for $name in GPUBOOT_SHA256SUMS: paste the release's SHA256SUMS as it is" ;;
esac
[ ${#want} -eq 64 ] || fail "the sha256 for $name in GPUBOOT_SHA256SUMS is not 64 hex digits"
tmp=$(mktemp -d)
for i in 1 2 3 4 5; do
	curl -fsSL --proto '=https,file' --connect-timeout 20 --max-time 300 -o "$tmp/$name" "$GPUBOOT_RELEASE/$name" && break
	rm -f "$tmp/$name"
	sleep $((i * 5))
done
[ -s "$tmp/$name" ] || fail "could not download $GPUBOOT_RELEASE/$name (5 tries): check GPUBOOT_RELEASE and the network"
got=$(sha256sum "$tmp/$name" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	rm -rf "$tmp"
	fail "$GPUBOOT_RELEASE/$name has sha256 $got, not the pasted $want: GPUBOOT_RELEASE and GPUBOOT_SHA256SUMS must name the same release (or the download was altered)"
fi
install -m 0755 "$tmp/$name" /usr/local/bin/gpuboot
rm -rf "$tmp"
echo "gpuboot: $name sha256 $got verified"
gpuboot --version
gpuboot detect >/var/log/gpuboot-detect.txt 2>&1
gpuboot plan --profile "$GPUBOOT_PROFILE" >/var/log/gpuboot-plan.txt 2>&1
gpuboot run --profile "$GPUBOOT_PROFILE"
rc=$?
echo "gpuboot run exited $rc (docs/exit-codes.md); gpuboot status says:"
gpuboot status
if [ "$rc" -eq 3 ]; then
	# A reboot is needed (a new kernel, nouveau in use): gpuboot armed
	# gpuboot-resume.service, which finishes the run after it.
	echo "gpuboot: rebooting; gpuboot-resume.service finishes the run at the next boot"
	systemctl reboot
fi
# gpuboot's exit is this script's: cloud-init reports a failed first boot
# as failed (cloud-init status --long names this script).
exit "$rc"
