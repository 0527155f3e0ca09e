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
# from var/lib/dpkg/status; for NVIDIA's repositories on rpm roots (RHEL's
# dnf for the packages method, SLES's zypper for the Container Toolkit), the
# fake rpm, dnf and zypper (src/shared/fake-rpm.c, spec item rpm=DIR) install
# from an archive of the repositories' packages in their names and versions
# (NVIDIA's module stream and what its metapackage pulls in, the module where
# DKMS puts it on RHEL, the libraries under usr/lib64), keep rpm's database
# beside the archive (DIR/rpmdb: rpm's own is binary, so no made-up file in
# the root), import the key rpm --import is given, and write in the root
# what dnf and zypper write there (the module's state, versionlock.list,
# zypp's locks); the fake kernel's insert of nvidia reads the module file
# and leaves what the real module leaves (proc/driver/nvidia/version, the
# GPUs' information, sys/module/nvidia/version, the driver links); the fake
# NVML is the installed libnvidia-ml.so.<version> and reports that version.
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
# and its dnf repository's for RHEL 9 (the catalog's cuda-rpm: D42D0685.pub)
mkdir -p "$TMP/nvmirror/compute/cuda/repos/rhel9/x86_64"
cp tests/data/test-repo-key/public.asc "$TMP/nvmirror/compute/cuda/repos/rhel9/x86_64/D42D0685.pub"
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
	A=$TMP/$1.archive main=cuda-drivers fl=proprietary
	# HGX: the open module's metapackage (H100), and the fabric manager
	[ -n "${HGX:-}" ] && main=nvidia-open fl=open
	rm -rf "$A"
	mkdir -p "$A"
	tests/make-driver-tree "$A/$main" "$DRV" $fl "$R" usr/lib/x86_64-linux-gnu
	mkdir -p "$A/$main/lib/modules/$R/updates/dkms"
	mv "$A/$main/lib/modules/$R/kernel/drivers/video/"*.ko "$A/$main/lib/modules/$R/updates/dkms/"
	rm -rf "$A/$main/lib/modules/$R/kernel"
	printf 'Package: nvidia-driver-pinning-580\nVersion: %s-1\n\nPackage: %s\nVersion: %s-0ubuntu1\n\n' "$DRV" $main "$DRV" >"$A/Packages"
	if [ -n "${HGX:-}" ]; then
		# NVIDIA's nvidia-fabricmanager (R580 on: no branch in the name): the
		# daemon and its unit where the package puts them
		mkdir -p "$A/nvidia-fabricmanager/usr/bin" "$A/nvidia-fabricmanager/lib/systemd/system"
		printf '#!/bin/sh\n' >"$A/nvidia-fabricmanager/usr/bin/nv-fabricmanager"
		chmod 755 "$A/nvidia-fabricmanager/usr/bin/nv-fabricmanager"
		printf '[Unit]\nDescription=NVIDIA fabric manager service\n[Service]\nExecStart=/usr/bin/nvidia-fabricmanager-start.sh --mode start\n' \
			>"$A/nvidia-fabricmanager/lib/systemd/system/nvidia-fabricmanager.service"
		printf 'Package: nvidia-fabricmanager\nVersion: %s-1\n\n' "$DRV" >>"$A/Packages"
	fi
	printf 'Package: linux-headers-%s\nVersion: 6.5.0-1020.20~22.04.1\n\nPackage: linux-headers-gcp\nVersion: 6.5.0.1020.20~22.04.1\n\n' "$R" >>"$A/Packages"
}

# nvidia_rpm_archive NAME: RHEL 9.3 as its cloud image has it (the running
# kernel's package, kernel-core, owning boot/vmlinuz-R, in rpm's database)
# and NVIDIA's dnf repository for rhel9 in its layout for the packages
# method: the module stream nvidia-driver:BRANCH-open, whose metapackage
# nvidia-open pulls in the driver's packages as NVIDIA's repository has
# them (kmod-nvidia-open-dkms with the module where DKMS puts it on RHEL,
# lib/modules/R/extra; nvidia-driver-cuda-libs with the libraries in
# usr/lib64; nvidia-driver-cuda with nvidia-smi), and RHEL's own
# kernel-devel of the running kernel, kernel-headers and the versionlock
# plugin. RPM_VER: the driver version the repository has (default $DRV).
nvidia_rpm_archive() {
	mkdir -p "$M/boot" && : >"$M/boot/vmlinuz-$R"
	A=$TMP/$1.archive KV=${R%.x86_64} rv=${RPM_VER:-$DRV} br=${DRV%%.*} nv=gpuboot-cuda-rhel9-x86_64
	rm -rf "$A" "$TMP/$1.dt"
	mkdir -p "$A/kernel-core/boot" && : >"$A/kernel-core/boot/vmlinuz-$R"
	printf 'kernel-core\t0:%s\tx86_64\t@System\n' "$KV" >"$A/rpmdb"
	tests/make-driver-tree "$TMP/$1.dt" "$rv" open "$R" usr/lib64
	mkdir -p "$A/kmod-nvidia-open-dkms/lib/modules/$R/extra" "$A/nvidia-driver-cuda-libs/usr/lib64" \
		"$A/nvidia-driver-cuda/usr/bin" "$A/kernel-devel/usr/src/kernels/$R" "$A/$PLUGIN/etc/dnf/plugins"
	mv "$TMP/$1.dt/lib/modules/$R/kernel/drivers/video/"*.ko "$A/kmod-nvidia-open-dkms/lib/modules/$R/extra/"
	mv "$TMP/$1.dt/usr/lib64/"* "$A/nvidia-driver-cuda-libs/usr/lib64/"
	mv "$TMP/$1.dt/usr/bin/nvidia-smi" "$A/nvidia-driver-cuda/usr/bin/"
	echo 'VERSION = 5' >"$A/kernel-devel/usr/src/kernels/$R/Makefile"
	printf '[main]\nenabled = 1\nlocklist = /etc/dnf/plugins/versionlock.list\n' >"$A/$PLUGIN/etc/dnf/plugins/versionlock.conf"
	{
		printf 'Name: nvidia-open\nVersion: 3:%s-1.el9\nArch: noarch\nRepo: %s\nModule: nvidia-driver:%s-open\n' "$rv" $nv "$br"
		printf 'Requires: nvidia-driver kmod-nvidia-open-dkms nvidia-driver-cuda nvidia-driver-cuda-libs\n\n'
		printf 'Name: kmod-nvidia-open-dkms\nVersion: 3:%s-1.el9\nArch: noarch\nRepo: %s\nModule: nvidia-driver:%s-open\n\n' "$rv" $nv "$br"
		for p in nvidia-driver nvidia-driver-cuda nvidia-driver-cuda-libs; do
			printf 'Name: %s\nVersion: 3:%s-1.el9\nArch: x86_64\nRepo: %s\nModule: nvidia-driver:%s-open nvidia-driver:%s-dkms\n\n' \
				"$p" "$rv" $nv "$br" "$br"
		done
		for p in kernel-core kernel-devel kernel-headers; do
			printf 'Name: %s\nVersion: %s\nArch: x86_64\nRepo: rhel-9-for-x86_64-%s-rpms\n\n' "$p" "$KV" \
				"$([ $p = kernel-core ] && echo baseos || echo appstream)"
		done
		printf 'Name: %s\nVersion: 4.3.0-13.el9\nArch: noarch\nRepo: rhel-9-for-x86_64-appstream-rpms\n\n' $PLUGIN
	} >"$A/Packages"
}
PLUGIN=python3-dnf-plugin-versionlock

# fake_spec: the fake operations of the method's installer (PKG: apt, or
# rpm for NVIDIA's repositories on rpm roots; TOOLKIT: the Container
# Toolkit's repository too, and what nvidia-ctk cdi generate writes)
fake_spec() {
	case $MTH in
	runfile) echo "installs:nvidia-installer:0:$TREE${TOOLKIT:+,rpm=$TA,installs:nvidia-ctk:0:$TA.cdi}" ;;
	distro) echo "apt=$A" ;;
	packages) echo "${PKG:-apt}=$A" ;;
	esac
}

# mirror_args: where the method's artifacts come from (the signed bundle;
# for NVIDIA's repository, the loopback HTTPS mirror in its layout; with
# TOOLKIT, NVIDIA's other host, the toolkit's repository, from it too)
mirror_args() {
	case $MTH in
	packages) echo "--mirror https://127.0.0.1:$PORT/ --ca-file $TMP/ca.pem" ;;
	*) echo "--mirror file://$B/mirror --trust-key $B/key.pub${TOOLKIT:+ --upstream https://127.0.0.1:$PORT/ --ca-file $TMP/ca.pem}" ;;
	esac
}

# gb_run EXIT LIBDIR [FAKE-RULES]: gpuboot run on $M, live, method $MTH
gb_run() {
	want=$1 lib=$2 n=${FAKE_NV_GPUS:-1}
	shift 2
	rules=${1:-}
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,$(fake_spec)${rules:+,$rules}" \
		FAKE_NV_GPUS=$n LD_LIBRARY_PATH=$M/$lib expect_exit "$want" "$GB" --root "$M" run --profile "${PROFILE:-minimal}" --method "$MTH" \
		--config "$TMP/always.conf" $(mirror_args) --state-dir "$M.state" --run-dir "$M.state/run" --tier passive
}

# bare_to_ready NAME FIXTURE LIBDIR: bare to exit 0, verified, the ready
# flags written, the journal done
bare_to_ready() {
	bare "$1" "$2" "$3"
	[ "$MTH" = distro ] && debian_archive "$1"
	[ "$MTH" = packages ] && "nvidia_${PKG:-apt}_archive" "$1"
	[ -n "${TOOLKIT:-}" ] && toolkit_rpm_archive "$1"
	# the dry run says what the real run then does, and stops nowhere
	# shellcheck disable=SC2046
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops" expect_exit 0 "$GB" --root "$M" run --dry-run --profile "${PROFILE:-minimal}" \
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
# the install installs the packages the plan names (one table: a package the
# plan lists and the install leaves out is a plan that lies)
if sys.argv[3] in ("distro", "packages"):
    installed = {p["name"] for p in d["install"]["driver"]["packages"]}
    planned = [n for n in d["plan"]["driver"]["packages"] if not n.startswith(("@", "versionlock:"))]
    assert set(planned) <= installed, (planned, sorted(installed))
PY
	[ -f "$M.state/run/verified-ready" ] && [ -f "$M.state/run/driver-ready" ] || fail "$1: ready flags missing"
}

# first_boot NAME FIXTURE LIBDIR: bare to exit 0, then a run that changes nothing
first_boot() {
	bare_to_ready "$@"
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
# --target-gpu T4, or IMG_GPU: installed, not loaded), then the image's first
# boot as a cloud boots it, with no user-data: the unit the image install
# enabled runs its own command on the image booted on such an instance (the
# fixture's GPUs, FAKE_NV_GPUS of them).
image_boot() {
	bare "$1" "$2" "$3"
	[ "$MTH" = distro ] && debian_archive "$1"
	[ "$MTH" = packages ] && "nvidia_${PKG:-apt}_archive" "$1"
	mkdir -p "$M/boot" && : >"$M/boot/vmlinuz-$R" # an image's installer builds for the kernels it holds
	# shellcheck disable=SC2046
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,$(fake_spec)" \
		expect_exit 0 "$GB" --root "$M" run --target-gpu "${IMG_GPU:-T4}" --profile minimal --method "$MTH" \
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
		expect_exit 0 "$GB" --root "$M" run --target-gpu "${IMG_GPU:-T4}" --profile minimal --method "$MTH" \
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
	# The kernel answers as the real one does with no GPU (the Debian 12
	# guest's own lines): the unit still offers it the image's module, and
	# the status carries that answer.
	GPUBOOT_FIRST_BOOT_UNIT=1 GPUBOOT_FAKE_OPS="root=$M.nogpu,module:nvidia:19,kmsg:nvidia:$PWD/tests/load/debian12-no-gpu.kmsg" \
		expect_exit 11 "$GB" --root "$M.nogpu" $cmd --state-dir "$M.nogpu.state" --run-dir "$M.nogpu.state/run"
	[ -f "$M.nogpu/var/lib/gpuboot/image-pending" ] || fail "$1: a no-GPU boot consumed the image's first boot"
	python3 - "$M.nogpu.state/status.json" <<'PY' || fail "$1: the no-GPU boot's status: $(head -c 3000 "$M.nogpu.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert d["exit_code"] == 11 and st["plan"]["result"] == "refused", (d["exit_code"], st["plan"])
assert st["load"]["result"] == "failed" and st["load"]["errno"] == "ENODEV", st["load"]
assert "module offered to the kernel anyway" in st["load"]["error"], st["load"]
assert "No NVIDIA GPU found" in json.dumps(d["load"]), d["load"]
assert not d["ready"]["verified"] and not d["ready"]["driver_ready"], d["ready"]
PY
	# and under Secure Boot, the kernel refusing the image's signature: the
	# image is broken for every instance: exit 14, the marker gone
	rm -rf "$M.sb" "$M.sb.state" && cp -a "$M.nogpu" "$M.sb" && cp -a "$M.state" "$M.sb.state"
	# shellcheck disable=SC2086
	GPUBOOT_FIRST_BOOT_UNIT=1 GPUBOOT_FAKE_OPS="root=$M.sb,module:nvidia:129,kmsg:nvidia:$PWD/tests/load/debian12-untrusted-key.kmsg" \
		expect_exit 14 "$GB" --root "$M.sb" $cmd --state-dir "$M.sb.state" --run-dir "$M.sb.state/run"
	[ ! -e "$M.sb/var/lib/gpuboot/image-pending" ] || fail "$1: a broken image kept its marker"
	grep -q '"errno": "EKEYREJECTED"' "$M.sb.state/status.json" || fail "$1: the refused signature: $(head -c 3000 "$M.sb.state/status.json")"
	# The first boot: the unit's command on the booted image.
	rm -f "$M.ops"
	# shellcheck disable=SC2086
	GPUBOOT_FIRST_BOOT_UNIT=1 GPUBOOT_FAKE_OPS="root=$M,record=$M.ops" FAKE_NV_GPUS=${FAKE_NV_GPUS:-1} LD_LIBRARY_PATH=$M/$3 \
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
	! grep -q '^run .*\(apt-get\|nvidia-installer\|apt-mark\|dnf\|zypper\|rpm\)' "$M.ops" ||
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
# An HGX node (the captured HGX H100: 8 GPUs, 4 NVSwitches) with its driver
# taken off (the module's proc and sys entries, the userspace, its fabric
# manager), as a cloud
# hands one out bare: the packages method installs the open module and the
# fabric manager at the driver's version, the load starts the fabric
# manager after the modules, verify waits for the fabric (120 s bound) and
# judges it on all eight GPUs.
hgx_fixture() {
	F=$TMP/fixtures/hgx-bare
	rm -rf "$F" && mkdir -p "$TMP/fixtures"
	cp -a "$FIX/h100x8-ubuntu2204" "$F"
	rm -rf "$F/proc/driver/nvidia" "$F/sys/module/nvidia" "$F/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01" \
		"$F/usr/bin/nvidia-persistenced" "$F/usr/bin/nv-fabricmanager"
}
hgx_fixture
MTH=packages HGX=1 FIX=$TMP/fixtures FAKE_NV_GPUS=8 bare_to_ready ubuntu-packages-hgx hgx-bare usr/lib/x86_64-linux-gnu
M=$TMP/ubuntu-packages-hgx
python3 - "$M.state/status.json" "$DRV" <<'PY' || fail "HGX: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1])); ver = sys.argv[2]
assert d["facts"]["nvswitches"] and len(d["facts"]["nvswitches"]) == 4, d["facts"].get("nvswitches")
assert d["plan"]["driver"]["packages"][-1] == "nvidia-fabricmanager", d["plan"]["driver"]["packages"]
fm = [x for x in d["load"]["daemons"] if x["name"] == "nvidia-fabricmanager"]
assert fm and fm[0]["state"] == "started" and fm[0]["version"] == ver, d["load"]["daemons"]
checks = [c for c in d["checks"] if c["name"] == "fabric.state"]
assert len(checks) == 8 and all(c["result"] == "pass" for c in checks), checks
assert [c for c in d["checks"] if c["name"] == "fabric.wait"], "no fabric.wait"
PY
grep -q "^systemctl enable nvidia-fabricmanager.service" "$M.ops" && grep -q "^systemctl start nvidia-fabricmanager.service" "$M.ops" ||
	fail "HGX: the fabric manager was not started: $(grep systemctl "$M.ops")"
# modules first, then the fabric manager (before CUDA's first context: verify's probe)
[ "$(grep -n '^module_load nvidia ' "$M.ops" | cut -d: -f1)" -lt "$(grep -n '^systemctl start nvidia-fabricmanager' "$M.ops" | cut -d: -f1)" ] ||
	fail "HGX: the fabric manager started before the modules"
rm -f "$M.ops"
MTH=packages HGX=1 FIX=$TMP/fixtures FAKE_NV_GPUS=8 A=$TMP/ubuntu-packages-hgx.archive gb_run 0 usr/lib/x86_64-linux-gnu
[ ! -s "$M.ops" ] || fail "HGX: the second run changed something: $(cat "$M.ops")"
echo "row ubuntu-packages-hgx: bare to exit 0 with the fabric manager, then a run with no effect"
# Its failure twins, each on a fresh bare HGX node: the repository without
# the fabric manager at the driver's version (refused before anything is
# installed), the fabric manager's start failing, the fabric not up within
# the bound (0.5 s here): each its exit code, the cause named, no flag.
hgx_twin() { # NAME EXIT [FAKE-RULES]
	MTH=packages HGX=1 FIX=$TMP/fixtures
	bare "twin-$1" hgx-bare usr/lib/x86_64-linux-gnu
	nvidia_apt_archive "twin-$1"
	[ "$1" = hgx-fm-version ] && sed -i "s/^Version: $DRV-1\$/Version: 580.95.05-1/" "$A/Packages"
	FAKE_NV_GPUS=8 gb_run "$2" usr/lib/x86_64-linux-gnu "${3:-}"
	no_flags "twin $1"
	MTH=runfile HGX= FIX=$PWD/tests/fixtures
}
hgx_twin hgx-fm-version 1
grep -q "nvidia-fabricmanager" "$TMP/err" || fail "twin hgx-fm-version: $(tail -3 "$TMP/err")"
[ ! -e "$M/usr/bin/nv-fabricmanager" ] && [ ! -e "$M/lib/modules/$R/updates/dkms/nvidia.ko" ] || fail "twin hgx-fm-version: installed: $(tail -3 "$TMP/err"; ls "$M/usr/bin" "$M/lib/modules/$R/updates/dkms")"
echo "twin hgx-fm-version: exit 1, nvidia-fabricmanager $DRV named, nothing installed"
hgx_twin hgx-fm-start 1 "systemctl:start:5"
grep -q '"name": "nvidia-fabricmanager",' "$M.state/status.json" && grep -q "systemctl enable --now nvidia-fabricmanager.service failed" "$M.state/status.json" ||
	fail "twin hgx-fm-start: $(head -c 2000 "$M.state/status.json")"
echo "twin hgx-fm-start: exit 1, the fabric manager's start named"
FAKE_NV_SCENARIO=fabric-incomplete GPUBOOT_PROBE_FABRIC_WAIT_MS=500 hgx_twin hgx-fabric-down 15
python3 - "$M.state/status.json" <<'PY' || fail "twin hgx-fabric-down: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
failed = [c["name"] + "@" + c["subject"].split()[0] for c in d["checks"] if c["result"] == "fail"]
assert failed == ["fabric.state@gpu4"], failed
w = [c for c in d["checks"] if c["name"] == "fabric.wait"][0]
assert int(w["text"].split()[1]) >= 500, w
PY
echo "twin hgx-fabric-down: exit 15, fabric.state@gpu4 after the 0.5 s bound"
# The runfile method on the same bare HGX node: NVIDIA ships the fabric
# manager apart from the .run, in the driver's redistributable manifest
# (redistrib_<ver>.json) and its archives; the signed mirror serves them
# (tests/make-bundle --fabricmanager: NVIDIA's manifest format, archives in
# NVIDIA's layout with stand-in bytes). The install verifies them against
# the mirror's signature and NVIDIA's manifest, places them, the load starts
# the fabric manager after the modules, verify judges the fabric; the second
# run has nothing to do. Twins: no trusted manifest (refused, exit 10, both
# fixes named, nothing changed), a tampered archive (exit 13, nothing
# installed), a hostile path (refused, nothing placed), a manifest of another
# version (exit 13, nothing installed).
B0=$B
B=$TMP/bundle-fm
GB=$GB tests/make-bundle "$B" --fabricmanager ok >/dev/null
MTH=runfile FIX=$TMP/fixtures FAKE_NV_GPUS=8 bare_to_ready ubuntu-runfile-hgx hgx-bare usr/lib/x86_64-linux-gnu
python3 - "$M.state/status.json" "$DRV" <<'PY' || fail "runfile HGX: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1])); ver = sys.argv[2]
assert d["plan"]["driver"]["method"] == "runfile", d["plan"]["driver"]["method"]
assert d["plan"]["driver"]["fabricmanager_redist"]["path"] == "compute/nvidia-driver/redist/redistrib_%s.json" % ver
fm = [x for x in d["load"]["daemons"] if x["name"] == "nvidia-fabricmanager"]
assert fm and fm[0]["state"] == "started" and fm[0]["version"] == ver, d["load"]["daemons"]
checks = [c for c in d["checks"] if c["name"] == "fabric.state"]
assert len(checks) == 8 and all(c["result"] == "pass" for c in checks), checks
PY
for f in usr/bin/nv-fabricmanager usr/bin/nvswitch-audit usr/lib/systemd/system/nvidia-fabricmanager.service \
	usr/share/nvidia/nvswitch/fabricmanager.cfg usr/share/nvidia/nvswitch/dgxh100_hgxh100_topology \
	"usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.$DRV" usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2 \
	var/lib/gpuboot/runfile-fabricmanager; do
	[ -e "$M/$f" ] || fail "runfile HGX: $f not placed"
done
grep -q "^module_load nvidia " "$M.ops" && [ "$(grep -n '^module_load nvidia ' "$M.ops" | cut -d: -f1)" -lt "$(grep -n '^systemctl start nvidia-fabricmanager' "$M.ops" | cut -d: -f1)" ] ||
	fail "runfile HGX: the fabric manager did not start after the modules: $(grep -E 'module_load|systemctl' "$M.ops")"
rm -f "$M.ops"
MTH=runfile FIX=$TMP/fixtures FAKE_NV_GPUS=8 gb_run 0 usr/lib/x86_64-linux-gnu
[ ! -s "$M.ops" ] || fail "runfile HGX: the second run changed something: $(cat "$M.ops")"
grep -q "^driver do    keep" "$TMP/out" || fail "runfile HGX: the second run does not keep the driver: $(head -5 "$TMP/out")"
echo "row ubuntu-runfile-hgx: bare to exit 0 with the fabric manager from NVIDIA's archives, then a run with no effect"
hgx_runfile_twin() { # NAME EXIT [BUNDLE-MODE]
	if [ -n "${3:-}" ]; then
		B=$TMP/bundle-fm-$3
		GB=$GB tests/make-bundle "$B" --fabricmanager "$3" >/dev/null
	else
		B=$B0
	fi
	MTH=runfile FIX=$TMP/fixtures
	bare "twin-$1" hgx-bare usr/lib/x86_64-linux-gnu
	FAKE_NV_GPUS=8 gb_run "$2" usr/lib/x86_64-linux-gnu
	no_flags "twin $1"
	[ ! -e "$M/usr/bin/nv-fabricmanager" ] && [ ! -e "$M/var/lib/gpuboot/runfile-fabricmanager" ] ||
		fail "twin $1: the fabric manager was placed: $(tail -3 "$TMP/err")"
	FIX=$PWD/tests/fixtures
}
hgx_runfile_twin runfile-fm-untrusted 10
grep -q "use --method packages" "$TMP/err" && grep -q "redistrib_$DRV.json" "$TMP/err" && grep -q "signed mirror" "$TMP/err" ||
	fail "twin runfile-fm-untrusted: $(tail -3 "$TMP/err")"
[ ! -e "$M.ops" ] || fail "twin runfile-fm-untrusted: something was done: $(cat "$M.ops")"
echo "twin runfile-fm-untrusted: exit 10, --method packages and the signed mirror named, nothing changed"
B=$TMP/bundle-fm-tampered
rm -rf "$B" && cp -a "$TMP/bundle-fm" "$B"
printf x >>"$B/mirror/compute/nvidia-driver/redist/fabricmanager/linux-x86_64/fabricmanager-linux-x86_64-$DRV-archive.tar.xz"
MTH=runfile FIX=$TMP/fixtures
bare twin-runfile-fm-tampered hgx-bare usr/lib/x86_64-linux-gnu
FAKE_NV_GPUS=8 gb_run 13 usr/lib/x86_64-linux-gnu
no_flags "twin runfile-fm-tampered"
FIX=$PWD/tests/fixtures
grep -q "fabricmanager" "$TMP/err" || fail "twin runfile-fm-tampered: $(tail -3 "$TMP/err")"
[ ! -e "$M/usr/bin/nv-fabricmanager" ] && [ ! -e "$M/usr/bin/nvidia-smi" ] || fail "twin runfile-fm-tampered: installed"
echo "twin runfile-fm-tampered: exit 13, the archive named, nothing installed"
hgx_runfile_twin runfile-fm-hostile 13 hostile
grep -q "Failed to unpack" "$TMP/err" || fail "twin runfile-fm-hostile: $(tail -3 "$TMP/err")"
[ ! -e "$TMP/escape" ] && [ ! -e "$M.state/escape" ] || fail "twin runfile-fm-hostile: an entry escaped"
echo "twin runfile-fm-hostile: exit 13, the unpack refused, nothing installed"
hgx_runfile_twin runfile-fm-other-version 13 other-version
grep -q "at version 1.2.3, not the driver's $DRV" "$TMP/err" || fail "twin runfile-fm-other-version: $(tail -3 "$TMP/err")"
[ ! -e "$M/usr/bin/nvidia-smi" ] || fail "twin runfile-fm-other-version: the driver was installed"
echo "twin runfile-fm-other-version: exit 13, both versions named, nothing installed"
B=$B0 MTH=runfile FIX=$PWD/tests/fixtures
# A kept driver's fabric manager: the captured HGX H100 booted from an image
# that holds its R535 driver (the modules and userspace where they are
# installed, not loaded yet) without the fabric manager; the driver is kept
# (replace_installed = never: the ended branch stays, warned). The plan installs
# nvidia-fabricmanager-535 at 535.183.01 alone from NVIDIA's repository (the
# loopback mirror), nothing of the driver (no headers, no module, no
# blacklist); the load starts it, verify judges the fabric; the second run
# has nothing to do.
hgx_kept() {
	M=$TMP/hgx-kept KV=535.183.01 A=$TMP/hgx-kept.archive
	rm -rf "$M" "$M.state" "$M.ops" "$A" "$TMP/hgx-kept.tree"
	cp -a "$PWD/tests/fixtures/h100x8-ubuntu2204" "$M"
	R=$(cat "$M/proc/sys/kernel/osrelease")
	rm -rf "$M/proc/driver/nvidia" "$M/sys/module/nvidia" "$M/usr/bin/nv-fabricmanager"
	# the image's driver: its modules and userspace where its installer put
	# them (the capture's libnvidia-ml.so.535.183.01 is an empty stand-in)
	tests/make-driver-tree "$TMP/hgx-kept.tree" $KV proprietary "$R" usr/lib/x86_64-linux-gnu
	cp -a "$TMP/hgx-kept.tree/." "$M/"
	pk=nvidia-fabricmanager-535
	mkdir -p "$A/$pk/usr/bin" "$A/$pk/lib/systemd/system"
	printf '#!/bin/sh\n' >"$A/$pk/usr/bin/nv-fabricmanager" && chmod 755 "$A/$pk/usr/bin/nv-fabricmanager"
	printf '[Unit]\nDescription=NVIDIA fabric manager service\n[Service]\nExecStart=/usr/bin/nvidia-fabricmanager-start.sh --mode start\n' \
		>"$A/$pk/lib/systemd/system/nvidia-fabricmanager.service"
	printf 'Package: %s\nVersion: %s-1\n\n' $pk $KV >"$A/Packages"
	printf '[install]\nreplace_installed = never\n' >"$TMP/never.conf"
}
hgx_kept_run() { # EXIT
	GPUBOOT_FAKE_OPS="root=$M,record=$M.ops,apt=$A" FAKE_NV_GPUS=8 LD_LIBRARY_PATH=$M/usr/lib/x86_64-linux-gnu \
		expect_exit "$1" "$GB" --root "$M" run --profile minimal --config "$TMP/never.conf" \
		--mirror "https://127.0.0.1:$PORT/" --ca-file "$TMP/ca.pem" --state-dir "$M.state" --run-dir "$M.state/run" --tier passive
}
hgx_kept
GPUBOOT_FAKE_OPS="root=$M,record=$M.ops" expect_exit 0 "$GB" --root "$M" run --dry-run --profile minimal --config "$TMP/never.conf" \
	--mirror "https://127.0.0.1:$PORT/" --ca-file "$TMP/ca.pem" --state-dir "$M.state" --tier passive
grep -q "^  install: install the kept driver's fabric manager nvidia-fabricmanager-535 $KV from NVIDIA's repository (ubuntu2204/x86_64), nothing of the driver" "$TMP/out" ||
	fail "hgx-kept: the dry run: $(sed -n '/dry run/,$p' "$TMP/out")"
hgx_kept_run 0
python3 - "$M.state/status.json" "$KV" <<'PY' || fail "hgx-kept: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1])); ver = sys.argv[2]
st = {s["name"]: s["result"] for s in d["stages"]}
assert d["exit_code"] == 0 and d["ready"]["verified"], (d["exit_code"], st)
assert d["plan"]["driver"]["action"] == "keep" and d["plan"]["driver"]["packages"] == ["nvidia-fabricmanager-535"], d["plan"]["driver"]
assert st["install"] == "ok" and "driver" not in d["install"], (st, list(d["install"]))
fm = d["install"]["fabricmanager"]
assert [(p["name"], p["after"], p["held"]) for p in fm["packages"]] == [("nvidia-fabricmanager-535", ver + "-1", True)], fm["packages"]
assert not fm.get("kernels"), fm.get("kernels")
dm = [x for x in d["load"]["daemons"] if x["name"] == "nvidia-fabricmanager"]
assert dm and dm[0]["state"] == "started" and dm[0]["version"] == ver, d["load"]["daemons"]
assert all(c["result"] == "pass" for c in d["checks"] if c["name"] == "fabric.state"), d["checks"]
PY
# nothing of the driver: no headers, no DKMS, no module, no blacklist, the pin names the fabric manager alone
! grep -q "linux-headers\|dkms\|nvidia-open\|cuda-drivers\|blacklist\|update-initramfs" "$M.ops" || fail "hgx-kept: touched the driver: $(grep '^run\|^write' "$M.ops")"
grep -q "^Package: nvidia-fabricmanager-535$" "$M/etc/apt/preferences.d/gpuboot-nvidia-fabricmanager.pref" ||
	fail "hgx-kept: the pin: $(cat "$M/etc/apt/preferences.d/"*)"
[ "$(grep -n '^systemctl start nvidia-fabricmanager' "$M.ops" | cut -d: -f1)" -gt "$(grep -n 'apt-get install' "$M.ops" | cut -d: -f1)" ] ||
	fail "hgx-kept: started before its install"
rm -f "$M.ops"
hgx_kept_run 0
[ ! -s "$M.ops" ] || fail "hgx-kept: the second run changed something: $(cat "$M.ops")"
echo "row hgx-kept-driver-fm: the kept R535's fabric manager installed alone, exit 0, then a run with no effect"
# Debian 12's own driver (the distro method, DKMS), live and as the Packer example builds it
MTH=distro DRV=$DEB_DRV first_boot debian-distro l4-debian12 usr/lib/x86_64-linux-gnu/nvidia/current
MTH=distro DRV=$DEB_DRV image_boot debian-distro-image l4-debian12 usr/lib/x86_64-linux-gnu/nvidia/current

# rpm_state NAME: what dnf left on the RHEL row: the module stream enabled
# as dnf writes it, every package of the driver locked at its version in
# the plugin's format, the kernel's development package and the key in
# rpm's database, the module where DKMS puts it
rpm_state() {
	m=$TMP/$1 db=$TMP/$1.archive/rpmdb
	[ "$(cat "$m/etc/dnf/modules.d/nvidia-driver.module")" = "$(printf '[nvidia-driver]\nname=nvidia-driver\nstream=%s-open\nprofiles=\nstate=enabled' "${DRV%%.*}")" ] ||
		fail "$1: the module stream: $(cat "$m/etc/dnf/modules.d/nvidia-driver.module")"
	for p in nvidia-open kmod-nvidia-open-dkms nvidia-driver nvidia-driver-cuda nvidia-driver-cuda-libs; do
		grep -qxF "$p-3:$DRV-1.el9.*" "$m/etc/dnf/plugins/versionlock.list" ||
			fail "$1: $p is not locked: $(cat "$m/etc/dnf/plugins/versionlock.list")"
	done
	grep -q "^kernel-devel	0:${R%.x86_64}	x86_64	rhel-9-for-x86_64-appstream-rpms$" "$db" && grep -q '^gpg-pubkey	' "$db" ||
		fail "$1: rpm's database: $(cat "$db")"
	[ -f "$m/lib/modules/$R/extra/nvidia.ko" ] || fail "$1: no module under lib/modules/$R/extra"
}
# NVIDIA's dnf repository (the packages method) on RHEL 9: the module
# stream, live and as an image; the runfile's image twin
MTH=packages PKG=rpm FAKE_NV_GPUS=4 first_boot rhel-packages a100-rhel9 usr/lib64
rpm_state rhel-packages
MTH=packages PKG=rpm FAKE_NV_GPUS=4 IMG_GPU=A100 image_boot rhel-packages-image a100-rhel9 usr/lib64
rpm_state rhel-packages-image
MTH=runfile DRV=$VER FAKE_NV_GPUS=4 IMG_GPU=A100 image_boot rhel-runfile-image a100-rhel9 usr/lib64

# sles_fixture: a SLES 15 SP5 test root, not a capture (no SLES machine
# was captured): the a100-rhel9 capture's GPUs and machine with SLES 15
# SP5's own os-release (tests/data/os-release/sles-15.5, as the system
# ships it), zypper for rpm, and SLES's kernel (5.14.21-150500.55.39-default,
# its command line, its headers where kernel-default-devel puts them)
sles_fixture() {
	F=$TMP/fixtures/sles15sp5 SR=5.14.21-150500.55.39-default
	rm -rf "$F" && mkdir -p "$TMP/fixtures"
	cp -a "$FIX/a100-rhel9" "$F"
	cp tests/data/os-release/sles-15.5 "$F/etc/os-release"
	rm -rf "$F/usr/bin/dnf" "$F/usr/bin/yum" "$F/lib/modules/"* "$F/usr/src/kernels"
	: >"$F/usr/bin/zypper" && chmod 755 "$F/usr/bin/zypper"
	echo "$SR" >"$F/proc/sys/kernel/osrelease"
	echo "BOOT_IMAGE=/boot/vmlinuz-$SR root=UUID=4f1b2a77-3f43-4c2e-9a8c-5f0e5d1c2b3a splash=silent mitigations=auto quiet" >"$F/proc/cmdline"
	mkdir -p "$F/lib/modules/$SR" "$F/usr/src/linux-${SR%-default}-obj/x86_64/default"
	ln -s "/usr/src/linux-${SR%-default}-obj/x86_64/default" "$F/lib/modules/$SR/build"
	echo 'VERSION = 5' >"$F/usr/src/linux-${SR%-default}-obj/x86_64/default/Makefile"
}

# toolkit_rpm_archive NAME: NVIDIA's libnvidia-container repository for rpm
# (stable/rpm/x86_64, one for every rpm distribution; its metadata signed
# by NVIDIA's key, gpgkey, served where NVIDIA serves it) with the
# Container Toolkit's four packages at the plan's version, each requiring
# the next as NVIDIA's do (nvidia-container-toolkit-base with nvidia-ctk
# and NVIDIA's nvidia-cdi-refresh units, 1.18 and later); the image's
# kernel in rpm's database; and what nvidia-ctk cdi generate writes (the
# spec naming the loaded driver's libraries)
toolkit_rpm_archive() {
	TA=$TMP/$1.toolkit tr=gpuboot-nvidia-container-toolkit
	TK=$("$GB" --root "$M" plan --profile "$PROFILE" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["toolkit"]["version"])')
	rm -rf "$TA" "$TA.cdi"
	mkdir -p "$TA/nvidia-container-toolkit-base/usr/bin" "$TA/nvidia-container-toolkit-base/usr/lib/systemd/system" \
		"$TA/nvidia-container-toolkit/usr/bin" "$TA/libnvidia-container-tools/usr/bin" "$TA/libnvidia-container1/usr/lib64" \
		"$TA.cdi/var/run/cdi"
	printf 'kernel-default\t0:%s.1\tx86_64\t@System\n' "${R%-default}" >"$TA/rpmdb"
	for f in nvidia-container-toolkit-base/usr/bin/nvidia-ctk nvidia-container-toolkit-base/usr/bin/nvidia-cdi-hook \
		nvidia-container-toolkit/usr/bin/nvidia-container-runtime nvidia-container-toolkit/usr/bin/nvidia-container-runtime-hook \
		libnvidia-container-tools/usr/bin/nvidia-container-cli; do
		printf '#!/bin/sh\n' >"$TA/$f" && chmod 755 "$TA/$f"
	done
	printf '[Unit]\nDescription=Trigger CDI refresh on NVIDIA driver install / uninstall events\n[Path]\nPathChanged=/lib/modules/%%v/modules.dep\n[Install]\nWantedBy=multi-user.target\n' \
		>"$TA/nvidia-container-toolkit-base/usr/lib/systemd/system/nvidia-cdi-refresh.path"
	printf '[Unit]\nDescription=Refresh NVIDIA CDI specification file\n[Service]\nType=oneshot\nExecStart=/usr/bin/nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml\n[Install]\nWantedBy=multi-user.target\n' \
		>"$TA/nvidia-container-toolkit-base/usr/lib/systemd/system/nvidia-cdi-refresh.service"
	: >"$TA/libnvidia-container1/usr/lib64/libnvidia-container.so.$TK"
	ln -s "libnvidia-container.so.$TK" "$TA/libnvidia-container1/usr/lib64/libnvidia-container.so.1"
	printf '{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","containerEdits":{"mounts":[{"hostPath":"/usr/lib64/libcuda.so.%s"}]}}\n' "$DRV" \
		>"$TA.cdi/var/run/cdi/nvidia.yaml"
	{
		printf 'Name: nvidia-container-toolkit\nRequires: nvidia-container-toolkit-base libnvidia-container-tools\n'
		printf 'Version: %s-1\nArch: x86_64\nRepo: %s\n\n' "$TK" $tr
		printf 'Name: nvidia-container-toolkit-base\nVersion: %s-1\nArch: x86_64\nRepo: %s\n\n' "$TK" $tr
		printf 'Name: libnvidia-container-tools\nRequires: libnvidia-container1\nVersion: %s-1\nArch: x86_64\nRepo: %s\n\n' "$TK" $tr
		printf 'Name: libnvidia-container1\nVersion: %s-1\nArch: x86_64\nRepo: %s\n\n' "$TK" $tr
	} >"$TA/Packages"
	mkdir -p "$TMP/nvmirror/libnvidia-container"
	cp tests/data/nvidia-keys/gpgkey "$TMP/nvmirror/libnvidia-container/gpgkey"
}
# the driver and the Container Toolkit: the minimal profile, the toolkit
# installed though no container engine is there yet ([toolkit] install = always)
printf '[profile]\ndescription = the driver and the Container Toolkit\n\n[driver]\nbranch = lts\nmodule_flavor = auto\n\n[cuda]\npolicy = none\n\n[toolkit]\ninstall = always\n\n[verify]\ntier = passive\n' \
	>"$TMP/toolkit.profile"

# toolkit_boot NAME FIXTURE LIBDIR: bare to exit 0 with the Container
# Toolkit from NVIDIA's rpm repository (installed at the plan's version by
# zypper, locked by zypper addlock, its key in rpm's database), then a run
# that changes nothing and runs nothing: detect reads no rpm database, and
# finds the toolkit's version in its library's name
# (libnvidia-container.so.<version>, src/detect/detect-nvidia.c), so the
# plan keeps what the first boot installed.
toolkit_boot() {
	bare_to_ready "$@"
	python3 - "$M.state/status.json" "$TK" <<'PY' || fail "$1: the toolkit: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1])); want = "0:%s-1" % sys.argv[2]
assert d["ready"]["toolkit_ready"], d["ready"]
pkgs = {p["name"]: p for p in d["install"]["toolkit"]["packages"]}
assert sorted(pkgs) == sorted(["nvidia-container-toolkit", "nvidia-container-toolkit-base",
                               "libnvidia-container-tools", "libnvidia-container1"]), pkgs
assert all(p["after"] == want and p["held"] and not p["before"] for p in pkgs.values()), pkgs
PY
	for p in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
		grep -qx "solvable_name: $p" "$M/etc/zypp/locks" || fail "$1: $p is not locked: $(cat "$M/etc/zypp/locks")"
		grep -q "^$p	0:$TK-1	x86_64	gpuboot-nvidia-container-toolkit$" "$TA/rpmdb" || fail "$1: rpm's database: $(cat "$TA/rpmdb")"
	done
	grep -q '^gpg-pubkey	0:f796ecb0-' "$TA/rpmdb" || fail "$1: NVIDIA's toolkit key is not in rpm's database"
	grep -q "^run .* zypper --non-interactive install --auto-agree-with-licenses nvidia-container-toolkit=$TK " "$M.ops" ||
		fail "$1: $(grep '^run' "$M.ops")"
	rm -f "$M.ops"
	gb_run 0 "$3"
	python3 -c "
import json; j = json.load(open('$M.state/journal.json'))
assert j['state'] == 'done' and j['effects_this_run'] == 0, (j['effects_this_run'], [s for s in j['steps'] if s['kind'] != 'stage'])" ||
		fail "$1: the second run changed something"
	[ ! -s "$M.ops" ] || fail "$1: the second run did something: $(cat "$M.ops")"
	grep -q "^driver do    keep" "$TMP/out" || fail "$1: the second run does not keep the driver: $(head -5 "$TMP/out")"
	grep -q "^toolkit do   keep" "$TMP/out" || fail "$1: the second run does not keep the toolkit: $(head -5 "$TMP/out")"
	[ -f "$M.state/run/verified-ready" ] || fail "$1: the second run withdrew the flags"
	echo "row $1: bare to exit 0, the Container Toolkit from zypper, then a run with no effect"
}
# SLES 15 SP5 (the runfile method: NVIDIA's repository is not planned for
# sles) with the Container Toolkit from NVIDIA's zypper repository
sles_fixture
MTH=runfile DRV=$VER FIX=$TMP/fixtures FAKE_NV_GPUS=4 TOOLKIT=1 PROFILE=$TMP/toolkit.profile toolkit_boot sles-toolkit sles15sp5 usr/lib64
# and as an image: the runfile method into a SLES root, its first boot by its own unit
MTH=runfile DRV=$VER FIX=$TMP/fixtures FAKE_NV_GPUS=4 IMG_GPU=A100 image_boot sles-runfile-image sles15sp5 usr/lib64

# NVIDIA's repository lacks the version the plan pins (it has 580.95.05 of
# the branch): the install is refused before anything is installed (exit 1,
# docs/exit-codes.md), the package and version named, no ready flag
twin_rpm_missing() {
	MTH=packages PKG=rpm FAKE_NV_GPUS=4 DRV=$VER
	bare "twin-$1" a100-rhel9 usr/lib64
	RPM_VER=580.95.05 nvidia_rpm_archive "twin-$1"
	gb_run 1 usr/lib64
	python3 - "$M.state/status.json" "$DRV" <<'PY' || fail "twin $1: status: $(head -c 3000 "$M.state/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert d["exit_code"] == 1 and st["install"]["result"] == "failed", (d["exit_code"], st["install"])
assert "nvidia-open %s (no such package or version); nothing was installed" % sys.argv[2] in st["install"]["error"], st["install"]
assert st["install"]["hint"].startswith("nothing was installed"), st["install"]
assert "load" not in st and not d["ready"]["driver_ready"], (list(st), d["ready"])
PY
	! grep -q '^run .* \(dnf -y install\|dnf versionlock\)' "$M.ops" || fail "twin $1: $(grep '^run' "$M.ops")"
	[ "$(cut -f1 "$A/rpmdb" | sort | tr '\n' ' ')" = "gpg-pubkey kernel-core " ] && [ ! -e "$M/lib/modules/$R/extra" ] &&
		[ ! -e "$M/usr/lib64/libnvidia-ml.so.1" ] || fail "twin $1: something was installed: $(cat "$A/rpmdb")"
	no_flags "twin $1"
	echo "twin $1: exit 1, nvidia-open $DRV named, nothing installed"
}
(twin_rpm_missing rpm-version-missing)

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
# dpkg configures what it can and fails on the half-installed package, as
# the real one does (exit 1, "reinstall it before attempting
# configuration"); the reinstall after it mends that
c = j["dpkg-configure-a"]
assert c["exit_status"] == 1 and "reinstall it before attempting configuration" in c["output_tail"], c
assert j["apt-get-install"]["attempts"] == 2, j
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
