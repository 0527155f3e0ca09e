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
# The libraries' compiled-in paths are the machine's, never the build's:
# libkmod must read /etc/modprobe.d (a build prefix there once hid Debian's
# "install nvidia modprobe -i nvidia-current" rule from the real guest).
strings "$S" | grep -qx "/etc/modprobe.d" || fail "libkmod does not read /etc/modprobe.d: $(strings "$S" | grep modprobe.d)"
# (OpenSSL's engines and modules directories name the prefix too: harmless,
# the default provider is built in and no engine is loaded.)
if strings "$S" | grep -E "/prefix[^/]*/etc" >"$TMP/paths"; then
	fail "a build-prefix configuration directory compiled into the static binary: $(head -5 "$TMP/paths")"
fi
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
