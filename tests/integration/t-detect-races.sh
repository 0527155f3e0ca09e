# Detect never loses a GPU, and never hangs:
# - the 8-GPU capture laid out as the kernel lays sysfs out (each
#   sys/bus/pci/devices/<bdf> a link to ../../../devices/pci0000:00/<bdf>;
#   etc/os-release a link to ../usr/lib/os-release, as on Debian), read
#   while another process renames a file in it in a loop: openat2's RESOLVE_IN_ROOT
#   answers EAGAIN when a rename races the walk of a "..", and every plan must
#   still see 8 GPUs and the distribution;
# - a PCI function whose vendor cannot be read fails detect (exit 1), never
#   skipped;
# - a FIFO where os-release or a sysfs attribute is read: detect, plan and
#   run finish (the FIFO is refused as not a regular file);
# - os-release garbage, empty, without ID, oversized: a full plan with the
#   runfile method, exit 0; a distribution gpuboot does not know likewise;
#   --target-os gentoo:2.17 is a usage error (exit 2).
. tests/integration/lib.sh
M=$TMP/machine
cp -a "$FIX/h100x8-ubuntu2204" "$M"
mkdir -p "$M/sys/devices/pci0000:00" "$M/usr/lib"
for d in "$M"/sys/bus/pci/devices/*; do
	b=$(basename "$d")
	mv "$d" "$M/sys/devices/pci0000:00/$b"
	ln -s "../../../devices/pci0000:00/$b" "$d"
done
mv "$M/etc/os-release" "$M/usr/lib/os-release"
ln -s ../usr/lib/os-release "$M/etc/os-release"
expect_exit 0 "$GB" --root "$M" detect --json
python3 -c "import json,sys; d=json.load(open('$TMP/out')); assert len(d['gpus']) == 8 and d['os']['id'] == 'ubuntu', d" ||
	fail "the linked layout: $(head -c 500 "$TMP/out")"

# Renames in another process inside the root (as dpkg, cloud-init and
# journald rename their files at first boot).
mkdir -p "$M/var/tmp"
# Two loops: on 2 cores the walk is then preempted mid-way, as on a busy
# first boot (seen here: 20 of 40 detects lost GPUs without the retry).
[ -x build/asan/tools/rename-loop ] || fail "build/asan/tools/rename-loop missing (make test builds it)"
mkdir -p "$M/var/tmp/1" "$M/var/tmp/2"
build/asan/tools/rename-loop "$M/var/tmp/1" "$TMP/churn.stop" &
churn=$!
build/asan/tools/rename-loop "$M/var/tmp/2" "$TMP/churn.stop" &
churn2=$!
bad=0
i=0
while [ $i -lt 30 ]; do
	if ! "$GB" --root "$M" detect --json >"$TMP/d.json" 2>"$TMP/d.err"; then
		bad=$((bad + 1))
		echo "run $i: exit $? $(head -c 300 "$TMP/d.err")"
	elif ! python3 -c "import json; d=json.load(open('$TMP/d.json')); assert len(d['gpus']) == 8 and all(g['device_id'] != '0000' for g in d['gpus']) and d['os']['id'] == 'ubuntu', (len(d['gpus']), d['os'])"; then
		bad=$((bad + 1))
		echo "run $i: wrong facts"
	fi
	i=$((i + 1))
done
touch "$TMP/churn.stop"
wait $churn $churn2
[ $bad -eq 0 ] || fail "$bad of 30 detects under renames lost a GPU or the distribution"
echo "30 detects under a rename loop: 8 GPUs and ubuntu each time"

# A function whose vendor cannot be read.
V=$TMP/vendorless
cp -a "$FIX/h100x8-ubuntu2204" "$V"
set -- "$V"/sys/bus/pci/devices/*
first=${1##*/}
rm "$V/sys/bus/pci/devices/$first/vendor"
expect_exit 1 "$GB" --root "$V" plan
grep -q "devices/$first/vendor" "$TMP/err" || fail "the unreadable vendor is not named: $(cat "$TMP/err")"

# FIFOs where files are read: nothing hangs.
F=$TMP/fifo
cp -a "$FIX/l4-debian12" "$F"
rm -f "$F/etc/os-release"
mkfifo "$F/etc/os-release"
for gpu in "$F"/sys/bus/pci/devices/*; do :; done
gpu=${gpu##*/}
rm -f "$F/sys/bus/pci/devices/$gpu/numa_node"
mkfifo "$F/sys/bus/pci/devices/$gpu/numa_node"
for cmd in detect plan "run --dry-run --state-dir $TMP/fs"; do
	set +e
	# shellcheck disable=SC2086
	timeout 30 "$GB" --root "$F" $cmd >"$TMP/out" 2>"$TMP/err"
	rc=$?
	set -e
	[ $rc -ne 124 ] || fail "$cmd hung on a FIFO"
	[ $rc -eq 0 ] || fail "$cmd on FIFOs exited $rc: $(cat "$TMP/err")"
done
grep -q "not a regular file" "$TMP/err" || fail "the FIFO is not named: $(cat "$TMP/err")"

# os-release in every bad shape: the runfile method, exit 0.
O=$TMP/osr
cp -a "$FIX/l4-debian12" "$O"
for c in garbage empty noid big unknown; do
	rm -f "$O/etc/os-release"
	case $c in
	garbage) head -c 300 /dev/urandom >"$O/etc/os-release" ;;
	empty) : >"$O/etc/os-release" ;;
	noid) printf 'NAME="X"\nVERSION_ID=1\n' >"$O/etc/os-release" ;;
	big) yes 'NAME=x' | head -c 2000000 >"$O/etc/os-release" ;;
	unknown) printf 'ID=gentoo\nVERSION_ID=2.17\n' >"$O/etc/os-release" ;;
	esac
	expect_exit 0 "$GB" --root "$O" plan
	grep -q '^method       runfile' "$TMP/out" || fail "os-release $c: $(grep '^method' "$TMP/out")"
	grep -q '^driver       5' "$TMP/out" || fail "os-release $c: no driver planned"
done
expect_exit 2 "$GB" --root "$O" plan --target-os gentoo:2.17
echo ok
