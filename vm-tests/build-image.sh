#!/bin/sh
# vm-tests/build-image.sh SUITE: a Debian guest (bookworm, trixie) with
# systemd, kmod, initramfs-tools, cloud-init, curl and a kernel, built with
# mmdebstrap from Debian's packages, as a raw ext4 disk plus its kernel and
# initrd. Cached in ${GPUBOOT_VM_CACHE:-~/.cache/gpuboot-vm}/SUITE-<hash of the
# recipe>; prints that directory.
#
# SUITE bookworm-nvidia: the bookworm guest into which gpuboot itself (the
# static build/gpuboot, part of the hash) installs Debian's NVIDIA driver at
# build time, as a Packer build would:
#   gpuboot --root ROOT run --target-gpu T4 --profile minimal --method distro
# (with the archive's sources only while it runs: the guest has no network).
# Then, as an administrator's kernel upgrade would, bookworm-backports'
# kernel and headers (6.12) are installed with apt in the image: the kernel
# hooks run (DKMS's, then gpuboot's /etc/kernel/postinst.d/gpuboot with
# gpuboot copied to /usr/local/bin), building the module for 6.12 before
# it ever boots. Exported: vmlinuz/initrd.img = the oldest kernel (the one
# gpuboot installed for), vmlinuz-next/initrd.img-next = the newest.
#
# The image's own first boot (gpuboot-firstboot.service, enabled by the
# image install) is left out of most scenarios: the build moves its marker,
# var/lib/gpuboot/image-pending, aside to var/lib/vmtest-image-pending, so
# each scenario's user-data (and gpuboot-repair.service) is what runs; the
# scenarios of that unit itself (bookworm-nvidia-image-unit, and under
# Secure Boot) put it back with vmtest.image_pending on the kernel line
# (guest/vmtest-image-pending.service) and boot with no user-data.
#
# The NVIDIA image also has GRUB's tools (grub2-common: update-grub, no
# boot sector): the reboot scenario runs Debian's update-grub in the guest
# and boots through GRUB reading the guest's own grub.cfg.
#
# The NVIDIA image's build also makes the site mirror of #25 (docs/mirror.md,
# "Prebuilt modules") from it, as a build host would: `gpuboot --root ROOT
# modules build --kernel <its oldest kernel>` packs the module DKMS built
# there, signed with a site module key (module.key/module.pem, made for the
# image), into mirror/, whose manifest is signed with mirror.pem
# (mirror.pub); all beside the disk in the image's directory.
#
# SUITE bookworm-prebuilt: the bookworm guest into which gpuboot installs
# Debian's NVIDIA userspace with the module from that mirror, as a node
# would (`run --method distro --mirror file://<bookworm-nvidia>/mirror`,
# `[install] prebuilt_modules = require`): no DKMS, no compiler, no
# headers. Its hash includes the NVIDIA image's directory (so its
# mirror); both come from the same archive in one run, so the kernel
# package is the same.
#
# SUITE bookworm-plymouth: the bookworm guest with plymouth, whose
# initramfs hook copies the DRM drivers, nouveau among them, into the
# initramfs (the kernel's own MODULES=most adds none): the nouveau scenario.
set -eu
suite=$1
here=$(cd "$(dirname "$0")" && pwd)
GB=${GB_STATIC:-$here/../build/gpuboot}
extra=""
nvidia_hooks=""
upgrade_hook=""
mirror_hook=""
prebuilt_hooks=""
more=""
nv=""
suite_name=$suite
if [ "$suite" = bookworm-plymouth ]; then
	suite=bookworm
	more=,plymouth
fi
if [ "$suite" = bookworm-nvidia ] || [ "$suite" = bookworm-prebuilt ]; then
	suite=bookworm
	extra=$GB
	more=,grub2-common
	GB=$(cd "$(dirname "$GB")" && pwd)/$(basename "$GB")
fi
if [ "$suite_name" = bookworm-prebuilt ]; then
	more=""
	nv=$("$here/build-image.sh" bookworm-nvidia) || exit 1
	[ -s "$nv/mirror/manifest.json" ] || { echo "vm-tests: $nv has no mirror" >&2; exit 1; }
fi
hash=$({ cat "$here/build-image.sh" "$here"/guest/* $extra; echo "$nv"; } | sha256sum | cut -c1-16)
cache=${GPUBOOT_VM_CACHE:-${HOME:-/root}/.cache/gpuboot-vm}
img=$cache/$suite_name-$hash
if [ -f "$img/.complete" ]; then
	echo "$img"
	exit 0
fi
mkdir -p "$cache"
# vm-tests/run.sh runs guests two at a time: a second caller of the same
# image waits for the first one's build instead of making its own.
exec 9>"$cache/.lock-$suite_name-$hash"
flock 9
if [ -f "$img/.complete" ]; then
	echo "$img"
	exit 0
fi
work=$(mktemp -d "$cache/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"
echo "vm-tests: building the $suite_name guest (mmdebstrap, a few minutes)" >&2
# Debian cloud images' sources (deb822, main only; gpuboot adds the rest)
# while gpuboot installs, then no sources: the guest has no network.
debian_sources="printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://security.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' >\"\$1/etc/apt/sources.list.d/debian.sources\""
if [ -n "$nv" ]; then
	printf '[install]\nprebuilt_modules = require\n' >"$work/prebuilt.conf"
	prebuilt_hooks="$debian_sources && '$GB' --root \"\$1\" run --target-gpu T4 --profile minimal --method distro --mirror 'file://$nv/mirror' --trust-key '$nv/mirror.pub' --config '$work/prebuilt.conf' --state-dir \"\$1/var/lib/gpuboot\" >&2 && rm -f \"\$1/etc/apt/sources.list.d/debian.sources\" && mv \"\$1/var/lib/gpuboot/image-pending\" \"\$1/var/lib/vmtest-image-pending\" && install -m 0755 '$GB' \"\$1/usr/local/bin/gpuboot\""
elif [ -n "$extra" ]; then
	upgrade_hook="install -m 0755 '$GB' \"\$1/usr/local/bin/gpuboot\" && printf 'deb http://deb.debian.org/debian bookworm main\\ndeb http://deb.debian.org/debian bookworm-backports main\\n' >\"\$1/etc/apt/sources.list.d/upgrade.list\" && chroot \"\$1\" apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive chroot \"\$1\" apt-get install -y -q --no-install-recommends -t bookworm-backports linux-image-amd64 linux-headers-amd64 >&2 && rm -f \"\$1/etc/apt/sources.list.d/upgrade.list\" && { cp \"\$1/var/lib/gpuboot/status.json\" \"\$1/root/hook-status.json\" 2>/dev/null || true; }"
	nvidia_hooks="$debian_sources && '$GB' --root \"\$1\" run --target-gpu T4 --profile minimal --method distro --state-dir \"\$1/var/lib/gpuboot\" >&2 && rm -f \"\$1/etc/apt/sources.list.d/debian.sources\" && mv \"\$1/var/lib/gpuboot/image-pending\" \"\$1/var/lib/vmtest-image-pending\""
	mirror_hook="openssl genpkey -algorithm ed25519 -out '$work/out/mirror.pem' && openssl pkey -in '$work/out/mirror.pem' -pubout -out '$work/out/mirror.pub' && openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 3650 -subj '/CN=gpuboot vm-test prebuilt site key' -keyout '$work/out/module.key' -out '$work/out/module.pem' 2>/dev/null && k=\$(ls \"\$1/lib/modules\" | sort -V | head -n1) && '$GB' --root \"\$1\" --state-dir '$work/mb-state' modules build --kernel \"\$k\" --out '$work/out/mirror' --sign-key '$work/out/mirror.pem' --module-key '$work/out/module.key' --module-cert '$work/out/module.pem' >&2"
fi
mmdebstrap --quiet --variant=minbase \
	--include=systemd-sysv,udev,kmod,initramfs-tools,zstd,linux-image-amd64,cloud-init,curl,ca-certificates,e2fsprogs,procps$more \
	--customize-hook="cp '$here/guest/90-vmtest.cfg' \"\$1/etc/cloud/cloud.cfg.d/90-vmtest.cfg\"" \
	--customize-hook="install -m 0755 '$here/guest/vmtest-report' \"\$1/usr/local/sbin/vmtest-report\"" \
	--customize-hook="install -m 0644 '$here/guest/vmtest-report.service' \"\$1/etc/systemd/system/vmtest-report.service\"" \
	--customize-hook='chroot "$1" systemctl enable vmtest-report.service' \
	--customize-hook="install -m 0644 '$here/guest/vmtest-image-pending.service' \"\$1/etc/systemd/system/vmtest-image-pending.service\"" \
	--customize-hook='chroot "$1" systemctl enable vmtest-image-pending.service' \
	--customize-hook='for t in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do ln -sf /dev/null "$1/etc/systemd/system/$t"; done' \
	--customize-hook='rm -f "$1/etc/apt/sources.list" "$1"/etc/apt/sources.list.d/*' \
	${nvidia_hooks:+--customize-hook="$nvidia_hooks"} \
	${upgrade_hook:+--customize-hook="$upgrade_hook"} \
	${mirror_hook:+--customize-hook="$mirror_hook"} \
	${prebuilt_hooks:+--customize-hook="$prebuilt_hooks"} \
	--customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\nLABEL=GPUBOOT /media/gpuboot iso9660 ro,nofail,x-systemd.device-timeout=0 0 0\n" >"$1/etc/fstab"; mkdir -p "$1/media/gpuboot"' \
	--customize-hook='echo vmtest >"$1/etc/hostname"' \
	--customize-hook='sed -i "s/^MODULES=.*/MODULES=dep/" "$1/etc/initramfs-tools/initramfs.conf"' \
	--customize-hook='passwd -R "$1" -d root >/dev/null 2>&1 || true' \
	"$suite" "$work/root" http://deb.debian.org/debian >&2
cp "$(ls "$work"/root/boot/vmlinuz-* | sort -V | head -n1)" "$work/out/vmlinuz"
cp "$(ls "$work"/root/boot/initrd.img-* | sort -V | head -n1)" "$work/out/initrd.img"
if [ "$(ls "$work"/root/boot/vmlinuz-* | wc -l)" -gt 1 ]; then
	cp "$(ls "$work"/root/boot/vmlinuz-* | sort -V | tail -n1)" "$work/out/vmlinuz-next"
	cp "$(ls "$work"/root/boot/initrd.img-* | sort -V | tail -n1)" "$work/out/initrd.img-next"
fi
truncate -s "$([ -n "$extra" ] && echo 6G || echo 3G)" "$work/out/disk.raw"
mkfs.ext4 -q -L rootfs -d "$work/root" "$work/out/disk.raw"
touch "$work/out/.complete"
rm -rf "$img"
mv "$work/out" "$img"
echo "$img"
