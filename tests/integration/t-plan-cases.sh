# Plans for machines that are not this one, refusals and their exit codes,
# site overrides, and bad profiles and configuration (exit 2, file:line).
. tests/integration/lib.sh
export GPUBOOT_FAKE_OPS=clock:1796040000000000000
H200=$FIX/h200-ubuntu2404
j() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); print(eval(sys.argv[1]))" "$1"; }

# This machine has no GPU: exit 11, and it says how to plan for an image.
expect_exit 11 "$GB" --root "$FIX/nogpu-debian12" plan
grep -q -- "--target-gpu" "$TMP/err" || fail "no-GPU refusal does not mention --target-gpu"

# Image builds: target OS and GPU.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:22.04 --target-gpu H100 --profile minimal --json
[ "$(j 'd["driver"]["version"]')" = "580.178.04" ] || fail "minimal H100 on 22.04: $(j 'd["driver"]')"
[ "$(j 'd["driver"]["module_flavor"]')" = "open" ] || fail "H100 should get the open module"
[ "$(j 'd["kernel"]["action"]')" = "none" ] || fail "target OS: kernel decided at first boot"
[ "$(j 'd["target"]["source"]')" = "target" ] || fail "target not marked"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:9:aarch64 --target-gpu GH200 --json
[ "$(j 'd["driver"]["repository_arch"]')" = "sbsa" ] || fail "aarch64 repo should be sbsa"
[ "$(j 'd["cuda"]["platform"]')" = "linux-sbsa" ] || fail "GH200 CUDA platform"
# An HGX board (NVSwitches): the fabric manager must run at the driver's
# exact version. The packages method installs it beside the driver, under
# the name of the repository's generation (data/nvswitch-facts-2026-12.md):
# NVIDIA's nvidia-fabricmanager from R580, nvidia-fabricmanager-<branch>
# (apt) and nvidia-fabric-manager (rpm) before; a method that brings none
# (runfile, Debian's own packages) is refused before any change, naming the
# method that does.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu 2330x8 --profile minimal --json
[ "$(j 'd["driver"]["packages"]')" = "['nvidia-driver-pinning-580', 'nvidia-open', 'nvidia-fabricmanager']" ] ||
	fail "HGX x8, ubuntu 24.04: $(j 'd["driver"]["packages"]')"
j '[x["reason"] for x in d["daemons"]][1]' | grep -q "NVSwitches assumed (an 8-GPU HGX board, --target-gpu): .*nvidia-fabricmanager is installed with the driver at its version 580.178.04 and held there" ||
	fail "HGX x8: $(j 'd["daemons"]')"
# The open kernel modules begin with R515 (the catalog's open_module_from):
# a profile asking for them on a pinned older branch is refused by the plan,
# before prepare changes anything (it was the runfile install's refusal).
printf '[driver]\nbranch = R470\nmodule_flavor = open\n[cuda]\npolicy = none\n' >"$TMP/r470open.profile"
expect_exit 10 "$GB" --root "$FIX/t4-nouveau-ubuntu2204" plan --profile "$TMP/r470open.profile"
grep -q "the profile asks for the open module, which R470 does not have (NVIDIA's open kernel modules begin with R515)" "$TMP/out" ||
	fail "R470 open: $(cat "$TMP/out" "$TMP/err")"
printf '[driver]\nbranch = R535\nmodule_flavor = open\n[cuda]\npolicy = none\n' >"$TMP/r535open.profile"
expect_exit 0 "$GB" --root "$FIX/t4-nouveau-ubuntu2204" plan --profile "$TMP/r535open.profile" --json
[ "$(j 'd["driver"]["module_flavor"]')" = "open" ] || fail "R535 open: $(j 'd["driver"]')"
printf '[driver]\nbranch = R570\n[cuda]\npolicy = none\n' >"$TMP/r570.profile"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:22.04 --target-gpu 2330x8 --profile "$TMP/r570.profile" --json
[ "$(j 'd["driver"]["packages"][-1]')" = "nvidia-fabricmanager-570" ] || fail "R570 apt: $(j 'd["driver"]["packages"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:9 --target-gpu 2330x8 --profile minimal --json
[ "$(j 'd["driver"]["packages"]')" = "['@nvidia-driver:580-open', 'nvidia-fabricmanager']" ] || fail "rhel9 HGX: $(j 'd["driver"]["packages"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:9 --target-gpu 2330x8 --profile "$TMP/r570.profile" --json
[ "$(j 'd["driver"]["packages"][-1]')" = "nvidia-fabric-manager" ] || fail "R570 rpm: $(j 'd["driver"]["packages"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os amzn:2023 --target-gpu 2330x8 --profile minimal --json
[ "$(j 'd["driver"]["packages"]')" = "['@nvidia-driver:580-open', 'nvidia-fabricmanager']" ] || fail "AL2023 HGX: $(j 'd["driver"]["packages"]')"
# RHEL 10: NVIDIA's repository key is not pinned, so the plan's method is the
# runfile, whose fabric manager comes only from a trusted redistributable
# manifest (a signed mirror's; `plan` reads no mirror): refused, naming both fixes.
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:10 --target-gpu 2330x8 --profile minimal --json
j 'd["refusal"]["reason"]' | grep -q "the runfile method has no trusted source for it" || fail "rhel10 HGX: $(j 'd["refusal"]')"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu 2330x8 --profile minimal --method runfile --json
j 'd["refusal"]["reason"]' | grep -q "the fabric manager must run at the driver.s version 580.178.04, and the runfile method has no trusted source for it .*use --method packages.*a signed mirror (--mirror) listing compute/nvidia-driver/redist/redistrib_580.178.04.json" ||
	fail "HGX x8 runfile: $(j 'd["refusal"]')"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os debian:12 --target-gpu 2330x8 --profile minimal --method distro --json
j 'd["refusal"]["reason"]' | grep -q "debian 12 packages no fabric manager (none is installed); use --method packages: NVIDIA's debian12 repository" ||
	fail "HGX x8 Debian's own packages: $(j 'd["refusal"]')"
# The captured HGX H100: its R535 ended, so lts replaces it, and the
# fabric manager with it (nvidia-fabricmanager-535 -> nvidia-fabricmanager).
HGX=$TMP/hgx
cp -a "$FIX/h100x8-ubuntu2204" "$HGX"
expect_exit 0 "$GB" --root "$HGX" plan --profile minimal --json
[ "$(j 'd["gpus"][0]["count"]')" = "8" ] || fail "x8 count lost"
[ "$(j 'd["driver"]["action"]')" = "replace" ] || fail "HGX: $(j 'd["driver"]["action_reason"]')"
[ "$(j 'd["driver"]["packages"][-1]')" = "nvidia-fabricmanager" ] || fail "HGX replaced without its fabric manager: $(j 'd["driver"]["packages"]')"
[ "$(j '[x["name"] for x in d["daemons"]]')" = "['nvidia-persistenced', 'nvidia-fabricmanager']" ] || fail "HGX x8 needs the fabric manager"
# The same with the runfile method: the replacement would be refused, so the
# ended branch is kept, and the warning says why.
expect_exit 0 "$GB" --root "$HGX" plan --profile minimal --method runfile --json
[ "$(j 'd["driver"]["action"]')" = "keep" ] || fail "HGX runfile: $(j 'd["driver"]["action_reason"]')"
j '[w["text"] for w in d["warnings"] if w["code"] == "branch-eol"][0]' | grep -q "the runfile method has no trusted source for it" ||
	fail "HGX runfile keep: $(j 'd["warnings"]')"
# A kept driver's fabric manager: replace_installed = never keeps the
# captured R535, whose fabric manager has no package (none installed): the
# plan installs nvidia-fabricmanager-535 at 535.183.01 alone from NVIDIA's
# repository, held, nothing of the driver.
printf '[install]\nreplace_installed = never\n' >"$TMP/never.conf"
expect_exit 0 "$GB" --root "$HGX" plan --profile minimal --config "$TMP/never.conf" --json
[ "$(j '[d["driver"][k] for k in ("action", "method", "repository")]')" = "['keep', 'none', 'ubuntu2204']" ] &&
	[ "$(j 'd["driver"]["packages"]')" = "['nvidia-fabricmanager-535']" ] || fail "HGX kept, no FM: $(j 'd["driver"]')"
j 'd["driver"]["method_reason"]' | grep -q "its fabric manager only (none is installed): nvidia-fabricmanager-535 535.183.01 .* no driver package, no DKMS, no module rebuilt" ||
	fail "HGX kept, no FM: $(j 'd["driver"]["method_reason"]')"
j '[x["reason"] for x in d["daemons"] if x["name"] == "nvidia-fabricmanager"][0]' | grep -q "installed beside the kept driver at its version 535.183.01" ||
	fail "HGX kept, no FM: $(j 'd["daemons"]')"
# --offline downloads nothing: refused before any change, saying so
GPUBOOT_FAKE_OPS="clock:1796040000000000000,root=$HGX,record=$TMP/hgxoff.ops" expect_exit 10 "$GB" --root "$HGX" run --offline \
	--profile minimal --config "$TMP/never.conf" --state-dir "$TMP/hgxoff.state" --run-dir "$TMP/hgxoff.state/run"
grep -q "kept driver's version 535.183.01 (none is installed), and --offline downloads nothing" "$TMP/err" &&
	[ ! -s "$TMP/hgxoff.ops" ] || fail "HGX kept, no FM, --offline: $(tail -3 "$TMP/err")"
# ... and one of another version is replaced at the driver's
HGXM=$TMP/hgx-fm-old
cp -a "$HGX" "$HGXM"
printf '\nPackage: nvidia-fabricmanager-535\nStatus: install ok installed\nArchitecture: amd64\nVersion: 535.161.08-1\n' >>"$HGXM/var/lib/dpkg/status"
expect_exit 0 "$GB" --root "$HGXM" plan --profile minimal --config "$TMP/never.conf" --json
[ "$(j 'd["driver"]["packages"]')" = "['nvidia-fabricmanager-535']" ] || fail "HGX kept, FM 535.161.08: $(j 'd["driver"]')"
j 'd["driver"]["method_reason"]' | grep -q "replacing the installed one of another version" || fail "HGX kept, old FM: $(j 'd["driver"]["method_reason"]')"
# ... and at the driver's version nothing is planned: the plan changes nothing
sed -i 's/^Version: 535.161.08-1$/Version: 535.183.01-1/' "$HGXM/var/lib/dpkg/status"
expect_exit 0 "$GB" --root "$HGXM" plan --profile minimal --config "$TMP/never.conf" --json
[ "$(j 'd["driver"]["packages"]')" = "[]" ] && [ "$(j 'd["driver"]["method_reason"]')" = "the installed driver is kept: nothing to install" ] ||
	fail "HGX kept, FM at its version: $(j 'd["driver"]')"
# Debian's own driver kept (R535, Debian 12's branch) on an HGX board: Debian
# packages no fabric manager, so the plan refuses (exit 10) before any
# change, naming --method packages; the run changes nothing.
DEBK=$TMP/debian-kept
cp -a "$FIX/debian12-nvidia535-disk" "$DEBK"
expect_exit 10 "$GB" --root "$DEBK" plan --target-gpu 2330x8 --profile minimal --json
j 'd["refusal"]["reason"]' | grep -q "kept driver's version 535.261.03 (none is installed), and R535 is debian 12's own driver, whose packages bring no fabric manager; use --method packages to replace the driver with NVIDIA's" ||
	fail "Debian kept on HGX: $(j 'd["refusal"]')"
GPUBOOT_FAKE_OPS="clock:1796040000000000000,root=$DEBK,record=$TMP/debk.ops" expect_exit 10 "$GB" --root "$DEBK" run --target-gpu 2330x8 \
	--profile minimal --state-dir "$TMP/debk.state" --run-dir "$TMP/debk.state/run"
[ ! -s "$TMP/debk.ops" ] && diff -r --no-dereference "$FIX/debian12-nvidia535-disk" "$DEBK" >/dev/null || fail "Debian kept on HGX: the run changed the root: $(cat "$TMP/debk.ops" 2>/dev/null)"
# GB200/GB300 compute trays (NVL72): IMEX at the driver's version with the
# driver (nvidia-imex from R580, nvidia-imex-<branch> before), started after
# the modules with the site's [imex] nodes; without them the plan warns
# (imex-not-configured: single-node only) and invents no list.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:aarch64 --target-gpu 2941x4 --profile minimal --json
[ "$(j 'd["driver"]["packages"]')" = "['nvidia-driver-pinning-580', 'nvidia-open', 'nvidia-imex']" ] || fail "GB200: $(j 'd["driver"]["packages"]')"
[ "$(j '[w["code"] for w in d["warnings"]]')" = "['imex-not-configured']" ] || fail "GB200 without nodes: $(j 'd["warnings"]')"
j '[x["reason"] for x in d["daemons"] if x["name"] == "nvidia-imex"][0]' | grep -q "not configured (\[imex\] nodes is unset in gpuboot.conf): not started, single-node only" ||
	fail "GB200 without nodes: $(j 'd["daemons"]')"
printf '[imex]\nnodes = 10.1.0.11 10.1.0.12, 10.1.0.13\n' >"$TMP/imex.conf"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:9:aarch64 --target-gpu 31c2x4 --profile minimal --config "$TMP/imex.conf" --json
[ "$(j 'd["driver"]["packages"]')" = "['@nvidia-driver:580-open', 'nvidia-imex']" ] || fail "GB300 rhel9: $(j 'd["driver"]["packages"]')"
[ "$(j '[w["code"] for w in d["warnings"]]')" = "[]" ] || fail "GB300 with nodes: $(j 'd["warnings"]')"
j '[x["reason"] for x in d["daemons"] if x["name"] == "nvidia-imex"][0]' | grep -q "nodes_config.cfg from the site's \[imex\] nodes (3), then started after the modules" ||
	fail "GB300 with nodes: $(j 'd["daemons"]')"
printf '[driver]\nbranch = R570\n[cuda]\npolicy = none\n' >"$TMP/r570gb.profile"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:aarch64 --target-gpu 2941x4 --profile "$TMP/r570gb.profile" --json
[ "$(j 'd["driver"]["packages"][-1]')" = "nvidia-imex-570" ] || fail "GB200 R570: $(j 'd["driver"]["packages"]')"
# GH200 is no NVL72 tray: no IMEX
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:aarch64 --target-gpu GH200 --profile minimal --json
[ "$(j '[x["name"] for x in d["daemons"]]')" = "['nvidia-persistenced']" ] || fail "GH200: $(j 'd["daemons"]')"
# a name, a repeated address or an empty list is a configuration error (exit 2, file:line)
for bad in "nodes = tray1.example" "nodes = 10.1.0.11 10.1.0.11" "nodes ="; do
	printf '[imex]\n%s\n' "$bad" >"$TMP/imex-bad.conf"
	expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:aarch64 --target-gpu 2941x4 --config "$TMP/imex-bad.conf"
	grep -q "imex-bad.conf:2: " "$TMP/err" || fail "[imex] $bad: $(cat "$TMP/err")"
done
# NVIDIA's NVSwitch platform list names the HGX B300 and H800 8-GPU boards
# too (data/SOURCES.md): their plans need the fabric manager like H100's.
for g in B300x8 H800x8 B200x8; do
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu $g --profile minimal --json
	j '[x["reason"] for x in d["daemons"] if x["name"] == "nvidia-fabricmanager"][0]' | grep -q "NVSwitches assumed (an 8-GPU HGX board, --target-gpu): " ||
		fail "$g: no fabric manager planned: $(j 'd["daemons"]')"
	case $g in
	H800x8)
		[ "$(j 'd["driver"]["packages"][-1]')" = "nvidia-fabricmanager" ] || fail "$g: $(j 'd["driver"]["packages"]')"
		[ "$(j '"ib_umad" in [m["name"] for m in d["modules"]]')" = "False" ] || fail "$g: NVLSM on NVLink4"
		;;
	*)
		# NVLink5 switches behind the ConnectX bridge: NVLSM and infiniband-diags
		# at their own versions, ib_umad loaded, NVLSM checked before the
		# fabric manager's unit starts it
		[ "$(j 'd["driver"]["packages"][-3:]')" = "['nvidia-fabricmanager', 'nvlsm', 'infiniband-diags']" ] ||
			fail "$g: $(j 'd["driver"]["packages"]')"
		[ "$(j '[x["name"] for x in d["daemons"]]')" = "['nvidia-persistenced', 'nvlsm', 'nvidia-fabricmanager']" ] ||
			fail "$g: daemons $(j 'd["daemons"]')"
		[ "$(j '[m["name"] for m in d["modules"]][-1]')" = "ib_umad" ] || fail "$g: modules $(j 'd["modules"]')"
		;;
	esac
done
# From B200 on the board's switches are no PCI functions of the host (they sit
# behind its ConnectX bridge): a live host with eight B200s shows none, and the
# plan assumes them and says so. The root: the HGX H100 capture with its
# NVSwitch functions removed and its GPUs' device files saying B200's 2901.
HGXB=$TMP/hgx-b200
cp -a "$FIX/h100x8-ubuntu2204" "$HGXB"
for d in "$HGXB"/sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor")" = 0x10de ] || continue
	case $(cat "$d/class") in
	0x0680*) rm -rf "$d" ;;
	0x0302*) echo 0x2901 >"$d/device" ;;
	esac
done
expect_exit 0 "$GB" --root "$HGXB" plan --profile minimal --json
[ "$(j 'len(d["gpus"]) == 1 and d["gpus"][0]["count"] == 8')" = "True" ] || fail "8 B200: $(j 'd["gpus"]')"
j '[x["reason"] for x in d["daemons"] if x["name"] == "nvidia-fabricmanager"][0]' | grep -q "NVSwitches assumed (eight GPUs of an HGX board whose switches sit behind its ConnectX bridge, no PCI functions of this host)" ||
	fail "8 B200, no switch functions: $(j 'd["daemons"]')"
"$GB" --root "$HGXB" detect --json >"$TMP/out" 2>"$TMP/err" || fail "detect of the B200 root"
[ "$(j 'len(d["nvswitches"])')" = "0" ] || fail "the root still has switch functions"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os debian:11 --target-gpu "Tesla K80" --profile minimal --json
[ "$(j 'd["driver"]["branch"]')" = "470" ] || fail "K80 must stay on R470: $(j 'd["driver"]["reason"]')"
[ "$(j 'd["driver"]["module_flavor"]')" = "proprietary" ] || fail "Kepler is proprietary only"
expect_exit 12 "$GB" --root "$FIX/nogpu-debian12" plan --target-os debian:11 --target-gpu "Tesla K80" --profile training
grep -q "no CUDA release" "$TMP/err" || fail "K80 training should say no CUDA fits"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:22.04 --target-gpu B300 --profile minimal --json
[ "$(j 'd["driver"]["branch"] >= 580 and d["driver"]["module_flavor"] == "open"')" = "True" ] || fail "B300 needs R580+ open"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os alpine:3.19 --target-gpu L4
grep -q "musl" "$TMP/err" || fail "alpine refusal does not name musl"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:18.04 --target-gpu L4
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os fedora:41 --target-gpu L4 --json
[ "$(j 'd["driver"]["method"]')" = "runfile" ] || fail "no NVIDIA repo for fedora 41: runfile"
# Oracle Linux (os-release ID "ol") and CentOS: one catalog row each
# (src/catalog/distro.c). The --target-os parser's own list once refused
# them (exit 2) while the plan mapped them to NVIDIA's rhel repositories,
# and no oldest release was known for them, so ol 7 was not refused.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ol:9.4 --target-gpu L4 --profile minimal --json
[ "$(j 'd["driver"]["method"]')" = "packages" ] || fail "ol 9.4: $(j 'd["driver"]["method"]')"
[ "$(j 'd["driver"]["repository"]')" = "rhel9" ] || fail "ol 9.4: NVIDIA's rhel9 repository, not $(j 'd["driver"]["repository"]')"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ol:7.9 --target-gpu L4
grep -q "older than the oldest supported release (ol 8)" "$TMP/err" || fail "ol 7.9: $(cat "$TMP/err")"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os centos:7 --target-gpu L4
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-os al2023:2023 --target-gpu L4
grep -q "unknown distribution 'al2023'" "$TMP/err" || fail "al2023 is no os-release ID: $(cat "$TMP/err")"
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu --target-gpu L4
grep -q "ID:VERSION" "$TMP/err" || fail "bad --target-os not explained"
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-gpu Z9000
grep -q "Z9000" "$TMP/err" || fail "bad --target-gpu not named"

# An unknown device ID: exit 12 naming the ID and the override file; then the override makes it plannable.
cp -a "$H200" "$TMP/m"
printf '0x3e00\n' >"$TMP/m/sys/bus/pci/devices/0000:00:06.0/device"
expect_exit 12 "$GB" --root "$TMP/m" plan
grep -q "10de:3e00" "$TMP/err" && grep -q "/etc/gpuboot/gpus.d/3e00.conf" "$TMP/err" || fail "unknown ID refusal: $(cat "$TMP/err")"
mkdir -p "$TMP/m/etc/gpuboot/gpus.d"
printf '[gpu 3e00]\nname = Future Blackwell Server\narchitecture = blackwell\ncompute_capability = 12.0\nopen_module = required\nmin_branch = R575\n' \
	>"$TMP/m/etc/gpuboot/gpus.d/3e00.conf"
expect_exit 0 "$GB" --root "$TMP/m" plan --json
[ "$(j 'd["gpus"][0]["name"]')" = "Future Blackwell Server" ] || fail "override name not used"
[ "$(j 'd["driver"]["module_flavor"]')" = "open" ] || fail "override open_module=required ignored"
j 'd["gpus"][0]["source"]' | grep -q "gpus.d/3e00.conf:2" || fail "override source not cited"
printf '[gpu 3e00]\narchitecture = hopper\nbranch = R580\n' >"$TMP/m/etc/gpuboot/gpus.d/3e00.conf"
expect_exit 0 "$GB" --root "$TMP/m" plan --json
[ "$(j 'd["driver"]["branch"]')" = "580" ] || fail "override branch pin ignored"
printf '[gpu 3e00]\narchitecture = lovelace\n' >"$TMP/m/etc/gpuboot/gpus.d/3e00.conf"
expect_exit 2 "$GB" --root "$TMP/m" plan
grep -q "gpus.d/3e00.conf:2: architecture" "$TMP/err" || fail "bad override not located: $(cat "$TMP/err")"
rm -r "$TMP/m/etc/gpuboot/gpus.d"
printf '[profile]\ndescription = allow\n[driver]\nallow_unknown_gpus = yes\n[cuda]\npolicy = none\n' >"$TMP/unknown.profile"
expect_exit 0 "$GB" --root "$TMP/m" plan --profile "$TMP/unknown.profile" --json
[ "$(j 'd["driver"]["module_flavor"]')" = "open" ] || fail "unknown GPU allowed: newest branch, open module"

# A GPU mix no branch supports: Kepler (last R470) with Hopper (R525+).
cp -a "$FIX/h100x8-ubuntu2204" "$TMP/mix"
printf '0x102d\n' >"$TMP/mix/sys/bus/pci/devices/0000:df:00.0/device"
expect_exit 12 "$GB" --root "$TMP/mix" plan --profile minimal
grep -q "no driver branch supports this GPU mix" "$TMP/err" || fail "mix refusal: $(cat "$TMP/err")"

# Secure Boot on a distribution without signed modules: refused before anything changes, unless a key is configured.
cp -a "$FIX/a100-rhel9" "$TMP/sb"
printf '\006\000\000\000\001' >"$TMP/sb/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
expect_exit 10 "$GB" --root "$TMP/sb" plan
grep -q "signing_key" "$TMP/err" || fail "Secure Boot refusal does not name the fix"
mkdir -p "$TMP/sb/etc/gpuboot"
# (a real key and certificate: the pair is checked before planning; this root has no /proc/keys,
# so whether the kernel trusts it is decided when the module loads)
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=MOK" -keyout "$TMP/MOK.priv" \
	-outform DER -out "$TMP/MOK.der" 2>/dev/null
printf '[secure_boot]\nsigning_key = %s\nsigning_cert = %s\n' "$TMP/MOK.priv" "$TMP/MOK.der" >"$TMP/sb/etc/gpuboot/gpuboot.conf"
expect_exit 0 "$GB" --root "$TMP/sb" plan --json
[ "$(j 'd["secure_boot"]["strategy"]')" = "sign-with-key" ] || fail "signing key not used"

# Site pins.
printf '[pins]\ndriver = 570.195.03\ncuda = 12.8\n[checks]\nskip = disk, network\n' >"$TMP/site.conf"
expect_exit 0 "$GB" --root "$FIX/l4-debian12" plan --config "$TMP/site.conf" --json
[ "$(j 'd["driver"]["version"]')" = "570.195.03" ] || fail "driver pin: $(j 'd["driver"]')"
[ "$(j 'd["cuda"]["version"]')" = "12.8.0" ] || fail "cuda pin"
[ "$(j 'd["verify"]["skip"]')" = "['disk', 'network']" ] || fail "skip list"
# The site's kernel floor: Debian 12's kernel from bookworm-backports, Ubuntu's HWE; past what the
# distribution has, refused; not a version, exit 2 with the line.
printf '[kernel]\nminimum = 6.12\n' >"$TMP/site.conf"
expect_exit 0 "$GB" --root "$FIX/l4-debian12" plan --config "$TMP/site.conf" --json
[ "$(j 'd["kernel"]["action"], d["kernel"]["package"], d["kernel"]["headers"], d["kernel"]["suite"], d["kernel"]["minimum"], d["kernel"]["reboot_required"]')" = \
	"('install-hwe', 'linux-image-amd64', 'linux-headers-amd64', 'bookworm-backports', '6.12', True)" ] || fail "debian 12, minimum 6.12: $(j 'd["kernel"]')"
j 'd["kernel"]["reason"]' | grep -q "older than 6.12 (the site's \[kernel\] minimum)" || fail "reason: $(j 'd["kernel"]["reason"]')"
printf '[kernel]\nminimum = 6.13.2\n' >"$TMP/site.conf"
expect_exit 10 "$GB" --root "$FIX/l4-debian12" plan --config "$TMP/site.conf"
grep -q "older than 6.13 (the site's \[kernel\] minimum), and no newer kernel is known for debian 12" "$TMP/err" ||
	fail "debian 12, minimum 6.13: $(cat "$TMP/err")"
printf '[kernel]\nminimum = 6.8\n' >"$TMP/site.conf"
expect_exit 0 "$GB" --root "$HGX" plan --config "$TMP/site.conf" --json
[ "$(j 'd["kernel"]["action"], d["kernel"]["package"], d["kernel"]["suite"]')" = "('install-hwe', 'linux-generic-hwe-22.04', None)" ] ||
	fail "ubuntu 22.04 on 5.15, minimum 6.8: $(j 'd["kernel"]')"
printf '[kernel]\nminimum = 6.1\n' >"$TMP/site.conf"
expect_exit 0 "$GB" --root "$FIX/l4-debian12" plan --config "$TMP/site.conf" --json
[ "$(j 'd["kernel"]["action"]')" = "none" ] || fail "debian 12, minimum 6.1 is met: $(j 'd["kernel"]')"
printf '[kernel]\nminimum = newest\n' >"$TMP/site.conf"
expect_exit 2 "$GB" --root "$FIX/l4-debian12" plan --config "$TMP/site.conf"
grep -q "site.conf:2: minimum must be a kernel version like 6.12" "$TMP/err" || fail "bad minimum: $(cat "$TMP/err")"
printf '[pins]\ndriver = 999.1.1\n' >"$TMP/site.conf"
expect_exit 2 "$GB" --root "$H200" plan --config "$TMP/site.conf"
printf '[pins]\ncuda = 13.0\n' >"$TMP/site.conf"
expect_exit 12 "$GB" --root "$FIX/v100-ubuntu2004" plan --config "$TMP/site.conf"
grep -q "no longer supports volta" "$TMP/err" || fail "CUDA 13 on V100 not refused: $(cat "$TMP/err")"

# Bad profiles and configuration: exit 2, file and line named, nothing else.
printf '[driver]\nbranch = newest\n' >"$TMP/bad.profile"
expect_exit 2 "$GB" --root "$H200" plan --profile "$TMP/bad.profile"
grep -q "bad.profile:2: branch must be" "$TMP/err" || fail "bad branch: $(cat "$TMP/err")"
printf '[verify]\nmin_gpu_memry_gib = 16\n' >"$TMP/bad.profile"
expect_exit 2 "$GB" --root "$H200" plan --profile "$TMP/bad.profile"
grep -q "bad.profile:2: unknown setting 'min_gpu_memry_gib'" "$TMP/err" || fail "typo not caught: $(cat "$TMP/err")"
printf 'branch = lts\n' >"$TMP/bad.profile"
expect_exit 2 "$GB" --root "$H200" plan --profile "$TMP/bad.profile"
grep -q "bad.profile:1: 'branch' comes before any \[section\]" "$TMP/err" || fail "sectionless key: $(cat "$TMP/err")"
printf '[cuda]\npolicy = newest-compatible\n' >"$TMP/bad.profile"
expect_exit 2 "$GB" --root "$H200" plan --profile "$TMP/bad.profile"
expect_exit 2 "$GB" --root "$H200" plan --profile nosuchprofile
grep -q "no profile 'nosuchprofile'" "$TMP/err" || fail "missing profile"
expect_exit 2 "$GB" --root "$H200" plan --profile /nonexistent/x.profile
printf '[site]\nmirror = ftp://example\n' >"$TMP/bad.conf"
expect_exit 2 "$GB" --root "$H200" plan --config "$TMP/bad.conf"
grep -q "bad.conf:2: mirror must be" "$TMP/err" || fail "bad mirror: $(cat "$TMP/err")"
# A site profile under the root wins over the built-in one of the same name.
cp -a "$H200" "$TMP/site"
mkdir -p "$TMP/site/etc/gpuboot/profiles"
sed 's/^branch = production/branch = R580/' profiles/training.profile >"$TMP/site/etc/gpuboot/profiles/training.profile"
expect_exit 0 "$GB" --root "$TMP/site" plan --json
[ "$(j 'd["driver"]["branch"]')" = "580" ] || fail "site profile not preferred"
[ "$(j 'd["profile_source"]')" = "/etc/gpuboot/profiles/training.profile" ] || fail "profile source"

# ---- plan2 (issue 10, plan truth): configuration errors and text plans ----
# The [checks] skip names gpuboot.conf accepts (known_checks[] in
# src/plan/profile.c) are exactly the check names the verifier emits: the
# string literals "group.name" in src/verify/*.c (gb_verify_add and its
# helpers num() and flag() take them), less file names.
verify_checks=$(grep -hoE '"[a-z0-9_]+\.[a-z0-9_]+"' src/verify/*.c | grep -vE '\.(h|c|so|ko|json|conf|txt)"$' | tr -d '"' | sort -u)
table_checks=$(sed -n '/^static const char \*const known_checks\[\] = {$/,/^};$/p' src/plan/profile.c |
	grep -oE '"[^"]+"' | tr -d '"' | sort -u)
[ "$(echo "$verify_checks" | wc -l)" -gt 20 ] || fail "found too few check names in src/verify: $verify_checks"
[ "$verify_checks" = "$table_checks" ] ||
	fail "known_checks[] in src/plan/profile.c differs from the checks in src/verify: $(printf '%s\n' "$verify_checks" >"$TMP/v"; printf '%s\n' "$table_checks" >"$TMP/t"; diff "$TMP/v" "$TMP/t" | grep '^[<>]' | tr '\n' ' ')"
# ... and the binary takes every one of them, and each group, with or without a trailing dot.
printf '[checks]\nskip = %s, %s\n' "$(echo "$verify_checks" | tr '\n' ',' | sed 's/,$//')" \
	"$(echo "$verify_checks" | sed 's/\..*/./' | sort -u | tr '\n' ',' | sed 's/,$//')" >"$TMP/skip.conf"
expect_exit 0 "$GB" --root "$H200" plan --config "$TMP/skip.conf" --json
[ "$(j 'd["verify"]["skip"][-1]')" = "$(echo "$verify_checks" | sed 's/\..*//' | sort -u | tail -n1)" ] || fail "a group's trailing dot not dropped: $(j 'd["verify"]["skip"]')"

# bad_config KIND TEXT 'FILE:LINE: message' [more grep patterns]: exit 2 with that message.
bad_config() {
	kind=$1 text=$2
	shift 2
	printf "$text" >"$TMP/bad.$kind"
	if [ "$kind" = conf ]; then opt=--config; else opt=--profile; fi
	expect_exit 2 "$GB" --root "$H200" plan "$opt" "$TMP/bad.$kind"
	for want in "$@"; do
		grep -qF -- "$want" "$TMP/err" || fail "expected '$want' in: $(cat "$TMP/err")"
	done
}
bad_config conf '[checks]\nskip = disk, netwrk\n' "bad.conf:2: unknown check 'netwrk' in skip (did you mean 'network'?)" " clocks, compute, "
bad_config conf '[checks]\nskip = memory.read_bandwdth\n' "(did you mean 'memory.read_bandwidth'?); the memory checks are memory.copy_bandwidth, "
bad_config profile '[cuda]\ncomponents = cuda_cudart, libcublass\n' "bad.profile:2: unknown CUDA component 'libcublass' (did you mean 'libcublas'?)"
bad_config profile '[driver]\nbranch = lts\nmodule_flavor = open\nbranch = R580\n' "bad.profile:4: duplicate key 'branch' in [driver], first at line 2"
bad_config conf '[trust]\nkey = /a.pub\nkey = /b.pub\n[pins]\ncuda = 12.8\n[pins]\ncuda = 13.0\n' "bad.conf:7: duplicate key 'cuda' in [pins], first at line 5"
bad_config profile '[driver]\nbranch = 580.95.06\n' "bad.profile:2: driver 580.95.06 is not a runfile in the catalog; the R580 versions nearest to it: " "580.95.05"
bad_config profile '[driver]\nbranch = R599\n' "bad.profile:2: no branch R599 in the catalog; it knows R470, "
bad_config conf '[pins]\ndriver = 999.1.1\n' "bad.conf:2: driver 999.1.1 is not a runfile in the catalog; it has no R999 runfile"
bad_config conf '[pins]\ncuda = 12.4\n' "bad.conf:2: CUDA 12.4 is known, but its redistrib manifest is not in the catalog" "installable: 11.8, 12.8, 13.0"
bad_config conf '[pins]\ncuda = 12.8.1\n' "bad.conf:2: no CUDA release 12.8.1 in the catalog"
bad_config conf '[pins]\ntoolkit = 1.17.3\n' "bad.conf:2: toolkit 1.17.3 is older than 1.19.1"

# The text plan shows everything --json does: each top-level key has its
# row, and every value (reasons included; true booleans by name) appears.
cat >"$TMP/cover.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
lines = text.splitlines()
label = {"profile": "profile ", "profile_source": "profile ", "date": "profile ", "target": "profile ", "catalog": "catalog ",
         "gpus": "gpu ", "refusal": "REFUSED ", "warnings": "WARNING ", "driver": "driver ", "cuda": "cuda ", "toolkit": "toolkit ",
         "kernel": "kernel ", "nouveau": "nouveau ", "secure_boot": "secure boot ", "daemons": "daemons ",
         "modules": "modules ", "module_params": "module param ", "verify": "verify "}
bad = []
for k, v in d.items():
    if k not in label:
        bad.append("new key '%s': show it in gb_plan_print and name its row here" % k)
    elif v not in (None, [], {}) and not any(l.startswith(label[k]) for l in lines):
        bad.append("no '%s' row for '%s'" % (label[k].strip(), k))
def leaves(path, v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(path + "." + k, x)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves("%s[%d]" % (path, i), x)
    else:
        yield path, v
for path, v in leaves("", d):
    key = path.rsplit(".", 1)[-1]
    if v is None or v is False:
        continue
    wants = [key, key.replace("_", " ")] if v is True else ["%g" % v] if isinstance(v, float) else [str(v)]
    if not any(w in text for w in wants):
        bad.append("%s = %r is not in the text plan" % (path, v))
if bad:
    sys.exit("\n".join(bad))
PY
text_covers_json() {
	set +e
	"$GB" "$@" --json >"$TMP/pj" 2>/dev/null
	a=$?
	"$GB" "$@" >"$TMP/pt" 2>/dev/null
	b=$?
	set -e
	[ "$a" = "$b" ] || fail "plan $* exits $a with --json, $b without"
	[ -s "$TMP/pj" ] || return 0
	python3 "$TMP/cover.py" "$TMP/pj" "$TMP/pt" || fail "the text plan lacks what --json has: $*"
}
for dir in "$FIX"/*/; do
	for prof in training hpc minimal; do
		text_covers_json --root "$dir" plan --profile "$prof"
	done
done
printf '[checks]\nskip = disk, network.link_rate\n[pins]\ntoolkit = 1.20.0\n' >"$TMP/site.conf"
text_covers_json --root "$H200" plan --config "$TMP/site.conf"
grep -q '^skip  *disk' "$TMP/pt" || fail "skipped checks not in the text plan"
text_covers_json --root "$FIX/nogpu-debian12" plan --target-os rhel:9:aarch64 --target-gpu GH200
text_covers_json --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu 2330x8
text_covers_json --root "$FIX/nogpu-debian12" plan --target-os debian:11 --target-gpu "Tesla K80" --profile minimal
# ---- end plan2 ----
# ---- plan truth (issue 10): installed state, arch, methods, gates, names ----
jq_() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); print($1)"; }
# A satisfying driver is kept (the H200: 580.159.04 open, loaded, CUDA 13.0 there).
expect_exit 0 "$GB" --root "$H200" plan --json
[ "$(jq_ 'd["driver"]["action"], d["driver"]["installed"]["version"], d["cuda"]["action"]')" = "keep 580.159.04 keep" ] ||
	fail "H200 not kept: $(jq_ 'd["driver"]')"
[ "$(jq_ 'd["kernel"]["action"], d["nouveau"]["action"]')" = "none none" ] || fail "H200 kernel/nouveau"
# An old branch is replaced, and the reason names what is wrong.
expect_exit 0 "$GB" --root "$HGX" plan --json
[ "$(jq_ 'd["driver"]["action"]')" = "replace" ] || fail "535 under CUDA 13 not replaced"
jq_ 'd["driver"]["action_reason"]' | grep -q "535.183.01 proprietary: CUDA 13.0 needs >= 580.65.06" || fail "replace reason: $(jq_ 'd["driver"]["action_reason"]')"
# replace_installed = never turns that into a refusal; = always replaces even the H200's.
printf '[install]\nreplace_installed = never\n' >"$TMP/never.conf"
expect_exit 12 "$GB" --root "$HGX" plan --config "$TMP/never.conf"
grep -q "replace_installed = never" "$TMP/err" || fail "never: $(cat "$TMP/err")"
printf '[install]\nreplace_installed = sometimes\n' >"$TMP/bad.conf"
expect_exit 2 "$GB" --root "$H200" plan --config "$TMP/bad.conf"
grep -q "bad.conf:2: replace_installed must be never, if-unsatisfied or always" "$TMP/err" || fail "bad replace_installed: $(cat "$TMP/err")"
# A custom kernel that needs a module built: named, not a package that cannot exist.
printf '[pins]\ndriver = 570.195.03\n' >"$TMP/pin.conf"
expect_exit 10 "$GB" --root "$H200" plan --config "$TMP/pin.conf"
grep -q "custom kernel 6.18.44-fc-v657-gpu: .* supply its headers" "$TMP/err" || fail "custom kernel: $(cat "$TMP/err")"
# The Debian disk image with Debian's 535 built by DKMS: kept for a T4 (image build).
expect_exit 0 "$GB" --root "$FIX/debian12-nvidia535-disk" plan --target-gpu T4 --profile minimal --json
[ "$(jq_ 'd["driver"]["action"], d["driver"]["version"], d["driver"]["module_flavor"]')" = "keep 535.261.03 open" ] ||
	fail "Debian image: $(jq_ 'd["driver"]')"
# ---- what ages (docs/plan.md, Warnings) ----
# That R535 ended on 2026-06-30: kept all the same (Debian's own branch: only
# an explicit method moves the machine off it; the guests have no network),
# warned with the way out; --method packages replaces it, naming the end.
[ "$(jq_ '[w["code"] for w in d["warnings"]]')" = "['branch-eol']" ] || fail "Debian image warnings: $(jq_ 'd["warnings"]')"
jq_ 'd["warnings"][0]["text"]' | grep -q "R535 (ltsb) reached its end of life on 2026-06-30.* the plan keeps 535.261.03: R535 is debian 12's own driver branch" ||
	fail "Debian image warning: $(jq_ 'd["warnings"]')"
jq_ 'd["warnings"][0]["fix"]' | grep -q "^--method packages or --method runfile (or \[install\] method in gpuboot.conf) replaces it with 580.178.04" ||
	fail "Debian image fix: $(jq_ 'd["warnings"]')"
expect_exit 0 "$GB" --root "$FIX/debian12-nvidia535-disk" plan --target-gpu T4 --profile minimal
grep -q "^WARNING      branch-eol  .* R535 (ltsb) reached its end of life on 2026-06-30.*; fix: --method packages" "$TMP/out" ||
	fail "text plan without the warning: $(cat "$TMP/out")"
expect_exit 0 "$GB" --root "$FIX/debian12-nvidia535-disk" plan --target-gpu T4 --profile minimal --method packages --json
[ "$(jq_ 'd["driver"]["action"], d["driver"]["version"], len(d["warnings"])')" = "replace 580.178.04 0" ] ||
	fail "Debian image, --method packages: $(jq_ 'd["driver"]')"
jq_ 'd["driver"]["action_reason"]' | grep -q "R535 reached its end of life on 2026-06-30 .*and the lts policy wants a supported branch; replaced by 580.178.04" ||
	fail "EOL replace reason: $(jq_ 'd["driver"]["action_reason"]')"
# The distro method installs Debian's ended branches (bookworm's 535,
# trixie's 550): nothing newer that way; warned.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os debian:13 --target-gpu L4 --profile inference --method distro --json
[ "$(jq_ 'd["driver"]["version"], [w["code"] for w in d["warnings"]]')" = "550.163.01 ['branch-eol']" ] || fail "trixie distro: $(jq_ 'd["warnings"]')"
jq_ 'd["warnings"][0]["fix"]' | grep -q "^--method runfile installs R580" || fail "trixie fix: $(jq_ 'd["warnings"]')"
# Ubuntu with Secure Boot: Ubuntu's signed precompiled modules come from
# Ubuntu's archive, which no method installs from yet: the run is refused at
# its plan (exit 10), naming the packages, and nothing is changed (before,
# the install failed after prepare had written the nouveau blacklist).
SBU=$TMP/sbu
cp -a "$FIX/secureboot-ubuntu2204" "$SBU"
expect_exit 10 "$GB" --root "$SBU" run --profile minimal --state-dir "$TMP/sbu-state"
grep -q "install those two packages first (gpuboot then keeps and verifies them), or set \[secure_boot\] signing_key" "$TMP/err" ||
	fail "Ubuntu Secure Boot refusal: $(cat "$TMP/err")"
[ ! -e "$SBU/etc/modprobe.d/gpuboot-blacklist-nouveau.conf" ] || fail "a refused plan changed the machine"
diff -r --no-dereference "$FIX/secureboot-ubuntu2204" "$SBU" >/dev/null || fail "a refused plan changed the root: $(diff -r --no-dereference "$FIX/secureboot-ubuntu2204" "$SBU" | head -3)"
# CUDA 13 dropped Ubuntu 20.04 (NVIDIA's CUDA 13.0 notes): the newest CUDA
# there is 12.x, said so; a pin of 13.0 is refused (exit 10).
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:20.04 --target-gpu H100 --profile inference --json
[ "$(jq_ 'd["cuda"]["version"]')" = "12.8.0" ] || fail "CUDA on 20.04: $(jq_ 'd["cuda"]')"
jq_ 'd["cuda"]["reason"]' | grep -q "CUDA 13 dropped ubuntu 20.04 (NVIDIA's CUDA 13.0 release notes)" || fail "20.04 reason: $(jq_ 'd["cuda"]["reason"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:22.04 --target-gpu H100 --profile inference --json
[ "$(jq_ 'd["cuda"]["version"]')" = "13.0.0" ] || fail "CUDA on 22.04: $(jq_ 'd["cuda"]')"
printf '[cuda]\npolicy = 13.0\ncomponents = cuda_cudart\n' >"$TMP/cuda13.profile"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:20.04 --target-gpu H100 --profile "$TMP/cuda13.profile" --json
jq_ 'd["refusal"]["reason"]' | grep -q "pinned CUDA 13.0 does not support ubuntu 20.04: NVIDIA dropped it from CUDA 13.0 on" || fail "20.04 pin: $(jq_ 'd["refusal"]')"
# A fresh branch and a fresh catalog: no warning (the fixtures' date);
# the catalog (2026-12-04) 121 days later is stale, refusals included.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu H100 --profile inference --json
[ "$(jq_ 'd["warnings"]')" = "[]" ] || fail "fresh plan warned: $(jq_ 'd["warnings"]')"
GPUBOOT_FAKE_OPS=clock:1806840000000000000 expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu H100 --profile inference --json
[ "$(jq_ 'd["date"], [w["code"] for w in d["warnings"]]')" = "2027-04-04 ['catalog-stale']" ] || fail "stale catalog: $(jq_ 'd["date"], d["warnings"]')"
GPUBOOT_FAKE_OPS=clock:1806753600000000000 expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu H100 --profile inference --json
[ "$(jq_ 'd["date"], d["warnings"]')" = "2027-04-03 []" ] || fail "a 120-day-old catalog warned: $(jq_ 'd["warnings"]')"
GPUBOOT_FAKE_OPS=clock:1806840000000000000 expect_exit 11 "$GB" --root "$FIX/nogpu-debian12" plan --json
[ "$(jq_ '[w["code"] for w in d["warnings"]]')" = "['catalog-stale']" ] || fail "refusal without the catalog's age: $(cat "$TMP/out")"
# Arch: a Grace part implies aarch64; the machine's arch is the default; arm64 is aarch64; a contradiction is exit 2.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-gpu GH200 --json
[ "$(jq_ 'd["target"]["arch"], d["driver"]["repository_arch"]')" = "aarch64 sbsa" ] || fail "GH200 arch: $(jq_ 'd["target"]')"
expect_exit 0 "$GB" --root "$FIX/gh200-ubuntu2404-arm64" plan --target-os ubuntu:22.04 --json
[ "$(jq_ 'd["target"]["arch"]')" = "aarch64" ] || fail "target-os on aarch64 planned $(jq_ 'd["target"]["arch"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:arm64 --target-gpu T4G --profile inference --json
[ "$(jq_ 'd["target"]["arch"]')" = "aarch64" ] || fail "arm64 alias"
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04:x86_64 --target-gpu GB200
grep -q "attached only to aarch64 hosts" "$TMP/err" || fail "arch contradiction: $(cat "$TMP/err")"
# RHEL 10 and Debian 13: NVIDIA signs those repositories with keys gpuboot
# does not pin (CDF6BA43, 8793F200), so the plan never promises the packages
# method there (the run would refuse the key after prepare): the runfile,
# saying why; --method packages is refused before anything changes.
for os in rhel:10 debian:13; do
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os $os --target-gpu H100 --profile minimal --json
	[ "$(jq_ 'd["driver"]["method"]')" = runfile ] || fail "$os: $(jq_ 'd["driver"]["method"]')"
	jq_ 'd["driver"]["method_reason"]' | grep -q "with a key gpuboot does not pin yet" || fail "$os: $(jq_ 'd["driver"]["method_reason"]')"
	expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os $os --target-gpu H100 --profile minimal --method packages
	grep -q "key gpuboot does not pin yet, so it cannot be trusted; use --method runfile" "$TMP/err" || fail "$os packages: $(cat "$TMP/err")"
	! grep -q "key pinned" "$TMP/out" || fail "$os: the plan promises a pinned key"
done
# The hold-back is the vendor's exact stack (AWS's EKS AMI, nvidia-kmod-load.sh:
# g4dn, g5, g5g): T4, A10G and T4G on the proprietary module with the GSP
# firmware off (NVreg_EnableGpuFirmware=0, a module parameter of the plan,
# the vendor named); L4 and L40S on the open module, as that AMI loads them.
for g in T4 A10G; do
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu $g --profile inference --json
	[ "$(jq_ 'd["driver"]["module_flavor"], [(x["module"], x["params"]) for x in d["module_params"]]')" = "proprietary [('nvidia', 'NVreg_EnableGpuFirmware=0')]" ] ||
		fail "$g hold-back: $(jq_ 'd["driver"]["module_flavor"], d["module_params"]')"
	jq_ 'd["driver"]["module_flavor_reason"]' | grep -q "AWS's EKS AMI (Amazon Linux 2023) loads it with the proprietary module and the GSP firmware off, NVreg_EnableGpuFirmware=0" ||
		fail "$g reason: $(jq_ 'd["driver"]["module_flavor_reason"]')"
done
for g in L4 L40S; do
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu $g --profile inference --json
	[ "$(jq_ 'd["driver"]["module_flavor"], d["module_params"]')" = "open []" ] || fail "$g: $(jq_ 'd["driver"]["module_flavor"], d["module_params"]')"
done
# module_flavor = open overrides the hold-back, and with it its parameter
printf '[driver]\nmodule_flavor = open\n[cuda]\npolicy = none\n' >"$TMP/open.profile"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu T4 --profile "$TMP/open.profile" --json
[ "$(jq_ 'd["driver"]["module_flavor"], d["module_params"]')" = "open []" ] || fail "T4 open: $(jq_ 'd["driver"]["module_flavor"], d["module_params"]')"
# Gates the GPU cannot pass are refused at plan time, naming the gate and the figure.
expect_exit 12 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu T4 --profile training
grep -q "min_gpu_memory_gib = 16 cannot pass on Tesla T4 (15360 MiB" "$TMP/err" || fail "T4 gate: $(cat "$TMP/err")"
expect_exit 12 "$GB" --root "$FIX/v100-ubuntu2004" plan --profile training
grep -q "V100 SXM2 16GB (16160 MiB" "$TMP/err" || fail "V100 gate: $(cat "$TMP/err")"
# AWS's EFA is a high-speed NIC (a p5 is no "single node"): detect counts
# it, and the network gate applies.
E=$TMP/efa
cp -a "$FIX/h200-ubuntu2404" "$E"
mkdir -p "$E/sys/bus/pci/devices/0000:00:1f.0"
printf '0x1d0f\n' >"$E/sys/bus/pci/devices/0000:00:1f.0/vendor"
printf '0xefa1\n' >"$E/sys/bus/pci/devices/0000:00:1f.0/device"
printf '0x020000\n' >"$E/sys/bus/pci/devices/0000:00:1f.0/class"
expect_exit 0 "$GB" --root "$E" detect --json
[ "$(jq_ 'd["network"]["efa"]')" = "1" ] || fail "EFA not counted: $(jq_ 'd["network"]')"
expect_exit 0 "$GB" --root "$E" plan --json
[ "$(jq_ 'd["verify"]["network_gate_applies"]')" = "True" ] || fail "EFA: no network gate: $(jq_ 'd["verify"]["gates_reason"]')"
# The network gate applies to multi-node nodes only; disk and network are full-tier gates.
expect_exit 0 "$GB" --root "$H200" plan --json
[ "$(jq_ 'd["verify"]["network_gate_applies"]')" = "False" ] || fail "network gate on a single H200"
jq_ 'd["verify"]["gates_reason"]' | grep -q "measured by the full tier only" || fail "full-tier gates: $(jq_ 'd["verify"]["gates_reason"]')"
# NVSwitches with the fabric manager turned off: refused.
printf '[cuda]\npolicy = none\n[daemons]\nfabricmanager = no\n' >"$TMP/nofm.profile"
expect_exit 12 "$GB" --root "$FIX/h100x8-ubuntu2204" plan --profile "$TMP/nofm.profile"
grep -q "NVSwitch(es) present but the profile turns the fabric manager off" "$TMP/err" || fail "FM: $(cat "$TMP/err")"
# R470 (K80) is past end of life: the runfile, and it says so.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os debian:12 --target-gpu K80 --profile minimal --json
[ "$(jq_ 'd["driver"]["branch"], d["driver"]["method"]')" = "470 runfile" ] || fail "K80: $(jq_ 'd["driver"]')"
jq_ 'd["driver"]["method_reason"]' | grep -q "past end of life" || fail "K80 EOL not said"
# Names people type; ambiguity and typos get a did-you-mean; unknown releases are exit 2.
for g in K80 P100 "RTX 4090" "RTX PRO 6000" "Tesla T4" 2330 A100 B300; do
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu "$g" --profile minimal
done
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-gpu "Tesla V100"
grep -q "did you mean 'Tesla V100" "$TMP/err" || fail "did you mean: $(cat "$TMP/err")"
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-gpu "Quadro XYZ9000"
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:22.4 --target-gpu T4
grep -q "'22.4' is not a release of ubuntu" "$TMP/err" || fail "ubuntu 22.4: $(cat "$TMP/err")"
# ---- end plan truth ----
# Devices later than their architecture (NVIDIA's open-module README per
# tag): 2BB5 from R575, GH200 144G from R565; the H200's open module from
# R550: a pinned R535 with module_flavor = open is refused before any change,
# auto takes the proprietary module there.
export GPUBOOT_FAKE_OPS=clock:1796040000000000000
jq1() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); print(eval(sys.argv[1]))" "$1"; }
# SLES 15: NVIDIA's sles15 repository when --method packages asks (the
# metapackage at the driver's version, no module stream, the fabric manager
# under its rpm name; real zypper installs it in vm-tests/image-rpm-sles15.sh);
# without it the runfile stays the default there.
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os sles:15 --target-gpu 2330x8 --profile minimal --method packages --json
[ "$(j '(d["driver"]["method"], d["driver"]["repository"], d["driver"]["packages"])')" = "('packages', 'sles15', ['nvidia-open', 'nvidia-fabricmanager'])" ] ||
	fail "HGX x8, sles 15, --method packages: $(j 'd["driver"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os sles:15 --target-gpu T4 --profile minimal --json
[ "$(j 'd["driver"]["method"]')" = runfile ] || fail "T4, sles 15, no method: $(j 'd["driver"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu 2bb5 --profile inference --json
[ "$(jq1 'd["gpus"][0]["min_branch"]')" = 575 ] || fail "2bb5 min_branch: $(jq1 'd["gpus"][0]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu GH200-144G --profile inference --json
[ "$(jq1 'd["gpus"][0]["min_branch"]')" = 565 ] || fail "2348 min_branch: $(jq1 'd["gpus"][0]')"
sed 's/^branch = lts$/branch = R535/' profiles/inference.profile >"$TMP/p535.profile"
sed 's/^module_flavor = auto$/module_flavor = open/' "$TMP/p535.profile" >"$TMP/p535open.profile"
expect_exit 10 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu H200 --profile "$TMP/p535open.profile"
grep -q "whose R535 does not list H200 SXM 141GB (2335): NVIDIA's open kernel module supports it from R550 on" "$TMP/err" ||
	fail "H200 open on R535: $(cat "$TMP/err")"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu H200 --profile "$TMP/p535.profile" --json
[ "$(jq1 'd["driver"]["branch"], d["driver"]["module_flavor"]')" = "(535, 'proprietary')" ] || fail "H200 on R535: $(jq1 'd["driver"]')"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu L20 --json
[ "$(jq1 'd["gpus"][0]["device_id"]')" = 26ba ] || fail "L20: $(jq1 'd["gpus"][0]')"
unset GPUBOOT_FAKE_OPS
echo ok
