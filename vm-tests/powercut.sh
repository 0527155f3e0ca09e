#!/bin/sh
# vm-tests/powercut.sh [CYCLES]: real power cuts under gpuboot's durable
# writes (docs/reliability.md, "Power loss"). One Debian 12 guest disk (a
# qcow2 overlay on the cached bookworm image, ext4 with its default
# data=ordered) booted CYCLES+1 times. At each boot the guest's unit
# (vm-tests/powercut/) first CHECKs what the last cut left of gpuboot's
# status, journal, cache, exports and the file it wrote under the root,
# then runs the WORKLOAD (gpuboot rewriting them in a loop); the host waits
# for "POWERCUT-WORKLOAD-START <boot>" on the guest's second serial port,
# sleeps 0.5 to 6 s at random, and SIGKILLs QEMU: the guest's page cache
# and every write not yet handed to the virtual disk are lost, as in a
# power cut. The last boot only checks. A cycle passes when the check after
# its cut is ok and the status document found passes tests/status_schema.py.
# Ends "N passed, N failed"; exit 1 on a failure, 77 when QEMU or the image
# is missing. Logs in build/vm-tests/powercut/. With --self-test: only the
# check's own test, on the host (no guest, seconds).
#
# env: POWERCUT_SEED (the delays' seed; default the time, printed),
#      POWERCUT_BOOT_TIMEOUT seconds per boot (default 300),
#      GPUBOOT_VM_ACCEL qemu -accel (default tcg,thread=multi)
set -u
cd "$(dirname "$0")/.." || exit 1
SELFTEST_ONLY=""
[ "${1:-}" = --self-test ] && SELFTEST_ONLY=1 && shift
CYCLES=${1:-12}
OUT=build/vm-tests/powercut${SELFTEST_ONLY:+-selftest}
GB=${GB_STATIC:-build/gpuboot}
ACCEL=${GPUBOOT_VM_ACCEL:-tcg,thread=multi}
BOOT_TIMEOUT=${POWERCUT_BOOT_TIMEOUT:-300}
SEED=${POWERCUT_SEED:-$(date +%s)}
case $CYCLES in '' | *[!0-9]* | 0) echo "usage: vm-tests/powercut.sh [CYCLES >= 1]" >&2; exit 2 ;; esac
skip() { echo "powercut: SKIP: $*"; exit 77; }
for t in qemu-system-x86_64 qemu-img cloud-localds genisoimage openssl python3; do
	command -v "$t" >/dev/null || skip "$t missing (scripts/install-deps.sh --vm)"
done
[ -x "$GB" ] || { echo "powercut: $GB missing (make static)"; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/media/powercut" "$OUT/media/bundle"
ABS=$(pwd)/$OUT

# The media disk: the static gpuboot, the guest's scripts, a signed bundle
# (tests/make-bundle) and the fixture the workload runs on.
GB=$GB tests/make-bundle "$OUT/bundle-src" >/dev/null || { echo "powercut: tests/make-bundle failed"; exit 1; }
cp -r "$OUT/bundle-src/mirror" "$OUT/bundle-src/key.pub" "$OUT/media/bundle/"
cp "$GB" "$OUT/media/gpuboot"
cp vm-tests/powercut/guest.sh vm-tests/powercut/check.py vm-tests/powercut/control.py \
	vm-tests/powercut/setup.sh vm-tests/powercut/powercut.service "$OUT/media/powercut/"
tar -C tests/fixtures -cf "$OUT/media/powercut/fixture.tar" --transform 's,^l4-debian12,root,' l4-debian12

# The check must be able to fail: on the host, the state of one run of the
# workload passes it, and the same state with a torn status, a zero-length
# journal, a cache entry whose bytes are not its name or a cut root file
# fails it, and so does a temp file of a boot before the last; the last
# boot's leftover temp files and a torn control do not.
selftest() {
	st=$ABS/selftest
	mkdir -p "$st/base"
	tar -xf "$OUT/media/powercut/fixture.tar" -C "$st/base"
	# (an image build: verify is the image's first boot's; --no-verify says so)
	set -- --root "$st/base/root" run --target-gpu T4 --force --profile minimal --method runfile \
		--mirror "file://$ABS/media/bundle/mirror" --offline --trust-key "$ABS/media/bundle/key.pub" \
		--state-dir "$st/base/state" --run-dir "$st/base/run" --no-verify
	"$GB" "$@" >"$st/base.log" 2>&1
	[ $? -eq 1 ] || { echo "self-test: the workload's run did not exit 1 (see $st/base.log)"; return 1; }
	cp "$st/base/root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf" "$st/ref"
	python3 vm-tests/powercut/control.py "$st/base/ctl.json" once
	bad=0
	for case in whole:ok leftover-temp:ok torn-control:ok torn-status:status.json zero-journal:journal.json \
		bad-cache:'cache entry' torn-root:gpuboot-blacklist-nouveau.conf stale-temp:'still stands'; do
		name=${case%%:*} want=${case#*:}
		d=$st/$name
		cp -a "$st/base" "$d"
		case $name in
		leftover-temp)
			echo '{"half' >"$d/state/.status.json.Ab12Cd"
			echo '{"half' >"$d/state/.journal.json.11111111.Ab12Cd"
			;;
		stale-temp) echo '{"half' >"$d/state/.journal.json.22222222.Ab12Cd" ;;
		torn-control) truncate -s 5000 "$d/ctl.json" ;;
		torn-status) truncate -s 3000 "$d/state/status.json" ;;
		zero-journal) : >"$d/state/journal.json" ;;
		bad-cache) f=$(ls "$d"/state/cache/sha256/*) && printf 'X' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null ;;
		torn-root) truncate -s 10 "$d/root/etc/modprobe.d/gpuboot-blacklist-nouveau.conf" ;;
		esac
		# shellcheck disable=SC2046
		python3 vm-tests/powercut/check.py --boot self --state "$d/state" --root "$d/root" --ref "$st/ref" \
			--control "$d/ctl.json" --gb "$GB" --fsdev none --prev-tag 11111111 -- \
			"$GB" $(echo "$*" | sed "s,$st/base/,$d/,g") >"$d.out" 2>&1
		line=$(grep '^POWERCUT-CHECK ' "$d.out")
		case $want in
		ok) [ "$line" = "POWERCUT-CHECK self ok" ] ;;
		*) case $line in "POWERCUT-CHECK self FAIL "*"$want"*) true ;; *) false ;; esac ;;
		esac || { echo "self-test $name: want ${want}, got: ${line:-nothing} (see $d.out)"; bad=1; }
	done
	grep -q 'control (.*): torn' "$st/torn-control.out" || { echo "self-test: the torn control was not seen"; bad=1; }
	grep -q 'temp leftovers=2 ' "$st/leftover-temp.out" || { echo "self-test: the leftovers not counted"; bad=1; }
	return $bad
}
selftest || { echo "powercut: the check's self-test failed"; exit 1; }
echo "powercut: the check's self-test passed (a whole state ok; torn status, zero-length journal, bad cache entry, cut root file, stale temp file each FAIL)"
[ -n "$SELFTEST_ONLY" ] && exit 0
img=$(vm-tests/build-image.sh bookworm 2>"$OUT/build-image.log" </dev/null) ||
	skip "no bookworm guest image (see $OUT/build-image.log)"

genisoimage -quiet -V GPUBOOT -r -o "$OUT/media.iso" "$OUT/media"
cp vm-tests/powercut/user-data.yaml "$OUT/user-data"
printf 'instance-id: powercut-%s\nlocal-hostname: vmtest\n' "$$" >"$OUT/meta-data"
cloud-localds "$OUT/seed.iso" "$OUT/user-data" "$OUT/meta-data"
qemu-img create -q -f qcow2 -b "$img/disk.raw" -F raw "$OUT/overlay.qcow2"

# wait_gone PID: until QEMU exits (the guest powered off), at most BOOT_TIMEOUT s
wait_gone() {
	n=0
	while kill -0 "$1" 2>/dev/null && [ "$n" -lt $((BOOT_TIMEOUT * 5)) ]; do
		sleep 0.2
		n=$((n + 1))
	done
}
# wait_for FILE LINE PID: 0 when LINE is in FILE, 1 when QEMU ended first, 2 after BOOT_TIMEOUT
wait_for() {
	n=0
	while [ "$n" -lt $((BOOT_TIMEOUT * 5)) ]; do
		[ -f "$1" ] && tr -d '\r' <"$1" | grep -q "^$2\$" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.2
		n=$((n + 1))
	done
	return 2
}

echo "powercut: $CYCLES cycles, seed $SEED, image $img"
boots=$((CYCLES + 1))
b=1
aborted=""
while [ "$b" -le "$boots" ]; do
	last=0
	[ "$b" -eq "$boots" ] && last=1
	# After the first boot cloud-init has done its part; masked, it leaves the CPU to the workload.
	masks="systemd.mask=vmtest-report.service"
	[ "$b" -gt 1 ] && masks="$masks systemd.mask=cloud-init-local.service systemd.mask=cloud-init.service systemd.mask=cloud-config.service systemd.mask=cloud-final.service"
	start=$(date +%s)
	qemu-system-x86_64 -machine q35 -nodefaults -vga none -accel "$ACCEL" -cpu max -smp 2 -m 1024 \
		-display none -no-user-config -nic none \
		-serial "file:$OUT/console-$b.log" -serial "file:$OUT/report-$b.log" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 $masks powercut.boot=$b powercut.last=$last" \
		-drive "file=$OUT/overlay.qcow2,if=virtio,format=qcow2" \
		-drive "file=$OUT/seed.iso,if=virtio,format=raw,readonly=on" \
		-drive "file=$OUT/media.iso,if=virtio,format=raw,readonly=on" >"$OUT/qemu-$b.log" 2>&1 &
	pid=$!
	if [ "$last" -eq 1 ]; then
		wait_for "$OUT/report-$b.log" "POWERCUT-DONE $b" "$pid"
		rc=$?
		[ "$rc" -eq 0 ] && wait_gone "$pid"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "boot $b: checked, powered off after $(($(date +%s) - start)) s"
		[ "$rc" -eq 0 ] || aborted="boot $b: no POWERCUT-DONE (rc $rc)"
		break
	fi
	wait_for "$OUT/report-$b.log" "POWERCUT-WORKLOAD-START $b" "$pid"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		aborted="boot $b: the workload never started ($([ $rc -eq 1 ] && echo 'QEMU exited' || echo "no line in $BOOT_TIMEOUT s"))"
		break
	fi
	up=$(($(date +%s) - start))
	delay=$(awk -v s="$SEED" -v b="$b" 'BEGIN { srand((s % 1000003) * 131 + b); printf "%.2f", 0.5 + rand() * 5.5 }')
	sleep "$delay"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	qemu-img check -q "$OUT/overlay.qcow2" >"$OUT/qemu-img-check-$b.log" 2>&1
	qc=$?
	iters=$(tr -d '\r' <"$OUT/report-$b.log" | grep -c "^POWERCUT-ITER $b ")
	echo "boot $b: workload started after $up s, power cut $delay s later ($iters runs finished); qemu-img check exit $qc"
	echo "$delay $iters $qc" >"$OUT/cut-$b"
	b=$((b + 1))
done
rm -f "$OUT/overlay.qcow2"

# The results, per cycle: the check at the boot after the cut.
pass=0 fail=0 torn=0 recovered=0
for r in "$OUT"/report-*.log; do tr -d '\r' <"$r" >"${r%.log}.txt"; done
c=1
while [ "$c" -le "$CYCLES" ]; do
	b=$((c + 1))
	r=$OUT/report-$b.txt
	line=$(grep "^POWERCUT-CHECK $b " "$r" 2>/dev/null)
	why=""
	case $line in
	"POWERCUT-CHECK $b ok")
		grep "^POWERCUT-STATUS-B64 $b " "$r" | cut -d' ' -f3 | base64 -d >"$OUT/status-$b.json" 2>/dev/null
		python3 tests/status_schema.py "$OUT/status-$b.json" docs/status.md >"$OUT/schema-$b.log" 2>&1 ||
			why="the status document found fails tests/status_schema.py: $(tail -n1 "$OUT/schema-$b.log")"
		;;
	"") why="no CHECK line at boot $b" ;;
	*) why=${line#"POWERCUT-CHECK $b FAIL "} ;;
	esac
	bad=$(tr -d '\r' <"$OUT/report-$c.log" 2>/dev/null | awk -v b="$c" '$1 == "POWERCUT-ITER" && $2 == b && $4 != 1 { printf " run %s exited %s;", $3, $4 }')
	[ -n "$bad" ] && why="$why workload in boot $c:$bad"
	grep -q "^POWERCUT-INFO $b control.*: \(torn\|zero-length\)" "$r" 2>/dev/null && torn=$((torn + 1))
	grep -q "^POWERCUT-INFO $b kernel: .*recovery complete" "$r" 2>/dev/null && recovered=$((recovered + 1))
	read -r delay iters qc <"$OUT/cut-$c" 2>/dev/null || delay="?" iters="?" qc="?"
	if [ -z "$why" ] && [ -n "$line" ]; then
		pass=$((pass + 1))
		echo "PASS  cycle $c: cut ${delay} s into the workload ($iters runs finished), check at boot $b ok"
	else
		fail=$((fail + 1))
		echo "FAIL  cycle $c: cut ${delay} s into the workload ($iters runs finished), check at boot $b: $why"
	fi
	grep "^POWERCUT-INFO $b " "$r" 2>/dev/null | cut -d' ' -f3- | sed 's/^/      /'
	c=$((c + 1))
done
echo
echo "filesystem: $(grep -h '^POWERCUT-INFO [0-9]* fs ' "$OUT"/report-*.txt | head -n1 | cut -d' ' -f3-)"
echo "journal replayed by the kernel (\"recovery complete\") at $recovered of $CYCLES boots after a cut; e2fsck lines: $(cat "$OUT"/console-*.log | tr -d '\r' | grep -c 'recovering journal')"
echo "control (rewritten in place, fsync per chunk) found torn or zero-length after $torn of $CYCLES cuts"
[ -n "$aborted" ] && echo "aborted: $aborted" && tail -n 30 "$OUT/console-$b.log" | sed 's/^/      | /'
echo "$pass passed, $fail failed"
[ -z "$aborted" ] && [ "$fail" -eq 0 ] && [ "$pass" -eq "$CYCLES" ]
