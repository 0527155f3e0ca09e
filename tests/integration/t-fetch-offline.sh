# --offline never touches the network: with an https mirror, the signed
# manifest comes from the verified copy an online run kept in the cache, or
# the fetch fails with one line saying so; the loopback server must see no
# request at all. And a garbled rollback record (mirror-version) is an error
# naming the file, never "version 0".
. tests/integration/lib.sh
. tests/integration/lib-tls.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
export GB
OUT=$TMP/bundle
GB=$GB tests/make-bundle "$OUT" >/dev/null
make_certs
export REQUEST_LOG="$TMP/requests"
start_server "$OUT/mirror"
M=https://127.0.0.1:$PORT
ARGS="--target-os ubuntu:22.04 --target-gpu H100 --profile minimal --trust-key $OUT/key.pub --ca-file $TMP/ca.pem"
S=$TMP/state
: >"$TMP/requests"
# Offline, nothing cached: refused with the reason, and not one request.
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "$M" $ARGS --state-dir "$S"
grep -q -- "--offline: the mirror manifest for $M is not in the cache; run gpuboot fetch online once or use a file:// bundle" "$TMP/err" ||
	fail "offline refusal: $(cat "$TMP/err")"
[ ! -s "$TMP/requests" ] || fail "--offline asked the mirror: $(cat "$TMP/requests")"
# Online once: the manifest is verified and a copy kept.
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --mirror "$M" $ARGS --state-dir "$S"
grep -q "^GET /manifest.json" "$TMP/requests" || fail "the online fetch did not ask the mirror (request log: $(cat "$TMP/requests"))"
# Offline again: served from the cache, the manifest's signature checked again, no request.
: >"$TMP/requests"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "$M" $ARGS --state-dir "$S"
grep -q "^cached" "$TMP/out" || fail "offline fetch did not use the cache: $(cat "$TMP/out")"
[ ! -s "$TMP/requests" ] || fail "--offline asked the mirror: $(cat "$TMP/requests")"
# The kept copy altered: refused, still without a request.
K=$(find "$S/cache/mirror" -type f | head -n1)
[ -n "$K" ] || fail "nothing in the cache under $S/cache/mirror"
[ -n "$K" ] || fail "no kept copy of the mirror manifest"
H=$(cut -c1-64 "$K")
chmod u+w "$S/cache/sha256/$H"
sed -i 's/"version": 1,/"version": 2,/' "$S/cache/sha256/$H"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "$M" $ARGS --state-dir "$S"
grep -q "damaged\|signature does not verify" "$TMP/err" || fail "altered kept manifest: $(cat "$TMP/err")"
[ ! -s "$TMP/requests" ] || fail "--offline asked the mirror: $(cat "$TMP/requests")"

# An unreadable --ca-file: the mirror manifest is not fetched with some other
# CA bundle instead; the fetch fails naming the file.
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --mirror "$M" $ARGS --ca-file "$TMP/no-such-ca.pem" --state-dir "$TMP/s-ca"
grep -q "CA file '$TMP/no-such-ca.pem' cannot be read" "$TMP/err" || fail "unreadable CA file for the manifest: $(cat "$TMP/err")"

# A garbled mirror-version: an error that names the file, not rollback protection switched off.
for garbage in "not-a-number" "" "12abc"; do
	S2=$TMP/s-garbled
	rm -rf "$S2"
	mkdir -p "$S2"
	printf '%s' "$garbage" >"$S2/mirror-version"
	# shellcheck disable=SC2086
	expect_exit 13 "$GB" --root "$FIX/nogpu-debian12" fetch --offline --mirror "file://$OUT/mirror" $ARGS --state-dir "$S2"
	grep -q "$S2/mirror-version is garbled" "$TMP/err" || fail "garbled mirror-version '$garbage': $(cat "$TMP/err")"
	[ "$(cat "$S2/mirror-version")" = "$garbage" ] || fail "garbled mirror-version was overwritten"
done
echo ok
