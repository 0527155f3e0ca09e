# Secure Boot decided before anything changes, on the capture of a real
# Debian 12 guest booted by OVMF with Secure Boot on (tests/fixtures/
# secureboot-debian12-qemu: its /proc/keys holds Microsoft's db
# certificates and the kernel's build key): no signing path -> exit 10; a
# site certificate the kernel does not hold -> exit 10 naming it and how to
# enrol it; the same certificate in the kernel's keys -> sign-with-key;
# a key that is not the certificate's, or a key alone -> exit 2; the
# certificate alone (docs/mirror.md, prebuilt modules) -> checked the same.
. tests/integration/lib.sh
F=tests/fixtures/secureboot-debian12-qemu
grep -q "asymmetri Microsoft Corporation UEFI CA 2011" "$F/proc/keys" || fail "the fixture's /proc/keys lost its db certificates"
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=gpuboot test site key" \
	-keyout "$TMP/site.key" -out "$TMP/site.pem" 2>/dev/null
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=other" \
	-keyout "$TMP/other.key" -out "$TMP/other.pem" 2>/dev/null
conf() { printf '[secure_boot]\n%s\n' "$1" >"$TMP/gpuboot.conf"; }
plan() { expect_exit "$1" "$GB" --root "$2" plan --target-gpu T4 --profile minimal --config "$TMP/gpuboot.conf" --json; }

conf ""
plan 10 "$F"
grep -q "Secure Boot is on and debian has no signed NVIDIA modules" "$TMP/err" || fail "no signing path: $(cat "$TMP/err")"

conf "signing_key = $TMP/site.key
signing_cert = $TMP/site.pem"
plan 10 "$F"
openssl x509 -in "$TMP/site.pem" -noout -ext subjectKeyIdentifier >"$TMP/skid" || fail "openssl could not read the site certificate's subjectKeyIdentifier"
skid=$(tail -n1 "$TMP/skid" | tr -d ' :' | tr 'A-F' 'a-f')
[ "${#skid}" -eq 40 ] || fail "not a subjectKeyIdentifier: '$skid'"
grep -q "the kernel does not trust the site certificate 'gpuboot test site key' (key id $skid" "$TMP/err" ||
	fail "an untrusted site certificate: $(cat "$TMP/err")"
grep -q "virt-fw-vars --add-db" "$TMP/err" || fail "the refusal does not say how to enrol the certificate"

# The same machine once the certificate is in the firmware's db: the kernel lists it in /proc/keys.
mkdir "$TMP/root"
cp -a "$F/." "$TMP/root/"
printf '2a3b4c5d I------     1 perm 1f010000     0     0 asymmetri gpuboot test site key: %s: X509.rsa %s []\n' \
	"$skid" "$(echo "$skid" | tail -c 9)" >>"$TMP/root/proc/keys"
plan 0 "$TMP/root"
python3 - "$TMP/out" "$skid" <<'PY' || fail "sign-with-key: $(cat "$TMP/out" | head -c 600)"
import json, sys
d = json.load(open(sys.argv[1]))
sb = d["secure_boot"]
assert sb["strategy"] == "sign-with-key", sb
assert "whose certificate the kernel trusts ('gpuboot test site key: %s' in /proc/keys)" % sys.argv[2] in sb["reason"], sb
PY

conf "signing_key = $TMP/other.key
signing_cert = $TMP/site.pem"
plan 2 "$F"
grep -q "is not the private key of $TMP/site.pem" "$TMP/err" || fail "a key that is not the certificate's: $(cat "$TMP/err")"
conf "signing_key = $TMP/site.key"
plan 2 "$F"
grep -q "signing_key needs its signing_cert" "$TMP/err" || fail "a key alone: $(cat "$TMP/err")"
# The certificate alone (the modules signed at the site, no key on the
# node: docs/mirror.md): checked against the kernel's keys all the same.
conf "signing_cert = $TMP/other.pem"
plan 10 "$F"
grep -q "does not trust the site certificate 'other'" "$TMP/err" || fail "the certificate alone: $(cat "$TMP/err")"
echo ok
