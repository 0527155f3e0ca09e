#!/bin/sh
# vm-tests/powercut, first boot (cloud-init's runcmd): install the unit
# that runs vm-tests/powercut/guest.sh at every boot, and start it now.
set -e
install -m 0644 /media/gpuboot/powercut/powercut.service /etc/systemd/system/powercut.service
systemctl daemon-reload
systemctl enable powercut.service
systemctl start --no-block powercut.service
