# Kill points: `gpuboot run` (the runfile method from a signed file://
# bundle, through the fake operations table: download, verify, unpack, the
# installer, the load) on a live root and in image mode (--target-gpu), sent
# SIGKILL at named points of a whole run (GPUBOOT_KILL_AT=SITE:N, test
# builds: after each journal record and status document, inside the
# download, at the cache rename, inside the unpack, between the tree swap's
# renames, after the installer ran). After each kill: the status document is
# absent or valid and names the last completed stage, and no ready flag
# stands while the machine is being changed; then a rerun finishes and its
# end state (the tree with the sha256 of each file, the cache, the journal's
# steps, the status, the run dir, the fake's effects) is the one of an
# uninterrupted run.
#   KILLPOINTS=all     every passage of every site, and each resumed run
#                      killed once more at a seeded point (make soak-kill)
#   KILL_SEED=N        the sample's seed (default 14)
#   KILL_ONLY="SCENARIO SITE:N"  that one point (to reproduce a failure)
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
MODE=${KILLPOINTS:-short}
SEED=${KILL_SEED:-14}
KP="python3 tests/killpoints.py"
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" >/dev/null
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"
K=$(ls "$FIX/h100x8-ubuntu2204/lib/modules")
# The fake installer leaves what nvidia-installer would.
CREATES="creates:nvidia-installer:0:lib/modules/$K/kernel/drivers/video/nvidia.ko,creates:nvidia-installer:0:usr/bin/nvidia-smi"
D=$TMP/case # every case in the same place: the end states compare byte for byte

# fresh: the machine of an earlier verified run of its 535 (its flags set)
fresh() {
	rm -rf "$D"
	mkdir -p "$D/s/run"
	cp -a "$FIX/h100x8-ubuntu2204" "$D/m"
	mkdir -p "$D/m/boot" && : >"$D/m/boot/vmlinuz-$K" # an image's installer builds for the kernels it holds
	for f in driver-ready verified-ready; do : >"$D/s/run/$f"; done
}
# gbrun SCENARIO [VAR=VALUE...]: one run; its exit code in $rc
gbrun() {
	sc=$1
	shift
	img=
	[ "$sc" = image ] && img="--target-gpu H100"
	set +e
	# shellcheck disable=SC2086
	env "$@" GPUBOOT_FAKE_OPS="root=$D/m,record=$D/ops,$CREATES" "$GB" --root "$D/m" run --profile minimal \
		--method runfile --config "$TMP/always.conf" --mirror "file://$B/mirror" --trust-key "$B/key.pub" \
		--state-dir "$D/s" --run-dir "$D/s/run" --no-verify $img >"$D/out" 2>"$D/err"
	rc=$?
	set -e
}

points=0 kills=0 failures=0 replanned=0
bad() {
	failures=$((failures + 1))
	echo "FAILURE $*" >&2
}
start=$(date +%s)
for sc in live image; do
	# The uninterrupted run: its exit code, its end state, its kill points.
	fresh
	gbrun "$sc" GPUBOOT_KILL_TRACE="$TMP/trace.$sc"
	[ "$rc" -eq 0 ] || fail "$sc: an uninterrupted run exited $rc: $(cat "$D/err")"
	$KP digest "$D/m" "$D/s" "$D/ops" >"$TMP/want.$sc"
	grep -q "^machine lib/modules/$K/kernel/drivers/video/nvidia.ko file" "$TMP/want.$sc" || fail "$sc: no module installed"
	! grep -q "^state run .*-ready" "$TMP/want.$sc" || fail "$sc: the flags of the replaced driver still stand"
	$KP points "$TMP/trace.$sc" "$MODE" "$SEED" >"$TMP/points.$sc"
	for site in journal download cache unpack swap command status; do
		grep -qx "$site" "$TMP/trace.$sc" || fail "$sc: the run never passed the kill point $site"
	done
	i=0
	while read -r p; do
		i=$((i + 1))
		[ -z "${KILL_ONLY:-}" ] || [ "$KILL_ONLY" = "$sc $p" ] || continue
		points=$((points + 1))
		fresh
		gbrun "$sc" GPUBOOT_KILL_AT="$p"
		if [ "$rc" -ne 137 ]; then
			bad "$sc $p: exit $rc, expected SIGKILL (137)"
			continue
		fi
		kills=$((kills + 1))
		$KP after-kill "$D/s" docs/status.md >"$D/why" 2>&1 || bad "$sc $p: $(cat "$D/why")"
		if [ "$MODE" = all ]; then
			# Kill the resumed run once more, at a seeded journal record.
			n=$((($(echo "$SEED $sc $i" | cksum | cut -d' ' -f1) % 12) + 1))
			gbrun "$sc" GPUBOOT_KILL_AT="journal:$n"
			if [ "$rc" -eq 137 ]; then
				kills=$((kills + 1))
				$KP after-kill "$D/s" docs/status.md >"$D/why" 2>&1 || bad "$sc $p then journal:$n: $(cat "$D/why")"
			fi
		fi
		gbrun "$sc"
		if [ "$rc" -ne 0 ]; then
			bad "$sc $p: the rerun exited $rc: $(tail -n 3 "$D/err")"
			continue
		fi
		$KP digest "$D/m" "$D/s" "$D/ops" >"$D/got"
		cp "$TMP/want.$sc" "$D/want"
		if [ -e "$D/s/journal.json.prev" ]; then
			# Killed after the install: the rerun plans anew (the new driver is
			# there: keep) and keeps the killed run's journal beside its own.
			replanned=$((replanned + 1))
			grep -v "^journal step \|^state top journal.json.prev" "$D/got" >"$D/got.f" && mv "$D/got.f" "$D/got"
			grep -v "^journal step " "$D/want" >"$D/want.f" && mv "$D/want.f" "$D/want"
		fi
		diff "$D/want" "$D/got" >"$D/diff" || bad "$sc $p: the rerun's end state differs: $(head -n 40 "$D/diff")"
	done <"$TMP/points.$sc"
done
echo "kill points: $points points, $kills kills (mode $MODE, seed $SEED), $failures failures ($replanned converged through a new plan), $(($(date +%s) - start)) s"
[ "$failures" -eq 0 ] || fail "$failures of $points kill points did not converge"
[ -n "${KILL_ONLY:-}" ] || [ "$points" -ge 20 ] || fail "only $points kill points"
echo ok
