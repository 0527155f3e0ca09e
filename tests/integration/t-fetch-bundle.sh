# The signed offline bundle (tests/make-bundle): fetch succeeds offline from
# file://, and every tampering (a flipped byte, an altered signature or
# version, the wrong key, an expired or rolled-back manifest, a swapped or
# unlisted artifact) is refused with exit 13 leaving nothing unverified.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
export GB
OUT=$TMP/bundle
GB=$GB tests/make-bundle "$OUT" >/dev/null
ARGS="--target-os ubuntu:22.04 --target-gpu H100 --profile minimal"
S=$TMP/state
nothing_unverified() {
	for f in "$1"/cache/sha256/*; do
		[ -e "$f" ] || continue
		[ "$(sha256sum "$f" | cut -d' ' -f1)" = "$(basename "$f")" ] || fail "unverified $f in the cache"
	done
	[ -z "$(ls -A "$1/cache/tmp" 2>/dev/null)" ] || fail "partial files left in $1/cache/tmp"
}
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$OUT/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$S"
grep -q "^fetched  driver runfile" "$TMP/out" || fail "fetch output: $(cat "$TMP/out")"
nothing_unverified "$S"
python3 -c "import json; d=json.load(open('$S/status.json')); a=d['artifacts']; assert len(a)==1 and a[0]['result']=='verified', a"
# Again: served from the verified cache.
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$OUT/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$S"
grep -q "^cached" "$TMP/out" || fail "cache not used"
# The fetched runfile unpacks (the makeself payload) with the unpack primitive.
RUN=$(python3 -c "import json; print(json.load(open('$S/status.json'))['artifacts'][0]['cache_path'])")
build/asan/tools/unpack-tool "$RUN" "$TMP/driver" --makeself >/dev/null || fail "fetched runfile does not unpack"

tamper() { # name expected-message; $T is a fresh copy of the bundle to edit before calling
	rm -rf "$TMP/s2"
	# shellcheck disable=SC2086
	expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$T/mirror" --trust-key "${KEY:-$OUT/key.pub}" $ARGS --state-dir "$TMP/s2"
	grep -q -- "$2" "$TMP/err" || fail "$1: expected '$2' in: $(cat "$TMP/err")"
	nothing_unverified "$TMP/s2"
	[ -z "$(ls -A "$TMP/s2/cache/sha256" 2>/dev/null)" ] || fail "$1: something reached the cache"
	grep -q '"result": "fetch-failed"' "$TMP/s2/status.json" || fail "$1: status does not say fetch-failed"
}
fresh() { T=$TMP/t-$1; rm -rf "$T"; cp -a "$OUT" "$T"; }
RF=$(cd "$OUT/mirror" && find . -name '*.run' | sed 's|^\./||')
fresh flip
printf 'X' | dd of="$T/mirror/$RF" bs=1 seek=5000 conv=notrunc 2>/dev/null
tamper "flipped byte" "does not match the manifest"
fresh sig
python3 -c "
p='$T/mirror/manifest.json.sig'; s=open(p).read(); open(p,'w').write(('0' if s[10]!='0' else '1').join([s[:10], s[11:]]))"
tamper "altered signature" "signature does not verify"
fresh version
sed -i 's/"version": 1,/"version": 999,/' "$T/mirror/manifest.json"
tamper "altered version" "signature does not verify"
fresh body
sed -i 's/"size": /"size": 1/' "$T/mirror/manifest.json"
tamper "altered body" "signature does not verify"
fresh key
openssl genpkey -algorithm ed25519 -out "$TMP/other.pem" 2>/dev/null
openssl pkey -in "$TMP/other.pem" -pubout -out "$TMP/other.pub"
KEY=$TMP/other.pub tamper "unknown key" "signature does not verify"
# Expired, and rolled back: properly signed, still refused.
T=$TMP/t-expired
GB=$GB tests/make-bundle "$T" --key "$OUT/key.pem" --expires 2020-01-01T00:00:00Z >/dev/null
tamper "expired" "expired"
rm -rf "$TMP/s3"
GB=$GB tests/make-bundle "$TMP/v5" --key "$OUT/key.pem" --version 5 >/dev/null
GB=$GB tests/make-bundle "$TMP/v4" --key "$OUT/key.pem" --version 4 >/dev/null
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/v5/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s3"
rm -rf "$TMP/s3/cache"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/v4/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s3"
grep -q "rollback refused" "$TMP/err" || fail "rollback not refused: $(cat "$TMP/err")"
# A first boot's state has seen no manifest: the site's floor ([trust]
# min_mirror_version in the gpuboot.conf the user-data writes) refuses the
# older one there too, and takes the floor's own version.
printf '[trust]\nmin_mirror_version = 5\n' >"$TMP/floor.conf"
rm -rf "$TMP/s4"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/v4/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s4" --config "$TMP/floor.conf"
grep -q "version 4 is older than the site's floor, \[trust\] min_mirror_version = 5 (rollback refused)" "$TMP/err" ||
	fail "the site's floor: $(cat "$TMP/err")"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/v5/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s4" --config "$TMP/floor.conf"
printf '[trust]\nmin_mirror_version = -1\n' >"$TMP/floor-bad.conf"
# shellcheck disable=SC2086
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/v5/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s5" --config "$TMP/floor-bad.conf"
grep -q "min_mirror_version must be a mirror manifest version" "$TMP/err" || fail "a bad floor: $(cat "$TMP/err")"
# An artifact swapped for another listed one, and one the manifest does not list.
resign() { openssl pkeyutl -sign -inkey "$OUT/key.pem" -rawin -in "$1/mirror/manifest.json" -out "$1/sig.bin" &&
	od -An -tx1 -v "$1/sig.bin" | tr -d ' \n' >"$1/mirror/manifest.json.sig" && echo >>"$1/mirror/manifest.json.sig"; }
fresh swap
head -c 4096 /dev/urandom >"$T/mirror/extra.bin"
python3 - "$T/mirror" <<'PY'
import hashlib, json, os, sys
root = sys.argv[1]; m = json.load(open(os.path.join(root, "manifest.json")))
data = open(os.path.join(root, "extra.bin"), "rb").read()
m["artifacts"].append({"path": "extra.bin", "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
open(os.path.join(root, "manifest.json"), "w").write(json.dumps(m, indent=2))
PY
resign "$T"
cp "$T/mirror/$RF" "$TMP/runfile.bak"
cp "$T/mirror/extra.bin" "$T/mirror/$RF"
tamper "swapped artifact" "does not match\|more than\|manifest declares"
fresh unlisted
python3 - "$T/mirror" <<'PY'
import json, os, sys
p = os.path.join(sys.argv[1], "manifest.json"); m = json.load(open(p)); m["artifacts"] = []
open(p, "w").write(json.dumps(m, indent=2))
PY
resign "$T"
tamper "unlisted artifact" "not listed in the mirror's signed manifest"
# No trusted key at all.
rm -rf "$TMP/s4"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$OUT/mirror" $ARGS --state-dir "$TMP/s4"
grep -q "no trusted key" "$TMP/err" || fail "missing key not explained"
# Offline and not cached, from an https upstream: refused, nothing fetched.
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline $ARGS --state-dir "$TMP/s5"
grep -q -- "--offline forbids" "$TMP/err" || fail "offline refusal: $(cat "$TMP/err")"

# A plain-http mirror: refused by default, allowed by the site for a signed manifest.
HP=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1]); s.close()")
python3 -m http.server "$HP" --bind 127.0.0.1 --directory "$OUT/mirror" >/dev/null 2>&1 &
HS=$!
for i in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $HP), 1)" 2>/dev/null && break; sleep 0.1; done
# shellcheck disable=SC2086
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" fetch --mirror "http://127.0.0.1:$HP" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/sh"
grep -q "allow_http_mirror" "$TMP/err" || fail "http mirror refusal does not name the setting"
printf '[site]\nallow_http_mirror = yes\n' >"$TMP/http.conf"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --config "$TMP/http.conf" --mirror "http://127.0.0.1:$HP" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/sh"
kill $HS 2>/dev/null

# gpuboot mirror: re-sign the bundle for a fleet with another key; fetch accepts the result.
openssl genpkey -algorithm ed25519 -out "$TMP/fleet.pem" 2>/dev/null
openssl pkey -in "$TMP/fleet.pem" -pubout -out "$TMP/fleet.pub"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" mirror "$TMP/fleet" --mirror "file://$OUT/mirror" --trust-key "$OUT/key.pub" --sign-key "$TMP/fleet.pem" --mirror-version 7 $ARGS --state-dir "$TMP/s6"
[ -f "$TMP/fleet/$RF" ] && [ -f "$TMP/fleet/manifest.json" ] && [ -f "$TMP/fleet/manifest.json.sig" ] || fail "mirror layout"
cmp -s "$TMP/fleet/$RF" "$OUT/mirror/$RF" || fail "mirrored artifact differs"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$TMP/fleet" --trust-key "$TMP/fleet.pub" $ARGS --state-dir "$TMP/s7"
# shellcheck disable=SC2086
expect_exit 2 "$GB" --root "$FIX/nogpu-debian12" mirror "$TMP/x" $ARGS
grep -q -- "--sign-key" "$TMP/err" || fail "mirror without a key"
echo ok
