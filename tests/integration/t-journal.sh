# The write-ahead journal and the run pipeline: a SIGKILL after any journal
# record leaves a journal and a status document that the next run reads (it
# resumes the same plan and finishes); an unfinished run of another plan
# that changed the machine is refused until --force; `gpuboot status` shows
# the journal.
. tests/integration/lib.sh
# A run that stops at prepare, before any change, whatever the fixture's
# plan (the test build's hook; the real refusal is the same code path).
export GPUBOOT_TEST_NOT_IMPLEMENTED="the install (a test stops the run here)"
M=$TMP/machine
cp -a "$FIX/l4-debian12" "$M"
ARGS="--root $M --run-dir $TMP/run"

# How many records an uninterrupted run writes.
S=$TMP/full
# shellcheck disable=SC2086
expect_exit 2 "$GB" run $ARGS --state-dir "$S"
total=$(python3 -c "
import json; d = json.load(open('$S/journal.json'))
assert d['state'] == 'failed' and d['exit_code'] == 2, d['state']
# a begin and an end each, but a stage that ends well, whose end the next
# record writes; and the journal's first and last
print(sum(1 if s['kind'] == 'stage' and s['state'] == 'done' else 2 for s in d['steps']) + 2)")
[ "$total" -ge 6 ] || fail "an uninterrupted run wrote only $total journal records"

n=1
while [ "$n" -le "$total" ]; do
	S=$TMP/kill-$n
	set +e
	# shellcheck disable=SC2086
	GPUBOOT_KILL_AFTER_JOURNAL_WRITE=$n "$GB" run $ARGS --state-dir "$S" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	set -e
	if [ "$n" -lt "$total" ]; then
		[ "$rc" -eq 137 ] || fail "kill after record $n: exit $rc, expected SIGKILL (137)"
	fi
	# What the kill left: a journal that parses, a status that parses and names its stages.
	python3 - "$S" "$n" <<'PY' || fail "kill after record $n left an unreadable journal or status"
import json, sys, os
s, n = sys.argv[1], int(sys.argv[2])
j = json.load(open(os.path.join(s, "journal.json")))
assert j["schema_version"] == 1 and j["plan_hash"] and isinstance(j["steps"], list)
st = json.load(open(os.path.join(s, "status.json")))
assert st["schema_version"] == 2 and st["stages"], st
assert st["result"] in ("running", "usage-error"), st["result"]
assert [x for x in os.listdir(s) if x.startswith(".")] == [], os.listdir(s)
PY
	# The next run reads them: it resumes the same plan and finishes it.
	# shellcheck disable=SC2086
	expect_exit 2 "$GB" run $ARGS --state-dir "$S"
	grep -q "not implemented yet" "$TMP/err" || fail "rerun after kill $n: $(cat "$TMP/err")"
	python3 - "$S" "$n" "$total" <<'PY' || fail "rerun after kill $n did not finish the journal"
import json, sys, os
s, n, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
j = json.load(open(os.path.join(s, "journal.json")))
assert j["state"] == "failed" and j["exit_code"] == 2, j["state"]
if n < total:
    assert "resumed_at" in j, "the unfinished journal was not resumed"
ids = [x["id"] for x in j["steps"]]
assert ids == ["stage:detect", "stage:plan", "stage:prepare"], ids
st = json.load(open(os.path.join(s, "status.json")))
assert st["result"] == "usage-error" and st["journal"]["state"] == "failed", st["journal"]
PY
	expect_exit 0 "$GB" status --state-dir "$S"
	grep -q "^journal: *failed, 2 step(s) done" "$TMP/out" || fail "status does not show the journal: $(cat "$TMP/out")"
	n=$((n + 1))
done
echo "killed after each of $total journal records: every rerun converged"

# An unfinished run of another plan that changed something is refused.
S=$TMP/other
# shellcheck disable=SC2086
expect_exit 2 "$GB" run $ARGS --state-dir "$S"
python3 - "$S/journal.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["state"] = "running"; j["plan_hash"] = "0" * 64
j["steps"].append({"id": "file:etc/modprobe.d/gpuboot-blacklist-nouveau.conf", "stage": "prepare",
                   "kind": "file", "state": "done"})
json.dump(j, open(p, "w"))
PY
cp "$S/journal.json" "$TMP/other-journal.json"
# shellcheck disable=SC2086
expect_exit 2 "$GB" run $ARGS --state-dir "$S"
grep -q "an unfinished run of another plan" "$TMP/err" && grep -q -- "--force" "$TMP/err" || fail "another plan not refused: $(cat "$TMP/err")"
cmp -s "$S/journal.json" "$TMP/other-journal.json" || fail "a refused run changed the journal"
expect_exit 0 "$GB" status --state-dir "$S"
grep -q "^cause: *plan refused: an unfinished run of another plan" "$TMP/out" || fail "status cause: $(cat "$TMP/out")"
# shellcheck disable=SC2086
expect_exit 2 "$GB" run $ARGS --state-dir "$S" --force
cmp -s "$S/journal.json.prev" "$TMP/other-journal.json" || fail "--force did not keep the abandoned journal"
python3 -c "import json; assert json.load(open('$S/journal.json'))['plan_hash'] != '0' * 64"

# A repair that failed (gpuboot-repair.service at boot, a load refused) is not an unfinished run:
# the next run sets its journal aside and goes on.
python3 - "$S/journal.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["state"] = "failed"; j["plan_hash"] = "1" * 64; j["command"] = "repair"
j["steps"].append({"id": "file:etc/modprobe.d/gpuboot-nvidia.conf", "stage": "load", "kind": "file", "state": "done"})
json.dump(j, open(p, "w"))
PY
cp "$S/journal.json" "$TMP/repair-journal.json"
# shellcheck disable=SC2086
expect_exit 2 "$GB" run $ARGS --state-dir "$S"
! grep -q "an unfinished run of another plan" "$TMP/err" || fail "a failed repair's journal blocked a run: $(cat "$TMP/err")"
cmp -s "$S/journal.json.prev" "$TMP/repair-journal.json" || fail "the repair's journal was not kept aside"
echo ok
