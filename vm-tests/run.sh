#!/bin/sh
# vm-tests: a real first boot under QEMU with cloud-init (NoCloud), running
# gpuboot from the project's own examples in cloud-init/ as users paste them:
# the release's copies (make release, with GPUBOOT_RELEASE_URL pointing at a
# second, read-only disk that holds the release files), its SHA256SUMS
# pasted in. No network in the guest. Ends with
# "N passed, N failed"; logs and status documents in build/vm-tests/.
#
# usage: vm-tests/run.sh [SCENARIO ...]   (default: all)
# env:   GPUBOOT_VM_TIMEOUT  seconds per VM (default 1200)
#        GPUBOOT_VM_ACCEL    qemu -accel (default tcg,thread=multi)
set -u
cd "$(dirname "$0")/.."
GB=${GB_STATIC:-build/gpuboot}
REL=${GPUBOOT_VM_RELEASE:-build/vm-release}
LOGS=build/vm-tests
TIMEOUT=${GPUBOOT_VM_TIMEOUT:-1200}
ACCEL=${GPUBOOT_VM_ACCEL:-tcg,thread=multi}
[ -x "$GB" ] || { echo "vm-tests: $GB missing (make static)"; exit 1; }
[ -s "$REL/SHA256SUMS" ] && [ -s "$REL/gpuboot.yaml" ] || { echo "vm-tests: no release in $REL (make vm-test makes it)"; exit 1; }
cmp -s "$GB" "$REL/gpuboot-x86_64" || { echo "vm-tests: $REL/gpuboot-x86_64 is not $GB (make vm-test)"; exit 1; }
for t in qemu-system-x86_64 qemu-img mmdebstrap cloud-localds genisoimage; do
	command -v "$t" >/dev/null || { echo "vm-tests: $t missing (scripts/install-deps.sh --vm)"; exit 1; }
done
rm -rf "$LOGS"
mkdir -p "$LOGS"
pass=0 fail=0 failed=""

# section NAME FILE: the lines of one report section of the last boot
section() {
	awk -v s="$1-BEGIN" 'index($0, "VMTEST-BEGIN") {out=""} $0==s {on=1; next} $0=="END-SECTION" {on=0} on {print}' "$2"
}
check() { # description, then a shell test
	d=$1
	shift
	if "$@"; then :; else
		echo "      check failed: $d" >>"$dir/failures"
	fi
}

# scenario NAME SUITE EXAMPLE BOOTS
scenario() {
	name=$1 suite=$2 example=$3 boots=$4
	dir=$LOGS/$name
	mkdir -p "$dir/media"
	: >"$dir/failures"
	img=$(vm-tests/build-image.sh "$suite" 2>"$dir/build-image.log" </dev/null) || {
		echo "      image build failed (see $dir/build-image.log)" >>"$dir/failures"
		return
	}
	cp "$GB" "$dir/media/gpuboot"
	cp "$REL"/gpuboot-x86_64 "$REL"/gpuboot-aarch64 "$REL"/SHA256SUMS "$REL"/SHA256SUMS.sig "$dir/media/"
	genisoimage -quiet -V GPUBOOT -r -o "$dir/media.iso" "$dir/media"
	# The example as the release filled it in (its SHA256SUMS pasted, the release at the
	# second disk), or a scenario's own user-data (vm-tests/userdata/*.yaml).
	src=$REL/$example
	[ -f "vm-tests/userdata/$example" ] && src=vm-tests/userdata/$example
	cp "$src" "$dir/user-data"
	printf 'instance-id: vmtest-%s-%s\nlocal-hostname: vmtest\n' "$name" "$$" >"$dir/meta-data"
	cloud-localds "$dir/seed.iso" "$dir/user-data" "$dir/meta-data"
	qemu-img create -q -f qcow2 -b "$img/disk.raw" -F raw "$dir/overlay.qcow2"
	start=$(date +%s)
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -machine q35 -nodefaults -vga none -accel "$ACCEL" -cpu max -smp 2 -m 2048 \
		-display none -no-user-config -nic none \
		-serial "file:$dir/console.log" -serial "file:$dir/report.log" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 systemd.show_status=1 vmtest.boots=$boots" \
		-drive "file=$dir/overlay.qcow2,if=virtio,format=qcow2" \
		-drive "file=$dir/seed.iso,if=virtio,format=raw,readonly=on" \
		-drive "file=$dir/media.iso,if=virtio,format=raw,readonly=on" >"$dir/qemu.log" 2>&1
	rc=$?
	echo "$name: qemu exited $rc after $(($(date +%s) - start)) s" >"$dir/timing"
	rm -f "$dir/overlay.qcow2"
	[ "$rc" -eq 0 ] || echo "      qemu exited $rc (timeout: 124)" >>"$dir/failures"
	# The serial line turns \n into \r\n.
	tr -d '\r' <"$dir/report.log" >"$dir/report.txt"
	r=$dir/report.txt
	check "the guest reported $boots boot(s)" [ "$(grep -c '^VMTEST-END' "$r" 2>/dev/null)" -eq "$boots" ]
	# Boot 1: cloud-init ran the example; gpuboot detect, plan and run did their part.
	awk '/^VMTEST-BEGIN boot=1/{on=1} on{print} /^VMTEST-END boot=1/{exit}' "$r" >"$dir/boot1.log"
	section STATUSJSON "$dir/boot1.log" | sed '$d' >"$dir/status.json"
	check "cloud-init finished without errors" grep -q "status: done" "$dir/boot1.log"
	check "the status document is valid (docs/status.md)" sh -c "python3 tests/status_schema.py '$dir/status.json' docs/status.md >/dev/null"
	"${checks:-checks_example}"
}

# The cloud-init examples on a guest without a GPU: detect, plan (exit 11), status.
checks_example() {
	check "gpuboot run: exit 11, no GPU, stages detect ok and plan refused" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 11 and d["result"] == "no-gpu", (d["command"], d["exit_code"], d["result"])
st = {s["name"]: s for s in d["stages"]}
assert st["detect"]["result"] == "ok" and st["plan"]["result"] == "refused", st
assert "no NVIDIA GPU" in st["plan"]["error"]
assert d["facts"]["gpus"] == [] and d["facts"]["os"]["id"] == "debian" and d["facts"]["cpu"]["arch"] == "x86_64"
assert d["facts"]["kernel"]["release"] and d["facts"]["os"]["libc"] == "glibc"
PY
	check "gpuboot detect ran from user-data" grep -q "^gpus: *none" "$dir/boot1.log"
	check "gpuboot plan ran and refused with exit 11" grep -q "REFUSED      exit 11" "$dir/boot1.log"
	check "the example logged run's exit code" grep -q "gpuboot run exited 11" "$dir/boot1.log"
	check "the static binary ran in the guest" grep -q "^gpuboot 0\." "$dir/boot1.log"
	check "the example chose gpuboot-x86_64 by uname -m and verified its pasted sha256" \
		grep -q "^gpuboot: gpuboot-x86_64 sha256 $(awk '$2 == "gpuboot-x86_64" {print $1}' "$REL/SHA256SUMS") verified" "$dir/boot1.log"
	if [ "$boots" -ge 2 ]; then
		awk '/^VMTEST-BEGIN boot=2/{on=1} on{print}' "$r" >"$dir/boot2.log"
		check "second boot: runcmd did not run again, gpuboot status reads the first boot's document" \
			grep -q "no-gpu (exit 11)" "$dir/boot2.log"
		check "second boot: the status document survived the reboot" grep -q '"exit_code": 11' "$dir/boot2.log"
		check "second boot: cloud-init done" grep -q "status: done" "$dir/boot2.log"
	fi
}

# The Debian 12 image with Debian's NVIDIA driver installed by gpuboot at
# build time (vm-tests/build-image.sh bookworm-nvidia): at first boot
# `gpuboot run --target-gpu T4` keeps the driver and loads the real module
# through libkmod; QEMU has no NVIDIA GPU, so the kernel refuses it, and the
# status names the cause from the kernel's own line.
checks_firstboot_load() {
	check "gpuboot run: exit 11, load failed: no NVIDIA GPU the driver can drive" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 11, (d["command"], d["exit_code"], d["result"])
st = {s["name"]: s for s in d["stages"]}
assert st["plan"]["result"] == "ok" and d["plan"]["driver"]["action"] == "keep", d["plan"]["driver"]
assert st["load"]["result"] == "failed", st["load"]
assert "no NVIDIA GPU the driver can drive" in st["load"]["error"], st["load"]
assert st["load"]["errno"] == "ENODEV", st["load"]["errno"]
PY
	check "the kernel's own NVRM line is in the status" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert "NVRM" in json.dumps(d["load"]) and "No NVIDIA GPU found" in json.dumps(d["load"]), d["load"]
PY
	check "the installed module is the image's: Debian's 535.309.01, not loaded" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
i = d["plan"]["driver"]["installed"]
assert i["version"] == "535.309.01" and not i["loaded"] and i["module_for_kernel"], i
PY
	check "nothing but the load was tried: prepare, fetch, install skipped" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s["result"] for s in d["stages"]}
assert st["prepare"] == st["fetch"] == st["install"] == "skipped", st
PY
	check "the guest logged run's exit code" grep -q "gpuboot run exited 11" "$dir/boot1.log"
}

run_one() {
	scenario "$@"
	if [ -s "$LOGS/$1/failures" ]; then
		fail=$((fail + 1))
		failed="$failed $1"
		echo "FAIL  vm/$1 ($(cat "$LOGS/$1/timing" 2>/dev/null))"
		cat "$LOGS/$1/failures"
		echo "      console (last 40 lines):"
		tail -n 40 "$LOGS/$1/console.log" 2>/dev/null | sed 's/^/      | /'
	else
		pass=$((pass + 1))
		echo "PASS  vm/$1 ($(cat "$LOGS/$1/timing"))"
	fi
}

want=${*:-"bookworm-cloud-config bookworm-shell trixie-cloud-config bookworm-nvidia-firstboot"}
for s in $want; do
	case $s in
	bookworm-cloud-config) checks=checks_example run_one "$s" bookworm gpuboot.yaml 2 ;;
	bookworm-shell) checks=checks_example run_one "$s" bookworm gpuboot.sh 1 ;;
	trixie-cloud-config) checks=checks_example run_one "$s" trixie gpuboot.yaml 2 ;;
	bookworm-nvidia-firstboot) checks=checks_firstboot_load run_one "$s" bookworm-nvidia firstboot-load.yaml 1 ;;
	*) echo "unknown scenario $s"; fail=$((fail + 1)) ;;
	esac
done
echo
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
# A tier that ran nothing did not pass.
[ $((pass + fail)) -gt 0 ] || { echo "no scenario ran"; exit 1; }
[ "$fail" -eq 0 ]
