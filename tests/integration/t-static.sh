# The static binary: statically linked, small, self-contained (runs in an
# empty chroot), and detects a fixture exactly as the test build does.
. tests/integration/lib.sh
S=${GB_STATIC:-build/gpuboot}
[ -x "$S" ] || fail "$S missing (make static)"
file "$S" | grep -q "statically linked" || fail "$(file "$S")"
size=$(stat -c %s "$S")
[ "$size" -le $((6 * 1024 * 1024)) ] || fail "static binary is $size bytes, over 6 MiB"
expect_exit 0 "$S" --root "$FIX/h200-ubuntu2404" detect --json
diff -u "$EXP/detect/h200-ubuntu2404.json" "$TMP/out" || fail "static detect differs"
expect_exit 0 "$S" --version -v
grep -q "OpenSSL" "$TMP/out" || fail "static binary has no OpenSSL"
mkdir -p "$TMP/chroot"
cp "$S" "$TMP/chroot/gpuboot"
if [ "$(id -u)" -eq 0 ]; then
	chroot "$TMP/chroot" /gpuboot --version >"$TMP/out" 2>&1 || fail "does not run in an empty chroot: $(cat "$TMP/out")"
elif unshare -r true 2>/dev/null; then
	unshare -r chroot "$TMP/chroot" /gpuboot --version >"$TMP/out" 2>&1 || fail "does not run in an empty chroot"
else
	skip "neither root nor user namespaces: cannot chroot"
fi
grep -q '^gpuboot ' "$TMP/out" || fail "no version from the chroot"
echo "static binary: $size bytes; runs in an empty chroot"
