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
[ "$(j 'd["driver"]["version"]')" = "580.173.02" ] || fail "minimal H100 on 22.04: $(j 'd["driver"]')"
[ "$(j 'd["driver"]["module_flavor"]')" = "open" ] || fail "H100 should get the open module"
[ "$(j 'd["kernel"]["action"]')" = "none" ] || fail "target OS: kernel decided at first boot"
[ "$(j 'd["target"]["source"]')" = "target" ] || fail "target not marked"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os rhel:9:aarch64 --target-gpu GH200 --json
[ "$(j 'd["driver"]["repository_arch"]')" = "sbsa" ] || fail "aarch64 repo should be sbsa"
[ "$(j 'd["cuda"]["platform"]')" = "linux-sbsa" ] || fail "GH200 CUDA platform"
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" plan --target-os ubuntu:24.04 --target-gpu 2330x8 --json
[ "$(j 'd["gpus"][0]["count"]')" = "8" ] || fail "x8 count lost"
[ "$(j '[x["name"] for x in d["daemons"]]')" = "['nvidia-persistenced', 'nvidia-fabricmanager']" ] || fail "HGX x8 needs the fabric manager"
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
printf '[secure_boot]\nsigning_key = /var/lib/mok/MOK.priv\nsigning_cert = /var/lib/mok/MOK.der\n' >"$TMP/sb/etc/gpuboot/gpuboot.conf"
expect_exit 0 "$GB" --root "$TMP/sb" plan --json
[ "$(j 'd["secure_boot"]["strategy"]')" = "sign-with-key" ] || fail "signing key not used"

# Site pins.
printf '[pins]\ndriver = 570.195.03\ncuda = 12.8\n[checks]\nskip = disk, network\n' >"$TMP/site.conf"
expect_exit 0 "$GB" --root "$H200" plan --config "$TMP/site.conf" --json
[ "$(j 'd["driver"]["version"]')" = "570.195.03" ] || fail "driver pin: $(j 'd["driver"]')"
[ "$(j 'd["cuda"]["version"]')" = "12.8.0" ] || fail "cuda pin"
[ "$(j 'd["verify"]["skip"]')" = "['disk', 'network']" ] || fail "skip list"
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
echo ok
