# The signed catalog update (docs/catalog.md): a newer one, signed with a
# trusted key, changes the plan (a new R580 runfile becomes the driver);
# an older, unsigned, expired, altered or foreign-signed one is refused, the
# built-in kept, the refusal named in the plan's warnings; gpuboot catalog
# shows what differs; a mirror's catalog is kept in the state directory and
# stays in force offline, and a rollback below it is refused.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
export GPUBOOT_FAKE_OPS=clock:1796040000000000000 # 2026-11-30T12:00:00Z
ROOT=$FIX/nogpu-debian12
ARGS="--target-os ubuntu:22.04 --target-gpu H100 --profile minimal"
j() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); print(eval(sys.argv[1]))" "$1"; }
openssl genpkey -algorithm ed25519 -out "$TMP/key.pem" 2>/dev/null
openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/key.pub"
openssl genpkey -algorithm ed25519 -out "$TMP/other.pem" 2>/dev/null
openssl pkey -in "$TMP/other.pem" -pubout -out "$TMP/other.pub"

# catalog FILE VERSION DATE EXPIRES [EOL]: an update adding 580.199.01 (x86_64)
catalog() {
	cat >"$1" <<JSON
{ "format": "gpuboot-catalog", "format_version": 1, "version": $2, "date": "$3",
  "created": "2026-11-30T00:00:00Z", "expires": "$4", "key_id": "test",
  "sources": [ "NVIDIA's 580.199.01 release notes (a test's)" ],
  "branches": [ { "branch": 580, "type": "ltsb", "end_of_life": "${5:-2028-06-30}" } ],
  "runfiles": [ { "version": "580.199.01", "arch": "x86_64", "category": "TESLA",
    "sha256": "5f0d8c4a3e2b1a09f8e7d6c5b4a3928170f6e5d4c3b2a19080f7e6d5c4b3a291", "size": 412345678,
    "url": "https://us.download.nvidia.com/tesla/580.199.01/NVIDIA-Linux-x86_64-580.199.01.run" } ] }
JSON
}
sign() { # FILE [KEY]
	openssl pkeyutl -sign -inkey "${2:-$TMP/key.pem}" -rawin -in "$1" -out "$TMP/sig.bin"
	od -An -tx1 -v "$TMP/sig.bin" | tr -d ' \n' >"$1.sig"
	echo >>"$1.sig"
}
# refused NAME FILE MESSAGE [TRUST-KEY]: the plan keeps the built-in and names why
refused() {
	# shellcheck disable=SC2086
	expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --catalog "$2" --trust-key "${4:-$TMP/key.pub}"
	[ "$(j 'd["driver"]["version"]')" = 580.178.04 ] || fail "$1: the plan did not keep the built-in's driver"
	[ "$(j 'd["catalog"]["source"]')" = built-in ] || fail "$1: the catalog in force is $(j 'd["catalog"]')"
	j '[w["text"] + " FIX " + w["fix"] for w in d["warnings"] if w["code"] == "catalog-refused"][0]' >"$TMP/w" ||
		fail "$1: no catalog-refused warning: $(j 'd["warnings"]')"
	grep -q -- "$3" "$TMP/w" || fail "$1: expected '$3' in: $(cat "$TMP/w")"
	grep -q "catalog update .* refused" "$TMP/err" || fail "$1: no warning on stderr: $(cat "$TMP/err")"
}

# The built-in: R580's newest runfile, the header says so.
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json
[ "$(j 'd["driver"]["version"]')" = 580.178.04 ] || fail "built-in driver: $(j 'd["driver"]["version"]')"
[ "$(j 'd["catalog"]')" = "{'version': 2026120400, 'date': '2026-12-04', 'source': 'built-in'}" ] ||
	fail "header: $(j 'd["catalog"]')"

# A newer signed update changes the plan, and names itself in its header.
catalog "$TMP/new.json" 2026121501 2026-12-15 2027-03-01T00:00:00Z 2028-12-31
sign "$TMP/new.json"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --catalog "$TMP/new.json" --trust-key "$TMP/key.pub"
[ "$(j 'd["driver"]["version"]')" = 580.199.01 ] || fail "the update's runfile is not the driver: $(j 'd["driver"]')"
[ "$(j 'd["driver"]["end_of_life"]')" = 2028-12-31 ] || fail "the update's end of life: $(j 'd["driver"]')"
[ "$(j 'd["catalog"]')" = "{'version': 2026121501, 'date': '2026-12-15', 'source': '$TMP/new.json'}" ] ||
	fail "header: $(j 'd["catalog"]')"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --catalog "$TMP/new.json" --trust-key "$TMP/key.pub"
grep -q "^catalog 2026121501 of 2026-12-15 ($TMP/new.json)$" "$TMP/out" || fail "text header: $(head -3 "$TMP/out")"

# gpuboot catalog: what is in force and what differs from the built-in.
expect_exit 0 "$GB" catalog --json --catalog "$TMP/new.json" --trust-key "$TMP/key.pub"
[ "$(j 'd["version"], d["source"], d["built_in"]["version"]')" = "(2026121501, '$TMP/new.json', 2026120400)" ] ||
	fail "catalog --json: $(cat "$TMP/out")"
[ "$(j '[(r["version"], r["change"]) for r in d["differences"]["runfiles"]]')" = "[('580.199.01', 'added')]" ] ||
	fail "runfiles differ: $(j 'd["differences"]')"
[ "$(j '[(b["branch"], b["change"], b["built_in"]["end_of_life"]) for b in d["differences"]["branches"]]')" = \
	"[(580, 'changed', '2028-06-30')]" ] || fail "branches differ: $(j 'd["differences"]')"
[ "$(j 'd["sources"]')" = "[\"NVIDIA's 580.199.01 release notes (a test's)\"]" ] || fail "sources: $(j 'd["sources"]')"
expect_exit 0 "$GB" catalog
grep -q "^catalog    2026120400 of 2026-12-04 (built-in)$" "$TMP/out" || fail "catalog: $(cat "$TMP/out")"
grep -q "^differs    nothing from the built-in catalog$" "$TMP/out" || fail "catalog: $(cat "$TMP/out")"
grep -q "^sources    data/pci.ids: " "$TMP/out" || fail "built-in sources: $(cat "$TMP/out")"

# Older than the built-in, unsigned, expired, altered, signed by another key.
catalog "$TMP/old.json" 2026120301 2026-12-03 2027-03-01T00:00:00Z && sign "$TMP/old.json"
refused older "$TMP/old.json" "its version 2026120301 is not newer than this gpuboot's built-in catalog (2026120400"
catalog "$TMP/unsigned.json" 2026121501 2026-12-15 2027-03-01T00:00:00Z
refused unsigned "$TMP/unsigned.json" "it is unsigned (no $TMP/unsigned.json.sig beside it)"
catalog "$TMP/expired.json" 2026121501 2026-12-15 2026-11-30T11:59:59Z && sign "$TMP/expired.json"
refused expired "$TMP/expired.json" "expired at 2026-11-30T11:59:59Z.* FIX sign it again with a later expires"
cp "$TMP/new.json" "$TMP/tampered.json" && cp "$TMP/new.json.sig" "$TMP/tampered.json.sig"
sed -i 's/580.199.01/580.199.02/g' "$TMP/tampered.json"
refused tampered "$TMP/tampered.json" "the signature does not verify with any trusted key"
refused wrong-key "$TMP/new.json" "the signature does not verify with any trusted key" "$TMP/other.pub"
catalog "$TMP/nokey.json" 2026121501 2026-12-15 2027-03-01T00:00:00Z && sign "$TMP/nokey.json"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --catalog "$TMP/nokey.json"
j '[w["text"] + " FIX " + w["fix"] for w in d["warnings"] if w["code"] == "catalog-refused"][0]' | grep -q "no trusted key" ||
	fail "no trusted key: $(j 'd["warnings"]')"
# A row that is not well formed: refused by the catalog, named.
sed 's/"x86_64", "category"/"ppc64le", "category"/' "$TMP/new.json" >"$TMP/badrow.json" && sign "$TMP/badrow.json"
refused bad-row "$TMP/badrow.json" "runfile 580.199.01: arch must be x86_64 or aarch64"

# R620 from an update (the built-in catalog has no R620 runfile): NVIDIA
# removed the proprietary module from R620 on, so a T4 (held back on the
# proprietary module by default) pinned to R620 gets the open module, and
# a profile that asks for the proprietary one is refused (exit 10).
python3 - "$TMP/new.json" "$TMP/r620.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["branches"] = [{"branch": 620, "type": "ltsb", "end_of_life": "2029-09-30"}]
d["runfiles"] = [{"version": "620.70.06", "arch": "x86_64", "category": "TESLA",
                  "sha256": "6a1e0c3b5d7f9e2a4c6b8d0f1e3a5c7b9d2f4e6a8c0b1d3f5e7a9c2b4d6f8e0a", "size": 401234567,
                  "url": "https://us.download.nvidia.com/tesla/620.70.06/NVIDIA-Linux-x86_64-620.70.06.run"}]
d["sources"] = ["NVIDIA's redistrib_620.70.06.json (release_date 2026-11-04); the runfile's hash a test's"]
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
sign "$TMP/r620.json"
sed 's/^branch = lts$/branch = R620/' profiles/minimal.profile >"$TMP/r620.profile"
sed 's/^module_flavor = auto$/module_flavor = proprietary/' "$TMP/r620.profile" >"$TMP/r620-prop.profile"
R620="--target-os ubuntu:24.04 --target-gpu T4"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $R620 --profile "$TMP/r620.profile" --json --catalog "$TMP/r620.json" --trust-key "$TMP/key.pub"
[ "$(j 'd["driver"]["version"], d["driver"]["module_flavor"]')" = "('620.70.06', 'open')" ] ||
	fail "R620 for a T4: $(j 'd["driver"]')"
j 'd["driver"]["module_flavor_reason"]' | grep -q "R620 has only the open kernel module .*the hold-back of .* cannot apply" ||
	fail "R620's flavour reason: $(j 'd["driver"]["module_flavor_reason"]')"
# shellcheck disable=SC2086
expect_exit 10 "$GB" --root "$ROOT" plan $R620 --profile "$TMP/r620-prop.profile" --catalog "$TMP/r620.json" --trust-key "$TMP/key.pub"
grep -q "the proprietary module, which R620 does not have" "$TMP/err" "$TMP/out" || fail "R620 proprietary: $(cat "$TMP/err" "$TMP/out")"
# Without the update, R620 has no runfile here: refused, named (not "outside" the GPUs' branches).
# shellcheck disable=SC2086
expect_exit 2 "$GB" --root "$ROOT" plan $R620 --profile "$TMP/r620.profile"
grep -q "pinned branch R620 has no x86_64 runfile in this catalog (of 2026-12-04): a signed catalog update" "$TMP/err" "$TMP/out" || fail "R620 without a runfile: $(cat "$TMP/err")"

# From a mirror: fetch takes the mirror's catalog.json (a later end of life
# for R580: the bundle's runfile stays the plan's), keeps it in the state,
# and later plans use it offline; a rollback below it is refused.
export GB
OUT=$TMP/bundle
GB=$GB tests/make-bundle "$OUT" >/dev/null
python3 - "$TMP/new.json" "$OUT/mirror/catalog.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["runfiles"] = []; d["version"] = 2026121502
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
sign "$OUT/mirror/catalog.json"
S=$TMP/state
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" fetch --offline --mirror "file://$OUT/mirror" --trust-key "$OUT/key.pub" --trust-key "$TMP/key.pub" $ARGS --state-dir "$S"
[ "$(cat "$S/catalog-version")" = 2026121502 ] || fail "the mirror's catalog was not kept: $(ls "$S")"
cmp -s "$S/catalog.json" "$OUT/mirror/catalog.json" || fail "the kept catalog is not the mirror's bytes"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --state-dir "$S" --trust-key "$TMP/key.pub"
[ "$(j 'd["catalog"]["version"], d["catalog"]["source"]')" = "(2026121502, '$S/catalog.json')" ] ||
	fail "the kept catalog is not in force: $(j 'd["catalog"]')"
[ "$(j 'd["driver"]["end_of_life"]')" = 2028-12-31 ] || fail "the kept catalog's end of life: $(j 'd["driver"]')"
# new.json (2026121501) is older than the one accepted here: rollback refused, the kept one stays.
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --state-dir "$S" --catalog "$TMP/new.json" --trust-key "$TMP/key.pub"
[ "$(j 'd["catalog"]["version"]')" = 2026121502 ] || fail "rollback: $(j 'd["catalog"]')"
j '[w["text"] for w in d["warnings"] if w["code"] == "catalog-refused"][0]' | grep -q "older than version 2026121502 already accepted here (rollback refused)" ||
	fail "rollback not named: $(j 'd["warnings"]')"
# The site's floor, [trust] min_catalog_version: an update below it is
# refused on a machine that has accepted none (a first boot), named.
printf '[trust]\nmin_catalog_version = 2026121600\n' >"$TMP/site.conf"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" plan $ARGS --json --config "$TMP/site.conf" --catalog "$TMP/new.json" --trust-key "$TMP/key.pub"
[ "$(j 'd["catalog"]["source"], d["driver"]["version"]')" = "('built-in', '580.178.04')" ] ||
	fail "site floor: $(j 'd["catalog"]')"
j '[w["text"] + " FIX " + w["fix"] for w in d["warnings"] if w["code"] == "catalog-refused"][0]' |
	grep -q "older than the site's floor, \[trust\] min_catalog_version = 2026121600 (rollback refused).* FIX serve a catalog of version 2026121600 or newer" ||
	fail "site floor not named: $(j 'd["warnings"]')"
printf '[trust]\nmin_catalog_version = soon\n' >"$TMP/bad.conf"
# shellcheck disable=SC2086
expect_exit 2 "$GB" --root "$ROOT" plan $ARGS --config "$TMP/bad.conf"
grep -q "min_catalog_version must be a catalog update's version" "$TMP/err" || fail "bad floor: $(cat "$TMP/err")"

# Over HTTPS: the mirror's catalog.json fetched from a loopback mirror (a
# CA of this run's), kept; a mirror answering with the wrong host's
# certificate is refused, named, the built-in in force.
. tests/integration/lib-tls.sh
make_certs
start_server "$OUT/mirror"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" fetch --mirror "https://127.0.0.1:$PORT" --ca-file "$TMP/ca.pem" --trust-key "$OUT/key.pub" --trust-key "$TMP/key.pub" $ARGS --state-dir "$TMP/s4"
[ "$(cat "$TMP/s4/catalog-version")" = 2026121502 ] || fail "https: the mirror's catalog was not kept: $(ls "$TMP/s4")"
# shellcheck disable=SC2086
expect_exit 13 "$GB" --root "$ROOT" fetch --mirror "https://127.0.0.1:$WPORT" --ca-file "$TMP/ca.pem" --trust-key "$OUT/key.pub" --trust-key "$TMP/key.pub" $ARGS --state-dir "$TMP/s5"
grep -q "catalog update https://127.0.0.1:$WPORT/catalog.json refused" "$TMP/err" || fail "wrong host: $(cat "$TMP/err")"
[ ! -e "$TMP/s5/catalog.json" ] || fail "a catalog was kept from the wrong host"

# A mirror with no catalog is fine: the built-in is in force.
rm "$OUT/mirror/catalog.json" "$OUT/mirror/catalog.json.sig"
# shellcheck disable=SC2086
expect_exit 0 "$GB" --root "$ROOT" fetch --offline --mirror "file://$OUT/mirror" --trust-key "$OUT/key.pub" $ARGS --state-dir "$TMP/s3"
[ ! -e "$TMP/s3/catalog.json" ] || fail "a catalog appeared from a mirror without one"
grep -q "refused" "$TMP/err" && fail "a mirror without a catalog warned: $(cat "$TMP/err")"
echo ok
