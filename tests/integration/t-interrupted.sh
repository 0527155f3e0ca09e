# A run killed mid-way (SIGKILL at a kill point: power, OOM, a Packer
# timeout) leaves a status that says "running". gpuboot status, with no
# gpuboot holding the lock, says "interrupted" with the stage, and so does
# the next run before it continues from the journal; its own document
# carries the interrupted run.
. tests/integration/lib.sh
M=$TMP/m
cp -a "$FIX/l4-debian12" "$M"
# An image build that stops at the install (offline, nothing cached: exit
# 1), far enough for a kill in a middle stage.
run() {
	"$GB" --root "$M" run --target-gpu T4 --profile minimal --method distro --offline --state-dir "$TMP/s"
}
# Killed in a middle stage (at the 3rd write of the status: fetch).
set +e
GPUBOOT_KILL_AT=status:3 GPUBOOT_FAKE_OPS="root=$M" run >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
[ "$rc" -eq 137 ] || fail "the kill point did not kill: exit $rc: $(cat "$TMP/err")"
python3 -c "import json,sys; d=json.load(open('$TMP/s/status.json')); sys.exit(d['result']!='running')" ||
	fail "the killed run's status: $(head -c 500 "$TMP/s/status.json")"
stage=$(python3 -c "
import json; d=json.load(open('$TMP/s/status.json'))
print([s['name'] for s in d['stages'] if s['result']=='running'][-1])")
# gpuboot status: no one holds the lock, so the run was killed.
expect_exit 0 "$GB" status --state-dir "$TMP/s"
grep -q "^last run: *interrupted" "$TMP/out" || fail "status: $(cat "$TMP/out")"
grep -q "^interrupted: *the 'run' started .* stopped in its $stage stage" "$TMP/out" || fail "status: $(cat "$TMP/out")"
python3 -c "
import json,sys; d=json.load(open('$TMP/s/status.json'))
assert d['result']=='interrupted' and d['interrupted']['stage']=='$stage' and d['interrupted']['found_at'], d.get('interrupted')" ||
	fail "the status document was not marked interrupted"
# While a run holds the lock, its 'running' is true: status leaves it.
printf '{"schema_version": 2, "command": "run", "result": "running", "stages": []}\n' >"$TMP/s2.json"
mkdir -p "$TMP/s2" && cp "$TMP/s2.json" "$TMP/s2/status.json"
python3 -c "
import fcntl, subprocess, sys
f = open('$TMP/s2/lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX)
out = subprocess.run(['$GB', 'status', '--state-dir', '$TMP/s2'], capture_output=True, text=True).stdout
sys.exit(0 if 'last run:    running' in out else 'status under a held lock: ' + out)" || fail "a held lock's running status was changed"
# The next run after the status marked it: says so, carries it.
GPUBOOT_FAKE_OPS="root=$M" expect_exit 1 run
grep -q "was interrupted in its $stage stage; this run continues from its journal" "$TMP/err" ||
	fail "the run after gpuboot status did not say so: $(cat "$TMP/err")"
python3 -c "
import json,sys; d=json.load(open('$TMP/s/status.json')); sys.exit(d['interrupted']['stage']!='$stage')" ||
	fail "the run after gpuboot status lost the interrupted run"
# The next run: says so, goes on (to its own end), and carries the interrupted run.
GPUBOOT_KILL_AT=status:3 GPUBOOT_FAKE_OPS="root=$M" expect_exit 137 run
stage=$(python3 -c "
import json; d=json.load(open('$TMP/s/status.json'))
print([s['name'] for s in d['stages'] if s['result']=='running'][-1])")
GPUBOOT_FAKE_OPS="root=$M" expect_exit 1 run
grep -q "was interrupted in its $stage stage; this run continues from its journal" "$TMP/err" ||
	fail "the next run did not say so: $(cat "$TMP/err")"
python3 -c "
import json,sys; d=json.load(open('$TMP/s/status.json'))
assert d['result']=='failed' and d['interrupted']['stage']=='$stage', (d['result'], d.get('interrupted'))" ||
	fail "the next run's document: $(head -c 800 "$TMP/s/status.json")"
# And a run after one that was not killed carries nothing.
GPUBOOT_FAKE_OPS="root=$M" expect_exit 1 run
python3 -c "
import json,sys; d=json.load(open('$TMP/s/status.json')); sys.exit(d['interrupted'] is not None)" ||
	fail "a clean run's successor still reports an interruption"
echo "ok: a killed run's status is interrupted (stage $stage) at gpuboot status and at the next run"
