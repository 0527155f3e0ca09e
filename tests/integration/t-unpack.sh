# Hostile archives are refused and write nothing outside staging; a good
# archive and a makeself runfile unpack atomically into place.
. tests/integration/lib.sh
UT=build/asan/tools/unpack-tool
[ -x "$UT" ] || fail "$UT missing"
A=$TMP/archives
mkdir -p "$A"
python3 - "$A" <<'PY'
import io, lzma, os, sys, tarfile
d = sys.argv[1]
def tar(name, members, comp="xz"):
    with tarfile.open(os.path.join(d, name), "w:" + comp) as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def f(name, data=b"x", mode=0o644):
    i = tarfile.TarInfo(name); i.size = len(data); i.mode = mode; return (i, data)
def sym(name, target):
    i = tarfile.TarInfo(name); i.type = tarfile.SYMTYPE; i.linkname = target; return (i, None)
def hard(name, target):
    i = tarfile.TarInfo(name); i.type = tarfile.LNKTYPE; i.linkname = target; return (i, None)
def dev(name):
    i = tarfile.TarInfo(name); i.type = tarfile.CHRTYPE; i.devmajor = 1; i.devminor = 3; return (i, None)
tar("good.tar.xz", [f("dir/a.txt", b"hello"), sym("dir/link", "a.txt"), hard("dir/hard", "dir/a.txt"), f("bin/tool", b"#!/bin/sh\n", 0o755)])
tar("good.tar.gz", [f("x", b"gz")], "gz")
tar("dotdot.tar.xz", [f("../escaped.txt")])
tar("dotdot-deep.tar.xz", [f("a/../../escaped.txt")])
tar("absolute.tar.xz", [f("/tmp/gpuboot-absolute-escape.txt")])
tar("symlink-out.tar.xz", [sym("evil", "/tmp"), f("evil/gpuboot-through-link.txt")])
tar("symlink-relative-out.tar.xz", [sym("evil", "../.."), f("evil/gpuboot-through-link.txt")])
tar("symlink-then-write.tar.xz", [sym("a", "b"), f("a/c")])
tar("hardlink-out.tar.xz", [hard("passwd", "../../../../etc/passwd")])
tar("hardlink-abs.tar.xz", [hard("passwd", "/etc/passwd")])
tar("device.tar.xz", [dev("null")])
tar("setuid.tar.xz", [f("suid", b"x", 0o4755), f("sgid", b"x", 0o2755)])
# A bomb: 64 MiB of zeros in a few KiB.
i = tarfile.TarInfo("zeros"); i.size = 64 << 20
with tarfile.open(os.path.join(d, "bomb.tar.xz"), "w:xz") as t:
    t.addfile(i, io.BytesIO(bytes(64 << 20)))
open(os.path.join(d, "garbage.tar.xz"), "wb").write(b"\xfd7zXZ\x00garbage" * 10)
PY
ls -la "$A/bomb.tar.xz" | awk '{print "bomb: " $5 " bytes compressed"}'
refuse() { # archive expected-message [opts]
	name=$1 msg=$2
	shift 2
	mkdir -p "$TMP/out-$name"
	set +e
	"$UT" "$A/$name" "$TMP/out-$name/dest" "$@" >"$TMP/res" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || fail "$name: not refused: $(cat "$TMP/res")"
	grep -q -- "$msg" "$TMP/res" || fail "$name: expected '$msg' in: $(cat "$TMP/res")"
	[ -z "$(ls -A "$TMP/out-$name")" ] || fail "$name: left $(ls -A "$TMP/out-$name") behind"
}
refuse dotdot.tar.xz "climbs out"
refuse dotdot-deep.tar.xz "climbs out"
refuse absolute.tar.xz "absolute"
refuse symlink-out.tar.xz "points outside"
refuse symlink-relative-out.tar.xz "points outside"
refuse hardlink-out.tar.xz "hard link"
refuse hardlink-abs.tar.xz "hard link"
refuse device.tar.xz "device"
refuse bomb.tar.xz "decompression bomb" --max-bytes 16777216
refuse garbage.tar.xz "corrupt\|not a gzip"
[ ! -e /tmp/gpuboot-absolute-escape.txt ] && [ ! -e /tmp/gpuboot-through-link.txt ] && [ ! -e "$TMP/escaped.txt" ] || fail "something was written outside staging"
# Symlink then a write through it, inside the tree: libarchive refuses (SECURE_SYMLINKS).
mkdir -p "$TMP/out-stw"
set +e
"$UT" "$A/symlink-then-write.tar.xz" "$TMP/out-stw/dest" >"$TMP/res" 2>&1
set -e
grep -q "^ERR" "$TMP/res" || fail "write through a symlink accepted: $(cat "$TMP/res")"
[ -z "$(ls -A "$TMP/out-stw")" ] || fail "symlink-then-write left files"
# setuid/setgid bits are dropped unless the caller allows them.
"$UT" "$A/setuid.tar.xz" "$TMP/suid" >/dev/null || fail "setuid archive not unpacked"
[ "$(stat -c %a "$TMP/suid/suid")" = 755 ] && [ "$(stat -c %a "$TMP/suid/sgid")" = 755 ] || fail "setuid bits kept: $(stat -c %a "$TMP/suid/suid")"
"$UT" "$A/setuid.tar.xz" "$TMP/suid2" --allow-setid >/dev/null
[ "$(stat -c %a "$TMP/suid2/suid")" = 4755 ] || fail "--allow-setid ignored"
# A good archive unpacks; replacing an existing tree is atomic (old tree gone, new whole).
"$UT" "$A/good.tar.xz" "$TMP/good" >/dev/null || fail "good archive refused"
[ "$(cat "$TMP/good/dir/a.txt")" = hello ] && [ -L "$TMP/good/dir/link" ] && [ "$(cat "$TMP/good/dir/hard")" = hello ] || fail "good archive content"
[ -x "$TMP/good/bin/tool" ] || fail "mode lost"
"$UT" "$A/good.tar.gz" "$TMP/good" >/dev/null || fail "gzip archive refused"
[ "$(cat "$TMP/good/x")" = gz ] && [ ! -e "$TMP/good/dir" ] || fail "replacement not whole"
[ -z "$(ls -d "$TMP"/good.* 2>/dev/null)" ] || fail "staging or old tree left: $(ls -d "$TMP"/good.*)"
# A refused archive leaves the old tree as it was.
set +e
"$UT" "$A/device.tar.xz" "$TMP/good" >/dev/null 2>&1
set -e
[ "$(cat "$TMP/good/x")" = gz ] || fail "a refused archive damaged the existing tree"
# NVIDIA's runfile layout: the makeself payload, read without running the header.
tests/make-runfile "$TMP/NVIDIA-Linux-x86_64-580.173.02.run" 580.173.02
"$UT" "$TMP/NVIDIA-Linux-x86_64-580.173.02.run" "$TMP/driver" --makeself >/dev/null || fail "runfile payload not unpacked"
[ -x "$TMP/driver/NVIDIA-Linux-x86_64-580.173.02/nvidia-installer" ] || fail "runfile tree"
printf '#!/bin/sh\necho hi\n' >"$TMP/notmakeself.run"
set +e
"$UT" "$TMP/notmakeself.run" "$TMP/x" --makeself >"$TMP/res" 2>&1
set -e
grep -q "names no payload offset" "$TMP/res" || fail "non-makeself runfile: $(cat "$TMP/res")"
# A full disk is named as a full disk: the unpacker keeps libarchive's errno
# (ENOSPC), not a generic EIO. A 256 KiB tmpfs where we may mount one (root),
# else a file-size limit (RLIMIT_FSIZE: EFBIG) with SIGXFSZ ignored.
head -c 1048576 /dev/urandom >"$TMP/big.bin"
(cd "$TMP" && tar -cJf "$A/big.tar.xz" big.bin)
SMALL=$TMP/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=256k gpuboot-test "$SMALL" 2>/dev/null; then
	trap 'umount "$SMALL" 2>/dev/null || :; rm -rf "$TMP"' EXIT
	set +e
	"$UT" "$A/big.tar.xz" "$SMALL/dest" >"$TMP/res" 2>&1
	rc=$?
	set -e
	left=$(ls -A "$SMALL")
	umount "$SMALL"
	[ "$rc" -eq 1 ] && grep -q "(errno 28: No space left on device)" "$TMP/res" || fail "full disk: exit $rc: $(cat "$TMP/res")"
	[ -z "$left" ] || fail "full disk: left $left behind"
else
	set +e
	(trap '' XFSZ && ulimit -f 256 && exec "$UT" "$A/big.tar.xz" "$SMALL/dest") >"$TMP/res" 2>&1
	rc=$?
	set -e
	[ "$rc" -eq 1 ] && grep -q "(errno 27: File too large)" "$TMP/res" || fail "file size limit: exit $rc: $(cat "$TMP/res")"
	[ -z "$(ls -A "$SMALL")" ] || fail "file size limit: left $(ls -A "$SMALL") behind"
fi
echo ok
