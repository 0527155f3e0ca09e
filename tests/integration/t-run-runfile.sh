# gpuboot run with the runfile method, wired end to end: the plan replaces
# the installed 535 (replace_installed = always), the fetch stage takes the
# runfile from a signed file:// bundle (tests/make-bundle) and verifies it,
# the install stage unpacks it with gpuboot's own unpacker and runs its
# nvidia-installer with the flags of its version (through the fake
# operations table: a fixture is no machine to build a module on), and the
# missing module afterwards is named, never a success.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" >/dev/null
M=$TMP/machine
cp -a "$FIX/h100x8-ubuntu2204" "$M"
with_fabricmanager "$M" "$(bundle_driver "$B")" # NVSwitches: at the driver's version, or the plan refuses
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"
S=$TMP/state
# --no-verify: the run ends at the install (no module left); its twin that
# goes on through the load and verify is t-firstboot's ubuntu-runfile row.
GPUBOOT_FAKE_OPS="root=$M,record=$TMP/ops" expect_exit 1 "$GB" --root "$M" run --profile minimal --method runfile \
	--config "$TMP/always.conf" --mirror "file://$B/mirror" --trust-key "$B/key.pub" --state-dir "$S" --no-verify
python3 - "$S/status.json" <<'PY' || fail "status: $(head -c 3000 "$S/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
st = {s["name"]: s for s in d["stages"]}
assert d["plan"]["driver"]["action"] == "replace" and d["plan"]["driver"]["method"] == "runfile", d["plan"]["driver"]
assert st["fetch"]["result"] == "ok", st["fetch"]
assert st["install"]["result"] == "failed" and "nvidia.ko" in st["install"]["error"], st["install"]
assert "load" not in st, "the run went on after a failed install"
PY
grep -q "nvidia-installer.*--silent.*--kernel-module-type=open" "$TMP/ops" || fail "installer flags: $(grep -i installer "$TMP/ops")"
grep -q -- "--no-nouveau-check" "$TMP/ops" && grep -q -- "--skip-module-load" "$TMP/ops" || fail "installer flags: $(grep -i installer "$TMP/ops")"
grep -q "^mount_bind" "$TMP/ops" && grep -q "^umount" "$TMP/ops" || fail "the chroot's mounts: $(cat "$TMP/ops")"
python3 -c "
import json; d = json.load(open('$S/journal.json'))
assert any(s['kind'] == 'command' and 'nvidia-installer' in ' '.join(s.get('argv', [])) for s in d['steps']), d['steps']" ||
	fail "the installer's run is not in the journal"
echo ok
