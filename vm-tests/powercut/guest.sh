#!/bin/sh
# vm-tests/powercut, at every boot (powercut.service; powercut.boot=N and
# powercut.last=0|1 on the kernel command line, set by the host). Boot 1
# sets up: the fixture copied, a first run, the file gpuboot writes under
# the root kept as the reference, all synced. Later boots run the CHECK
# (check.py) on what the power cut left. Then, unless this is the last
# boot, the WORKLOAD until the host kills QEMU: gpuboot rewriting its
# status, journal (and .prev), cache entry, exports and a file under the
# root as fast as it can, beside the control (control.py).
M=/media/gpuboot
GB=$M/gpuboot
W=/srv/powercut
R=$W/root
S=/var/lib/gpuboot-pc
C=/var/lib/powercut-control/ctl.json
BL=etc/modprobe.d/gpuboot-blacklist-nouveau.conf
TTY=/dev/ttyS1
boot=$(sed -n 's/.*powercut\.boot=\([0-9]*\).*/\1/p' /proc/cmdline)
last=$(sed -n 's/.*powercut\.last=\([01]\).*/\1/p' /proc/cmdline)
say() { echo "$*" >"$TTY"; }
# The workload's run: image mode on a copy of tests/fixtures/l4-debian12,
# the runfile from the signed bundle (tests/make-bundle) on the media disk;
# prepare writes the nouveau blacklist under the root, fetch verifies the
# runfile into the cache, install fails (the fixture has no kernel): exit 1.
# --force: the other plan's journal is archived and a new one begun.
args() { echo "--root $R run --target-gpu $1 --force --profile minimal --method runfile --mirror file://$M/bundle/mirror --offline --trust-key $M/bundle/key.pub --state-dir $S --run-dir /run/gpuboot-pc --no-verify"; }
[ -n "$boot" ] || { say "POWERCUT-CHECK ? FAIL no powercut.boot= on the kernel command line"; exit 1; }

if [ "$boot" = 1 ]; then
	mkdir -p "$W" "$(dirname "$C")"
	tar -xf "$M/powercut/fixture.tar" -C "$W"
	# shellcheck disable=SC2046
	"$GB" $(args T4) >/dev/null 2>&1
	rc=$?
	if [ "$rc" -ne 1 ] || [ ! -s "$R/$BL" ] || [ ! -s "$S/status.json" ]; then
		say "POWERCUT-SETUP $boot FAIL the first run exited $rc"
		exit 1
	fi
	cp "$R/$BL" "$W/ref-blacklist.conf"
	python3 "$M/powercut/control.py" "$C" once
	sync
	say "POWERCUT-SETUP $boot ok"
else
	# shellcheck disable=SC2046
	python3 "$M/powercut/check.py" --boot "$boot" --state "$S" --root "$R" --ref "$W/ref-blacklist.conf" \
		--control "$C" --gb "$GB" --prev-tag "$(cat "$W/boot-tag")" -- "$GB" $(args T4) >"$TTY" 2>&1
fi
# gpuboot names its temp files with this tag (the boot id's first 8 hex digits).
cut -c1-8 /proc/sys/kernel/random/boot_id >"$W/boot-tag"
if [ "$last" = 1 ]; then
	sync
	say "POWERCUT-DONE $boot"
	systemctl poweroff --no-block
	exit 0
fi

python3 "$M/powercut/control.py" "$C" &
sync
say "POWERCUT-WORKLOAD-START $boot"
i=0
while :; do
	i=$((i + 1))
	# Two plans in turn: each run begins a new journal (the other archived
	# as journal.json.prev) and so writes the root's file again.
	g=T4
	[ $((i % 2)) -eq 1 ] && g=L4
	rm -f "$S"/cache/sha256/* "$R/$BL"
	# shellcheck disable=SC2046
	"$GB" $(args $g) >/dev/null 2>&1
	say "POWERCUT-ITER $boot $i $?"
done
