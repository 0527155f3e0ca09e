# CUDA from the redistributable components, end to end through
# install-tool: components generated in NVIDIA's layout, unpacked in
# parallel into an image root; a small tmpfs as usr/local runs out of
# space in the middle (the old tree stays, the error names the path and
# the space needed); a rerun after space is freed succeeds; a rerun with
# everything in place has zero effects.
. tests/integration/lib.sh
T=build/asan/tools/install-tool
[ -x "$T" ] || skip "$T missing (make test builds it)"
[ "$(id -u)" = 0 ] || skip "needs root (a tmpfs for the ENOSPC case)"
R=$TMP/img
mkdir -p "$R/usr/local" "$R/etc"
gen() { python3 - "$@" <<'PY'
import hashlib, io, os, sys, tarfile
out, size = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
for name, ver in (("cuda_cudart", "13.0.48"), ("cuda_nvcc", "13.0.48"), ("libcublas", "13.0.0.19"), ("cuda_cccl", "13.0.50")):
    top = f"{name}-linux-x86_64-{ver}-archive"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as t:
        data = os.urandom(size)
        i = tarfile.TarInfo(f"{top}/lib/lib{name}.so.{ver}"); i.size = len(data); t.addfile(i, io.BytesIO(data))
        i = tarfile.TarInfo(f"{top}/include/{name}.h"); i.size = 3; t.addfile(i, io.BytesIO(b"/**"))
    blob = buf.getvalue(); h = hashlib.sha256(blob).hexdigest()
    open(f"{out}/{h}", "wb").write(blob)
    print(f"{name}:{ver}:{out}/{h}")
PY
}
COMPS=$(gen "$TMP/cache" 3000000)
args() { for c in $COMPS; do printf -- '--component %s ' "$c"; done; }
# shellcheck disable=SC2046
run() { "$T" --method cuda --root "$R" --state "$TMP/s" --cuda-version 13.0.0 $(args) "$@"; }
mount -t tmpfs -o size=6m tmpfs "$R/usr/local" 2>/dev/null || skip "cannot mount a tmpfs"
trap 'umount "$R/usr/local" 2>/dev/null; rm -rf "$TMP"' EXIT
mkdir -p "$R/usr/local/cuda-13.0" && echo old >"$R/usr/local/cuda-13.0/old-tree"
expect_exit 1 run
grep -q "No space left on device" "$TMP/err" || fail "ENOSPC: $(cat "$TMP/err")"
grep -q "usr/local/.cuda-13.0.staging-" "$TMP/err" || fail "the path is not named"
grep -q "need about 12 MiB" "$TMP/err" || fail "the space needed is not named: $(cat "$TMP/err")"
[ "$(cat "$R/usr/local/cuda-13.0/old-tree")" = old ] || fail "the old tree was touched"
[ "$(ls -A "$R/usr/local")" = cuda-13.0 ] || fail "left behind: $(ls -A "$R/usr/local")"
umount "$R/usr/local"
mount -t tmpfs -o size=32m tmpfs "$R/usr/local"
mkdir -p "$R/usr/local/cuda-13.0" && echo old >"$R/usr/local/cuda-13.0/old-tree"
# shellcheck disable=SC2030
GPUBOOT_FAKE_OPS="record=$TMP/record" expect_exit 0 run
[ ! -e "$R/usr/local/cuda-13.0/old-tree" ] || fail "the old tree stayed"
[ -f "$R/usr/local/cuda/lib64/libcuda_cccl.so.13.0.50" ] || fail "no library through the links"
grep -q "run chroot=.* ldconfig" "$TMP/record" || fail "no chrooted ldconfig"
grep -Eq '"threads": ?[1-9]' "$TMP/out" || fail "no threads in the result: $(cat "$TMP/out")"
GPUBOOT_FAKE_OPS="record=$TMP/record2" expect_exit 0 run
grep -q "effects=0" "$TMP/err" || fail "rerun: $(cat "$TMP/err")"
[ ! -e "$TMP/record2" ] || ! grep -q ldconfig "$TMP/record2" || fail "ldconfig ran on a rerun"
echo ok
