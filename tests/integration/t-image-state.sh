# An image root's state directory (var/lib/gpuboot: the lock, the journal,
# the status, the exports, the cache, the ready flags) resolves inside the
# root like every other path gpuboot writes under --root: a link there names
# a directory of the image, never the host's, and a link planted for one of
# the files or directories gpuboot makes in it is refused (exit 2) before
# anything is written, the data outside untouched.
. tests/integration/lib.sh
OUT=$TMP/outside # stands for the Packer host's own /var/lib/gpuboot
fresh() {
	rm -rf "$TMP/R" "$OUT"
	cp -a "$FIX/l4-debian12" "$TMP/R"
	mkdir -p "$TMP/R/var/lib" "$OUT"
	echo '{"host":"journal"}' >"$OUT/journal.json"
	echo '{"host":"status"}' >"$OUT/status.json"
}
untouched() {
	[ "$(ls "$OUT" | sort | tr '\n' ' ')" = "journal.json status.json " ] ||
		fail "$1: gpuboot wrote outside the root: $(ls -la "$OUT")"
	grep -q '"host":"journal"' "$OUT/journal.json" && grep -q '"host":"status"' "$OUT/status.json" ||
		fail "$1: gpuboot overwrote the host's state"
}
# A failing run still takes the lock and writes its journal and status:
# offline with an empty cache, the fetch stops it (exit 13 or the install's 1).
build() {
	set +e
	GPUBOOT_FAKE_OPS="root=$TMP/R" "$GB" --root "$TMP/R" run --target-gpu T4 --profile minimal --method distro \
		--offline >"$TMP/out" 2>"$TMP/err"
	rc=$?
	set -e
}

# 1. The whole state directory an absolute link: it means the image's own
# directory of that name. Absent from the image: refused, named.
fresh
ln -s "$OUT" "$TMP/R/var/lib/gpuboot"
build
[ "$rc" -eq 2 ] || fail "a dangling state link: exit $rc: $(cat "$TMP/err")"
grep -q "symbolic link to '$OUT', which the image does not have" "$TMP/err" || fail "the message: $(cat "$TMP/err")"
untouched "a dangling state link"
# Present in the image: the state goes there.
mkdir -p "$TMP/R$OUT"
build
[ "$rc" -ne 2 ] || fail "a state link into the image refused: $(cat "$TMP/err")"
[ -f "$TMP/R$OUT/status.json" ] && [ -f "$TMP/R$OUT/journal.json" ] && [ -f "$TMP/R$OUT/lock" ] ||
	fail "the state is not in the image's directory: $(ls -la "$TMP/R$OUT")"
untouched "a state link into the image"
# A relative link that climbs out of the root ends at the root.
fresh
ln -s ../../../../../../../../../../.."$OUT" "$TMP/R/var/lib/gpuboot"
mkdir -p "$TMP/R$OUT"
build
[ -f "$TMP/R$OUT/status.json" ] || fail "a climbing link: the state is not inside the root"
untouched "a climbing link"

# 2. Each file and directory gpuboot makes there, planted as a link out.
for e in lock journal.json status.json gpuboot.prom nfd-features cache cache/sha256 cache/tmp cache/mirror run \
	runfile mirror-version; do
	fresh
	mkdir -p "$TMP/R/var/lib/gpuboot/$(dirname "$e")"
	case $e in
	*.json | lock | gpuboot.prom | nfd-features | mirror-version) ln -s "$OUT/$(basename "$e")" "$TMP/R/var/lib/gpuboot/$e" ;;
	*) ln -s "$OUT" "$TMP/R/var/lib/gpuboot/$e" ;;
	esac
	build
	[ "$rc" -eq 2 ] || fail "$e planted as a link: exit $rc: $(cat "$TMP/err")"
	grep -q "var/lib/gpuboot/$e' is a symbolic link" "$TMP/err" || fail "$e: the message: $(cat "$TMP/err")"
	[ ! -e "$TMP/R/var/lib/gpuboot/status.json" ] || [ "$e" = status.json ] ||
		fail "$e: refused after writing the status"
	untouched "$e planted as a link"
done
echo "ok: 3 state-directory links resolved inside the root, 12 planted links refused, nothing written outside"
