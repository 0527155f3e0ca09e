# Bad input never crashes detect: unreadable or garbled files make their
# field null with one warning, and detect still exits 0, except what
# identifies a PCI function (vendor, and an NVIDIA function's device and
# class): a function that cannot be identified may be a GPU, so detect fails
# naming the file (exit 1), never skips it or invents a 10de:0000.
. tests/integration/lib.sh
cp -a "$FIX/h100x8-ubuntu2204" "$TMP/m"
M=$TMP/m
printf 'ID=ubu\001ntu\nVERSION_ID="22.04\n\000\377garbage\n' >"$M/etc/os-release"
printf 'fast\n' >"$M/sys/bus/pci/devices/0000:61:00.0/current_link_speed"
printf '99999999999\n' >"$M/sys/bus/pci/devices/0000:61:00.0/max_link_width"
rm "$M/sys/bus/pci/devices/0000:9d:00.0/driver"
ln -s loop "$M/sys/bus/pci/devices/0000:9d:00.0/loop"
rm "$M/sys/bus/pci/devices/0000:9d:00.0/numa_node"
ln -s loop2 "$M/sys/bus/pci/devices/0000:9d:00.0/numa_node"
printf 'NVRM version: garbage without a version\n' >"$M/proc/driver/nvidia/version"
printf 'not a kernel\001\n' >"$M/proc/sys/kernel/osrelease"
printf '{"cuda": {"version": 12}}' >"$M/usr/local/cuda-12.2/version.json"
mkdir -p "$M/sys/firmware/efi/efivars"
printf '\006\000' >"$M/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
mkdir -p "$M/sys/bus/pci/devices/not-an-address"
expect_exit 0 "$GB" --root "$M" detect --json
python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["os"]["id"] is None, d["os"]
assert d["kernel"]["release"] is None
assert d["secure_boot"]["enabled"] is None
assert d["nvidia"]["loaded_version"] == "535.183.01", d["nvidia"]  # from sys/module/nvidia/version
assert d["nvidia"]["cuda_installs"][0]["version"] is None
gpus = {g["pci_address"]: g for g in d["gpus"]}
assert len(gpus) == 8, sorted(gpus)
assert gpus["0000:61:00.0"]["link"]["current_gen"] is None
assert gpus["0000:61:00.0"]["link"]["max_width"] is None
assert gpus["0000:9d:00.0"]["bound_driver"] is None
assert d["warnings"] > 0
PY
grep -q "warning" "$TMP/err" || fail "garbled input gave no warning"
# Every warning is one line naming the thing.
if grep -v "gpuboot: warning: " "$TMP/err" | grep -q .; then cat "$TMP/err"; fail "a warning spans lines"; fi
# What identifies a PCI function, garbled: detect fails, naming it.
for case in "device:0xZZZZ:0000:1b:00.0" "vendor:0x10de 0x10de:0000:43:00.0" "class:zeros:0000:52:00.0"; do
	attr=${case%%:*} rest=${case#*:}
	val=${rest%%:*} addr=${rest#*:}
	rm -rf "$TMP/p" && cp -a "$FIX/h100x8-ubuntu2204" "$TMP/p"
	f=$TMP/p/sys/bus/pci/devices/$addr/$attr
	case $val in
	zeros) head -c 100000 /dev/zero >"$f" ;;
	*) printf '%s\n' $val >"$f" ;;
	esac
	expect_exit 1 "$GB" --root "$TMP/p" detect --json
	grep -q "devices/$addr/$attr" "$TMP/err" || fail "garbled $attr not named: $(cat "$TMP/err")"
done
# A tree that is empty is not a root filesystem: said so, exit 2, not a crash
# and not "CPU architecture unknown".
mkdir "$TMP/empty"
expect_exit 2 "$GB" --root "$TMP/empty" detect --json
grep -q "no os-release under .*: is this a root filesystem?" "$TMP/err" || fail "empty root: $(cat "$TMP/err")"
# A tree with only an os-release is a machine we know little about, not a crash.
mkdir -p "$TMP/bare/etc" && printf 'ID=debian\nVERSION_ID="12"\n' >"$TMP/bare/etc/os-release"
expect_exit 0 "$GB" --root "$TMP/bare" detect --json
echo ok
