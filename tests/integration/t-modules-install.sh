# The distro method with the site mirror's prebuilt module (#25 item 2),
# decided before any change: `run --dry-run` reads the mirror's signed
# manifest and plans the package for the node's exact kernel (release,
# image package version, the vermagic of its own modules, driver,
# flavour) with no DKMS and no headers; every miss names what the mirror
# lacks and falls back to DKMS, or refuses (exit 10, nothing written)
# under [install] prebuilt_modules = require.
#
# The build image is a copy of a real Debian 12 disk (nvidia-open-kernel-dkms
# 535.261.03) made to say what Debian 12 ships today, the proprietary
# 535.309.01 the plan installs: nvidia-kernel-dkms 535.309.01-0+deb12u1 in
# dpkg's status, its module nvidia-current.ko whose .modinfo says
# version=535.309.01 and license=NVIDIA (rewritten in place, the same
# length, NUL-padded); the node is the same disk with no NVIDIA package and
# the module's .modinfo copied to lib/modules/KVER/kernel/ as the kernel's
# own module (its vermagic is the kernel's).
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
export GPUBOOT_FAKE_OPS=clock:1796040000000000000
KV=6.1.0-50-cloud-amd64
KO=lib/modules/$KV/updates/dkms/nvidia-current-open.ko
IMG=$TMP/img
cp -a "$FIX/debian12-nvidia535-disk" "$IMG"
python3 - "$IMG/$KO" <<'PY'
import sys
p = sys.argv[1]
b = open(p, "rb").read()
for old, new in ((b"version=535.261.03", b"version=535.309.01"), (b"license=Dual MIT/GPL", b"license=NVIDIA")):
    assert old in b, old
    b = b.replace(old, new + b"\0" * (len(old) - len(new)))
open(p, "wb").write(b)
PY
mv "$IMG/$KO" "$IMG/lib/modules/$KV/updates/dkms/nvidia-current.ko"
sed -i 's/^Version: 535\.261\.03-1$/Version: 535.309.01-0+deb12u1/; s/^Package: nvidia-open-kernel-dkms$/Package: nvidia-kernel-dkms/' "$IMG/var/lib/dpkg/status"
for f in "$IMG"/usr/lib/x86_64-linux-gnu/nvidia/current/*.so.535.261.03; do mv "$f" "${f%.535.261.03}.535.309.01"; done
openssl genpkey -algorithm ed25519 -out "$TMP/key.pem" 2>/dev/null
openssl pkey -in "$TMP/key.pem" -pubout -out "$TMP/key.pub"
M=$TMP/mirror
expect_exit 0 "$GB" --root "$IMG" --state-dir "$TMP/bs" modules build --out "$M" --sign-key "$TMP/key.pem"
# A second mirror, built from the disk as it is: the open module at 535.261.03.
expect_exit 0 "$GB" --root "$FIX/debian12-nvidia535-disk" --state-dir "$TMP/bs2" modules build --out "$TMP/mirror2" --sign-key "$TMP/key.pem"

NODE=$TMP/node
cp -a "$FIX/debian12-nvidia535-disk" "$NODE"
python3 - "$NODE/var/lib/dpkg/status" <<'PY'
import sys
p = sys.argv[1]
st = open(p).read().split("\n\n")
def nvidia(s):
    name = s.split("\n", 1)[0]
    return any(w in name for w in ("nvidia", "libcuda", "libnv", "xserver-xorg-video-nvidia"))
open(p, "w").write("\n\n".join(s for s in st if not nvidia(s)))
PY
mkdir -p "$NODE/lib/modules/$KV/kernel/drivers/video"
mv "$NODE/$KO" "$NODE/lib/modules/$KV/kernel/drivers/video/stand-in.ko"
rm -rf "$NODE/lib/modules/$KV/updates"
echo "kernel/drivers/video/stand-in.ko:" >"$NODE/lib/modules/$KV/modules.dep"

plan() { # exit-code, then extra options
	code=$1
	shift
	expect_exit "$code" "$GB" --root "$NODE" run --dry-run --target-gpu T4 --profile minimal --method distro \
		--mirror "file://${MIRROR:-$M}" --trust-key "$TMP/key.pub" --state-dir "$TMP/s" "$@"
}
module_row() { grep '^module ' "$TMP/out" || true; }

# 1. The mirror's package fits: chosen, in place of the DKMS package.
plan 0
module_row | grep -q "^module  *mirror .*gpuboot-nvidia-modules-$KV 535.309.01-0+deb12u1+k6.1.176.1 for $KV.*no DKMS, no compiler, no kernel headers" ||
	fail "the prebuilt module not chosen: $(cat "$TMP/out" "$TMP/err")"
grep -q "^  *gpuboot-nvidia-modules-$KV$" "$TMP/out" || fail "packages: $(cat "$TMP/out")"
grep -q "method  *distro .*the proprietary module from the site mirror's prebuilt package for each installed kernel" "$TMP/out" ||
	fail "method: $(grep '^method' "$TMP/out")"
! grep -q "nvidia-kernel-dkms" "$TMP/out" || fail "the DKMS package still planned: $(cat "$TMP/out")"
[ ! -e "$TMP/s/mirror-version" ] || fail "a dry run recorded the mirror's version"

# 2. A rebuilt kernel (same release, another package version): DKMS, named.
sed -i '/^Package: linux-image-6.1.0-50-cloud-amd64$/,/^$/s/^Version: 6.1.176-1$/Version: 6.1.176-2/' "$NODE/var/lib/dpkg/status"
plan 0
module_row | grep -q "^module  *dkms .*fits the kernel package linux-image-$KV 6.1.176-1, this one is 6.1.176-2 (a rebuilt kernel)" ||
	fail "rebuilt kernel: $(module_row)"
# ... and refused before any change where the site forbids the fallback.
printf '[install]\nprebuilt_modules = require\n' >"$TMP/require.conf"
plan 10 --config "$TMP/require.conf"
grep -q "prebuilt_modules = require forbids building one" "$TMP/err" || fail "require: $(cat "$TMP/err")"
# `gpuboot plan` does not read the mirror: it says so, and refuses nothing.
expect_exit 0 "$GB" --root "$NODE" plan --target-gpu T4 --profile minimal --method distro --config "$TMP/require.conf"
module_row | grep -q "^module  *dkms .*this command does not read the mirror's prebuilt modules" || fail "plan: $(module_row)"
sed -i '/^Package: linux-image-6.1.0-50-cloud-amd64$/,/^$/s/^Version: 6.1.176-2$/Version: 6.1.176-1/' "$NODE/var/lib/dpkg/status"

# 3. Another vermagic: the kernel's own modules say another build.
cp "$NODE/lib/modules/$KV/kernel/drivers/video/stand-in.ko" "$TMP/stand-in.keep"
sed -i 's/vermagic=6\.1\.0-50-cloud-amd64 SMP preempt/vermagic=6.1.0-50-cloud-amd64 SMP PREEMPT/' "$NODE/lib/modules/$KV/kernel/drivers/video/stand-in.ko"
plan 0
module_row | grep -q "^module  *dkms .*has vermagic '6.1.0-50-cloud-amd64 SMP preempt" || fail "vermagic: $(module_row)"
cp "$TMP/stand-in.keep" "$NODE/lib/modules/$KV/kernel/drivers/video/stand-in.ko"

# 4. A mirror built for the older open module only.
MIRROR=$TMP/mirror2 plan 0
module_row | grep -q "^module  *dkms .*is driver 535.261.03 open, the plan's is 535.309.01 proprietary" || fail "driver: $(module_row)"

# 5. A manifest altered after signing: not accepted, named; DKMS.
cp "$M/manifest.json" "$TMP/manifest.keep"
sed -i 's/"6.1.176-1"/"6.1.176-9"/' "$M/manifest.json"
plan 0
module_row | grep -q "^module  *dkms .*manifest was not accepted" || fail "tampered manifest: $(module_row)"
cp "$TMP/manifest.keep" "$M/manifest.json"

# 5b. A package altered after the manifest was signed (same size, one byte
# flipped): the plan still takes the entry (the manifest is intact), and the
# fetch stage refuses the bytes before anything is placed: exit 13, the
# sha256 named, nothing kept in the cache, nothing in the root.
cp -a "$M" "$TMP/mirror-bad"
python3 - "$(find "$TMP/mirror-bad/modules" -name '*.deb' | head -1)" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0xff
open(p, "wb").write(bytes(b))
PY
expect_exit 13 "$GB" --root "$NODE" fetch --target-gpu T4 --profile minimal --method distro \
	--mirror "file://$TMP/mirror-bad" --trust-key "$TMP/key.pub" --state-dir "$TMP/sf"
grep -q "gpuboot-nvidia-modules-$KV.*sha256 [0-9a-f]* does not match the manifest's" "$TMP/err" ||
	fail "tampered package: $(cat "$TMP/err")"
[ -z "$(ls "$TMP/sf/cache/sha256" 2>/dev/null)" ] || fail "the tampered package was kept: $(find "$TMP/sf/cache")"
[ ! -e "$NODE/var/cache/gpuboot/modules" ] || fail "something was placed in the root"
# The same fetch from the intact mirror verifies and keeps it.
expect_exit 0 "$GB" --root "$NODE" fetch --target-gpu T4 --profile minimal --method distro \
	--mirror "file://$M" --trust-key "$TMP/key.pub" --state-dir "$TMP/sf"
sha=$(python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
print([a['sha256'] for a in m['artifacts'] if a['path'] == m['modules'][0]['path']][0])" "$M/manifest.json")
[ -f "$TMP/sf/cache/sha256/$sha" ] || fail "the intact package was not fetched: $(cat "$TMP/out" "$TMP/err")"

# 6. No mirror: DKMS, said so.
expect_exit 0 "$GB" --root "$NODE" run --dry-run --target-gpu T4 --profile minimal --method distro --state-dir "$TMP/s"
module_row | grep -q "^module  *dkms .*no mirror is set" || fail "no mirror: $(module_row)"
# 7. Secure Boot on (the node given the SecureBoot variable and /proc/keys of
# a real Secure Boot guest, and the site's certificate in the kernel's
# keys): only a module signed by the site's key is taken.
SB=$FIX/secureboot-debian12-qemu
mkdir -p "$NODE/sys/firmware/efi" "$NODE/proc"
cp -a "$SB/sys/firmware/efi/efivars" "$NODE/sys/firmware/efi/"
cp "$SB/proc/keys" "$NODE/proc/keys"
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=gpuboot test site key" \
	-keyout "$TMP/site.key" -out "$TMP/site.pem" 2>/dev/null
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=other" \
	-keyout "$TMP/other.key" -out "$TMP/other.pem" 2>/dev/null
openssl x509 -in "$TMP/site.pem" -noout -ext subjectKeyIdentifier >"$TMP/skid" || fail "openssl could not read the site certificate's subjectKeyIdentifier"
skid=$(tail -n1 "$TMP/skid" | tr -d ' :' | tr 'A-F' 'a-f')
[ "${#skid}" -eq 40 ] || fail "not a subjectKeyIdentifier: '$skid'"
printf '2a3b4c5d I------     1 perm 1f010000     0     0 asymmetri gpuboot test site key: %s: X509.rsa %s []\n' \
	"$skid" "$(echo "$skid" | tail -c 9)" >>"$NODE/proc/keys"
printf '[secure_boot]\nsigning_key = %s\nsigning_cert = %s\n' "$TMP/site.key" "$TMP/site.pem" >"$TMP/sb.conf"
plan 0 --config "$TMP/sb.conf"
module_row | grep -q "^module  *dkms .*Secure Boot is on and its module for $KV is signed by '(as DKMS left it)', not the site's key 'gpuboot test site key'" ||
	fail "SB, unsigned: $(module_row) $(cat "$TMP/err")"
# signed by another key
expect_exit 0 "$GB" --root "$IMG" --state-dir "$TMP/bs" modules build --out "$TMP/mirror-other" --sign-key "$TMP/key.pem" \
	--module-key "$TMP/other.key" --module-cert "$TMP/other.pem"
MIRROR=$TMP/mirror-other plan 0 --config "$TMP/sb.conf"
module_row | grep -q "^module  *dkms .*is signed by 'other', not the site's key" || fail "SB, another key: $(module_row)"
# signed by the site's key: taken
expect_exit 0 "$GB" --root "$IMG" --state-dir "$TMP/bs" modules build --out "$TMP/mirror-site" --sign-key "$TMP/key.pem" \
	--module-key "$TMP/site.key" --module-cert "$TMP/site.pem"
MIRROR=$TMP/mirror-site plan 0 --config "$TMP/sb.conf"
module_row | grep -q "^module  *mirror " || fail "SB, the site's key: $(module_row)"
# 8. The site's certificate alone ([secure_boot] signing_cert, no key on the
# node): the mirror's module signed with it is taken, nothing is signed
# here; a mirror without one is refused before any change (exit 10), since
# DKMS would build a module nothing on the node can sign.
printf '[secure_boot]\nsigning_cert = %s\n' "$TMP/site.pem" >"$TMP/cert.conf"
MIRROR=$TMP/mirror-site plan 0 --config "$TMP/cert.conf"
module_row | grep -q "^module  *mirror " || fail "SB, the certificate alone: $(module_row) $(cat "$TMP/err")"
grep -q "^secure boot  *modules-signed .*signed with the site certificate 'gpuboot test site key' (key id $skid, which the kernel trusts); no signing key on this node" "$TMP/out" ||
	fail "SB, the certificate alone: $(grep -i '^secure' "$TMP/out")"
MIRROR=$TMP/mirror-other plan 10 --config "$TMP/cert.conf"
grep -q "signing_cert without signing_key (modules signed at the site), but the modules would be built here: .*signed by 'other'" "$TMP/err" ||
	fail "SB, the certificate alone, no site-signed module: $(cat "$TMP/err")"
# 9. A node whose module is already the site-signed one (the prebuilt
# package's file, as the mirror's .deb holds it), with no [secure_boot] at
# all: kept and loaded as it is when the kernel trusts its signer; refused
# (exit 10, the signer named) when it does not.
KEPT=$TMP/kept
cp -a "$IMG" "$KEPT"
mkdir -p "$KEPT/sys/firmware/efi" "$KEPT/proc"
cp -a "$SB/sys/firmware/efi/efivars" "$KEPT/sys/firmware/efi/"
dpkg-deb -x "$(find "$TMP/mirror-site/modules" -name '*.deb' | head -1)" "$TMP/deb-site"
cp "$TMP/deb-site/lib/modules/$KV/updates/gpuboot/nvidia-current.ko" "$KEPT/lib/modules/$KV/updates/dkms/nvidia-current.ko"
cp "$SB/proc/keys" "$KEPT/proc/keys"
kept() { expect_exit "$1" "$GB" --root "$KEPT" plan --target-gpu T4 --profile minimal --method distro; }
kept 10
grep -q "the installed NVIDIA modules are signed by 'gpuboot test site key', which the kernel does not trust" "$TMP/err" ||
	fail "kept, signer not trusted: $(cat "$TMP/err")"
cp "$NODE/proc/keys" "$KEPT/proc/keys"
kept 0
grep -q "^secure boot  *modules-signed .*signed by 'gpuboot test site key', whose certificate the kernel trusts" "$TMP/out" ||
	fail "kept, signer trusted: $(grep -i '^secure\|^driver' "$TMP/out")"
echo "prebuilt module chosen for the exact kernel; rebuilt kernel, vermagic, older driver, tampered manifest, no mirror: DKMS; require: refused; Secure Boot: the site-signed one only, the certificate alone, a kept signed module"
