# fetch --dry-run at the library level (tests/tools/fetch-tool --plan): the
# artifacts of a plan are resolved and listed (name, size, sha256, URL, cached
# or not) and nothing is written anywhere: the state directory is the same
# before and after, whether it is missing, empty, or holds a filled cache.
# gb_fetch_all refuses a dry run.
. tests/integration/lib.sh
. tests/integration/lib-tls.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
FT=build/asan/tools/fetch-tool
[ -x "$FT" ] || fail "$FT missing"
W=$TMP/www
RP=XFree86/Linux-x86_64/580.95.05/NVIDIA-Linux-x86_64-580.95.05.run
mkdir -p "$W/$(dirname "$RP")"
head -c 200000 /dev/urandom >"$W/$RP"
(cd "$W/$(dirname "$RP")" && sha256sum "$(basename "$RP")" >"$(basename "$RP").sha256sum")
python3 - "$W" <<'PY'
import hashlib, io, json, os, sys, tarfile
w = sys.argv[1]
doc = {"release_date": "2025-08-04", "release_label": "13.0.0", "release_product": "cuda"}
for name in ("cuda_cudart", "cuda_nvcc"):
    rel = f"{name}/linux-x86_64/{name}-linux-x86_64-13.0.48-archive.tar.xz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as t:
        data = (name * 500).encode(); i = tarfile.TarInfo(f"{name}/lib/lib{name}.so.1"); i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    p = os.path.join(w, "compute/cuda/redist", rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(buf.getvalue())
    doc[name] = {"name": name, "version": "13.0.48", "linux-x86_64": {"relative_path": rel,
                 "sha256": hashlib.sha256(buf.getvalue()).hexdigest(), "size": str(len(buf.getvalue()))}}
open(os.path.join(w, "compute/cuda/redist/redistrib_13.0.0.json"), "w").write(json.dumps(doc, indent=4))
PY
MAN=$W/compute/cuda/redist/redistrib_13.0.0.json
make_certs
export REQUEST_LOG="$TMP/requests"
start_server "$W"
B=https://127.0.0.1:$PORT
S=$TMP/state
plan() { # fetch-tool --plan with this plan; extra options first
	"$FT" --plan "$S" "$TMP/ca.pem" "$@" --upstream "$B" \
		--runfile "https://us.download.nvidia.com/$RP" "$(sha256sum "$W/$RP" | cut -d' ' -f1)" "$(stat -c %s "$W/$RP")" 580.95.05 \
		--cuda 13.0.0 "$(sha256sum "$MAN" | cut -d' ' -f1)" "$(stat -c %s "$MAN")" "cuda_cudart 13.0.48" "cuda_nvcc 13.0.48"
}
snapshot() { [ -e "$S" ] && (cd "$S" && find . -printf '%p %y %s %T@\n' | sort) || echo "no state directory"; }
# dry-run WANT: list the plan without writing; every line says WANT (cached|to-fetch)
dry_run() {
	snapshot >"$TMP/before"
	plan --dry-run >"$TMP/out" 2>"$TMP/err" || fail "dry run failed: $(cat "$TMP/out" "$TMP/err")"
	snapshot >"$TMP/after"
	cmp -s "$TMP/before" "$TMP/after" || fail "the dry run wrote under the state directory: $(diff "$TMP/before" "$TMP/after")"
	[ "$(wc -l <"$TMP/out")" -eq 4 ] || fail "dry run lists $(wc -l <"$TMP/out") artifacts, expected 4: $(cat "$TMP/out")"
	[ "$(grep -c " $1\$" "$TMP/out")" -eq 4 ] || fail "dry run: expected every artifact $1: $(cat "$TMP/out")"
	for f in "$RP" compute/cuda/redist/redistrib_13.0.0.json \
		compute/cuda/redist/cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-13.0.48-archive.tar.xz \
		compute/cuda/redist/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-13.0.48-archive.tar.xz; do
		sha=$(sha256sum "$W/$f" | cut -d' ' -f1) size=$(stat -c %s "$W/$f")
		grep -q " $size  $sha  $B/$f  " "$TMP/out" || fail "dry run: no line for $f with its size, sha256 and URL: $(cat "$TMP/out")"
	done
}
dry_run to-fetch
[ ! -e "$S" ] && [ ! -e "$TMP/cache" ] || fail "a dry run created the state directory"
grep -q "^driver runfile 580.95.05 " "$TMP/out" || fail "artifact names: $(cat "$TMP/out")"
mkdir -p "$S"
: >"$S/marker"
dry_run to-fetch
# Fetched for real, then a dry run lists everything as cached and still writes nothing.
plan >"$TMP/out" 2>"$TMP/err" || fail "fetch failed: $(cat "$TMP/out" "$TMP/err")"
[ "$(grep -c '^OK\|^CACHED' "$TMP/out")" -eq 4 ] || fail "fetch results: $(cat "$TMP/out")"
grep -q "^GET /compute/cuda/redist/redistrib_13.0.0.json" "$TMP/requests" || fail "the server's request log is not kept"
dry_run cached
# Offline, the dry run reads the CUDA manifest from the cache: no request at all.
: >"$TMP/requests"
snapshot >"$TMP/before"
plan --dry-run --offline >"$TMP/out" 2>"$TMP/err" || fail "offline dry run: $(cat "$TMP/out" "$TMP/err")"
snapshot >"$TMP/after"
cmp -s "$TMP/before" "$TMP/after" || fail "the offline dry run wrote under the state directory"
[ ! -s "$TMP/requests" ] || fail "the offline dry run asked the server: $(cat "$TMP/requests")"
# Offline with an empty cache: what is known without the network is listed
# (the runfile, CUDA's manifest by its pinned sha256), what needs it named;
# exit 13, nothing written, nothing asked.
rm -rf "$S"
set +e
plan --dry-run --offline >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
[ "$rc" -eq 13 ] && grep -q -- "--offline" "$TMP/out" || fail "offline dry run with an empty cache: exit $rc: $(cat "$TMP/out")"
grep -q "^driver runfile 580.95.05 .* to-fetch$" "$TMP/out" && grep -q "^CUDA 13.0.0 redistrib manifest .* to-fetch$" "$TMP/out" ||
	fail "offline dry run with an empty cache lists nothing known: $(cat "$TMP/out")"
[ ! -e "$S" ] && [ ! -s "$TMP/requests" ] || fail "offline dry run with an empty cache wrote or asked: $(cat "$TMP/requests")"
# gb_fetch_all itself refuses a dry run, marking every artifact failed.
set +e
"$FT" --dry-run "$S" "$TMP/ca.pem" "$B/$RP" "$(sha256sum "$W/$RP" | cut -d' ' -f1)" "$(stat -c %s "$W/$RP")" >"$TMP/out" 2>&1
rc=$?
set -e
[ "$rc" -eq 13 ] && grep -q "^ERR attempts=0 not fetched: a dry run fetches nothing" "$TMP/out" || fail "gb_fetch_all with dry_run: exit $rc: $(cat "$TMP/out")"
[ ! -e "$S" ] || fail "gb_fetch_all with dry_run created the state directory"
echo ok
