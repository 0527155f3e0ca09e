# Module signing with a site key (src/load/modsign.c): byte for byte what
# the kernel's own scripts/sign-file writes (Debian's linux-kbuild-6.1), an
# old signature replaced rather than stacked, a signature checked against
# the certificate (another key, altered bytes, a lying trailer), and the
# certificate named as /proc/keys names it.
. tests/integration/lib.sh
T=build/asan/tools/modsign-tool
[ -x "$T" ] || fail "$T missing (make test builds it)"
SF=$(ls /usr/lib/linux-kbuild-*/scripts/sign-file 2>/dev/null | head -n1)
[ -n "$SF" ] || fail "the kernel's sign-file is missing (scripts/install-deps.sh installs linux-kbuild-6.1)"
cd "$TMP"
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=gpuboot test site key/O=Example" \
	-keyout site.key -out site.pem 2>/dev/null
openssl x509 -in site.pem -outform DER -out site.der
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=DKMS module signing key" \
	-keyout other.key -out other.pem 2>/dev/null
openssl x509 -in other.pem -outform DER -out other.der
M=$OLDPWD/tests/fixtures/debian12-nvidia535-disk/lib/modules/6.1.0-50-cloud-amd64/updates/dkms/nvidia-current-open.ko
cp "$M" plain.ko

# The name the kernel gives the certificate: "<CN>: <subjectKeyIdentifier>".
openssl x509 -in site.pem -noout -ext subjectKeyIdentifier >skid.txt || fail "openssl cannot print the subjectKeyIdentifier"
skid=$(tail -n1 skid.txt | tr -d ' :' | tr 'A-F' 'a-f')
[ -n "$skid" ] || fail "no subjectKeyIdentifier in site.pem"
[ "$("$OLDPWD/$T" certid site.pem)" = "gpuboot test site key: $skid" ] || fail "certid: $("$OLDPWD/$T" certid site.pem), want $skid"
"$OLDPWD/$T" certid site.der >/dev/null || fail "a DER certificate is not read"

# An unsigned module: ours and sign-file's are the same bytes (RSA PKCS#1 v1.5 is deterministic).
"$OLDPWD/$T" sign site.key site.pem "$TMP/plain.ko" "$TMP/ours.ko" || fail "sign"
cp plain.ko kernel.ko
"$SF" sha256 site.key site.der kernel.ko || fail "sign-file"
cmp -s ours.ko kernel.ko || fail "the signed module differs from what the kernel's sign-file writes"
"$OLDPWD/$T" check site.pem ours.ko || fail "our signature does not check"

# A module DKMS signed with its own key: re-signed, not stacked: the same bytes as sign-file on the unsigned one.
cp plain.ko dkms.ko
"$SF" sha256 other.key other.der dkms.ko
"$OLDPWD/$T" sign site.key site.pem "$TMP/dkms.ko" "$TMP/resigned.ko" || fail "re-sign"
cmp -s resigned.ko kernel.ko || fail "re-signing stacked a second signature or changed the module"
"$OLDPWD/$T" sign site.key site.pem "$TMP/resigned.ko" "$TMP/again.ko" && cmp -s again.ko resigned.ko || fail "signing twice is not idempotent"

# The check: unsigned, another signer, altered bytes, a trailer that lies.
for f in plain.ko dkms.ko; do
	set +e; "$OLDPWD/$T" check site.pem "$f"; rc=$?; set -e
	[ "$rc" -eq 1 ] || fail "check $f: exit $rc, want 1 (not signed by the site key)"
done
python3 - <<'PY'
d = bytearray(open("ours.ko", "rb").read())
d[100] ^= 1
open("altered.ko", "wb").write(d)
m = b"~Module signature appended~\n"
d = bytearray(open("ours.ko", "rb").read())
d[-len(m) - 4:-len(m)] = (len(d)).to_bytes(4, "big")  # a signature longer than the file
open("lying.ko", "wb").write(d)
PY
set +e; "$OLDPWD/$T" check site.pem altered.ko; rc=$?; set -e
[ "$rc" -eq 1 ] || fail "an altered module checked as signed (exit $rc)"
set +e; "$OLDPWD/$T" check site.pem lying.ko; rc=$?; set -e
[ "$rc" -eq 2 ] || fail "a lying trailer: exit $rc, want 2 (malformed)"
set +e; "$OLDPWD/$T" sign site.key site.pem "$TMP/lying.ko" "$TMP/x.ko" 2>err; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "trailer is malformed" err || fail "signing a module with a lying trailer: exit $rc, $(cat err)"
set +e; "$OLDPWD/$T" sign other.key site.pem "$TMP/plain.ko" "$TMP/x.ko" 2>err; rc=$?; set -e
[ "$rc" -ne 0 ] && grep -q "not a private key and its certificate" err || fail "a key that is not the certificate's: exit $rc, $(cat err)"
echo ok
