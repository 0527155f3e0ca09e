#!/bin/sh
# make release: the files of a gpuboot release in build/release/
#   gpuboot-x86_64 gpuboot-aarch64   the static binaries (make static ARCH=...)
#   SHA256SUMS                        sha256sum's format, one line per binary
#   SHA256SUMS.sig                    Ed25519 over SHA256SUMS: 128 hex digits and a
#                                     newline, the format of gpuboot's mirror manifests
#   gpuboot-release.pub               the public key that verifies it (PEM)
#   gpuboot.yaml gpuboot.sh           the cloud-init examples with this release's
#                                     SHA256SUMS pasted in (and GPUBOOT_RELEASE_URL)
# The signing key: $GPUBOOT_RELEASE_KEY (an Ed25519 private key in PEM, kept
# off the build tree). Without it, a test key is made once in
# build/release-test-key.pem and the release says it is a test release.
# Two runs from the same commit (and key) give the same bytes
# (tests/integration/t-release.sh).
#   usage: scripts/release.sh X86_64_BINARY AARCH64_BINARY RELEASE_SIGN_TOOL
set -eu
[ $# -eq 3 ] || { echo "usage: scripts/release.sh X86_64_BINARY AARCH64_BINARY RELEASE_SIGN_TOOL" >&2; exit 2; }
x86=$1 arm=$2 signer=$3
out=${GPUBOOT_RELEASE_DIR:-build/release}
url=${GPUBOOT_RELEASE_URL:-https://downloads.example.com/gpuboot/0.1.0}
for f in "$x86" "$arm" "$signer"; do
	[ -s "$f" ] || { echo "release: $f missing (make static ARCH=x86_64 / ARCH=aarch64)" >&2; exit 1; }
done
file -b "$x86" | grep -q "x86-64.*statically linked" || { echo "release: $x86 is not a static x86-64 binary" >&2; exit 1; }
file -b "$arm" | grep -q "aarch64.*statically linked" || { echo "release: $arm is not a static aarch64 binary" >&2; exit 1; }
key=${GPUBOOT_RELEASE_KEY:-}
if [ -z "$key" ]; then
	key=build/release-test-key.pem
	[ -s "$key" ] || openssl genpkey -algorithm ed25519 -out "$key" 2>/dev/null
	echo "release: GPUBOOT_RELEASE_KEY not set: signed with the TEST key $key (not a release to publish)" >&2
fi
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$x86" "$out.tmp/gpuboot-x86_64"
cp "$arm" "$out.tmp/gpuboot-aarch64"
chmod 0755 "$out.tmp/gpuboot-x86_64" "$out.tmp/gpuboot-aarch64"
(cd "$out.tmp" && LC_ALL=C sha256sum gpuboot-aarch64 gpuboot-x86_64 >SHA256SUMS)
"$signer" sign "$key" "$out.tmp/SHA256SUMS" >"$out.tmp/SHA256SUMS.sig"
openssl pkey -in "$key" -pubout -out "$out.tmp/gpuboot-release.pub"
"$signer" verify "$out.tmp/gpuboot-release.pub" "$out.tmp/SHA256SUMS" "$out.tmp/SHA256SUMS.sig" >/dev/null
# The examples as users paste them: this release's URL and SHA256SUMS filled in.
for ex in gpuboot.yaml gpuboot.sh; do
	awk -v sums="$out.tmp/SHA256SUMS" -v url="$url" '
		/GPUBOOT_RELEASE=/ { sub(/GPUBOOT_RELEASE=.*/, "GPUBOOT_RELEASE=" url) }
		/GPUBOOT_SHA256SUMS='\''$/ { print; ind = $0; sub(/[^ ].*/, "", ind)
			while ((getline l < sums) > 0) print ind l
			skip = 1; next }
		skip && /^ *'\''$/ { skip = 0 }
		!skip { print }' "cloud-init/$ex" >"$out.tmp/$ex"
	grep -Eq "^ *0{64}  gpuboot-" "$out.tmp/$ex" && { echo "release: $ex: the SHA256SUMS block was not filled in" >&2; exit 1; }
done
chmod 0755 "$out.tmp/gpuboot.sh"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "release: $out:"
(cd "$out" && ls -l && cat SHA256SUMS)
