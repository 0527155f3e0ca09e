# Every fixture tree detects exactly as its expected JSON says, text mode
# works, and no fixture produces a warning (they are well-formed machines).
. tests/integration/lib.sh
n=0
for dir in "$FIX"/*/; do
	name=$(basename "$dir")
	exp="$EXP/detect/$name.json"
	[ -f "$exp" ] || fail "no expected output $exp for fixture $name"
	expect_exit 0 "$GB" --root "$dir" detect --json
	diff -u "$exp" "$TMP/out" || fail "detect --json on $name differs from $exp"
	[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "detect on $name warned"; }
	expect_exit 0 "$GB" detect --root "$dir"
	grep -q '^os:' "$TMP/out" || fail "text output of $name has no os line"
	n=$((n + 1))
done
[ "$n" -ge 12 ] || fail "only $n fixtures"
echo "$n fixtures detected as expected"
