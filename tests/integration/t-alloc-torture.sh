# Allocation-failure torture, the short version (docs/reliability.md): plan
# of a bundled fixture with the Nth allocation failing, for every 4th N of
# an undisturbed run's allocations, verify --tier active for every 250th, and
# OpenSSL's and libcurl's initialisation (fetch --dry-run) for every 100th
# (make soak-alloc: every N, and the journal too). No N may crash, leak, or
# end in exit 0 after its allocation failed; a run with no failure injected
# must still succeed.
. tests/integration/lib.sh
[ -f build/alloc/failalloc.so ] || fail "build/alloc/failalloc.so missing (make test builds it)"
# The shim must actually fail what it is told to, or this test proves nothing.
set +e
GPUBOOT_FAIL_ALLOC_AT=1 GPUBOOT_FAIL_ALLOC_LOG=$TMP/log LD_PRELOAD=$PWD/build/alloc/failalloc.so \
	ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 "$GB" --root "$FIX/h200-ubuntu2404" plan >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
[ "$rc" -ne 0 ] && grep -q "^injected 1 " "$TMP/log" ||
	fail "the first allocation was to fail: exit $rc, log '$(head -n1 "$TMP/log" 2>/dev/null)': the shim is not working"
tests/alloc/torture.sh plan 4 2 || fail "plan under allocation failures (see above)"
[ -d build/fake-nvidia ] || fail "build/fake-nvidia missing (make test builds it)"
tests/alloc/torture.sh verify 250 2 || fail "verify under allocation failures (see above)"
tests/alloc/torture.sh tls 100 2 || fail "OpenSSL's and libcurl's initialisation under allocation failures (see above)"
