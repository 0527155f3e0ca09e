# A provisioner that lies is worse than none. Each case here failed on the
# code before the run-pipeline work (gpuboot 0.1.0 as of d8c48fb):
#   - run --dry-run and --repair --dry-run rewrote status.json, the metrics,
#     the NFD labels and deleted the ready flags;
#   - fetch --dry-run started the whole download;
#   - fetch (any command but verify/run) overwrote the last verification:
#     NFD flipped to verified=false, gpu-count=0 on a healthy node;
#   - fetch with an unreadable --ca-file printed "fetched" and exited 0.
. tests/integration/lib.sh
FAKE=$PWD/build/fake-nvidia
M=$TMP/machine
cp -a "$FIX/h100x8-ubuntu2204" "$M"
mkdir -p "$M/dev"
for n in nvidiactl nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7; do : >"$M/dev/$n"; done
with_planned_fabricmanager "$M"
export GPUBOOT_PROBE_PATTERN_MIB=64 GPUBOOT_PROBE_BW_MIB=8 GPUBOOT_PROBE_LOAD_MS=50
S=$TMP/state

snapshot() { (cd "$1" && find . -printf '%p %s %T@\n' | sort) >"$2"; }

# 1. A healthy node, verified.
LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" verify --tier passive --state-dir "$S" --run-dir "$S/run"
[ -e "$S/run/verified-ready" ] || fail "verify did not set the verified flag"
grep -q '^gpuboot.dev/verified=true$' "$S/nfd-features" || fail "NFD after verify: $(cat "$S/nfd-features")"
grep -q '^gpuboot.dev/gpu-count=8$' "$S/nfd-features" || fail "NFD gpu-count after verify"
python3 -c "import json; d=json.load(open('$S/status.json')); print(d['verification']['at'])" >"$TMP/verified-at"

# 2. Dry runs write nothing, anywhere: not the state, not the flags.
snapshot "$S" "$TMP/before"
snapshot "$M" "$TMP/root-before"
for cmd in run repair; do
	LD_LIBRARY_PATH=$FAKE expect_exit 0 "$GB" --root "$M" "$cmd" --dry-run --state-dir "$S" --run-dir "$S/run"
	grep -q "dry run: nothing was written" "$TMP/out" || fail "$cmd --dry-run does not say so"
	snapshot "$S" "$TMP/after"
	diff "$TMP/before" "$TMP/after" || fail "$cmd --dry-run changed the state directory"
done
expect_exit 0 "$GB" --root "$M" --repair --dry-run --state-dir "$S" --run-dir "$S/run"
# A dry run into a state directory that does not exist does not create it.
expect_exit 0 "$GB" --root "$M" run --dry-run --state-dir "$TMP/never"
[ ! -e "$TMP/never" ] || fail "run --dry-run created its state directory"
snapshot "$M" "$TMP/root-after"
diff "$TMP/root-before" "$TMP/root-after" || fail "a dry run changed the root"

# 3. fetch --dry-run lists what it would fetch (name, size, sha256, URL) and fetches nothing.
expect_exit 0 "$GB" --root "$FIX/l4-debian12" fetch --dry-run --profile minimal --state-dir "$TMP/dry"
grep -q "NVIDIA-Linux-x86_64-.*\.run" "$TMP/out" || fail "fetch --dry-run does not list the runfile: $(cat "$TMP/out")"
grep -qE "[0-9a-f]{64}" "$TMP/out" || fail "fetch --dry-run does not show the sha256"
grep -q "https://" "$TMP/out" || fail "fetch --dry-run does not show the URL"
[ ! -e "$TMP/dry" ] || fail "fetch --dry-run wrote into its state directory: $(find "$TMP/dry")"

# 4. A failed fetch is a failure, and it does not touch the last verification.
expect_exit 13 "$GB" --root "$M" fetch --ca-file /nonexistent/ca.pem --state-dir "$S"
grep -q "CA file '/nonexistent/ca.pem' cannot be read" "$TMP/err" || fail "unreadable CA file not named: $(cat "$TMP/err")"
grep -q "^fetched\|^cached" "$TMP/out" && fail "fetch printed success with an unreadable CA file: $(cat "$TMP/out")"
python3 - "$S/status.json" <<'PY' || fail "status after a failed fetch"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "fetch" and d["exit_code"] == 13, (d["command"], d["exit_code"])
assert all(a["result"] != "verified" for a in d["artifacts"]), d["artifacts"]
PY
expect_exit 13 "$GB" --root "$M" fetch --offline --state-dir "$S"
grep -q '^gpuboot.dev/verified=true$' "$S/nfd-features" || fail "fetch flipped the NFD verdict: $(cat "$S/nfd-features")"
grep -q '^gpuboot.dev/gpu-count=8$' "$S/nfd-features" || fail "fetch changed the NFD gpu-count: $(cat "$S/nfd-features")"
grep -q '^gpuboot_verified 1$' "$S/gpuboot.prom" || fail "fetch changed the verified metric"
[ -e "$S/run/verified-ready" ] || fail "fetch removed the verified flag"
python3 - "$S/status.json" "$(cat "$TMP/verified-at")" <<'PY' || fail "the last verification was not kept"
import json, sys
d = json.load(open(sys.argv[1]))
v = d["verification"]
assert v["at"] == sys.argv[2] and v["command"] == "verify" and v["ready"]["verified"], v
assert d["ready"]["verified"] and len(d["checks"]) > 0
assert d["facts"]["gpus"], "facts lost"
PY
expect_exit 0 "$GB" status --state-dir "$S"
grep -q "^verified: *yes at $(cat "$TMP/verified-at") (tier passive, by 'verify')" "$TMP/out" || fail "status text: $(cat "$TMP/out")"
grep -q "^last run: *fetch-failed (exit 13)" "$TMP/out" || fail "status text, last run: $(cat "$TMP/out")"
python3 tests/status_schema.py "$S/status.json" docs/status.md || fail "status.json breaks its schema"
echo ok
