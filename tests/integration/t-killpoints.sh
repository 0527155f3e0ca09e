# Kill points: `gpuboot run` from a signed file:// bundle (tests/make-bundle),
# through the fake operations table, sent SIGKILL at named points of a whole
# run (GPUBOOT_KILL_AT=SITE:N, test builds: after each journal record and
# status document, inside the download, at the cache rename, inside the
# unpack, between the tree swap's renames, between a file's temp write and
# its rename, between CUDA's temp link and its rename, after the installer
# ran, after a module insert or unload, after a sysfs unbind, each before
# its end record). Scenarios:
#   live         the runfile method on a live root (its 535 replaced by 580, loaded)
#   image        the same root in image mode (--target-gpu H100): nothing loaded
#   cuda-live    live, the driver and three CUDA redistributable components
#                (parallel unpack, /usr/local/cuda-13.0 swapped into place, the link)
#   cuda-image   the same in image mode
#   nouveau-live a T4 driven by nouveau: blacklisted, unloaded, then the install and load
#   fm-live      the live HGX root without a fabric manager: the runfile method
#                places it from the mirror's redistributable archives
# After each kill: the status document is absent or valid and names the last
# completed stage, and no ready flag stands while the machine is being
# changed; then a rerun finishes, resuming the killed run's journal (never a
# new plan), and its end state (the tree with the sha256 of each file, the
# cache, the journal's steps, the status, the run dir, the fake's effects)
# is the one of an uninterrupted run.
#   KILLPOINTS=all     every passage of every site, and each resumed run
#                      killed once more at a seeded point (make soak-kill)
#   KILL_SEED=N        the sample's seed (default 14)
#   KILL_JOBS=N        scenarios run in N parallel groups (default 1)
#   KILL_ONLY="SCENARIO SITE:N"  that one point (to reproduce a failure)
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
MODE=${KILLPOINTS:-short}
SEED=${KILL_SEED:-14}
JOBS=${KILL_JOBS:-1}
KP="python3 tests/killpoints.py"
SCENARIOS="live image cuda-live cuda-image nouveau-live fm-live"
cat >"$TMP/cuda.profile" <<'PROF'
[profile]
description = the driver and three CUDA components
[driver]
branch = lts
module_flavor = auto
[cuda]
policy = newest-compatible
components = cuda_cudart, cuda_nvrtc, libcublas
[toolkit]
install = no
[verify]
tier = passive
PROF
B=$TMP/bundle
GB=$GB tests/make-bundle "$B" --profile "$TMP/cuda.profile" --fabricmanager ok >/dev/null
printf '[install]\nreplace_installed = always\n' >"$TMP/always.conf"

# fresh SCENARIO DIR: the machine of a case. The H100 one had an earlier
# verified run of its 535 (its flags set); the T4 one runs nouveau.
fresh() {
	rm -rf "$2"
	mkdir -p "$2/s/run"
	case $1 in
	nouveau-*)
		cp -a "$FIX/t4-nouveau-ubuntu2204" "$2/m"
		k=$(cat "$2/m/proc/sys/kernel/osrelease")
		mkdir -p "$2/m/lib/modules/$k/build" && echo "VERSION = 6" >"$2/m/lib/modules/$k/build/Makefile"
		;;
	*)
		cp -a "$FIX/h100x8-ubuntu2204" "$2/m"
		# Its nvidia is loaded, so the kernel lists the major (the capture did
		# not read proc/devices; an H200's real one, 580.159.04)
		cp tests/load/h200-580-nodes/proc/devices "$2/m/proc/devices"
		if [ "$1" = fm-live ]; then # no fabric manager: the install places the archives'
			rm -f "$2/m/usr/bin/nv-fabricmanager"
		else
			with_fabricmanager "$2/m" "$(bundle_driver "$B")" # NVSwitches: at the driver's version
		fi
		k=$(cat "$2/m/proc/sys/kernel/osrelease")
		for f in driver-ready verified-ready; do : >"$2/s/run/$f"; done
		;;
	esac
	mkdir -p "$2/m/boot" && : >"$2/m/boot/vmlinuz-$k" # an image's installer builds for the kernels it holds
}
# gbrun SCENARIO DIR [VAR=VALUE...]: one run; its exit code in $rc
gbrun() {
	sc=$1 d=$2
	shift 2
	k=$(cat "$d/m/proc/sys/kernel/osrelease")
	prof=minimal img=
	case $sc in cuda-*) prof=$TMP/cuda.profile ;; esac
	case $sc in *image) img="--target-gpu H100" ;; esac
	# The fake installer leaves what nvidia-installer would (modules whose
	# .modinfo the fake kernel reads, the userspace).
	# (the T4 gets the proprietary module, the H100 the open one)
	case $sc in nouveau-*) fl=proprietary ;; *) fl=open ;; esac
	[ -d "$d/tree" ] || tests/make-driver-tree "$d/tree" "$(bundle_driver "$B")" "$fl" "$k"
	creates="installs:nvidia-installer:0:$d/tree"
	set +e
	# --no-verify: the kills are in the changes (fetch, install, load), and
	# the end states compare the machine, not a probe's figures;
	# t-firstboot runs the same runfile install through verify.
	# shellcheck disable=SC2086
	env "$@" GPUBOOT_FAKE_OPS="root=$d/m,record=$d/ops,$creates" "$GB" --root "$d/m" run --profile "$prof" \
		--method runfile --config "$TMP/always.conf" --mirror "file://$B/mirror" --trust-key "$B/key.pub" \
		--state-dir "$d/s" --run-dir "$d/s/run" --no-verify $img >"$d/out" 2>"$d/err"
	rc=$?
	set -e
}

# scenario SC: every point of SC; its counts in $TMP/res.SC, failures in $TMP/fail.SC
scenario() {
	sc=$1
	D=$TMP/case.$sc # every case of a scenario in the same place: the end states compare byte for byte
	points=0 kills=0 failures=0 resumed=0 after=0
	: >"$TMP/fail.$sc"
	bad() {
		failures=$((failures + 1))
		echo "FAILURE $*" >>"$TMP/fail.$sc"
	}
	# The uninterrupted run: its exit code, its end state, its kill points.
	fresh "$sc" "$D"
	gbrun "$sc" "$D" GPUBOOT_KILL_TRACE="$TMP/trace.$sc"
	[ "$rc" -eq 0 ] || { bad "$sc: an uninterrupted run exited $rc: $(cat "$D/err")"; return; }
	$KP digest "$D/m" "$D/s" "$D/ops" >"$TMP/want.$sc"
	grep -q "^machine lib/modules/.*/kernel/drivers/video/nvidia.ko file" "$TMP/want.$sc" || bad "$sc: no module installed"
	! grep -q "^state run .*-ready" "$TMP/want.$sc" || bad "$sc: the flags of the replaced driver still stand"
	case $sc in cuda-*) grep -q "^machine usr/local/cuda link cuda-13.0" "$TMP/want.$sc" || bad "$sc: no CUDA link" ;; esac
	case $sc in fm-*) grep -q "^machine var/lib/gpuboot/runfile-fabricmanager file" "$TMP/want.$sc" || bad "$sc: no fabric manager placed" ;; esac
	# The short version: each site in some scenario, two records in each.
	case $sc in
	live) own=module,command,status ;;
	image) own=swap,cache,write ;;
	cuda-live) own=link,unpack,download ;;
	cuda-image) own=swap,unpack,command ;;
	fm-live) own=write,unpack,journal ;;
	*) own=module,write,status ;;
	esac
	$KP points "$TMP/trace.$sc" "$MODE" "$SEED" "$own" >"$TMP/points.$sc"
	want_sites="journal download cache unpack swap command status write"
	case $sc in *live) want_sites="$want_sites module" ;; esac
	case $sc in cuda-*) want_sites="$want_sites link" ;; esac
	for site in $want_sites; do
		grep -qx "$site" "$TMP/trace.$sc" || bad "$sc: the run never passed the kill point $site"
	done
	i=0
	while read -r p; do
		i=$((i + 1))
		[ -z "${KILL_ONLY:-}" ] || [ "$KILL_ONLY" = "$sc $p" ] || continue
		points=$((points + 1))
		fresh "$sc" "$D"
		gbrun "$sc" "$D" GPUBOOT_KILL_AT="$p"
		if [ "$rc" -ne 137 ]; then
			bad "$sc $p: exit $rc, expected SIGKILL (137)"
			continue
		fi
		kills=$((kills + 1))
		$KP after-kill "$D/s" docs/status.md >"$D/why" 2>&1 || bad "$sc $p: $(cat "$D/why")"
		if [ "$MODE" = all ]; then
			# Kill the resumed run once more, at a seeded journal record.
			again=$((($(echo "$SEED $sc $i" | cksum | cut -d' ' -f1) % 12) + 1))
			gbrun "$sc" "$D" GPUBOOT_KILL_AT="journal:$again"
			if [ "$rc" -eq 137 ]; then
				kills=$((kills + 1))
				$KP after-kill "$D/s" docs/status.md >"$D/why" 2>&1 || bad "$sc $p then journal:$again: $(cat "$D/why")"
			fi
		fi
		gbrun "$sc" "$D"
		if [ "$rc" -ne 0 ]; then
			bad "$sc $p: the rerun exited $rc: $(tail -n 3 "$D/err")"
			continue
		fi
		$KP digest "$D/m" "$D/s" "$D/ops" >"$D/got"
		cp "$TMP/want.$sc" "$D/want"
		# The plan is the same target: the rerun resumes, never plans anew;
		# only a killed run that had finished (its last record written) is
		# followed by a new run, which keeps it as journal.json.prev.
		if [ -e "$D/s/journal.json.prev" ]; then
			if ! python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["state"] != "done")' \
				"$D/s/journal.json.prev"; then
				bad "$sc $p: the rerun started a new plan over an unfinished run"
				continue
			fi
			after=$((after + 1))
			# (the new run did nothing: its stages are its own account, skipped)
			grep -v "^journal step \|^state top journal.json.prev\|^status stage " "$D/got" >"$D/got.f" &&
				mv "$D/got.f" "$D/got"
			grep -v "^journal step \|^status stage " "$D/want" >"$D/want.f" && mv "$D/want.f" "$D/want"
		elif grep -q '"resumed_at"' "$D/s/journal.json"; then
			resumed=$((resumed + 1))
		fi
		diff "$D/want" "$D/got" >"$D/diff" || bad "$sc $p: the rerun's end state differs: $(head -n 40 "$D/diff")"
	done <"$TMP/points.$sc"
	echo "$points $kills $failures $resumed $after $(wc -l <"$TMP/trace.$sc")" >"$TMP/res.$sc"
}

start=$(date +%s)
g=0
while [ "$g" -lt "$JOBS" ]; do
	(
		nth=0
		for one in $SCENARIOS; do
			if [ $((nth % JOBS)) -eq "$g" ]; then scenario "$one"; fi
			nth=$((nth + 1))
		done
	) &
	g=$((g + 1))
done
wait
points=0 kills=0 failures=0 resumed=0 after=0 distinct=0
for sc in $SCENARIOS; do
	cat "$TMP/fail.$sc" >&2
	if [ ! -e "$TMP/res.$sc" ]; then
		failures=$((failures + 1))
		continue
	fi
	read -r p k f r a t <"$TMP/res.$sc"
	echo "$sc: $t points in an uninterrupted run, $p tried, $k kills, $f failures, $r resumed, $a after the end"
	points=$((points + p)) kills=$((kills + k)) failures=$((failures + f)) resumed=$((resumed + r)) after=$((after + a))
	distinct=$((distinct + t))
done
echo "kill points: $points of $distinct distinct points, $kills kills (mode $MODE, seed $SEED), $failures failures ($resumed reruns resumed the killed run's journal, $after followed a finished run), $(($(date +%s) - start)) s"
[ "$failures" -eq 0 ] || fail "$failures failures"
[ -n "${KILL_ONLY:-}" ] || [ "$points" -ge 25 ] || fail "only $points kill points"
echo ok
