# gpuboot --root IMAGE modules build (#25 item 1) on a copy of a real
# Debian 12 disk (nvidia-open-kernel-dkms 535.261.03, its DKMS module for
# 6.1.0-50-cloud-amd64): the module package is a real .deb (dpkg-deb reads
# it: it provides nvidia-open-kernel-535.261.03 and depends on the kernel's
# image package at its exact version), listed in the signed manifest with
# what it fits; a rebuild republishes at a higher version; the site's
# signing pair signs the module inside; every refusal names its cause and
# leaves the mirror as it was.
. tests/integration/lib.sh
command -v openssl >/dev/null || skip "openssl missing (make deps)"
command -v dpkg-deb >/dev/null || skip "dpkg-deb missing"
export GPUBOOT_FAKE_OPS=clock:1796040000000000000
IMG=$TMP/img
cp -a "$FIX/debian12-nvidia535-disk" "$IMG"
M=$TMP/mirror
openssl genpkey -algorithm ed25519 -out "$TMP/key.pem" 2>/dev/null
openssl genpkey -algorithm ed25519 -out "$TMP/other.pem" 2>/dev/null
build() {
	root=$1
	shift
	"$GB" --root "$root" --state-dir "$TMP/state" modules build --out "$M" --sign-key "$TMP/key.pem" "$@"
}
KV=6.1.0-50-cloud-amd64

expect_exit 0 "$GB" --root "$IMG" --state-dir "$TMP/state" modules build --out "$M" --sign-key "$TMP/key.pem" --json
python3 - "$TMP/out" "$M" <<'PY'
import json, sys, hashlib, os
out = json.load(open(sys.argv[1]))
assert out["exit_code"] == 0 and out["driver"] == "535.261.03" and out["flavor"] == "open", out
k, = out["kernels"]
assert k["kernel"] == "6.1.0-50-cloud-amd64" and k["built"] is False and k["files"] == 1, k
man = json.load(open(sys.argv[2] + "/manifest.json"))
mod, = man["modules"]
art = {a["path"]: a for a in man["artifacts"]}[mod["path"]]
data = open(os.path.join(sys.argv[2], mod["path"]), "rb").read()
assert art["sha256"] == hashlib.sha256(data).hexdigest() and art["size"] == len(data), art
want = {"distro": "debian:12", "arch": "amd64", "kernel": "6.1.0-50-cloud-amd64",
        "kernel_package": "linux-image-6.1.0-50-cloud-amd64", "kernel_package_version": "6.1.176-1",
        "vermagic": "6.1.0-50-cloud-amd64 SMP preempt mod_unload modversions ", "driver": "535.261.03",
        "flavor": "open", "package": "gpuboot-nvidia-open-modules-6.1.0-50-cloud-amd64",
        "package_version": "535.261.03-1+k6.1.176.1", "signer": ""}
for f, v in want.items():
    assert mod[f] == v, (f, mod[f], v)
assert man["version"] == 1796040000, man["version"]
PY
DEB=$(find "$M/modules" -name '*.deb')
[ "$(echo "$DEB" | wc -l)" = 1 ] || fail "one package expected: $DEB"
dpkg-deb --field "$DEB" Package Version Architecture Provides Depends Conflicts >"$TMP/fields"
grep -qx "Provides: nvidia-open-kernel-535.261.03" "$TMP/fields" || fail "Provides: $(cat "$TMP/fields")"
grep -q "^Depends: linux-image-$KV (= 6.1.176-1), firmware-nvidia-gsp (= 535.261.03) | firmware-nvidia-gsp-535.261.03" "$TMP/fields" ||
	fail "Depends: $(cat "$TMP/fields")"
grep -q "^Conflicts: nvidia-kernel-dkms, nvidia-open-kernel-dkms" "$TMP/fields" || fail "Conflicts: $(cat "$TMP/fields")"
# deb(5) exactly: three members, each padded to an even offset, nothing after
# the last (apt's own reader takes trailing zeros for a member header)
python3 - "$DEB" <<'PY' || fail "not a deb(5) ar archive"
import sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"!<arch>\n", b[:8]
off, names = 8, []
while off < len(b):
    h = b[off:off + 60]
    assert len(h) == 60 and h[58:60] == b"`\n", (off, h)
    names.append(h[:16].decode().rstrip())
    size = int(h[48:58].decode())
    off += 60 + size + size % 2
assert off == len(b) and names == ["debian-binary", "control.tar.xz", "data.tar.xz"], (off, len(b), names)
PY
if command -v apt-get >/dev/null; then
	apt-get install -s "$DEB" >"$TMP/apt.out" 2>&1 || true
	! grep -q "Could not read meta data\|Error reading archive" "$TMP/apt.out" || fail "apt cannot read it: $(cat "$TMP/apt.out")"
fi
dpkg-deb -x "$DEB" "$TMP/x"
cmp "$TMP/x/lib/modules/$KV/updates/gpuboot/nvidia-current-open.ko" "$IMG/lib/modules/$KV/updates/dkms/nvidia-current-open.ko" ||
	fail "the packaged module is not DKMS's"
dpkg-deb -I "$DEB" postinst | grep -q "depmod -a $KV" || fail "postinst does not run depmod for $KV"
cp "$M/manifest.json" "$TMP/manifest.1"

# A rebuild: the same package, a manifest at a higher version, still one module entry.
expect_exit 0 build "$IMG"
python3 -c "
import json; m = json.load(open('$M/manifest.json'))
assert m['version'] == 1796040001 and len(m['modules']) == 1 and len(m['artifacts']) == 1, m"

# The site's signing pair: the packaged module carries its signature.
openssl req -new -x509 -newkey rsa:2048 -sha256 -nodes -days 30 -subj "/CN=gpuboot test site key/O=Example" \
	-keyout "$TMP/mok.key" -out "$TMP/mok.crt" 2>/dev/null
expect_exit 0 build "$IMG" --module-key "$TMP/mok.key" --module-cert "$TMP/mok.crt"
python3 -c "
import json; m = json.load(open('$M/manifest.json'))
assert m['modules'][0]['signer'] == 'gpuboot test site key', m['modules'][0]"
rm -rf "$TMP/x" && dpkg-deb -x "$(find "$M/modules" -name '*.deb')" "$TMP/x"
build/asan/tools/modsign-tool check "$TMP/mok.crt" "$TMP/x/lib/modules/$KV/updates/gpuboot/nvidia-current-open.ko" >/dev/null ||
	fail "the packaged module is not signed by the site key"
cp -a "$M" "$TMP/mirror.good"

# Refusals, each naming its cause, the mirror untouched.
refused() { # code message cmd...
	code=$1 msg=$2
	shift 2
	expect_exit "$code" "$@"
	grep -q -- "$msg" "$TMP/err" || fail "expected '$msg' in: $(cat "$TMP/err")"
	diff -r "$TMP/mirror.good" "$M" >/dev/null || fail "a refused build changed the mirror"
}
# another key's mirror
refused 2 "is not signed by" "$GB" --root "$IMG" --state-dir "$TMP/state" modules build --out "$M" --sign-key "$TMP/other.pem"
# an altered manifest
cp "$M/manifest.json" "$TMP/m.keep" && sed -i 's/"driver": "535.261.03"/"driver": "535.261.04"/' "$M/manifest.json"
expect_exit 2 build "$IMG"
grep -q "changed after it was signed" "$TMP/err" || fail "altered manifest: $(cat "$TMP/err")"
cp "$TMP/m.keep" "$M/manifest.json"
# no DKMS package in the image
cp -a "$IMG" "$TMP/nodkms"
python3 - "$TMP/nodkms/var/lib/dpkg/status" <<'PY'
import sys
p = sys.argv[1]
st = open(p).read().split("\n\n")
open(p, "w").write("\n\n".join(s for s in st if not s.startswith("Package: nvidia-open-kernel-dkms\n")))
PY
refused 2 "has no Debian NVIDIA DKMS package" build "$TMP/nodkms"
# a kernel no package owns
refused 2 "is not from a package" build "$IMG" --kernel 6.1.0-99-amd64
# a compressed module with the site's key
cp -a "$IMG" "$TMP/xz"
xz -k "$TMP/xz/lib/modules/$KV/updates/dkms/nvidia-current-open.ko" && rm "$TMP/xz/lib/modules/$KV/updates/dkms/nvidia-current-open.ko"
refused 10 "is compressed" build "$TMP/xz" --module-key "$TMP/mok.key" --module-cert "$TMP/mok.crt"
# the live machine is not an image
refused 2 "give --root IMAGE" "$GB" --state-dir "$TMP/state" modules build --out "$M" --sign-key "$TMP/key.pem"
echo "modules build: package, manifest, rebuild, site signature, 6 refusals"
