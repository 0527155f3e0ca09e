# Every fixture x every profile plans exactly as tests/expected/plan says
# (reviewed by hand: docs/plan.md explains each kind of decision), with the
# exit code the plan's refusal names.
. tests/integration/lib.sh
export GPUBOOT_FAKE_OPS=clock:1796040000000000000   # 2026-11-30T12:00:00Z: EOL dates are compared with it
n=0
for dir in "$FIX"/*/; do
	name=$(basename "$dir")
	for prof in training inference hpc render minimal; do
		exp="$EXP/plan/$name.$prof.json"
		[ -f "$exp" ] || fail "no expected plan $exp"
		code=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["refusal"]; print(r["code"] if r else 0)' "$exp")
		expect_exit "$code" "$GB" --root "$dir" plan --profile "$prof" --json
		diff -u "$exp" "$TMP/out" || fail "plan for $name with $prof differs from $exp"
		expect_exit "$code" "$GB" --root "$dir" plan --profile "$prof"
		n=$((n + 1))
	done
done
echo "$n plans as expected"
