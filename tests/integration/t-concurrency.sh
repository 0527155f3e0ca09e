# Runs at once: ten `gpuboot run` started together on one state directory:
# exactly one proceeds, the nine others exit 16 naming the holder's pid, and
# the status document is the one run's. A `--repair --from-hook` (a kernel
# hook while a run installs that very kernel) never waits for the lock: it
# exits 16 at once, and the run is not disturbed.
. tests/integration/lib.sh
# A run that stops at prepare, before any change, whatever the fixture's
# plan (the test build's hook; the real refusal is the same code path).
export GPUBOOT_TEST_NOT_IMPLEMENTED="the install (a test stops the run here)"
S=$TMP/state
mkdir -p "$S"
export GPUBOOT_TEST_HOLD_LOCK_MS=1500
i=0
while [ "$i" -lt 10 ]; do
	i=$((i + 1))
	(
		set +e
		"$GB" run --root "$FIX/l4-debian12" --state-dir "$S" --run-dir "$S/run" >"$TMP/out.$i" 2>"$TMP/err.$i"
		echo $? >"$TMP/rc.$i"
	) &
done
wait
ok=0 locked=0
i=0
while [ "$i" -lt 10 ]; do
	i=$((i + 1))
	case $(cat "$TMP/rc.$i") in
	2) ok=$((ok + 1)) ;; # the one that ran: l4 needs NVIDIA's packages, not built yet: exit 2, nothing changed
	16)
		locked=$((locked + 1))
		grep -q "Another gpuboot holds '.*/lock' (pid [0-9][0-9]*;" "$TMP/err.$i" || fail "run $i: holder not named: $(cat "$TMP/err.$i")"
		;;
	*) fail "run $i exited $(cat "$TMP/rc.$i"): $(cat "$TMP/err.$i")" ;;
	esac
done
[ "$ok" -eq 1 ] && [ "$locked" -eq 9 ] || fail "$ok runs proceeded and $locked were turned away (want 1 and 9)"
python3 -c "import json; d = json.load(open('$S/status.json')); assert d['command'] == 'run' and d['exit_code'] == 2" ||
	fail "the status is not the one run's"
# A kernel hook's repair during a run: exit 16 at once, no wait. Not a
# timed assertion: the holder keeps the lock far longer than any repair
# takes, and must still be holding it when the repair has returned.
rm -f "$S/lock"
GPUBOOT_TEST_HOLD_LOCK_MS=600000 "$GB" run --root "$FIX/l4-debian12" --state-dir "$S" --run-dir "$S/run" >/dev/null 2>&1 &
holder=$!
n=0
until [ "$(cat "$S/lock" 2>/dev/null)" = "$holder" ]; do # the lock is taken when it names its holder
	n=$((n + 1))
	[ "$n" -lt 600 ] && kill -0 "$holder" 2>/dev/null || fail "the run never took the lock"
	sleep 0.1
done
unset GPUBOOT_TEST_HOLD_LOCK_MS
expect_exit 16 "$GB" --repair --from-hook --kernel 6.1.0-18-cloud-amd64 --root "$FIX/l4-debian12" --state-dir "$S"
grep -q "(pid $holder;" "$TMP/err" || fail "the repair did not name the holder: $(cat "$TMP/err")"
kill -0 "$holder" 2>/dev/null || fail "the repair returned only after the holder let go of the lock"
kill "$holder"
wait "$holder" 2>/dev/null || true
echo ok
