# make release's files (scripts/release.sh): both static binaries, SHA256SUMS,
# its Ed25519 signature in gpuboot's format (checked with gpuboot's own code
# and with the openssl command docs/install-gpuboot.md gives users), the
# examples with SHA256SUMS pasted in; and reproducible: the same tree built
# again in another directory gives the same bytes.
. tests/integration/lib.sh
X=build/gpuboot A=build/gpuboot-aarch64 SIGN=build/dev/release-sign
for f in "$X" "$A" "$SIGN"; do [ -x "$f" ] || fail "$f missing (make test builds it)"; done
openssl genpkey -algorithm ed25519 -out "$TMP/key.pem" 2>/dev/null
openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/key.pub"
mk() { # DIR X86 ARM
	GPUBOOT_RELEASE_KEY=$TMP/key.pem GPUBOOT_RELEASE_DIR=$1 GPUBOOT_RELEASE_URL=https://example.org/gpuboot/9.9 \
		scripts/release.sh "$2" "$3" "$SIGN" >"$TMP/release.log" 2>&1 || fail "release.sh: $(cat "$TMP/release.log")"
}
mk "$TMP/r1" "$X" "$A"
R=$TMP/r1
[ "$(cd "$R" && ls | tr '\n' ' ')" = "SHA256SUMS SHA256SUMS.sig gpuboot-aarch64 gpuboot-release.pub gpuboot-x86_64 gpuboot.sh gpuboot.yaml " ] ||
	fail "release files: $(ls "$R")"
file -b "$R/gpuboot-x86_64" | grep -q "x86-64.*statically linked" || fail "gpuboot-x86_64: $(file -b "$R/gpuboot-x86_64")"
file -b "$R/gpuboot-aarch64" | grep -q "ARM aarch64.*statically linked" || fail "gpuboot-aarch64: $(file -b "$R/gpuboot-aarch64")"
for b in gpuboot-x86_64 gpuboot-aarch64; do
	[ "$(stat -c %s "$R/$b")" -lt $((6 * 1024 * 1024)) ] || fail "$b is over 6 MiB"
done
[ "$(wc -l <"$R/SHA256SUMS")" -eq 2 ] || fail "SHA256SUMS: $(cat "$R/SHA256SUMS")"
(cd "$R" && sha256sum -c --quiet SHA256SUMS) || fail "SHA256SUMS does not match the binaries"
grep -Eq '^[0-9a-f]{128}$' "$R/SHA256SUMS.sig" && [ "$(wc -l <"$R/SHA256SUMS.sig")" -eq 1 ] || fail "SHA256SUMS.sig is not 128 hex digits and a newline"
cmp -s "$R/gpuboot-release.pub" "$TMP/key.pub" || fail "gpuboot-release.pub is not the signing key's public half"

# The signature: gpuboot's own code, then openssl as docs/install-gpuboot.md tells users.
"$SIGN" verify "$R/gpuboot-release.pub" "$R/SHA256SUMS" "$R/SHA256SUMS.sig" >/dev/null || fail "release-sign does not verify the release"
osslverify() { # SUMS SIG PUB
	python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(open(sys.argv[1]).read()))' "$2" >"$TMP/sig.bin"
	openssl pkeyutl -verify -pubin -inkey "$3" -rawin -in "$1" -sigfile "$TMP/sig.bin" >/dev/null 2>&1
}
osslverify "$R/SHA256SUMS" "$R/SHA256SUMS.sig" "$R/gpuboot-release.pub" || fail "openssl pkeyutl does not verify SHA256SUMS.sig"
{ cat "$R/SHA256SUMS"; echo "0000000000000000000000000000000000000000000000000000000000000000  gpuboot-evil"; } >"$TMP/altered"
! "$SIGN" verify "$R/gpuboot-release.pub" "$TMP/altered" "$R/SHA256SUMS.sig" >/dev/null 2>&1 || fail "an altered SHA256SUMS verified"
! osslverify "$TMP/altered" "$R/SHA256SUMS.sig" "$R/gpuboot-release.pub" || fail "openssl verified an altered SHA256SUMS"
openssl genpkey -algorithm ed25519 2>/dev/null | openssl pkey -pubout -out "$TMP/other.pub"
! "$SIGN" verify "$TMP/other.pub" "$R/SHA256SUMS" "$R/SHA256SUMS.sig" >/dev/null 2>&1 || fail "another key verified the release"

# The examples with this release's SHA256SUMS and URL pasted in; nothing else changed.
python3 - "$R" <<'PY' || fail "the release's examples are not the repository's with SHA256SUMS pasted"
import sys, yaml
r = sys.argv[1]
sums = open(r + "/SHA256SUMS").read()
def fill(text, indent):
    out, skip = [], False
    for l in text.splitlines(True):
        s = l.strip()
        if s.startswith("GPUBOOT_RELEASE="):
            l = l[:l.index("GPUBOOT_RELEASE=")] + "GPUBOOT_RELEASE=https://example.org/gpuboot/9.9\n"
        if skip:
            if s == "'":
                skip = False
            else:
                continue
        out.append(l)
        if s == "GPUBOOT_SHA256SUMS='":
            out += [indent + x + "\n" for x in sums.splitlines()]
            skip = True
    return "".join(out)
for name, indent in (("gpuboot.sh", ""), ("gpuboot.yaml", "      ")):
    want = fill(open("cloud-init/" + name).read(), indent)
    got = open(r + "/" + name).read()
    assert got == want, name
y = yaml.safe_load(open(r + "/gpuboot.yaml"))
assert sums in y["write_files"][1]["content"]
PY

# Reproducible: the tree copied elsewhere and built again gives the same binaries, then the same release.
mkdir "$TMP/src"
tar -c --exclude=./build --exclude=./.git . | tar -x -C "$TMP/src"
make -C "$TMP/src" static ARCH=x86_64 >"$TMP/build.log" 2>&1 || fail "second x86_64 build: $(tail -5 "$TMP/build.log")"
make -C "$TMP/src" static ARCH=aarch64 >>"$TMP/build.log" 2>&1 || fail "second aarch64 build: $(tail -5 "$TMP/build.log")"
cmp -s "$X" "$TMP/src/build/gpuboot" || fail "x86_64: a second build in $TMP/src gives other bytes"
cmp -s "$A" "$TMP/src/build/gpuboot-aarch64" || fail "aarch64: a second build in $TMP/src gives other bytes"
mk "$TMP/r2" "$TMP/src/build/gpuboot" "$TMP/src/build/gpuboot-aarch64"
for f in $(ls "$R"); do cmp -s "$R/$f" "$TMP/r2/$f" || fail "release file $f differs between two builds"; done
echo "ok: $(cat "$R/SHA256SUMS" | tr '\n' ' ')"
