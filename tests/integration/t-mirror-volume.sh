# The hostile mirror at volume: seeded random fault sequences (truncations,
# resets, 5xx and 429, ignored ranges, a flipped byte, a byte too many, 404,
# a redirect to http; tests/https-server.py's /seq/ paths, one server for
# all) across a full fetch of three artifacts; after each, the cache holds
# exactly the verified artifacts and no unverified byte (tests/mirror_volume.py).
#   MIRROR_SEQUENCES=N (default 30; make soak-mirror: 1000)  MIRROR_SEED=N (default 14)
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
FT=build/asan/tools/fetch-tool
[ -x "$FT" ] || fail "$FT missing"
W=$TMP/www
D=compute/cuda/redist
mkdir -p "$W/$D"
head -c 3000000 /dev/urandom >"$W/$D/big.tar.xz"
head -c 200000 /dev/urandom >"$W/$D/small.tar.xz"
head -c 1 /dev/urandom >"$W/$D/tiny.json"
. tests/integration/lib-tls.sh
make_certs
start_server "$W"
printf '%s\n' "$D/big.tar.xz" "$D/small.tar.xz" "$D/tiny.json" |
	python3 tests/mirror_volume.py "$FT" "$TMP/ca.pem" "https://127.0.0.1:$PORT" "$W" "$TMP/state" \
		"${MIRROR_SEQUENCES:-30}" "${MIRROR_SEED:-14}" >"$TMP/report" || fail "$(tail -c 4000 "$TMP/report")"
tail -n 1 "$TMP/report"
echo ok
