# The NVIDIA driver installed on disk, loaded or not: the module of each
# installed kernel (its .modinfo read with libkmod, compressed too), the
# dpkg database, the userspace libraries, the target kernel's headers.
. tests/integration/lib.sh
FIXD=$FIX/debian12-nvidia535-disk
K=6.1.0-50-cloud-amd64
MOD=lib/modules/$K/updates/dkms/nvidia-current-open.ko
j() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); print(eval(sys.argv[1]))" "$1"; }
detect() { # ROOT: detect --json into $TMP/out
	expect_exit 0 "$GB" --root "$1" detect --json
}
quiet() {
	[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "$1 warned"; }
}
fresh() { # a writable copy of the fixture in $M
	rm -rf "$TMP/m"
	cp -a "$FIXD" "$TMP/m"
	M=$TMP/m
}

# The fixture: Debian 12 with Debian's 535.261.03 open DKMS module, nothing loaded, no /proc.
detect "$FIXD"
quiet "the fixture"
[ "$(j 'd["nvidia"]["installed"]["version"]')" = "535.261.03" ] || fail "installed version: $(j 'd["nvidia"]["installed"]')"
[ "$(j 'd["nvidia"]["installed"]["module_flavor"]')" = "open" ] || fail "flavour"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "module" ] || fail "source"
[ "$(j 'd["nvidia"]["installed"]["module_path"]')" = "/$MOD" ] || fail "module path"
[ "$(j 'd["nvidia"]["installed"]["module_kernel"]')" = "$K" ] || fail "module kernel"
[ "$(j 'd["nvidia"]["installed"]["libcuda_version"]')" = "535.261.03" ] || fail "libcuda"
[ "$(j 'd["nvidia"]["userspace_version"]')" = "535.261.03" ] || fail "userspace"
[ "$(j 'd["nvidia"]["loaded_version"]')" = "None" ] || fail "nothing is loaded"
[ "$(j 'd["kernel"]["release"]')" = "None" ] || fail "a disk image runs no kernel"
[ "$(j 'd["kernel"]["target"]')" = "$K" ] || fail "target kernel"
[ "$(j 'd["kernel"]["flavour"]')" = "cloud-amd64" ] || fail "flavour of the target"
[ "$(j 'd["kernel"]["headers"]')" = "True" ] || fail "headers (Debian's split linux-headers packages)"
[ "$(j '{p["name"]: p["version"] for p in d["nvidia"]["installed"]["packages"]}["nvidia-open-kernel-dkms"]')" = "535.261.03-1" ] ||
	fail "packages: $(j 'd["nvidia"]["installed"]["packages"]')"
[ "$(j '[p["name"] for p in d["nvidia"]["installed"]["packages"]]')" = "['firmware-nvidia-gsp', 'libcuda1', 'libnvidia-ml1', 'nvidia-open-kernel-dkms', 'nvidia-smi']" ] ||
	fail "packages: $(j 'd["nvidia"]["installed"]["packages"]')"
expect_exit 0 "$GB" --root "$FIXD" detect
grep -q "^kernel: .*target $K, headers present" "$TMP/out" || fail "text kernel line: $(cat "$TMP/out")"
grep -q "^installed: *535.261.03 (open, from module), module /$MOD" "$TMP/out" || fail "text installed line: $(cat "$TMP/out")"

# Compressed modules: libkmod inflates xz and zstd (and gzip where it was built with zlib).
for z in xz zstd gzip; do
	command -v $z >/dev/null || continue
	fresh
	$z -q "$M/$MOD"
	[ ! -e "$M/$MOD" ] || rm "$M/$MOD"
	detect "$M"
	got=$(j 'd["kernel"]["installed"][0]["nvidia_module"]')
	case $z in
	gzip)
		# Debian's libkmod has no zlib; the static build's has.
		[ "$(j 'd["nvidia"]["installed"]["version"]')" = "535.261.03" ] || fail ".ko.gz: $got"
		[ "$(j 'd["kernel"]["installed"][0]["nvidia_module"]["version"]')" = "535.261.03" ] ||
			grep -q "nvidia-current-open.ko.gz" "$TMP/err" || fail ".ko.gz unread without a warning: $got"
		;;
	*)
		quiet ".ko.$z"
		[ "$(j 'd["kernel"]["installed"][0]["nvidia_module"]["version"]')" = "535.261.03" ] || fail ".ko.$z: $got"
		;;
	esac
done

# The proprietary module says license=NVIDIA (a module made here from the fixture's).
if command -v objcopy >/dev/null; then
	fresh
	objcopy -O binary --only-section=.modinfo "$M/$MOD" "$TMP/modinfo"
	python3 - "$TMP/modinfo" <<'PY'
import sys
p = sys.argv[1]
b = open(p, "rb").read().replace(b"license=Dual MIT/GPL\0", b"license=NVIDIA\0")
open(p, "wb").write(b)
PY
	objcopy --update-section .modinfo="$TMP/modinfo" "$M/$MOD" "$M/lib/modules/$K/updates/dkms/nvidia.ko"
	rm "$M/$MOD"
	detect "$M"
	quiet "a proprietary module"
	[ "$(j 'd["nvidia"]["installed"]["module_flavor"]')" = "proprietary" ] || fail "license=NVIDIA: $(j 'd["nvidia"]["installed"]')"
fi

# Where depmod says: Ubuntu's precompiled modules live in kernel/nvidia-<branch>srv/.
fresh
mkdir -p "$M/lib/modules/$K/kernel/nvidia-535srv"
mv "$M/$MOD" "$M/lib/modules/$K/kernel/nvidia-535srv/nvidia.ko"
printf 'kernel/fs/fat/vfat.ko: kernel/fs/fat/fat.ko\nkernel/nvidia-535srv/nvidia-uvm.ko: kernel/nvidia-535srv/nvidia.ko\nkernel/nvidia-535srv/nvidia.ko:\n' >"$M/lib/modules/$K/modules.dep"
detect "$M"
quiet "a module listed in modules.dep"
[ "$(j 'd["nvidia"]["installed"]["module_path"]')" = "/lib/modules/$K/kernel/nvidia-535srv/nvidia.ko" ] ||
	fail "modules.dep: $(j 'd["nvidia"]["installed"]')"
printf '../../../../etc/nvidia.ko:\n/abs/nvidia.ko:\nkernel/x/nvidia-current-open-uvm.ko:\n' >"$M/lib/modules/$K/modules.dep"
detect "$M"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "package" ] || fail "modules.dep paths outside the tree were followed"

# No module: the packages say the version and the flavour; without them, the library.
fresh
rm "$M/$MOD"
detect "$M"
quiet "no module"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "package" ] || fail "no module: $(j 'd["nvidia"]["installed"]')"
[ "$(j 'd["nvidia"]["installed"]["version"]')" = "535.261.03" ] || fail "version from the package"
[ "$(j 'd["nvidia"]["installed"]["module_flavor"]')" = "open" ] || fail "flavour from nvidia-open-kernel-dkms"
[ "$(j 'd["kernel"]["installed"][0]["nvidia_module"]')" = "None" ] || fail "a module where there is none"
rm "$M/var/lib/dpkg/status"
detect "$M"
quiet "no dpkg database"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "userspace" ] || fail "no packages: $(j 'd["nvidia"]["installed"]')"
[ "$(j 'd["nvidia"]["installed"]["packages"]')" = "[]" ] || fail "packages without a database"

# A module file that is not a module: a warning, and the packages answer.
fresh
head -c 4096 /dev/urandom >"$M/$MOD"
detect "$M"
grep -q "nvidia-current-open.ko" "$TMP/err" || fail "a garbage module gave no warning"
[ "$(j 'd["kernel"]["installed"][0]["nvidia_module"]["version"]')" = "None" ] || fail "garbage module has a version"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "package" ] || fail "garbage module: $(j 'd["nvidia"]["installed"]')"
: >"$M/$MOD"
detect "$M"
grep -q "nvidia-current-open.ko" "$TMP/err" || fail "an empty module gave no warning"
rm "$M/$MOD"
mkdir "$M/$MOD"
detect "$M"
grep -q "nvidia-current-open.ko" "$TMP/err" || fail "a directory named like a module gave no warning"

# dpkg: held packages are installed, removed ones (config-files) are not,
# garbled stanzas are counted.
fresh
cat >"$M/var/lib/dpkg/status" <<'EOF'
Package: nvidia-driver-535-server-open
Status: hold ok installed
Architecture: amd64
Version: 535.183.01-0ubuntu0.22.04.1
Description: NVIDIA driver metapackage
 Version: 999.1.1 is a continuation line, not a field

Package: nvidia-dkms-535
Status: deinstall ok config-files
Version: 535.104.05-0ubuntu1

Package: nvidia-container-toolkit
Status: install ok installed
Version: 1.17.8-1

Package: cuda-toolkit-config-common
Status: install ok installed
Version: 12.8.90-1
EOF
rm "$M/$MOD"
touch "$M/usr/bin/nvidia-ctk"
detect "$M"
quiet "a held package"
[ "$(j '[(p["name"], p["version"]) for p in d["nvidia"]["installed"]["packages"]]')" = "[('nvidia-driver-535-server-open', '535.183.01-0ubuntu0.22.04.1'), ('nvidia-container-toolkit', '1.17.8-1')]" ] ||
	fail "dpkg: $(j 'd["nvidia"]["installed"]["packages"]')"
[ "$(j 'd["nvidia"]["installed"]["version"]')" = "535.183.01" ] || fail "version from a held package"
[ "$(j 'd["nvidia"]["installed"]["module_flavor"]')" = "open" ] || fail "flavour from -open"
[ "$(j 'd["nvidia"]["container_toolkit"]')" = "1.17.8-1" ] || fail "toolkit version from dpkg"
printf 'Package: nvidia-smi\nStatus: install ok installed\n\nPackage: libcuda1\nStatus: install ok installed\nVersion: $(reboot)\n\nStatus: install ok installed\nVersion: 1\n' >"$M/var/lib/dpkg/status"
detect "$M"
grep -q "var/lib/dpkg/status" "$TMP/err" || fail "garbled dpkg stanzas gave no warning"
[ "$(j 'd["nvidia"]["installed"]["packages"]')" = "[]" ] || fail "garbled packages kept: $(j 'd["nvidia"]["installed"]["packages"]')"
printf 'Package: nvidia-smi\000\n' >"$M/var/lib/dpkg/status"
detect "$M"
grep -q "var/lib/dpkg/status" "$TMP/err" || fail "a binary dpkg status gave no warning"

# Headers: Debian's flavour Makefile includes the common package's; both must be there.
fresh
rm "$M/usr/src/linux-headers-6.1.0-50-common/Makefile"
detect "$M"
[ "$(j 'd["kernel"]["headers"]')" = "False" ] || fail "headers without linux-headers-*-common"
fresh
rm -r "$M/usr/src/linux-headers-$K"
detect "$M"
quiet "a dangling build link"
[ "$(j 'd["kernel"]["headers"]')" = "False" ] || fail "headers behind a dangling build link"

# The target kernel: the running one when this root has it, else the newest installed.
fresh
mkdir -p "$M/lib/modules/6.1.0-51-cloud-amd64" "$M/lib/modules/6.1.0-9-cloud-amd64" "$M/lib/modules/6.1.0-49-cloud-amd64/updates/dkms"
: >"$M/lib/modules/6.1.0-51-cloud-amd64/modules.dep"
: >"$M/boot/vmlinuz-6.1.0-9-cloud-amd64"
cp "$M/$MOD" "$M/lib/modules/6.1.0-49-cloud-amd64/updates/dkms/" # a DKMS leftover: no kernel there
detect "$M"
quiet "three kernels"
[ "$(j '[k["release"] for k in d["kernel"]["installed"]]')" = "['6.1.0-51-cloud-amd64', '$K', '6.1.0-9-cloud-amd64']" ] ||
	fail "installed kernels: $(j 'd["kernel"]["installed"]')"
[ "$(j 'd["kernel"]["target"]')" = "6.1.0-51-cloud-amd64" ] || fail "target: the newest"
[ "$(j 'd["kernel"]["headers"]')" = "False" ] || fail "headers of the newest kernel"
[ "$(j 'd["nvidia"]["installed"]["module_path"]')" = "None" ] || fail "the target kernel has no module"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "package" ] || fail "source without a module for the target"
[ "$(j 'd["kernel"]["installed"][1]["nvidia_module"]["version"]')" = "535.261.03" ] || fail "the other kernel's module"
mkdir -p "$M/proc/sys/kernel"
echo "$K" >"$M/proc/sys/kernel/osrelease"
detect "$M"
[ "$(j 'd["kernel"]["target"]')" = "$K" ] || fail "target: the running kernel"
[ "$(j '[k["running"] for k in d["kernel"]["installed"]]')" = "[False, True, False]" ] || fail "running flags"
[ "$(j 'd["nvidia"]["installed"]["source"]')" = "module" ] || fail "the running kernel's module"
echo "6.18.44-host" >"$M/proc/sys/kernel/osrelease" # a chroot showing the host's proc
detect "$M"
[ "$(j 'd["kernel"]["target"]')" = "6.1.0-51-cloud-amd64" ] || fail "a foreign running kernel chosen as the target"
[ "$(j 'd["kernel"]["release"]')" = "6.18.44-host" ] || fail "release"
echo "installed driver detected as expected"
