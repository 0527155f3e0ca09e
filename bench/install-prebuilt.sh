#!/bin/sh
# bench/install-prebuilt.sh   (root, network to deb.debian.org)
# A node's install of Debian 12's NVIDIA driver (the distro method,
# 535.309.01, a T4) with the site mirror's prebuilt module against the same
# install with DKMS, in the same run, on two fresh copies of the same
# Debian 12 image root, with the same packages from the same archive
# (issue #25): vm-tests/image-install.sh does both (the DKMS install first;
# `gpuboot modules build` packs its module into a signed mirror; then the
# install from the mirror on a fresh copy) and prints one line,
#   bench: install-prebuilt: DKMS T s, prebuilt T s, ratio Rx; installed size DKMS N MiB, prebuilt N MiB
# the ratio being prebuilt / DKMS (the goal: 0.2x or less). The time is
# apt's, dpkg's and DKMS's (the compile), not gpuboot's own code; both
# installs download the userspace from the archive, so a slow link narrows
# the ratio. Installed size: the root, less apt's caches and lists.
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp /tmp/gpuboot-bench-prebuilt.XXXXXX)
trap 'rm -f "$out"' EXIT
sh vm-tests/image-install.sh >"$out" 2>&1 || { tail -30 "$out"; exit 1; }
grep '^bench: install-prebuilt' "$out"
