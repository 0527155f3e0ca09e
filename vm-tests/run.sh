#!/bin/sh
# vm-tests: a real first boot under QEMU with cloud-init (NoCloud), running
# gpuboot from the project's own examples in cloud-init/ as users paste them:
# the release's copies (make release, with GPUBOOT_RELEASE_URL pointing at a
# second, read-only disk that holds the release files), its SHA256SUMS
# pasted in. No network in the guest. Ends with
# "N passed, N failed"; logs and status documents in build/vm-tests/.
#
# usage: vm-tests/run.sh [SCENARIO ...]   (default: all but the slow ones)
#        slow (make vm-test-slow): bookworm-nvidia-rebuild
# env:   GPUBOOT_VM_TIMEOUT  seconds per VM (default 1200; the slow
#                            scenarios: GPUBOOT_VM_SLOW_TIMEOUT, default 7200)
#        GPUBOOT_VM_ACCEL    qemu -accel (default tcg,thread=multi)
#        GPUBOOT_VM_JOBS     guests at a time (default 1; 2 runs two lanes)
set -u
cd "$(dirname "$0")/.."
GB=${GB_STATIC:-build/gpuboot}
REL=${GPUBOOT_VM_RELEASE:-build/vm-release}
LOGS=build/vm-tests
TIMEOUT=${GPUBOOT_VM_TIMEOUT:-1200}
ACCEL=${GPUBOOT_VM_ACCEL:-tcg,thread=multi}
JOBS=${GPUBOOT_VM_JOBS:-1}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
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

# qemu_boot SUFFIX QEMU-ARGS...: one QEMU run of the scenario's guest (its
# serial lines in console$SUFFIX.log and report$SUFFIX.log); sets rc.
qemu_boot() {
	sfx=$1
	shift
	# shellcheck disable=SC2086
	timeout -k 10 "${vm_timeout:-$TIMEOUT}" qemu-system-x86_64 ${fw:--machine q35} -nodefaults -vga none -accel "$ACCEL" -cpu max -smp 2 -m 2048 \
		-display none -no-user-config -nic none \
		-serial "file:$dir/console$sfx.log" -serial "file:$dir/report$sfx.log" "$@" ${qemu_extra:-} \
		-drive "file=$dir/overlay.qcow2,if=virtio,format=qcow2" \
		-drive "file=$dir/seed.iso,if=virtio,format=raw,readonly=on" \
		-drive "file=$dir/media.iso,if=virtio,format=raw,readonly=on" >>"$dir/qemu.log" 2>&1
	rc=$?
}

# GRUB for the boots after the first, as QEMU loads a Linux kernel: GRUB's
# lnxboot.img before a core image (Debian's grub-pc-bin) that holds every
# module a Debian grub.cfg asks for and vm-tests/grub-early.cfg, which finds
# the guest's disk by its label and reads the guest's own grub.cfg.
grub_prep() {
	g=$LOGS/grub
	[ -f "$g/grub.lnx" ] && return 0
	mkdir -p "$g"
	# Two lanes may ask at once: one makes it, the other waits (flock).
	exec 8>"$LOGS/.grub.lock"
	flock 8
	[ -f "$g/grub.lnx" ] && { exec 8>&-; return 0; }
	grub-mkimage -O i386-pc -o "$g/core.img" -c vm-tests/grub-early.cfg -p '(hd0)/boot/grub' \
		biosdisk ext2 part_msdos part_gpt linux normal search search_label search_fs_uuid search_fs_file \
		configfile loadenv test echo gzio serial terminal terminfo halt reboot true sleep regexp cat ls \
		all_video video font gfxterm gettext >"$g/grub-mkimage.log" 2>&1 &&
		cat /usr/lib/grub/i386-pc/lnxboot.img "$g/core.img" >"$g/grub.lnx" || {
		echo "      could not make GRUB's image (grub-pc-bin: scripts/install-deps.sh --vm; see $g/grub-mkimage.log)" >>"$dir/failures"
		rm -f "$g/grub.lnx"
		exec 8>&-
		return 1
	}
	exec 8>&-
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
	# Secure Boot scenarios: the site key travels on the media disk; the firmware is OVMF's
	# Secure Boot build with a per-VM copy of its variables (Microsoft's keys, and for
	# secboot-db the site certificate in db).
	fw=""
	case ${firmware:-} in
	secboot*)
		secureboot_prep || return
		[ "$firmware" != secboot-prebuilt ] || prebuilt_vars_prep || return
		cp "$LOGS/secureboot/site.key" "$LOGS/secureboot/site.pem" "$dir/media/"
		cp "$LOGS/secureboot/vars-$firmware.fd" "$dir/vars.fd"
		fw="-machine q35,smm=on -global driver=cfi.pflash01,property=secure,value=on
		    -drive if=pflash,format=raw,unit=0,file=$OVMF_CODE,readonly=on -drive if=pflash,format=raw,unit=1,file=$dir/vars.fd"
		;;
	esac
	genisoimage -quiet -V GPUBOOT -r -o "$dir/media.iso" "$dir/media"
	# The example as the release filled it in (its SHA256SUMS pasted, the release at the
	# second disk), or a scenario's own user-data (vm-tests/userdata/*.yaml).
	src=$REL/$example
	[ -f "vm-tests/userdata/$example" ] && src=vm-tests/userdata/$example
	cp "$src" "$dir/user-data"
	# A site's edits to the pasted example (its profile, its gpuboot.conf), each
	# applied exactly once or the scenario fails.
	if [ -n "${site_edits:-}" ]; then
		python3 vm-tests/site-edit.py "$dir/user-data" "vm-tests/$site_edits" 2>>"$dir/failures" || return
	fi
	printf 'instance-id: vmtest-%s-%s\nlocal-hostname: vmtest\n' "$name" "$$" >"$dir/meta-data"
	# The cloud's own part (NoCloud vendor-data), where a scenario has one.
	cloud-localds ${vendor:+-V "vm-tests/vendordata/$vendor"} "$dir/seed.iso" "$dir/user-data" "$dir/meta-data"
	qemu-img create -q -f qcow2 -b "$img/disk.raw" -F raw "$dir/overlay.qcow2"
	start=$(date +%s)
	if [ "${boot:-}" = grub ]; then
		# The first boot straight into the image's first kernel; each boot is
		# one QEMU run (-no-reboot: the guest's reboot ends it), and every
		# later boot goes through GRUB, which reads the guest's own grub.cfg
		# (vm-tests/grub-early.cfg).
		qemu_boot "" -no-reboot -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
			-append "root=/dev/vda rw console=ttyS0 systemd.show_status=1 vmtest.boots=$boots"
		n=1
		while [ "$rc" -eq 0 ] && [ "$n" -lt "$boots" ] && grub_prep; do
			n=$((n + 1))
			qemu_boot "-$n" -no-reboot -kernel "$LOGS/grub/grub.lnx"
			cat "$dir/console-$n.log" >>"$dir/console.log"
			cat "$dir/report-$n.log" >>"$dir/report.log"
		done
	else
		qemu_boot "" -kernel "$img/vmlinuz${kernel:+-$kernel}" -initrd "$img/initrd.img${kernel:+-$kernel}" \
			-append "root=/dev/vda rw console=ttyS0 systemd.show_status=1 vmtest.boots=$boots${append:+ $append}"
	fi
	echo "$name: qemu exited $rc after $(($(date +%s) - start)) s" >"$dir/timing"
	rm -f "$dir/overlay.qcow2"
	[ "$rc" -eq 0 ] || echo "      qemu exited $rc (timeout: 124)" >>"$dir/failures"
	# The serial line turns \n into \r\n.
	tr -d '\r' <"$dir/report.log" >"$dir/report.txt"
	r=$dir/report.txt
	# A guest rebooted by the example itself reports only the boots it finishes.
	check "the guest reported ${reports:-$boots} boot(s)" [ "$(grep -c '^VMTEST-END' "$r" 2>/dev/null)" -eq "${reports:-$boots}" ]
	# Boot 1: cloud-init ran the example; gpuboot detect, plan and run did their part.
	awk '/^VMTEST-BEGIN boot=1/{on=1} on{print} /^VMTEST-END boot=1/{exit}' "$r" >"$dir/boot1.log"
	section STATUSJSON "$dir/boot1.log" | sed '$d' >"$dir/status.json"
	# The examples exit with gpuboot's code: on a guest without a GPU (exit
	# 11) cloud-init reports the first boot as failed, as it must.
	if [ "${cloud_init_status:-done}" = done ]; then
		check "cloud-init finished without errors" grep -q "status: done" "$dir/boot1.log"
	else
		check "cloud-init reports the failed first boot (status: $cloud_init_status, the user's script)" sh -c \
			"grep -q 'status: $cloud_init_status' '$dir/boot1.log' && grep -q 'scripts.user' '$dir/boot1.log'"
	fi
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

# The image's own first boot, as a cloud boots an image whose launch
# gpuboot does not control: no user-data, no network, no GPU. The unit the
# image install enabled (gpuboot-firstboot.service) runs gpuboot's own
# first boot: the plan finds no GPU (exit 11), and the module the image
# holds is offered to the kernel anyway, whose answer is in the status:
# "No NVIDIA GPU found" (ENODEV): the image's module loads here. The marker
# stays for a boot that has a GPU. Under Secure Boot with Microsoft's keys
# only, the module DKMS signed with its own key is refused by the kernel
# (EKEYREJECTED, exit 14): the image would fail on every instance, and the
# status says so at its first boot; the marker goes (the image is broken,
# not waiting for a GPU).
checks_image_unit() {
	section UNIT "$dir/boot1.log" >"$dir/unit.log"
	sb=${image_unit_sb:-no}
	check "the guest had no user-data: cloud-init ran no script" sh -c "! grep -q 'scripts.user' '$dir/boot1.log'"
	if [ "$sb" = no ]; then
		check "gpuboot-firstboot.service ran: exit 11 (no GPU)" grep -qx 'ExecMainStatus=11' "$dir/unit.log"
		check "the marker stays for a boot with a GPU" grep -qx '/var/lib/gpuboot/image-pending' "$dir/unit.log"
	else
		check "gpuboot-firstboot.service ran: exit 14 (the module refused under Secure Boot)" grep -qx 'ExecMainStatus=14' "$dir/unit.log"
		check "the marker is gone: the image is broken, not waiting" sh -c "! grep -qx '/var/lib/gpuboot/image-pending' '$dir/unit.log'"
	fi
	check "the status is the unit's run: no GPU, the kernel's answer to the image's module named" python3 - "$dir/status.json" "$sb" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); sb = sys.argv[2] == "yes"
assert d["command"] == "run" and d["exit_code"] == (14 if sb else 11), (d["command"], d["exit_code"], d["result"])
st = {s["name"]: s for s in d["stages"]}
assert st["plan"]["result"] == "refused" and "no NVIDIA GPU" in st["plan"]["error"], st["plan"]
assert st["load"]["result"] == "failed", st["load"]
assert "the image's 535.309.01 module offered to the kernel anyway" in st["load"]["error"], st["load"]
assert bool(d["facts"]["secure_boot"]["enabled"]) is sb, d["facts"]["secure_boot"]  # None: no EFI (a BIOS boot)
if sb:
    assert st["load"]["errno"] == "EKEYREJECTED", st["load"]
    assert "Loading of module with unavailable key is rejected" in json.dumps(d["load"]), d["load"]
else:
    assert st["load"]["errno"] == "ENODEV", st["load"]
    assert "No NVIDIA GPU found" in json.dumps(d["load"]), d["load"]
assert not d["ready"]["verified"] and not d["ready"]["driver_ready"], d["ready"]
PY
	check "not the build's status: the image's first boot wrote it" sh -c "! grep -q 'installed-pending-first-boot' '$dir/status.json'"
}

OVMF_CODE=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd
OVMF_VARS=/usr/share/OVMF/OVMF_VARS_4M.ms.fd
# The site key of the Secure Boot scenarios (made fresh for this run) and two
# variable stores: Microsoft's keys only (secboot), and with the site
# certificate in db (secboot-db), written by virt-fw-vars.
secureboot_prep() {
	sb=$LOGS/secureboot
	[ -f "$sb/.done" ] && return 0
	mkdir -p "$sb"
	exec 8>"$LOGS/.secureboot.lock"
	flock 8
	[ -f "$sb/.done" ] && { exec 8>&-; return 0; }
	[ -f "$OVMF_CODE" ] && [ -f "$OVMF_VARS" ] || {
		echo "      OVMF's Secure Boot firmware missing (scripts/install-deps.sh --vm installs ovmf)" >>"$dir/failures"
		exec 8>&-
		return 1
	}
	openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=gpuboot vm-test site key" \
		-keyout "$sb/site.key" -out "$sb/site.pem" >"$sb/openssl.log" 2>&1 &&
		cp "$OVMF_VARS" "$sb/vars-secboot.fd" &&
		vm-tests/virt-fw-vars.sh --input "$OVMF_VARS" --output "$sb/vars-secboot-db.fd" \
			--add-db 8f2f6b4e-1a5c-4d3b-9c1e-6b7a2d9e0f31 "$sb/site.pem" >"$sb/virt-fw-vars.log" 2>&1 || {
		echo "      could not make the Secure Boot variable stores (see $sb/*.log)" >>"$dir/failures"
		exec 8>&-
		return 1
	}
	touch "$sb/.done"
	exec 8>&-
}

# The firmware variables of the prebuilt Secure Boot scenario: Microsoft's
# keys and the site module certificate the bookworm-nvidia image's build
# signed its mirror's module with (build-image.sh), in db.
prebuilt_vars_prep() {
	sb=$LOGS/secureboot
	exec 8>"$LOGS/.secureboot.lock"
	flock 8
	[ -f "$sb/vars-secboot-prebuilt.fd" ] && { exec 8>&-; return 0; }
	nvimg=$(vm-tests/build-image.sh bookworm-nvidia 2>>"$dir/build-image.log" </dev/null) &&
		vm-tests/virt-fw-vars.sh --input "$OVMF_VARS" --output "$sb/vars-secboot-prebuilt.fd.tmp" \
			--add-db 8f2f6b4e-1a5c-4d3b-9c1e-6b7a2d9e0f31 "$nvimg/module.pem" >"$sb/virt-fw-vars-prebuilt.log" 2>&1 &&
		mv "$sb/vars-secboot-prebuilt.fd.tmp" "$sb/vars-secboot-prebuilt.fd" || {
		echo "      could not make the prebuilt scenario's variable store (see $sb/virt-fw-vars-prebuilt.log)" >>"$dir/failures"
		exec 8>&-
		return 1
	}
	exec 8>&-
}

# block NAME FILE: the lines between ==NAME and ==END-NAME of the example's log
block() { awk -v b="==$1" -v e="==END-$1" '$0==e {on=0} on {print} $0==b {on=1}' "$2"; }

# Secure Boot on, no trusted signing path: refused before any change; the
# module as it is on disk (signed by DKMS's own key) classified from the
# kernel's own errno and line.
checks_secureboot() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	for s in run1 run2 repair; do block "STATUS-$s" "$dir/firstboot.log" >"$dir/status-$s.json"; done
	check "run1: exit 10, refused at plan: Secure Boot and no signed modules" python3 - "$dir/status-run1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 10, d["exit_code"]
st = {s["name"]: s for s in d["stages"]}
assert st["plan"]["result"] == "refused" and "Secure Boot is on" in st["plan"]["error"], st["plan"]
assert all(st[n]["result"] in ("skipped", "not-run") for n in st if n not in ("detect", "plan")), st
assert d["facts"]["secure_boot"]["enabled"] is True and d["facts"]["secure_boot"]["lockdown"] == "integrity"
keys = d["facts"]["secure_boot"]["kernel_keys"]
assert any(k["name"] == "Microsoft Corporation UEFI CA 2011" for k in keys), keys
PY
	check "run2: exit 10, the site certificate named as not trusted by the kernel" python3 - "$dir/status-run2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 10, d["exit_code"]
st = {s["name"]: s for s in d["stages"]}
e = st["plan"]["error"]
assert "does not trust the site certificate" in e and "gpuboot vm-test site key" in e and "virt-fw-vars" in e, e
PY
	check "runs 1 and 2 changed nothing on the machine" [ -z "$(block CHANGED "$dir/firstboot.log")" ]
	check "repair: exit 14, EKEYREJECTED, signed by a key the kernel does not trust (the kernel's own line)" python3 - "$dir/status-repair.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 14, d["exit_code"]
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "EKEYREJECTED", st["load"]
assert "signed by a key the kernel does not trust" in st["load"]["error"], st["load"]
assert "Loading of module with unavailable key is rejected" in json.dumps(d["load"]), d["load"]
PY
	block CAPTURE "$dir/firstboot.log" | base64 -d >"$dir/capture.tgz" 2>/dev/null
	mkdir -p "$dir/capture"
	check "detect --capture in the guest: its files, /proc/keys and the SecureBoot variable among them" \
		sh -c "tar -xzf '$dir/capture.tgz' -C '$dir/capture' && grep -q 'asymmetri Microsoft Corporation UEFI CA 2011' '$dir/capture/proc/keys' && ls '$dir/capture/sys/firmware/efi/efivars/' | grep -q '^SecureBoot-'"
}

# all_signed_by_site_key FILE: "<module>: <signer>" lines, at least one, every signer the site key
all_signed_by_site_key() {
	[ -s "$1" ] && [ "$(grep -c ': gpuboot vm-test site key$' "$1")" -eq "$(wc -l <"$1")" ]
}

# Secure Boot on with the site certificate in the firmware's db: trusted by
# the kernel, the modules signed by gpuboot, the signature accepted.
checks_secureboot_db() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	for s in run1 run2; do block "STATUS-$s" "$dir/firstboot.log" >"$dir/status-$s.json"; done
	check "run1: plan trusts the site key (found in /proc/keys), modules signed, load fails only for want of a GPU (ENODEV, exit 11)" python3 - "$dir/status-run1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 11, (d["exit_code"], d.get("result"))
p = d["plan"]["secure_boot"]
assert p["strategy"] == "sign-with-key" and "whose certificate the kernel trusts" in p["reason"], p
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "ENODEV", st["load"]
sig = d["load"]["signing"]
assert sig["signed"] >= 4 and all(m["signed_now"] for m in sig["modules"]), sig
PY
	block SIGNER "$dir/firstboot.log" >"$dir/signers"
	check "the modules are signed by the site key (modinfo signer)" all_signed_by_site_key "$dir/signers"
	block KERNEL "$dir/firstboot.log" >"$dir/kernel-lines"
	check "the kernel loaded the certificate from db into its keyring" grep -q "integrity: Loaded X.509 cert 'gpuboot vm-test site key" "$dir/kernel-lines"
	check "the kernel found no GPU (the signature was accepted)" grep -q "NVRM: No NVIDIA GPU found" "$dir/kernel-lines"
	check "run2: exit 11 again, nothing signed again" python3 - "$dir/status-run2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["exit_code"] == 11, d["exit_code"]
sig = d["load"]["signing"]
assert sig["signed"] == 0 and sig["modules"], sig
PY
}

initramfs_before_ok() { grep -q 'drivers/gpu/drm/nouveau/nouveau.ko' "$1" && ! grep -q 'blacklist-nouveau' "$1"; }
# first line: nouveau's count in /proc/modules; then the initramfs' nouveau and modprobe.d entries
initramfs_after_ok() {
	[ "$(head -n1 "$1")" = 0 ] || return 1
	grep -q 'etc/modprobe.d/gpuboot-blacklist-nouveau.conf' "$1" || ! grep -q 'nouveau.ko' "$1"
}
blacklist_ok() { grep -qx 'blacklist nouveau' "$1" && grep -qx 'options nouveau modeset=0' "$1"; }
# three mtimes of the initramfs: before run1, after run1, after run2
written_by_run1_only() {
	set -- $(cat "$1")
	[ $# -eq 3 ] && [ "$1" != "$2" ] && [ "$2" = "$3" ]
}

# nouveau: loaded by hand and inside the initramfs (plymouth's hook copies the
# DRM drivers); gpuboot unloads, blacklists, regenerates, and only once.
checks_nouveau() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	for s in run1 run2; do block "STATUS-$s" "$dir/firstboot.log" >"$dir/status-$s.json"; done
	block BEFORE "$dir/firstboot.log" >"$dir/initramfs-before"
	block AFTER "$dir/firstboot.log" >"$dir/initramfs-after"
	block MTIMES "$dir/firstboot.log" >"$dir/mtimes"
	check "the image's initramfs holds nouveau.ko (plymouth's hook) and no blacklist" initramfs_before_ok "$dir/initramfs-before"
	check "nouveau was loaded before gpuboot ran" [ "$(block LOADED "$dir/firstboot.log")" = 1 ]
	check "run1: prepare unloaded nouveau, wrote the blacklist, found nouveau loadable in the initramfs and regenerated it" python3 - "$dir/status-run1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert st["prepare"]["result"] == "ok", st["prepare"]
p = d["prepare"]
assert p["unloaded"] is True and p["blacklist_changed"] is True and p["rebuilt"] == 1, p
i = p["initramfs"][0]
assert i["before"] == "loads-nouveau" and i["after"] in ("no-nouveau", "nouveau-blacklisted") and i["rebuilt"], i
PY
	check "after run1: nouveau not loaded, the new initramfs carries gpuboot's blacklist (or no nouveau)" \
		initramfs_after_ok "$dir/initramfs-after"
	block BLACKLIST "$dir/firstboot.log" >"$dir/blacklist"
	check "the blacklist says blacklist nouveau and options nouveau modeset=0" \
		blacklist_ok "$dir/blacklist"
	check "run1 then stops at the install (no network in the guest), naming it" python3 - "$dir/status-run1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert d["exit_code"] != 0 and st["install"]["result"] == "failed", (d["exit_code"], st["install"])
PY
	check "run2: prepare changed nothing: no unload, blacklist unchanged, no regeneration" python3 - "$dir/status-run2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["prepare"]
assert p["rebuilt"] == 0 and p["blacklist_changed"] is False and not p.get("unloaded"), p
assert all(not i["rebuilt"] and i["before"] in ("no-nouveau", "nouveau-blacklisted") for i in p["initramfs"]), p
st = {s["name"]: s for s in d["stages"]}
assert st["plan"]["result"] == "ok" and st["prepare"]["result"] == "ok", st  # the same plan, resumed
PY
	check "the initramfs was written by run1 only" written_by_run1_only "$dir/mtimes"
}

# The kernel upgrade: the module built for 6.12 by the hooks before it ever
# booted; the guest boots 6.12; gpuboot-repair.service finds the module for
# the running kernel and loads it (the kernel refuses it only for want of a GPU).
checks_upgrade() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	block HOOK "$dir/firstboot.log" >"$dir/hook-status.json"
	block BOOTSTATUS "$dir/firstboot.log" >"$dir/boot-status.json"
	kver=$(block UNAME "$dir/firstboot.log")
	check "the guest runs bookworm-backports' kernel (6.12), not the one gpuboot installed for" \
		sh -c "case '$kver' in 6.12.*) exit 0 ;; *) exit 1 ;; esac"
	check "the hook (image build, apt installing the kernel): --repair --kernel $kver --from-hook said it will come up with the GPU" \
		python3 - "$dir/hook-status.json" "$kver" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "repair" and d["exit_code"] == 0, (d["command"], d["exit_code"], d.get("result"))
r = d["install"]  # a repair's result is its install entry
assert r["after"]["kernel"] == sys.argv[2] and r["after"]["module"] and r["after"]["verdict"] == "ok", r["after"]
PY
	check "no repair-needed marker" [ -z "$(block MARKERS "$dir/firstboot.log")" ]
	block MODULES "$dir/firstboot.log" >"$dir/modules"
	check "the module exists for both kernels (6.12's compressed by its DKMS)" [ "$(grep -c '^nvidia-current.ko' "$dir/modules")" -ge 2 ]
	check "gpuboot-repair.service ran at boot: module found for the running kernel, not rebuilt, loaded: ENODEV (exit 11)" \
		python3 - "$dir/boot-status.json" "$kver" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "repair", d["command"]
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "ENODEV", st["load"]
assert d["exit_code"] == 11, d["exit_code"]
r = d["install"]
assert r["after"]["kernel"] == sys.argv[2] and r["after"]["module"] and not r["built"], r
PY
}

# Reboot and resume: boot 1 (6.1) plans bookworm-backports' kernel for the
# site's [kernel] minimum 6.12, finds it installed, reads GRUB's next kernel,
# arms the resume unit, exits 3; boot 2 goes through GRUB into that kernel,
# where the resume unit finishes the run (ENODEV: no GPU) and disarms itself.
checks_reboot() {
	awk '/^VMTEST-BEGIN boot=2/{on=1} on{print}' "$r" >"$dir/boot2.log"
	section STATUSJSON "$dir/boot2.log" | sed '$d' >"$dir/status-boot2.json"
	section FIRSTBOOT "$dir/boot2.log" >"$dir/firstboot.log"
	block GRUBCFG "$dir/firstboot.log" >"$dir/grub.cfg"
	k1=$(block UNAME-1 "$dir/firstboot.log")
	k2=$(block UNAME-2 "$dir/firstboot.log")
	check "Debian's update-grub wrote the guest's grub.cfg" grep -q "update-grub exited 0" "$dir/firstboot.log"
	check "boot 1: gpuboot run exited 3 (reboot needed)" grep -q "gpuboot run exited 3" "$dir/firstboot.log"
	check "boot 1: plan install-hwe of bookworm-backports' kernel for the site's minimum; prepare found it, read GRUB's next kernel, reboot-needed" \
		python3 - "$dir/status.json" "$k1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 3 and d["result"] == "reboot-needed", (d["exit_code"], d["result"])
k = d["plan"]["kernel"]
assert (k["action"], k["package"], k["headers"], k["suite"], k["minimum"], k["reboot_required"]) == \
    ("install-hwe", "linux-image-amd64", "linux-headers-amd64", "bookworm-backports", "6.12", True), k
assert "site's [kernel] minimum" in k["reason"], k["reason"]
st = {s["name"]: s for s in d["stages"]}
assert st["prepare"]["result"] == "reboot-needed", st["prepare"]
pk = d["prepare"]["kernel"]
assert pk["installed_now"] is False and pk["installed_version"].startswith("6.12"), pk
assert pk["next_kernel"].startswith("6.12.") and sys.argv[2].startswith("6.1."), (pk, sys.argv[2])
assert d["journal"]["boots"] == 1, d["journal"]
PY
	block RESUME-1 "$dir/firstboot.log" >"$dir/resume-1"
	block RESUME-2 "$dir/firstboot.log" >"$dir/resume-2"
	block UNIT "$dir/firstboot.log" >"$dir/resume-unit"
	check "boot 1: the resume unit armed (wants link, enabled)" grep -qx enabled "$dir/resume-1"
	check "boot 2 came up through GRUB (the guest's grub.cfg) in the kernel gpuboot predicted" python3 - "$dir/status.json" "$k2" "$dir/console-2.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["prepare"]["kernel"]["next_kernel"] == sys.argv[2], (d["prepare"]["kernel"]["next_kernel"], sys.argv[2])
c = open(sys.argv[3], errors="replace").read()
# GRUB's own lines from the guest's grub.cfg (10_linux's echo), and the kernel line GRUB made
assert "Booting `" in c and "Loading Linux %s ..." % sys.argv[2] in c, "no GRUB boot of %s in the console" % sys.argv[2]
assert "Command line: BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=" % sys.argv[2] in c, "not GRUB's kernel line"
PY
	check "boot 2: the resume unit finished the run: exit 11, load ENODEV, no NVIDIA GPU, both boots in the journal" \
		python3 - "$dir/status-boot2.json" "$k2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 11, (d["command"], d["exit_code"], d.get("result"))
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "ENODEV" and "no NVIDIA GPU the driver can drive" in st["load"]["error"], st["load"]
assert d["plan"]["kernel"]["action"] == "none", d["plan"]["kernel"]
assert d["facts"]["kernel"]["release"] == sys.argv[2], d["facts"]["kernel"]
assert d["journal"]["boots"] == 2, d["journal"]
PY
	check "the resume unit runs gpuboot run --resume" grep -q '^ExecStart=/usr/local/bin/gpuboot run --resume' "$dir/resume-unit"
	block JOURNAL-2 "$dir/firstboot.log" >"$dir/journal-2"
	check "boot 2: the resumed run disarmed the resume unit (journaled), none of it left" sh -c "
		grep -qx 'systemctl:disable:gpuboot-resume.service done None' '$dir/journal-2' &&
		grep -qx 'unlink:etc/systemd/system/gpuboot-resume.service done None' '$dir/journal-2' &&
		! grep -qx gpuboot-resume.service '$dir/resume-2' &&
		grep -q 'Failed to get unit file state for gpuboot-resume.service: No such file' '$dir/resume-2'"
	check "boot 2: the journal is the run's, resumed: boot 1's reboot step and 2 boots" sh -c "
		grep -q '^run failed 2 ' '$dir/journal-2' && grep -qx 'reboot:kernel done None' '$dir/journal-2'"
}

# The kernel update gate (vm-tests/userdata/kernel-hold.yaml): 6.12 without
# its module and headers, its package configured again; gpuboot's hook holds
# GRUB's default on 6.1, and the second boot, through GRUB, comes up there.
checks_hold() {
	awk '/^VMTEST-BEGIN boot=2/{on=1} on{print}' "$r" >"$dir/boot2.log"
	section FIRSTBOOT "$dir/boot2.log" >"$dir/firstboot.log"
	for b in HOOKSTATUS GRUBCFG NEXT-0 NEXT-1 HOLD-2 RECONFIGURE; do block "$b" "$dir/firstboot.log" >"$dir/$b"; done
	k=$(block KERNEL "$dir/firstboot.log")
	k1=$(block UNAME-1 "$dir/firstboot.log")
	k2=$(block UNAME-2 "$dir/firstboot.log")
	check "Debian's update-grub wrote the guest's grub.cfg; dkms remove and dpkg-reconfigure of 6.12's package exited 0" sh -c "
		grep -qx 'update-grub exited 0' '$dir/firstboot.log' && grep -qx 'dkms remove exited 0' '$dir/firstboot.log' &&
		grep -qx 'dpkg-reconfigure exited 0' '$dir/firstboot.log'"
	check "before: --check-next-boot names 6.12 ($k, GRUB's default: the newest) ready, exit 0" sh -c "
		[ -n '$k' ] && grep -qF '$k' '$dir/NEXT-0' && grep -qx 'exit 0' '$dir/NEXT-0'"
	check "the real postinst ran the hooks: gpuboot's repair exit 14 (cannot), the default held on $k1 with update-grub" \
		python3 - "$dir/HOOKSTATUS" "$k" "$k1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "repair" and d["exit_code"] == 14, (d["command"], d["exit_code"])
b = d["install"]["boot_default"]
assert b["held"] is True and b["changed"] is True and b["keep"] == sys.argv[3], b
assert b["entry"].startswith("gnulinux-advanced-") and (">gnulinux-%s-advanced-" % sys.argv[3]) in b["entry"], b
assert "%s has no NVIDIA module" % sys.argv[2] in b["reason"], b
assert d["install"]["after"]["verdict"] == "cannot", d["install"]["after"]
PY
	check "grub.cfg (made again by Debian's zz-update-grub after gpuboot's hook) defaults to $k1's entry" \
		grep -q "set default=\"gnulinux-advanced-.*>gnulinux-$k1-advanced-" "$dir/GRUBCFG"
	check "after: --check-next-boot names $k1 ready, exit 0" sh -c "
		grep -qF '$k1' '$dir/NEXT-1' && grep -qx 'exit 0' '$dir/NEXT-1'"
	check "boot 2 came up through GRUB (the guest's grub.cfg) on $k1, not $k" python3 - "$k1" "$k2" "$dir/console-2.log" <<'PY'
import sys
assert sys.argv[1] and sys.argv[2] == sys.argv[1], (sys.argv[1], sys.argv[2])
c = open(sys.argv[3], errors="replace").read()
assert "Loading Linux %s ..." % sys.argv[1] in c, "no GRUB boot of %s in the console" % sys.argv[1]
PY
	check "boot 2: the hold is still in place" grep -q "^GRUB_DEFAULT='gnulinux-advanced-.*>gnulinux-$k1-advanced-" "$dir/HOLD-2"
}

# The hook's build prevented, the module built at boot: boot 1 (6.1) removes
# the module DKMS built for 6.12 at image time and runs gpuboot's kernel hook
# for 6.12 with its headers moved aside (it cannot build: the marker, exit
# 0), then puts the headers back; boot 2 goes through GRUB into 6.12, where
# gpuboot-repair.service runs the real DKMS build and loads the module
# (ENODEV: no GPU). Slow under TCG: make vm-test-slow.
checks_rebuild() {
	awk '/^VMTEST-BEGIN boot=2/{on=1} on{print}' "$r" >"$dir/boot2.log"
	section FIRSTBOOT "$dir/boot2.log" >"$dir/firstboot.log"
	block HOOK "$dir/firstboot.log" >"$dir/hook-status.json"
	block BOOTSTATUS-2 "$dir/firstboot.log" >"$dir/boot-status.json"
	k1=$(block UNAME-1 "$dir/firstboot.log")
	k2=$(block UNAME-2 "$dir/firstboot.log")
	check "Debian's update-grub wrote the guest's grub.cfg" grep -q "update-grub exited 0" "$dir/firstboot.log"
	check "boot 1 ran 6.1, boot 2 bookworm-backports' 6.12 (through GRUB)" sh -c "
		case '$k1' in 6.1.*) ;; *) exit 1 ;; esac; case '$k2' in 6.12.*) ;; *) exit 1 ;; esac
		grep -q 'Loading Linux $k2 ...' '$dir/console-2.log'"
	for b in MODULES-1 MODULES-2 MARKERS-1 MARKERS-2 UNIT-2 REPAIRJOURNAL-2; do
		block "$b" "$dir/firstboot.log" >"$dir/$b"
	done
	check "boot 1: the module DKMS built for 6.12 at image time removed (dkms remove)" sh -c "
		grep -q 'dkms remove exited 0' '$dir/firstboot.log' && ! grep -q '/$k2/' '$dir/MODULES-1'"
	check "boot 1: the hook could not build (no headers): exit 0, the repair-needed marker, the cause and the package named" \
		python3 - "$dir/hook-status.json" "$k2" "$dir/firstboot.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = sys.argv[2]
assert d["command"] == "repair" and d["exit_code"] == 14, (d["command"], d["exit_code"])
r = d["install"]
assert r["before"]["kernel"] == k and r["before"]["verdict"] == "cannot" and not r["built"], r["before"]
assert r["before"]["headers_package"] == "linux-headers-" + k, r["before"]
log = open(sys.argv[3]).read()
assert "hook exited 0" in log, "the hook must exit 0"
assert "kernel=%s\nexit=14" % k in log, "no repair-needed marker with exit=14"
assert "gpuboot-repair.service retries at boot" in log, "the hook did not say the unit retries"
PY
	check "boot 1: the marker is there before the reboot" grep -qx "repair-needed-$k2" "$dir/MARKERS-1"
	check "boot 2: gpuboot-repair.service built the module with DKMS at boot, loaded it: ENODEV, exit 11, marker removed" \
		python3 - "$dir/boot-status.json" "$k2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = sys.argv[2]
assert d["command"] == "repair" and d["exit_code"] == 11, (d["command"], d["exit_code"], d.get("result"))
r = d["install"]
assert r["before"]["kernel"] == k and r["before"]["verdict"] == "build" and r["before"]["marker"], r["before"]
assert r["built"] and r["marker_removed"] and r["build_timeout_min"] == 150, r
assert r["after"]["module"] and r["after"]["module_version"] == "535.309.01", r["after"]
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "ENODEV" and "no NVIDIA GPU the driver can drive" in st["load"]["error"], st["load"]
PY
	check "boot 2: the repair's journal holds the DKMS build, done" grep -q "^dkms:install:nvidia-current/535.309.01:$k2 done " "$dir/REPAIRJOURNAL-2"
	check "boot 2: no marker left, the module for 6.12 on disk" sh -c "
		[ ! -s '$dir/MARKERS-2' ] && grep -q '^/lib/modules/$k2/updates/dkms/nvidia-current.ko' '$dir/MODULES-2'"
	check "boot 2: the unit's own result: gpuboot exited 11 (no GPU)" grep -qx ExecMainStatus=11 "$dir/UNIT-2"
}

# The pasted example, exit 3: cloud-init/gpuboot.yaml as released, with a
# site's two edits (GPUBOOT_PROFILE=minimal; [kernel] minimum = 6.12 in its
# gpuboot.conf) and the cloud's vendor-data (vm-tests/vendordata/
# example-reboot.yaml: the stand-in T4 on QEMU's PCI test device, GRUB's
# configuration). Boot 1 (6.1): the example verifies and runs gpuboot, which
# plans bookworm-backports' kernel, finds it installed, arms the resume unit
# and exits 3; the example itself runs `systemctl reboot` (the report of boot
# 1 never runs: the machine is going down). Boot 2 through GRUB into 6.12:
# gpuboot-resume.service finishes the run, the load ends in the kernel's
# ENODEV (the test device is no GPU), exit 11.
checks_example_reboot() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	section DETECT "$dir/boot1.log" >"$dir/detect.txt"
	section PLAN "$dir/boot1.log" >"$dir/plan.txt"
	block VMTEST-RESUME "$dir/firstboot.log" >"$dir/resume-unit"
	k2=$(block VMTEST-UNAME "$dir/firstboot.log")
	check "boot 1: the example verified the release binary's pasted sha256 and ran it" \
		grep -q "^gpuboot: gpuboot-x86_64 sha256 $(awk '$2 == "gpuboot-x86_64" {print $1}' "$REL/SHA256SUMS") verified" "$dir/firstboot.log"
	check "boot 1: detect saw the stand-in T4 (1eb8) on the test device" grep -q "^gpus: *0000:00:01.0 1eb8 Tesla T4" "$dir/detect.txt"
	check "boot 1: the plan took the site's edits: profile minimal, bookworm-backports' kernel for [kernel] minimum 6.12" sh -c "
		grep -q 'minimal' '$dir/plan.txt' && grep -q 'install-hwe' '$dir/plan.txt' && grep -q 'bookworm-backports' '$dir/plan.txt'"
	check "boot 1: gpuboot run exited 3, the example logged it and gpuboot status said reboot-needed" sh -c "
		grep -qx 'gpuboot run exited 3 (docs/exit-codes.md); gpuboot status says:' '$dir/firstboot.log' &&
		grep -q '^last run: *reboot-needed (exit 3)' '$dir/firstboot.log'"
	check "boot 1: the example rebooted the machine (exit 3)" \
		grep -qx "gpuboot: rebooting; gpuboot-resume.service finishes the run at the next boot" "$dir/firstboot.log"
	check "the example ran once: runcmd is per instance, the resume unit finished the job" \
		[ "$(grep -c '^gpuboot first boot: ' "$dir/firstboot.log")" -eq 1 ]
	check "boot 2 came up through GRUB (the guest's grub.cfg) in bookworm-backports' 6.12" sh -c "
		case '$k2' in 6.12.*) ;; *) exit 1 ;; esac
		grep -q 'Loading Linux $k2 ...' '$dir/console-2.log'"
	check "boot 2: gpuboot-resume.service finished the run: exit 11, the load's ENODEV, the stand-in T4, 6.12, 2 boots" \
		python3 - "$dir/status.json" "$k2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 11, (d["command"], d["exit_code"], d.get("result"))
st = {s["name"]: s for s in d["stages"]}
assert st["load"]["errno"] == "ENODEV" and "no NVIDIA GPU the driver can drive" in st["load"]["error"], st["load"]
assert d["facts"]["kernel"]["release"] == sys.argv[2], d["facts"]["kernel"]
assert [(g["device_id"], g["subsystem_id"]) for g in d["facts"]["gpus"]] == [("1eb8", "10de:12a2")], d["facts"]["gpus"]
assert d["plan"]["kernel"]["action"] == "none", d["plan"]["kernel"]
assert d["journal"]["boots"] == 2, d["journal"]
assert not d["ready"]["verified"] and not d["ready"]["driver_ready"], d["ready"]
PY
	check "boot 2: the resume unit's own result is gpuboot's exit 11, and it disarmed itself" sh -c "
		grep -qx ExecMainStatus=11 '$dir/resume-unit' && ! grep -qx enabled '$dir/resume-unit'"
}

# The image whose module came from the site mirror (#25), at its first
# boot: kept, offered to the kernel as it is (no DKMS, no compiler, no
# headers on the machine); under Secure Boot with the site module
# certificate in db, accepted (ENODEV, not EKEYREJECTED) with no key on
# the node.
checks_prebuilt() {
	section FIRSTBOOT "$dir/boot1.log" >"$dir/firstboot.log"
	block PACKAGES "$dir/firstboot.log" >"$dir/packages"
	block MODULE "$dir/firstboot.log" >"$dir/module"
	block KERNEL "$dir/firstboot.log" >"$dir/kernel-lines"
	sb=${prebuilt_sb:-no}
	check "gpuboot run: exit 11, the installed driver kept, the load refused only for want of a GPU (ENODEV)" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "run" and d["exit_code"] == 11, (d["command"], d["exit_code"], d["result"])
st = {s["name"]: s for s in d["stages"]}
assert d["plan"]["driver"]["action"] == "keep", d["plan"]["driver"]
i = d["plan"]["driver"]["installed"]
assert i["version"] == "535.309.01" and i["module_for_kernel"] and not i["loaded"], i
assert st["prepare"]["result"] == st["fetch"]["result"] == st["install"]["result"] == "skipped", st
assert st["load"]["result"] == "failed" and st["load"]["errno"] == "ENODEV", st["load"]
assert "No NVIDIA GPU found" in json.dumps(d["load"]), d["load"]
PY
	check "the module is the mirror package's: updates/gpuboot, 535.309.01, the running kernel's vermagic" sh -c "
		grep -q '^filename: /lib/modules/.*/updates/gpuboot/nvidia-current.ko$' '$dir/module' &&
		grep -qx 'version: 535.309.01' '$dir/module' && grep -q '^vermagic: 6\.1\.' '$dir/module'"
	check "it is signed by the site's module key (modinfo signer), signed on the build host" \
		grep -qx 'signer: gpuboot vm-test prebuilt site key' "$dir/module"
	check "the mirror's package is installed; no DKMS, no compiler, no kernel headers" sh -c "
		grep -q '^gpuboot-nvidia-modules-6\.1\.' '$dir/packages' && [ \$(grep -vc '^gpuboot-nvidia-modules-' '$dir/packages') -eq 0 ]"
	check "the kernel found no GPU (NVRM's line)" grep -q "NVRM: No NVIDIA GPU found" "$dir/kernel-lines"
	if [ "$sb" = yes ]; then
		check "Secure Boot: the kernel loaded the site module certificate from db" \
			grep -q "integrity: Loaded X.509 cert 'gpuboot vm-test prebuilt site key" "$dir/kernel-lines"
		check "Secure Boot: the plan keeps the module as signed (modules-signed, its signer in /proc/keys), no key on the node" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["facts"]["secure_boot"]["enabled"] is True, d["facts"]["secure_boot"]
p = d["plan"]["secure_boot"]
assert p["strategy"] == "modules-signed" and "'gpuboot vm-test prebuilt site key', whose certificate the kernel trusts" in p["reason"], p
assert not (d.get("load") or {}).get("signing"), d["load"].get("signing")
PY
		check "Secure Boot: the kernel accepted the signature (no 'Loading of module with unavailable key')" \
			sh -c "! grep -q 'Loading of' '$dir/kernel-lines'"
	else
		check "no Secure Boot: nothing to sign or check" python3 - "$dir/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["plan"]["secure_boot"]["strategy"] == "not-needed", d["plan"]["secure_boot"]
PY
	fi
}

run_one() {
	scenario "$@"
	# dash keeps a function's prefix assignments: the next scenario sets its own.
	cloud_init_status= vendor= site_edits= qemu_extra= reports=
}

# report NAME: the scenario's verdict, from its failures file (none: it never
# finished, which is a failure too).
report() {
	if [ ! -f "$LOGS/$1/failures" ] || [ -s "$LOGS/$1/failures" ]; then
		echo "FAIL  vm/$1 ($(cat "$LOGS/$1/timing" 2>/dev/null))"
		cat "$LOGS/$1/failures" 2>/dev/null
		echo "      console (last 40 lines):"
		tail -n 40 "$LOGS/$1/console.log" 2>/dev/null | sed 's/^/      | /'
	else
		echo "PASS  vm/$1 ($(cat "$LOGS/$1/timing"))"
	fi
}

# The default list, in the order the lanes take it: the scenario whose image
# takes longest to build first (the bookworm-nvidia image: gpuboot's install
# with DKMS, then bookworm-backports' kernel), the guests of the other images
# beside it, then the rest longest first.
want=${*:-"bookworm-nvidia-hold bookworm-cloud-config bookworm-shell trixie-cloud-config bookworm-nouveau bookworm-cloud-config-reboot bookworm-nvidia-reboot bookworm-nvidia-secureboot-db bookworm-nvidia-secureboot bookworm-nvidia-upgrade bookworm-nvidia-firstboot bookworm-nvidia-image-unit-secureboot bookworm-nvidia-image-unit"}
dispatch() {
	s=$1
	case $s in
	bookworm-cloud-config) append= firmware= boot= kernel= cloud_init_status=error checks=checks_example run_one "$s" bookworm gpuboot.yaml 2 ;;
	bookworm-shell) append= firmware= boot= kernel= cloud_init_status=error checks=checks_example run_one "$s" bookworm gpuboot.sh 1 ;;
	trixie-cloud-config) append= firmware= boot= kernel= cloud_init_status=error checks=checks_example run_one "$s" trixie gpuboot.yaml 2 ;;
	bookworm-nvidia-firstboot) append= firmware= boot= kernel= checks=checks_firstboot_load run_one "$s" bookworm-nvidia firstboot-load.yaml 1 ;;
	bookworm-nouveau) append= firmware= boot= kernel= checks=checks_nouveau run_one "$s" bookworm-plymouth nouveau.yaml 1 ;;
	bookworm-nvidia-upgrade) append= firmware= boot= kernel=next checks=checks_upgrade run_one "$s" bookworm-nvidia kernel-upgrade.yaml 1 ;;
	bookworm-nvidia-reboot) append= firmware= kernel= boot=grub checks=checks_reboot run_one "$s" bookworm-nvidia kernel-reboot.yaml 2 ;;
	bookworm-cloud-config-reboot)
		firmware= kernel= boot=grub append= vendor=example-reboot.yaml site_edits=site-edits/example-reboot.json \
			qemu_extra="-device pci-testdev" reports=1 checks=checks_example_reboot \
			run_one "$s" bookworm-nvidia gpuboot.yaml 2 ;;
	bookworm-nvidia-hold) append= firmware= kernel= boot=grub checks=checks_hold run_one "$s" bookworm-nvidia kernel-hold.yaml 2 ;;
	bookworm-nvidia-rebuild)
		vm_timeout=${GPUBOOT_VM_SLOW_TIMEOUT:-7200} append= firmware= kernel= boot=grub checks=checks_rebuild \
			run_one "$s" bookworm-nvidia kernel-rebuild.yaml 2 ;;
	bookworm-nvidia-secureboot)
		append= firmware=secboot boot= kernel= checks=checks_secureboot run_one "$s" bookworm-nvidia secureboot.yaml 1 ;;
	bookworm-nvidia-secureboot-db)
		append= firmware=secboot-db boot= kernel= checks=checks_secureboot_db run_one "$s" bookworm-nvidia secureboot-db.yaml 1 ;;
	bookworm-nvidia-image-unit)
		firmware= boot= kernel= append=vmtest.image_pending image_unit_sb=no checks=checks_image_unit \
			run_one "$s" bookworm-nvidia no-user-data.yaml 1 ;;
	bookworm-nvidia-image-unit-secureboot)
		firmware=secboot boot= kernel= append=vmtest.image_pending image_unit_sb=yes checks=checks_image_unit \
			run_one "$s" bookworm-nvidia no-user-data.yaml 1 ;;
	bookworm-prebuilt-firstboot)
		append= firmware= boot= kernel= prebuilt_sb=no checks=checks_prebuilt run_one "$s" bookworm-prebuilt prebuilt.yaml 1 ;;
	bookworm-prebuilt-secureboot-db)
		append= firmware=secboot-prebuilt boot= kernel= prebuilt_sb=yes checks=checks_prebuilt \
			run_one "$s" bookworm-prebuilt prebuilt.yaml 1 ;;
	*) return 1 ;;
	esac
}
known="bookworm-cloud-config bookworm-shell trixie-cloud-config bookworm-nvidia-firstboot bookworm-nouveau bookworm-nvidia-upgrade bookworm-nvidia-reboot bookworm-cloud-config-reboot bookworm-nvidia-hold bookworm-nvidia-rebuild bookworm-nvidia-secureboot bookworm-nvidia-secureboot-db bookworm-nvidia-image-unit bookworm-nvidia-image-unit-secureboot bookworm-prebuilt-firstboot bookworm-prebuilt-secureboot-db"
queue=""
for s in $want; do
	case " $known " in
	*" $s "*) queue="$queue $s" ;;
	*) echo "unknown scenario $s"; fail=$((fail + 1)) failed="$failed $s" ;;
	esac
done
# JOBS lanes (GPUBOOT_VM_JOBS) take the scenarios from one queue, each claimed
# with mkdir (atomic). Each scenario has its own directory, overlay disk,
# firmware variables and seed; the shared parts are made once under a lock:
# the images (build-image.sh), GRUB's image, the Secure Boot keys. A verdict
# is printed as its scenario ends, and all of them again in the queue's order.
mkdir -p "$LOGS/.claims"
lane() {
	for s in $queue; do
		mkdir "$LOGS/.claims/$s" 2>/dev/null || continue
		(dispatch "$s") >"$LOGS/.claims/$s/out" 2>&1
		{
			flock 7
			report "$s"
		} 7>"$LOGS/.print.lock"
	done
}
echo "vm-tests: $(echo $queue | wc -w) scenario(s), $JOBS at a time"
i=0
while [ "$i" -lt "$JOBS" ]; do
	lane &
	i=$((i + 1))
done
wait
echo
echo "summary:"
for s in $queue; do
	if [ -f "$LOGS/$s/failures" ] && [ ! -s "$LOGS/$s/failures" ]; then
		pass=$((pass + 1))
		echo "PASS  vm/$s ($(cat "$LOGS/$s/timing"))"
	else
		fail=$((fail + 1))
		failed="$failed $s"
		echo "FAIL  vm/$s"
	fi
done
echo
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
# A tier that ran nothing did not pass.
[ $((pass + fail)) -gt 0 ] || { echo "no scenario ran"; exit 1; }
[ "$fail" -eq 0 ]
