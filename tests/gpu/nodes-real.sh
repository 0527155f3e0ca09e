#!/bin/bash
# tests/gpu/nodes-real.sh: on the GPU machine (driver loaded), the real
# ops->mknod: gpuboot --repair --nodes against a scratch root holding copies
# of the machine's own proc/devices and proc/driver/nvidia files makes real
# character nodes there (never under the real /dev), then makes nothing
# the second time, and remakes a wrong one. Run from the repository root
# with build/gpuboot carried (docs/load.md#device-nodes).
set -u
bad=0
R=$(mktemp -d)
mkdir -p $R/etc $R/proc/driver/nvidia/capabilities/mig $R/sys/module
cp /etc/os-release $R/etc/
cat /proc/devices > $R/proc/devices
cat /proc/driver/nvidia/params > $R/proc/driver/nvidia/params
for c in config monitor; do cat /proc/driver/nvidia/capabilities/mig/$c > $R/proc/driver/nvidia/capabilities/mig/$c; done
for g in /proc/driver/nvidia/gpus/*; do mkdir -p "$R$g"; cat "$g/information" > "$R$g/information"; done
echo "== first"; ./build/gpuboot --root $R --repair --nodes; echo "rc=$?"
echo "== second"; ./build/gpuboot --root $R --repair --nodes; echo "rc=$?"
ls -la $R/dev $R/dev/nvidia-caps $R/dev/char
stat -c '%n %F %t:%T %a %u:%g' $R/dev/nvidia* $R/dev/nvidia-caps/* /dev/nvidia* /dev/nvidia-caps/*
echo "== a wrong node (0600, minor 7) is made again"
rm -f $R/dev/nvidia0; mknod -m 0600 $R/dev/nvidia0 c 195 7
./build/gpuboot --root $R --repair --nodes; echo "rc=$?"; stat -c '%n %t:%T %a' $R/dev/nvidia0
echo "== the nodes made are the driver's: the same numbers and modes as the machine's own, and they open"
for n in nvidiactl nvidia0 nvidia-uvm nvidia-uvm-tools nvidia-caps/nvidia-cap1 nvidia-caps/nvidia-cap2; do
	cmp -s <(stat -c '%F %t:%T %a %u:%g' /dev/$n) <(stat -c '%F %t:%T %a %u:%g' $R/dev/$n) && echo "$n matches /dev/$n" || { echo "$n DIFFERS from /dev/$n"; bad=$((bad + 1)); }
done
python3 -c 'import os, sys
for n in ("nvidiactl", "nvidia0", "nvidia-uvm"):
    fd = os.open(sys.argv[1] + "/dev/" + n, os.O_RDWR)
    print("opened", n, "(the driver answered)")
    os.close(fd)' "$R" || bad=$((bad + 1))
rm -rf $R
[ "$bad" -eq 0 ] || { echo "FAIL: $bad"; exit 1; }
echo ok
