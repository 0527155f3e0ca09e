# The whole first boot in one process, through verify, never --no-verify:
# a bare machine (no NVIDIA driver; nouveau bound where the capture had it)
# goes to exit 0 with the ready flags, a status that says verified and a
# journal that says done; a second run changes nothing and exits 0. Each
# row has failure twins that end in their documented exit code with the
# cause named and no ready flag.
#
# The simulated stack (src/shared/fake-kernel.c, src/shared/fake-apt.c,
# tests/make-driver-tree, tests/fake-nvidia): the runfile's installer (fake
# operations, installs:) leaves the modules (ELF with .modinfo) and the
# userspace in the real layout; for the distro method, the fake apt and dpkg
# install Debian's package names from an archive in its layout (the module
# where DKMS puts it, the libraries where Debian does) and answer dpkg-query
# from var/lib/dpkg/status; the fake kernel's insert of nvidia reads the module file and
# leaves what the real module leaves (proc/driver/nvidia/version, the GPUs'
# information, sys/module/nvidia/version, the driver links); the fake NVML
# is the installed libnvidia-ml.so.<version> and reports that version.
. tests/integration/lib.sh
FAKE=$PWD/build/fake-nvidia
[ -f "$FAKE/libcuda.so.1" ] || fail "fake libraries missing (make fake-nvidia)"
command -v openssl >/dev/null || skip "openssl missing (make deps)"
command -v objcopy >/dev/null || skip "objcopy missing (binutils; make deps)"
. tests/integration/lib-tls.sh
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" >/dev/null
# NVIDIA's apt repository's key where NVIDIA serves it, on loopback HTTPS
make_certs
mkdir -p "$TMP/nvmirror/compute/cuda/repos/ubuntu2204/x86_64"
cp tests/data/test-repo-key/public.asc "$TMP/nvmirror/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub"
start_server "$TMP/nvmirror"
VER=$(bundle_driver "$B")
# Debian 12's own driver (the distro method), at its archive version
DEB_DRV=535.309.01 DVER=535.309.01-1~deb12u1
MTH=runfile DRV=$VER
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"

# bare NAME FIXTURE LIBDIR: the capture, with the running kernel's headers
# where the headers package puts them (lib/modules/R/build -> /usr/src/...)
# when the capture has none, and the driver's tree for the installer.
bare() {
	M=$TMP/$1
	rm -rf "$M"
	cp -a "$FIX/$2" "$M"
	R=$(cat "$M/proc/sys/kernel/osrelease")
	if [ ! -L "$M/lib/modules/$R/build" ]; then
		mkdir -p "$M/lib/modules/$R" "$M/usr/src/linux-headers-$R"
		ln -s "/usr/src/linux-headers-$R" "$M/lib/modules/$R/build"
		echo 'VERSION = 6' >"$M/usr/src/linux-headers-$R/Makefile"
	fi
	TREE=$TMP/$1.tree
	rm -rf "$TREE"
	tests/make-driver-tree "$TREE" "$DRV" proprietary "$R" "$3"
}

# debian_archive NAME: the Debian 12 machine as its cloud image has it (the
# archive's deb822 sources, the running kernel's package in dpkg's
# database) and an archive of Debian's NVIDIA packages at $DVER, each
# package's tree where Debian puts it (DKMS's module under updates/dkms as
# nvidia-current*.ko, the libraries in nvidia/current)
debian_archive() {
	mkdir -p "$M/etc/apt/sources.list.d" "$M/var/lib/dpkg" "$M/boot"
	printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://security.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		>"$M/etc/apt/sources.list.d/debian.sources"
	printf 'Package: linux-image-%s\nStatus: install ok installed\nVersion: 6.1.76-1\n\nPackage: linux-image-cloud-amd64\nStatus: install ok installed\nVersion: 6.1.76-1\n\n' \
		"$R" >>"$M/var/lib/dpkg/status"
	: >"$M/boot/vmlinuz-$R"
	A=$TMP/$1.archive L=usr/lib/x86_64-linux-gnu/nvidia/current
	rm -rf "$A" "$TMP/$1.dt"
	tests/make-driver-tree "$TMP/$1.dt" "$DRV" proprietary "$R" "$L"
	mkdir -p "$A/nvidia-kernel-dkms/lib/modules/$R/updates/dkms" "$A/libnvidia-ml1/$L" "$A/libcuda1/$L" "$A/nvidia-smi/usr/bin"
	for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm; do
		mv "$TMP/$1.dt/lib/modules/$R/kernel/drivers/video/$m.ko" \
			"$A/nvidia-kernel-dkms/lib/modules/$R/updates/dkms/$(echo "$m" | sed 's/^nvidia/nvidia-current/').ko"
	done
	mv "$TMP/$1.dt/$L"/libnvidia-ml* "$A/libnvidia-ml1/$L/"
	mv "$TMP/$1.dt/$L"/libcuda* "$A/libcuda1/$L/"
	mv "$TMP/$1.dt/usr/bin/nvidia-smi" "$A/nvidia-smi/usr/bin/"
	{
		for p in nvidia-kernel-dkms firmware-nvidia-gsp nvidia-smi libnvidia-ml1 libcuda1 nvidia-persistenced; do
			printf 'Package: %s\nVersion: %s\n\n' "$p" "$DVER"
		done
		printf 'Package: linux-headers-%s\nVersion: 6.1.76-1\n\nPackage: linux-headers-cloud-amd64\nVersion: 6.1.76-1\n\n' "$R"
	} >"$A/Packages"
}

# nvidia_apt_archive NAME: Ubuntu 22.04 as its GCP image has it (the kernel's
# packages in dpkg's database), NVIDIA's apt repository in its layout for
# the packages method: its key where NVIDIA serves it, on the loopback HTTPS
# mirror (the tests' own key: its fingerprint is pinned in the test build
# only), and the plan's packages (nvidia-driver-pinning-580, cuda-drivers
# with the module where DKMS puts it and the userspace)
nvidia_apt_archive() {
	mkdir -p "$M/var/lib/dpkg" "$M/boot"
	printf 'Package: linux-image-%s\nStatus: install ok installed\nVersion: 6.5.0-1020.20~22.04.1\n\nPackage: linux-image-gcp\nStatus: install ok installed\nVersion: 6.5.0.1020.20~22.04.1\n\n' \
		"$R" >>"$M/var/lib/dpkg/status"
	: >"$M/boot/vmlinuz-$R"
	A=$TMP/$1.archive
	rm -rf "$A"
	mkdir -p "$A"
	tests/make-driver-tree "$A/cuda-drivers" "$DRV" proprietary "$R" usr/lib/x86_64-linux-gnu
	mkdir -p "$A/cuda-drivers/lib/modules/$R/updates/dkms"
	mv "$A/cuda-drivers/lib/modules/$R/kernel/drivers/video/"*.ko "$A/cuda-drivers/lib/modules/$R/updates/dkms/"
	rm -rf "$A/cuda-drivers/lib/modules/$R/kernel"
	printf 'Package: nvidia-driver-pinning-580\nVersion: %s-1\n\nPackage: cuda-drivers\nVersion: %s-0ubuntu1\n\n' "$DRV" "$DRV" >"$A/Packages"
	printf 'Package: linux-headers-%s\nVersion: 6.5.0-1020.20~22.04.1\n\nPackage: linux-headers-gcp\nVersion: 6.5.0.1020.20~22.04.1\n\n' "$R" >>"$A/Packages"
}

# fake_spec: the fake operations of the method's installer
fake_spec() {
	case $MTH in
	runfile) echo "installs:nvidia-installer:0:$TREE" ;;
	distro | packages) echo "apt=$A" ;;
	esac
}

# mirror_args: where the method's artifacts come from (the signed bundle;
# for NVIDIA's repository, the loopback HTTPS mirror in its layout)
mirror_args() {
	case $MTH in
	packages) echo "--mirror https://127.0.0.1:$PORT/ --ca-file $TMP/ca.pem" ;;
	*) echo "--mirror file://$B/mirror --trust-key $B/key.pub" ;;
	esac
}

# gb_run EXIT LIBDIR [FAKE-RULES]: gpuboot run on $M, live, method $MTH
gb_run() {
	want=$1 lib=$2 n=${FAKE_NV_GPUS:-1}
	shift 2
	rules=${1:-}
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,$(fake_spec)${rules:+,$rules}" \
		FAKE_NV_GPUS=$n LD_LIBRARY_PATH=$M/$lib expect_exit "$want" "$GB" --root "$M" run --profile minimal --method "$MTH" \
		--config "$TMP/always.conf" $(mirror_args) --state-dir "$M.state" --run-dir "$M.state/run" --tier passive
}

# first_boot NAME FIXTURE LIBDIR: bare to exit 0, then a run that changes nothing
first_boot() {
	bare "$1" "$2" "$3"
	[ "$MTH" = distro ] && debian_archive "$1"
	[ "$MTH" = packages ] && nvidia_apt_archive "$1"
	# the dry run says what the real run then does, and stops nowhere
	# shellcheck disable=SC2046
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops" expect_exit 0 "$GB" --root "$M" run --dry-run --profile minimal \
		--method "$MTH" --config "$TMP/always.conf" $(mirror_args) --state-dir "$M.state" --tier passive
	! grep -q "not implemented" "$TMP/out" || fail "$1: the dry run: $(tail -8 "$TMP/out")"
	flavor=$(sed -n "s/^  install: install driver $DRV (\([a-z]*\) module) with the $MTH method.*/\1/p" "$TMP/out")
	[ -n "$flavor" ] && grep -q "^  load: nvidia nvidia_uvm" "$TMP/out" && grep -q "^  verify: tier passive" "$TMP/out" ||
		fail "$1: the dry run: $(sed -n '/dry run/,$p' "$TMP/out")"
	if [ "$MTH" = runfile ]; then
		rm -rf "$TREE" && tests/make-driver-tree "$TREE" "$DRV" "$flavor" "$R" "$3"
		grep -q "^  fetch: the driver runfile" "$TMP/out" || fail "$1: the dry run fetches no runfile"
	fi
	[ ! -e "$M.ops" ] && [ ! -e "$M.state" ] || fail "$1: the dry run did something"
	gb_run 0 "$3"
	python3 - "$M.state" "$DRV" "$MTH" <<'PY' || fail "$1: the first boot's status: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1] + "/status.json")); ver = sys.argv[2]
st = {s["name"]: s["result"] for s in d["stages"]}
assert d["result"] == "ok" and d["exit_code"] == 0, (d["result"], d["exit_code"])
fetch = "ok" if sys.argv[3] == "runfile" else "skipped"  # the package methods install from their archives
assert st == {"detect": "ok", "plan": "ok", "prepare": "ok", "fetch": fetch, "install": "ok", "load": "ok",
              "verify": "ok"}, st
assert d["ready"]["verified"] and d["ready"]["driver_ready"], d["ready"]
assert d["journal"]["state"] == "done", d["journal"]
# the facts before (no driver) and after the load (the plan's, bound)
assert not d["facts"]["nvidia"].get("loaded_version"), d["facts"]["nvidia"]
after = d["facts_after_load"]
assert after["nvidia"]["loaded_version"] == ver, after["nvidia"]
assert all(g["bound_driver"] == "nvidia" for g in after["gpus"]), after["gpus"]
checks = {c["name"]: c for c in d["checks"]}
for name in ("driver.loaded", "driver.planned_version", "driver.userspace", "driver.version_match", "gpu.count",
             "driver.device_nodes"):
    assert checks[name]["result"] == "pass", checks[name]
PY
	[ -f "$M.state/run/verified-ready" ] && [ -f "$M.state/run/driver-ready" ] || fail "$1: ready flags missing"
	rm -f "$M.ops"
	gb_run 0 "$3"
	[ ! -s "$M.ops" ] || fail "$1: the second run changed something: $(cat "$M.ops")"
	grep -q "^driver do    keep" "$TMP/out" || fail "$1: the second run does not keep the driver: $(head -5 "$TMP/out")"
	[ -f "$M.state/run/verified-ready" ] || fail "$1: the second run withdrew the flags"
	echo "row $1: bare to exit 0, then a run with no effect"
}

# no_flags NAME: a failed run leaves no ready flag
no_flags() {
	for f in driver-ready verified-ready; do
		[ ! -e "$M.state/run/$f" ] || fail "$1: $f written by a failed run"
	done
}

# twin_load NAME ERRNO KMSG EXIT CAUSE: the kernel refuses the module
twin_load() {
	bare "twin-$1" t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
	gb_run "$4" usr/lib/x86_64-linux-gnu "module:nvidia:$2,kmsg:nvidia:$PWD/tests/load/$3"
	python3 - "$M.state/status.json" "$5" "$4" <<'PY' || fail "twin $1: status: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert d["exit_code"] == int(sys.argv[3]), d["exit_code"]
assert st["load"]["result"] == "failed" and st["load"]["hint"], st["load"]
assert "verify" not in st, "verify ran after a failed load"
assert sys.argv[2] in json.dumps(d["load"]), d["load"]
PY
	no_flags "twin $1"
	echo "twin $1: exit $4, cause $5"
}

# twin_verify NAME SCENARIO CHECK TEXT [USERSPACE]: the load succeeds, verify fails (exit 15)
twin_verify() {
	bare "twin-$1" t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
	if [ -n "${5:-}" ]; then
		rm -rf "$TREE"
		USERSPACE_VERSION=$5 tests/make-driver-tree "$TREE" "$DRV" proprietary "$R" usr/lib/x86_64-linux-gnu
	fi
	FAKE_NV_SCENARIO=$2 FAKE_NV_KMSG=$M/dev/kmsg gb_run 15 usr/lib/x86_64-linux-gnu
	python3 - "$M.state/status.json" "$3" "$4" <<'PY' || fail "twin $1: status: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s["result"] for s in d["stages"]}
assert st["load"] == "ok" and st["verify"] == "failed", st
failed = [c for c in d["checks"] if c["result"] == "fail"]
assert sys.argv[2] in [c["name"] for c in failed], failed
hint = " ".join(c["hint"] for c in failed if c["name"] == sys.argv[2])
assert sys.argv[3] in hint, hint
assert not d["ready"]["verified"], d["ready"]
PY
	no_flags "twin $1"
	echo "twin $1: exit 15, $3 names '$4'"
}

# image_boot NAME FIXTURE LIBDIR: a Packer-style image install (--root IMG
# --target-gpu T4: installed, not loaded), then the image's first boot as a
# cloud boots it, with no user-data: the unit the image install enabled runs
# its own command on the image booted on a T4 instance.
image_boot() {
	bare "$1" "$2" "$3"
	[ "$MTH" = distro ] && debian_archive "$1"
	[ "$MTH" = packages ] && nvidia_apt_archive "$1"
	mkdir -p "$M/boot" && : >"$M/boot/vmlinuz-$R" # an image's installer builds for the kernels it holds
	# shellcheck disable=SC2046
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,$(fake_spec)" \
		expect_exit 0 "$GB" --root "$M" run --target-gpu T4 --profile minimal --method "$MTH" \
		--config "$TMP/always.conf" $(mirror_args) --state-dir "$M.state" --run-dir "$M.state/run"
	python3 - "$M.state/status.json" <<'PY' || fail "$1: the image build's status: $(head -c 2000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
# exit 0 for Packer, but never "ok": an unbooted image is no verified host
assert d["exit_code"] == 0 and d["result"] == "installed-pending-first-boot", (d["exit_code"], d["result"])
assert st["install"]["result"] == "ok" and st["verify"]["result"] == "skipped", st["verify"]
assert "gpuboot-firstboot.service" in st["verify"]["error"], st["verify"]
assert not d["ready"]["verified"]
PY
	unit=$M/etc/systemd/system/gpuboot-firstboot.service
	[ -f "$unit" ] && [ "$(readlink "$M/etc/systemd/system/multi-user.target.wants/gpuboot-firstboot.service")" = \
		/etc/systemd/system/gpuboot-firstboot.service ] || fail "$1: the first-boot unit is not enabled in the image"
	grep -q "^ExecStart=/usr/local/bin/gpuboot run --offline --profile minimal --method $MTH" "$unit" ||
		fail "$1: the unit: $(cat "$unit")"
	[ ! -e "$M.state/run/verified-ready" ] || fail "$1: an image build claims verified"
	[ -f "$M/var/lib/gpuboot/image-pending" ] || fail "$1: no image-pending marker for the unit's condition"
	# The build again (a Packer rerun): nothing changes, the unit included.
	# shellcheck disable=SC2046
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,$(fake_spec)" \
		expect_exit 0 "$GB" --root "$M" run --target-gpu T4 --profile minimal --method "$MTH" \
		--config "$TMP/always.conf" $(mirror_args) --state-dir "$M.state" --run-dir "$M.state/run"
	python3 -c "
import json; j = json.load(open('$M.state/journal.json'))
assert j['effects_this_run'] == 0, (j['effects_this_run'], [s for s in j['steps'] if s['kind'] != 'stage'])" ||
		fail "$1: the image build's rerun changed something"
	grep -q '^ConditionPathExists=/var/lib/gpuboot/image-pending$' "$unit" &&
		grep -q '^Environment=GPUBOOT_FIRST_BOOT_UNIT=1$' "$unit" || fail "$1: the unit: $(cat "$unit")"
	cmd=$(sed -n 's|^ExecStart=/usr/local/bin/gpuboot ||p' "$unit")
	# Booted where there is no GPU (a build's test boot): the honest no-GPU
	# answer, and the marker stays for the boot that has one.
	rm -rf "$M.nogpu" "$M.nogpu.state" && cp -a "$M" "$M.nogpu" && cp -a "$M.state" "$M.nogpu.state"
	for d in "$M.nogpu"/sys/bus/pci/devices/*; do
		grep -q 0x10de "$d/vendor" && rm -rf "$d"
	done
	# shellcheck disable=SC2086
	GPUBOOT_FIRST_BOOT_UNIT=1 GPUBOOT_FAKE_OPS="root=$M.nogpu" expect_exit 11 "$GB" --root "$M.nogpu" $cmd \
		--state-dir "$M.nogpu.state" --run-dir "$M.nogpu.state/run"
	[ -f "$M.nogpu/var/lib/gpuboot/image-pending" ] || fail "$1: a no-GPU boot consumed the image's first boot"
	# The first boot: the unit's command on the booted image.
	rm -f "$M.ops"
	# shellcheck disable=SC2086
	GPUBOOT_FIRST_BOOT_UNIT=1 GPUBOOT_FAKE_OPS="root=$M,record=$M.ops" FAKE_NV_GPUS=1 LD_LIBRARY_PATH=$M/$3 \
		expect_exit 0 "$GB" --root "$M" $cmd --state-dir "$M.state" --run-dir "$M.state/run" --tier passive
	[ ! -e "$M/var/lib/gpuboot/image-pending" ] || fail "$1: the marker outlived the image's first boot"
	python3 - "$M.state/status.json" "$DRV" <<'PY' || fail "$1: the first boot's status: $(head -c 2000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s["result"] for s in d["stages"]}
assert d["result"] == "ok" and d["exit_code"] == 0 and d["ready"]["verified"], (d["result"], d["ready"])
assert d["plan"]["driver"]["action"] == "keep" and st["install"] == "skipped" and st["fetch"] == "skipped", st
assert st["load"] == "ok" and st["verify"] == "ok", st
assert d["facts_after_load"]["nvidia"]["loaded_version"] == sys.argv[2]
PY
	! grep -q '^run .*\(apt-get\|nvidia-installer\|apt-mark\)' "$M.ops" ||
		fail "$1: the first boot installed: $(grep '^run ' "$M.ops")"
	grep -q '^module_load nvidia ' "$M.ops" || fail "$1: the first boot loaded nothing"
	[ -f "$M.state/run/verified-ready" ] || fail "$1: no verified flag after the first boot"
	echo "row $1: image built (pending its first boot), first boot by its own unit to exit 0"
}

first_boot ubuntu-runfile t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
# nouveau was unloaded by prepare and its binding went with it
[ ! -e "$TMP/ubuntu-runfile/sys/module/nouveau" ] || fail "nouveau still loaded"
FAKE_NV_GPUS=4 first_boot rhel-runfile a100-rhel9 usr/lib64
image_boot ubuntu-runfile-image t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
# NVIDIA's apt repository (the packages method) on Ubuntu 22.04
MTH=packages first_boot ubuntu-packages t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
MTH=packages image_boot ubuntu-packages-image t4-nouveau-ubuntu2204 usr/lib/x86_64-linux-gnu
# Debian 12's own driver (the distro method, DKMS), live and as the Packer example builds it
MTH=distro DRV=$DEB_DRV first_boot debian-distro l4-debian12 usr/lib/x86_64-linux-gnu/nvidia/current
MTH=distro DRV=$DEB_DRV image_boot debian-distro-image l4-debian12 usr/lib/x86_64-linux-gnu/nvidia/current

# A first boot whose dpkg was killed half-way (the OOM killer, power, a
# Packer timeout): apt-get install ends by a signal's exit, leaving what a
# killed dpkg leaves: its journal in var/lib/dpkg/updates/ and the module's
# package half-configured (its DKMS build cut). apt refuses everything
# then ("dpkg was interrupted"); the next run repairs dpkg its own way
# first (dpkg --configure -a, journaled, said in the status), then converges.
killed_dpkg() {
	MTH=distro DRV=$DEB_DRV
	bare debian-distro-killed-dpkg l4-debian12 usr/lib/x86_64-linux-gnu/nvidia/current
	debian_archive debian-distro-killed-dpkg
	gb_run 1 usr/lib/x86_64-linux-gnu/nvidia/current "command:apt-get install:137:"
	grep -q "apt-get install failed" "$TMP/err" || fail "killed-dpkg: the killed install: $(cat "$TMP/err")"
	mkdir -p "$M/var/lib/dpkg/updates"
	echo 'Package: nvidia-kernel-dkms' >"$M/var/lib/dpkg/updates/0003"
	printf 'Package: nvidia-kernel-dkms\nStatus: install ok half-configured\nVersion: %s\n\n' "$DVER" >>"$M/var/lib/dpkg/status"
	# and one a kill left half-unpacked: only a reinstall mends it
	printf 'Package: libcuda1\nStatus: install reinstreq half-installed\nVersion: %s\n\n' "$DVER" >>"$M/var/lib/dpkg/status"
	rm -f "$M.ops"
	gb_run 0 usr/lib/x86_64-linux-gnu/nvidia/current
	grep -q "dpkg was interrupted (1 record(s) in var/lib/dpkg/updates) in $M: repairing it" "$TMP/err" ||
		fail "killed-dpkg: the run did not say so: $(cat "$TMP/err")"
	python3 - "$M.state" <<'PY' || fail "killed-dpkg: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1] + "/status.json"))
assert d["result"] == "ok" and d["exit_code"] == 0, (d["result"], d["exit_code"])
assert d["install"]["driver"]["recovered"].startswith("dpkg was interrupted"), d["install"]
j = {s["id"]: s for s in json.load(open(sys.argv[1] + "/journal.json"))["steps"]}
assert j["dpkg-configure-a"]["state"] == "done" and j["apt-get-install"]["attempts"] == 2, j
assert j["apt-get-reinstall"]["state"] == "done" and "libcuda1" in j["apt-get-reinstall"]["argv"], j
assert "apt-get install --reinstall" in d["install"]["driver"]["recovered"], d["install"]["driver"]
PY
	# repaired first, then the install again (the update was done)
	[ "$(sed -n 's/^run \(chroot=[^ ]* \)\{0,1\}\(dpkg .*--configure -a\|apt-get update\|apt-get install\).*/\2/p' "$M.ops" | sed 's/^dpkg .*/dpkg --configure -a/' | tr '\n' ,)" = \
		"dpkg --configure -a,apt-get install,apt-get install," ] || fail "killed-dpkg: $(grep '^run' "$M.ops")"
	[ -z "$(ls "$M/var/lib/dpkg/updates")" ] && ! grep -q 'half-configured\|half-installed' "$M/var/lib/dpkg/status" ||
		fail "killed-dpkg: dpkg is still interrupted"
	# and again: nothing to repair, nothing done
	rm -f "$M.ops"
	gb_run 0 usr/lib/x86_64-linux-gnu/nvidia/current
	[ ! -s "$M.ops" ] || fail "killed-dpkg: the run after the repair changed something: $(cat "$M.ops")"
	echo "row debian-distro-killed-dpkg: dpkg repaired (dpkg --configure -a), then exit 0"
}
(killed_dpkg)

twin_load secure-boot-unsigned 129 debian12-secureboot-unsigned.kmsg 14 secure-boot-unsigned
twin_load untrusted-key 129 debian12-untrusted-key.kmsg 14 secure-boot-untrusted-key
twin_load lockdown 1 lockdown.kmsg 14 secure-boot-lockdown
twin_load version-magic 8 version-magic.kmsg 14 kernel-mismatch
twin_load unknown-symbol 2 debian12-insmod-unknown-symbol.kmsg 14 kernel-mismatch
twin_load gsp-firmware 5 gsp-firmware-missing.kmsg 14 gsp-firmware
twin_load unsupported-branch 19 unsupported-by-branch.kmsg 12 gpu-unsupported-by-branch
twin_load no-gpu 19 debian12-no-gpu.kmsg 11 no-gpu

twin_verify gsp-at-open gsp-fail gpu.count "RmInitAdapter failed"
twin_verify split-versions healthy driver.version_match "Driver/library version mismatch" 580.159.04
twin_verify xid79 xid79 driver.xid_critical "fallen off the bus"
echo ok
