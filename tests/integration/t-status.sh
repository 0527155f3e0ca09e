# The status document: its schema (docs/status.md), atomic replacement, the
# Prometheus text (promtool check metrics), and `gpuboot status`.
. tests/integration/lib.sh
FAKE=$PWD/build/fake-nvidia
M=$TMP/machine
cp -a "$FIX/h100x8-ubuntu2204" "$M"
# the capture's dpkg status keeps only the toolkit's packages; its fabric
# manager (usr/bin/nv-fabricmanager, 535.183.01, running on that machine)
# is recorded here as dpkg had it, so the kept driver needs nothing
printf '\nPackage: nvidia-fabricmanager-535\nStatus: install ok installed\nArchitecture: amd64\nVersion: 535.183.01-1\n' >>"$M/var/lib/dpkg/status"
mkdir -p "$M/dev"
for n in nvidiactl nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7; do : >"$M/dev/$n"; done
export GPUBOOT_PROBE_PATTERN_MIB=64 GPUBOOT_PROBE_BW_MIB=8 GPUBOOT_PROBE_LOAD_MS=50
S=$TMP/state
expect_exit 1 "$GB" status --state-dir "$S"
grep -q "has not run here yet" "$TMP/err" || fail "missing status not explained"
FAKE_NV_SCENARIO=slow-gpu LD_LIBRARY_PATH=$FAKE expect_exit 15 "$GB" --root "$M" verify --state-dir "$S" --run-dir "$S/run"
python3 tests/status_schema.py "$S/status.json" docs/status.md || fail "status.json breaks its documented schema"
[ "$(ls -A "$S" | grep -c '^\.')" -eq 0 ] || fail "temporary files left in the state directory: $(ls -A "$S")"
expect_exit 0 "$GB" status --state-dir "$S"
grep -q "verify-failed (exit 15)" "$TMP/out" && grep -q "compute.fp32 gpu3" "$TMP/out" || fail "status text: $(cat "$TMP/out")"
expect_exit 0 "$GB" status --json --state-dir "$S"
cmp -s "$TMP/out" "$S/status.json" || fail "status --json is not the document"
expect_exit 0 "$GB" status --prometheus --state-dir "$S"
cmp -s "$TMP/out" "$S/gpuboot.prom" || fail "status --prometheus differs from the textfile"
grep -q '^gpuboot_check_passed{check="compute.fp32",subject="gpu3 00000000:61:00.0"} 0$' "$S/gpuboot.prom" || fail "metric for the failed check"
grep -q '^gpuboot_verified 0$' "$S/gpuboot.prom" || fail "gpuboot_verified"
grep -q '^gpuboot.dev/verified=false$' "$S/nfd-features" || fail "NFD features"
if command -v promtool >/dev/null; then
	promtool check metrics <"$S/gpuboot.prom" || fail "promtool rejects the metrics"
else
	echo "promtool missing: metrics checked by the grep above only" >&2
fi
# Atomic replacement: a reader that opens the document while runs rewrite it
# sees a whole document, the old or the new, never a part of one; and each
# write is a new file renamed into place (a new inode), not an edit.
ino0=$(stat -c %i "$S/status.json")
python3 - "$S/status.json" "$TMP/reader" <<'PY' &
import json, os, sys, time
path, flag = sys.argv[1], sys.argv[2]
reads = bad = 0
open(flag + ".ready", "w").close()
while not os.path.exists(flag + ".stop"):
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        bad += 1
        continue
    reads += 1
    try:
        json.loads(text)
    except ValueError:
        bad += 1
open(flag, "w").write("%d %d\n" % (reads, bad))
PY
until [ -e "$TMP/reader.ready" ]; do sleep 0.05; done
i=0
while [ "$i" -lt 8 ]; do
	i=$((i + 1))
	LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" verify --tier passive --state-dir "$S" --run-dir "$S/run"
done
touch "$TMP/reader.stop"
wait
read -r reads bad <"$TMP/reader"
[ "$reads" -gt 0 ] && [ "$bad" -eq 0 ] || fail "status.json read while rewritten: $bad of $reads reads missing or partial"
[ "$(stat -c %i "$S/status.json")" != "$ino0" ] || fail "status.json was edited in place, not replaced"
# A corrupt document is reported, not trusted; the next run replaces it.
printf '{ not json' >"$S/status.json"
expect_exit 1 "$GB" status --state-dir "$S"
LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" verify --tier passive --state-dir "$S" --run-dir "$S/run"
python3 tests/status_schema.py "$S/status.json" docs/status.md || fail "status.json after recovery"
# A verify made no plan: no warnings, and the count says so.
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["warnings"])' "$S/status.json")" = "[]" ] ||
	fail "warnings without a plan"
grep -q '^gpuboot_warnings 0$' "$S/gpuboot.prom" || fail "gpuboot_warnings without a plan"
# What ages reaches the fleet: the HGX machine keeps its R535 (ended
# 2026-06-30; --method runfile brings no fabric manager of R580, so the
# replacement would be refused) and its toolkit 1.17.8
# (the profile installs none): the plan's warnings are the status's
# .warnings, the metrics count them by code, `gpuboot status` shows them;
# a verify after it keeps them with the plan it carries over.
W=$TMP/warned
GPUBOOT_FAKE_OPS=clock:1796040000000000000 LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" run --profile minimal --method runfile --tier passive --state-dir "$W" --run-dir "$W/run"
python3 tests/status_schema.py "$W/status.json" docs/status.md || fail "status.json with warnings breaks its schema"
python3 - "$W/status.json" <<'PY' || fail "status warnings"
import json, sys
d = json.load(open(sys.argv[1]))
codes = [w["code"] for w in d["warnings"]]
assert codes == ["branch-eol", "toolkit-below-floor"], codes
assert d["warnings"] == d["plan"]["warnings"], "status and plan warnings differ"
assert "R535 (ltsb) reached its end of life on 2026-06-30" in d["warnings"][0]["text"], d["warnings"][0]
assert "install nvidia-fabricmanager 580.178.04 first" in d["warnings"][0]["text"], d["warnings"][0]
assert "1.19.1 or newer" in d["warnings"][1]["fix"], d["warnings"][1]
PY
grep -q '^gpuboot_warnings 2$' "$W/gpuboot.prom" || fail "gpuboot_warnings: $(grep warning "$W/gpuboot.prom")"
grep -q '^gpuboot_warning{code="branch-eol"} 1$' "$W/gpuboot.prom" && grep -q '^gpuboot_warning{code="toolkit-below-floor"} 1$' "$W/gpuboot.prom" ||
	fail "gpuboot_warning by code: $(grep warning "$W/gpuboot.prom")"
if command -v promtool >/dev/null; then
	promtool check metrics <"$W/gpuboot.prom" || fail "promtool rejects the metrics with warnings"
fi
expect_exit 0 "$GB" status --state-dir "$W"
grep -q "^warnings:    branch-eol: R535 (ltsb) reached its end of life on 2026-06-30" "$TMP/out" && grep -q "^             toolkit-below-floor: " "$TMP/out" ||
	fail "gpuboot status without the warnings: $(cat "$TMP/out")"
LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" verify --tier passive --state-dir "$W" --run-dir "$W/run"
grep -q '^gpuboot_warnings 2$' "$W/gpuboot.prom" || fail "a verify dropped the plan's warnings"
echo ok
