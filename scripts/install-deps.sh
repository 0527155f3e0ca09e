#!/bin/sh
# Install what the build and the default test tier need, on Debian 12, with
# apt-get, only when something is missing. Run as root (or it says what to run).
set -eu
PKGS="make gcc libc6-dev pkgconf file patch perl python3 xz-utils ca-certificates debian-archive-keyring
libcurl4-openssl-dev libssl-dev libarchive-dev libkmod-dev libjson-c-dev
musl-tools dpkg-dev autoconf automake libtool cmake ninja-build
clang libclang-rt-14-dev clang-format cppcheck binutils prometheus openssl curl packer strace
python3-yaml util-linux linux-kbuild-6.1
gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross linux-libc-dev-arm64-cross qemu-user-static"
# --vm: also what vm-tests need (QEMU, mmdebstrap, a NoCloud seed maker).
[ "${1:-}" = "--vm" ] && PKGS="$PKGS qemu-system-x86 qemu-utils mmdebstrap cloud-image-utils genisoimage binutils ovmf python3-cryptography python3-pefile apt-utils gnupg grub-pc-bin grub-common"
# --rpm: what vm-tests/image-rpm.sh needs (Debian 12's dnf 4.14, its
# versionlock plugin in dnf-plugins-core, rpm 4.18 with rpmbuild and
# rpmsign, createrepo_c and modifyrepo_c, mmdebstrap for the test root).
[ "${1:-}" = "--rpm" ] && PKGS="$PKGS dnf python3-dnf dnf-plugins-core rpm createrepo-c gnupg mmdebstrap"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing:$missing; run as root: apt-get install$missing" >&2
	exit 1
fi
echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
