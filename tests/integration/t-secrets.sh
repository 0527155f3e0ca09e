# A --mirror with credentials (https://user:password@host/...) reaches the
# download and the resume unit (root-only, tests/unit/test-prepare.c) and
# nothing else: not the status (0644), the journal, the exports, the log
# or any command's output.
. tests/integration/lib.sh
cp -a "$FIX/l4-debian12" "$TMP/R"
M='https://fleet:s3cr3t-pw@127.0.0.1:1/gpuboot/'
set +e
GPUBOOT_FAKE_OPS="root=$TMP/R" "$GB" --root "$TMP/R" run --target-gpu T4 --profile minimal --method runfile \
	--mirror "$M" --state-dir "$TMP/s" >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
for c in "fetch --dry-run" "run --dry-run" "plan --json" "plan"; do
	# shellcheck disable=SC2086
	GPUBOOT_FAKE_OPS="root=$TMP/R" "$GB" --root "$TMP/R" $c --target-gpu T4 --profile minimal --method runfile \
		--mirror "$M" --state-dir "$TMP/s" >>"$TMP/cmds.out" 2>&1
done
"$GB" status --state-dir "$TMP/s" --json >>"$TMP/cmds.out" 2>&1
set -e
[ "$rc" -eq 13 ] || fail "the unreachable mirror: exit $rc, expected 13: $(cat "$TMP/run.err")"
grep -q 'https://\*\*\*@127.0.0.1:1/gpuboot/manifest.json' "$TMP/run.err" ||
	fail "the error does not name the mirror: $(cat "$TMP/run.err")"
grep -q 'https://\*\*\*@127.0.0.1:1/gpuboot/manifest.json' "$TMP/s/status.json" ||
	fail "the status does not name the mirror"
for f in "$TMP/run.out" "$TMP/run.err" "$TMP/cmds.out" "$TMP/s"/*; do
	[ -f "$f" ] || continue
	! grep -q 's3cr3t-pw\|fleet:' "$f" || fail "the credentials are in $(basename "$f"): $(grep -m1 's3cr3t-pw\|fleet:' "$f")"
done
echo "ok: the mirror's credentials in no status, journal, export, log or output"
