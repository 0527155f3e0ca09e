# gpuboot fetch end to end against a loopback HTTPS upstream in NVIDIA's
# layout: a makeself runfile with its .sha256sum, CUDA's redistrib JSON in
# NVIDIA's format and its component archives, all generated (the catalog's
# pins are replaced in test builds only). Recovered through faults, refused
# on a disagreeing checksum or altered bytes.
. tests/integration/lib.sh
. tests/integration/lib-tls.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
ARGS="--target-os ubuntu:22.04 --target-gpu H100 --profile training"
W=$TMP/www
mkdir -p "$W"
# shellcheck disable=SC2086
"$GB" --root "$FIX/nogpu-debian12" plan $ARGS --json >"$TMP/plan.json"
python3 - "$TMP/plan.json" "$W" <<'PY'
import hashlib, io, json, os, sys, tarfile
plan, w = json.load(open(sys.argv[1])), sys.argv[2]
url = plan["driver"]["runfile_url"]
open(os.path.join(w, "runfile.path"), "w").write(url.split("/", 3)[3])
cuda = plan["cuda"]["version"]
doc = {"release_date": "2025-08-04", "release_label": cuda, "release_product": "cuda"}
for comp in plan["cuda"]["components"]:
    name, version = comp.split()
    rel = f"{name}/linux-x86_64/{name}-linux-x86_64-{version}-archive.tar.xz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as t:
        data = (name * 2000).encode()
        i = tarfile.TarInfo(f"{name}-linux-x86_64-{version}-archive/lib/lib{name}.so.1"); i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    blob = buf.getvalue()
    p = os.path.join(w, "compute/cuda/redist", rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(blob)
    doc[name] = {"name": name, "license": "CUDA Toolkit", "version": version,
                 "linux-x86_64": {"relative_path": rel, "sha256": hashlib.sha256(blob).hexdigest(),
                                  "md5": hashlib.md5(blob).hexdigest(), "size": str(len(blob))}}
m = os.path.join(w, "compute/cuda/redist", f"redistrib_{cuda}.json")
open(m, "w").write(json.dumps(doc, indent=4))
PY
RP=$(cat "$W/runfile.path")
VER=$(basename "$(dirname "$RP")")
tests/make-runfile "$W/$RP" "$VER"
(cd "$(dirname "$W/$RP")" && sha256sum "$(basename "$RP")" >"$(basename "$RP").sha256sum")
MAN=$(ls "$W"/compute/cuda/redist/redistrib_*.json)
export GPUBOOT_TEST_RUNFILE_PIN="$(sha256sum "$W/$RP" | cut -d' ' -f1):$(stat -c %s "$W/$RP")"
export GPUBOOT_TEST_CUDA_MANIFEST_PIN="$(sha256sum "$MAN" | cut -d' ' -f1):$(stat -c %s "$MAN")"
export GPUBOOT_FETCH_BACKOFF_MS=100 GPUBOOT_FETCH_LOW_SPEED_S=2
make_certs
start_server "$W"
B=https://127.0.0.1:$PORT
N=$(python3 -c "import json; print(2 + len(json.load(open('$TMP/plan.json'))['cuda']['components']))")
verified() { python3 -c "
import json; d = json.load(open('$1/status.json')); a = d['artifacts']
assert len(a) == $N and all(x['result'] == 'verified' for x in a), [(x['name'], x['result']) for x in a]"; }
for up in "$B" "$B/fault/reset-once" "$B/fault/500-once" "$B/fault/truncate-once"; do
	rm -rf "$TMP/s"
	# shellcheck disable=SC2086
	expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch $ARGS --upstream "$up" --ca-file "$TMP/ca.pem" --state-dir "$TMP/s"
	verified "$TMP/s" || fail "$up: not every artifact verified"
	[ -z "$(ls -A "$TMP/s/cache/tmp")" ] || fail "$up: partial files left"
done
# A fetched component unpacks.
C=$(python3 -c "import json; print([a['cache_path'] for a in json.load(open('$TMP/s/status.json'))['artifacts'] if a['path'].endswith('.tar.xz')][0])")
build/asan/tools/unpack-tool "$C" "$TMP/component" >/dev/null || fail "fetched component does not unpack"
# Altered bytes on the wire: refused, nothing unverified kept.
rm -rf "$TMP/s"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch $ARGS --upstream "$B/fault/flip" --ca-file "$TMP/ca.pem" --state-dir "$TMP/s"
grep -q -e "does not match the manifest" -e "disagrees" "$TMP/err" || fail "flip: $(cat "$TMP/err")"
for f in "$TMP"/s/cache/sha256/*; do [ -e "$f" ] || continue; [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$(basename "$f")" ] || fail "unverified $f"; done
# NVIDIA's published checksum disagrees with the pin: refused before downloading the runfile.
printf '%064d  x.run\n' 0 >"$W/$RP.sha256sum"
rm -rf "$TMP/s"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch $ARGS --upstream "$B" --ca-file "$TMP/ca.pem" --state-dir "$TMP/s"
grep -q "published checksum .* disagrees" "$TMP/err" || fail "sha256sum mismatch: $(cat "$TMP/err")"
# The wrong host's certificate.
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch $ARGS --upstream "https://127.0.0.1:$WPORT" --ca-file "$TMP/ca.pem" --state-dir "$TMP/s"
echo ok
