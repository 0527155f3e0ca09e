# gpuboot-probe needs no glibc symbol newer than GLIBC_2.17 (on x86_64 it
# binds the GLIBC_2.2.5 baseline), never links the NVIDIA libraries, and the
# static gpuboot says "NVIDIA drivers need glibc" where there is no glibc loader.
# (The aarch64 probe, exactly GLIBC_2.17: t-static-aarch64.sh.)
. tests/integration/lib.sh
P=build/probe/gpuboot-probe
[ -x "$P" ] || fail "$P missing"
objdump -T "$P" | grep -oE 'GLIBC_[0-9.]+' | sort -u >"$TMP/versions"
[ -s "$TMP/versions" ] || fail "no versioned symbols read"
while read -r v; do
	python3 -c "import sys; v=tuple(int(x) for x in sys.argv[1][6:].split('.')); sys.exit(0 if v <= (2,17) else 1)" "$v" ||
		fail "$P needs $v: $(objdump -T "$P" | grep "$v")"
done <"$TMP/versions"
[ "$(uname -m)" != x86_64 ] || [ "$(cat "$TMP/versions")" = "GLIBC_2.2.5" ] || fail "x86_64 probe is not at the 2.2.5 baseline: $(cat "$TMP/versions")"
objdump -p "$P" | grep NEEDED >"$TMP/needed"
grep -q -e nvidia -e libcuda "$TMP/needed" && fail "the probe links NVIDIA libraries: $(cat "$TMP/needed")"
# No glibc loader (a musl system): the static binary reports it, it does not crash.
S=${GB_STATIC:-build/gpuboot}
C=$TMP/chroot
mkdir -p "$C"
cp "$S" "$C/gpuboot"
cp -a "$FIX/h200-ubuntu2404" "$C/machine"
mkdir -p "$C/machine/dev" && : >"$C/machine/dev/nvidiactl" && : >"$C/machine/dev/nvidia0"
if [ "$(id -u)" -eq 0 ]; then
	set +e
	chroot "$C" /gpuboot --root /machine verify --tier passive --state-dir /state --run-dir /run-flags >"$TMP/out" 2>&1
	rc=$?
	set -e
elif unshare -r true 2>/dev/null; then
	set +e
	unshare -r chroot "$C" /gpuboot --root /machine verify --tier passive --state-dir /state --run-dir /run-flags >"$TMP/out" 2>&1
	rc=$?
	set -e
else
	skip "neither root nor user namespaces: cannot test the no-glibc case"
fi
[ "$rc" -eq 15 ] || fail "no-glibc verify exited $rc: $(cat "$TMP/out")"
grep -q "NVIDIA drivers need glibc" "$TMP/out" || fail "no-glibc not explained: $(cat "$TMP/out")"
grep -q '"result": "verify-failed"' "$C/state/status.json" || fail "no status document in the chroot"
echo ok
