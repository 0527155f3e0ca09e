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
# binutils (readelf) and build/asan/tools/install-tool (make it first).
# Not part of `make test`: minutes (the DKMS build alone is ~4 minutes on
# 2 cores). Ends with "N passed, N failed"; exit 1 on a failure, 77 when it
# cannot run here.
#
# env: GPUBOOT_VM_CACHE   the cache directory
#      GPUBOOT_INSTALL_FLAVOR   open (default) | proprietary
#      GPUBOOT_INSTALL_VERSION  the driver version (default 535.261.03)
#      KEEP=1                   keep the work directory
set -u
cd "$(dirname "$0")/.."
here=$(pwd)/vm-tests
TOOL=${INSTALL_TOOL:-build/asan/tools/install-tool}
FLAVOR=${GPUBOOT_INSTALL_FLAVOR:-open}
VERSION=${GPUBOOT_INSTALL_VERSION:-535.261.03}
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
[ -x "$TOOL" ] || { echo "image-install: $TOOL missing (make $TOOL)"; exit 1; }
