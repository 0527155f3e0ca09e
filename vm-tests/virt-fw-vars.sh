#!/bin/sh
# virt-fw-vars (python3-virt-firmware) from bookworm-backports, without
# touching the host's apt sources: downloaded through a private apt
# configuration (indexes checked against Debian's archive key), unpacked
# into ${GPUBOOT_VM_CACHE:-~/.cache/gpuboot-vm}/virt-firmware/, then run:
#   vm-tests/virt-fw-vars.sh ARGS...   (e.g. --input A --output B --add-db GUID CERT)
# Its dependencies (python3-cryptography, python3-pefile) come from
# bookworm itself (scripts/install-deps.sh --vm).
set -eu
cache=${GPUBOOT_VM_CACHE:-${HOME:-/root}/.cache/gpuboot-vm}
dir=$cache/virt-firmware
if [ ! -f "$dir/.complete" ]; then
	rm -rf "$dir"
	mkdir -p "$dir/apt/lists/partial" "$dir/apt/archives/partial"
	echo "deb http://deb.debian.org/debian bookworm-backports main" >"$dir/apt/sources.list"
	o="-o Dir::Etc::SourceList=$dir/apt/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$dir/apt/lists -o Dir::Cache=$dir/apt -o APT::Sandbox::User=root -q"
	# shellcheck disable=SC2086
	apt-get $o update >"$dir/apt.log" 2>&1 || { cat "$dir/apt.log" >&2; exit 1; }
	# shellcheck disable=SC2086
	(cd "$dir/apt" && apt-get $o download python3-virt-firmware >>"$dir/apt.log" 2>&1) || { cat "$dir/apt.log" >&2; exit 1; }
	dpkg-deb -x "$dir"/apt/python3-virt-firmware_*.deb "$dir/root"
	touch "$dir/.complete"
fi
PYTHONPATH=$dir/root/usr/lib/python3/dist-packages exec python3 -W ignore -m virt.firmware.vars "$@"
