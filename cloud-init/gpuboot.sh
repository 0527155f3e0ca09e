#!/bin/sh
# gpuboot at first boot, as a plain shell script in user-data (cloud-init
# runs user-data that starts with #! once, at first boot).
#
# Change GPUBOOT_URL to where you host the binary; GPUBOOT_PROFILE to
# training, inference, hpc, render or minimal. The result: /var/lib/gpuboot/
# status.json, the flags in /run/gpuboot/, this log in
# /var/log/gpuboot-firstboot.log.
set -u
GPUBOOT_URL=https://downloads.example.com/gpuboot/latest/gpuboot-x86_64
GPUBOOT_PROFILE=training
exec >>/var/log/gpuboot-firstboot.log 2>&1
echo "gpuboot first boot (shell user-data): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
tmp=$(mktemp -d)
for i in 1 2 3 4 5; do
	curl -fsSL --proto '=https,file' -o "$tmp/gpuboot" "$GPUBOOT_URL" &&
		curl -fsSL --proto '=https,file' -o "$tmp/gpuboot.sha256" "$GPUBOOT_URL.sha256" && break
	sleep $((i * 5))
done
(cd "$tmp" && echo "$(cut -d' ' -f1 gpuboot.sha256)  gpuboot" | sha256sum -c -) || {
	echo "gpuboot: download failed or checksum mismatch; not running it"
	exit 1
}
install -m 0755 "$tmp/gpuboot" /usr/local/bin/gpuboot
rm -rf "$tmp"
gpuboot detect >/var/log/gpuboot-detect.txt 2>&1
gpuboot plan --profile "$GPUBOOT_PROFILE" >/var/log/gpuboot-plan.txt 2>&1
gpuboot run --profile "$GPUBOOT_PROFILE"
echo "gpuboot run exited $? (docs/exit-codes.md)"
gpuboot status
exit 0
