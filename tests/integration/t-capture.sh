# detect --capture writes a tree that detects exactly as the original, and
# holds nothing that detect did not read.
. tests/integration/lib.sh
for name in h100x8-ubuntu2204 gh200-ubuntu2404-arm64 t4-nouveau-ubuntu2204; do
	expect_exit 0 "$GB" --root "$FIX/$name" detect --json --capture "$TMP/cap-$name"
	cp "$TMP/out" "$TMP/orig.json"
	expect_exit 0 "$GB" --root "$TMP/cap-$name" detect --json
	diff -u "$TMP/orig.json" "$TMP/out" || fail "capture of $name does not detect the same"
	# Nothing outside what was read: no file beyond those of the fixture.
	(cd "$TMP/cap-$name" && find . -type f | sort) >"$TMP/capfiles"
	python3 - "$FIX/$name" "$TMP/capfiles" <<'PY' || fail "capture of $name invented a path"
import os, sys
root = sys.argv[1]
def exists_in_root(rel):
    # Resolve like RESOLVE_IN_ROOT: absolute links restart at the root.
    parts, cur, hops = [p for p in rel.split("/") if p not in ("", ".")], root, 0
    while parts:
        cur = os.path.join(cur, parts.pop(0))
        if os.path.islink(cur):
            hops += 1
            if hops > 40:
                return False
            t = os.readlink(cur)
            base = root if t.startswith("/") else os.path.dirname(cur)
            parts = [p for p in t.split("/") if p not in ("", ".")] + parts
            cur = base
    return os.path.lexists(cur)
for f in open(sys.argv[2]).read().split():
    if not exists_in_root(f):
        sys.exit("invented: " + f)
PY
done
# The live machine: capture works and round-trips here too.
expect_exit 0 "$GB" detect --json --capture "$TMP/live"
cp "$TMP/out" "$TMP/live.json"
expect_exit 0 "$GB" --root "$TMP/live" detect --json
python3 - "$TMP/live.json" "$TMP/out" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("os", "kernel", "cpu", "gpus", "nvidia", "nouveau"):
    assert a[k] == b[k], (k, a[k], b[k])
PY
echo ok
