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
python3 -c "
import json, sys
url = json.load(open(sys.argv[1]))['driver']['runfile_url']
open(sys.argv[2] + '/runfile.path', 'w').write(url.split('/', 3)[3])" "$TMP/plan.json" "$W"
tests/make-cuda-redist.py "$TMP/plan.json" "$W"
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
