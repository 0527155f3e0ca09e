# The aarch64 static binary (make static ARCH=aarch64), run under qemu-user:
# statically linked for ARM aarch64, under 6 MiB, and it detects every fixture
# exactly as tests/expected says and plans every fixture and profile byte for
# byte as the x86_64 static binary does. Its embedded probe starts (its own
# _start, GLIBC_2.17 baseline) and measures the fake NVIDIA libraries built
# for aarch64 exactly as the x86_64 probe does.
. tests/integration/lib.sh
A=build/gpuboot-aarch64
S=${GB_STATIC:-build/gpuboot}
P=build/probe-aarch64/gpuboot-probe
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || skip "no aarch64 cross toolchain (gcc-aarch64-linux-gnu: make deps)"
[ -x "$A" ] || fail "$A missing (make static ARCH=aarch64)"
[ -x "$S" ] || fail "$S missing (make static)"
[ -x "$P" ] || fail "$P missing"
Q=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static missing (qemu-user-static: make deps)"
f=$(file -b "$A")
case $f in *"ARM aarch64"*"statically linked"*) ;; *) fail "$A: $f" ;; esac
size=$(stat -c %s "$A")
[ "$size" -le $((6 * 1024 * 1024)) ] || fail "$A is $size bytes, over 6 MiB"
aarch64-linux-gnu-readelf -S "$A" | grep -q '\.symtab' && fail "$A is not stripped"
aarch64-linux-gnu-readelf -l "$A" | grep -q INTERP && fail "$A asks for a program interpreter"

expect_exit 0 "$Q" "$A" --version -v
grep -q '^gpuboot ' "$TMP/out" || fail "no version: $(cat "$TMP/out")"
grep -q "OpenSSL" "$TMP/out" || fail "no OpenSSL in --version -v: $(cat "$TMP/out")"
expect_exit 0 "$Q" "$A" --help
grep -q 'detect' "$TMP/out" || fail "--help names no commands"
expect_exit 2 "$Q" "$A" no-such-command
strings "$A" | grep -qx "/etc/modprobe.d" || fail "libkmod does not read /etc/modprobe.d"

# Every fixture: detect as expected; every profile: the x86_64 binary's plan
# (the static builds have no fake clock, so both plan on today's date).
n=0
for dir in "$FIX"/*/; do
	name=$(basename "$dir")
	expect_exit 0 "$Q" "$A" --root "$dir" detect --json
	diff -u "$EXP/detect/$name.json" "$TMP/out" || fail "aarch64 detect --json on $name differs"
	[ ! -s "$TMP/err" ] || fail "aarch64 detect on $name warned: $(cat "$TMP/err")"
	for prof in training inference hpc render minimal; do
		set +e
		"$S" --root "$dir" plan --profile "$prof" --json >"$TMP/x86" 2>"$TMP/x86.err"
		want=$?
		set -e
		expect_exit "$want" "$Q" "$A" --root "$dir" plan --profile "$prof" --json
		cmp -s "$TMP/x86" "$TMP/out" || {
			diff -u "$TMP/x86" "$TMP/out" | head -40
			fail "aarch64 plan for $name with $prof differs from x86_64's"
		}
		# stderr too, but for the log lines' timestamps
		sed 's/^[0-9T:-]*Z //' "$TMP/x86.err" >"$TMP/x86.log"
		sed 's/^[0-9T:-]*Z //' "$TMP/err" >"$TMP/a.log"
		cmp -s "$TMP/x86.log" "$TMP/a.log" || fail "aarch64 plan for $name with $prof: stderr differs: $(diff "$TMP/x86.log" "$TMP/a.log")"
		n=$((n + 1))
	done
done
[ "$n" -ge 60 ] || fail "only $n plans compared"

# The probe: baseline symbols only, and it runs. Nothing newer than
# GLIBC_2.17 (the aarch64 baseline), no NVIDIA library linked.
aarch64-linux-gnu-objdump -T "$P" | grep -oE 'GLIBC_[0-9.]+' | sort -u >"$TMP/versions"
[ "$(cat "$TMP/versions")" = "GLIBC_2.17" ] || fail "aarch64 probe is not at the GLIBC_2.17 baseline: $(cat "$TMP/versions")"
aarch64-linux-gnu-objdump -p "$P" | grep NEEDED >"$TMP/needed"
grep -q -e nvidia -e libcuda "$TMP/needed" && fail "the aarch64 probe links NVIDIA libraries: $(cat "$TMP/needed")"
# The embedded copy is this probe.
python3 - "$A" "$P" <<'PY' || fail "$A does not embed $P"
import sys
sys.exit(0 if open(sys.argv[2], "rb").read() in open(sys.argv[1], "rb").read() else 1)
PY
# Against the fake NVIDIA libraries, built for aarch64: the passive facts
# equal the x86_64 probe's.
FAKE=$PWD/build/fake-nvidia
[ -f "$FAKE/libcuda.so.1" ] || fail "fake libraries missing (make fake-nvidia)"
mkdir -p "$TMP/fake"
for l in nvml:libnvidia-ml cuda:libcuda; do
	aarch64-linux-gnu-gcc -std=gnu11 -O1 -Wall -Wextra -Werror -Isrc -fPIC -shared -Wl,-soname,"${l#*:}.so.1" \
		-o "$TMP/fake/${l#*:}.so.1" "tests/fake-nvidia/fake-${l%%:*}.c" || fail "cannot build the aarch64 fake ${l#*:}"
done
expect_exit 0 env LD_LIBRARY_PATH="$FAKE" build/probe/gpuboot-probe --tier passive
mv "$TMP/out" "$TMP/probe-x86"
expect_exit 0 "$Q" -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$TMP/fake" "$P" --tier passive
grep -q '"tier":"passive"' "$TMP/out" || fail "aarch64 probe: $(head -c 300 "$TMP/out")"
# (all but timings_ms, which is measured)
python3 - "$TMP/probe-x86" "$TMP/out" <<'PY' || fail "the aarch64 probe's passive facts differ from the x86_64 probe's"
import json, sys
x, a = (json.load(open(f)) for f in sys.argv[1:])
for d in (x, a):
    assert isinstance(d.pop("timings_ms"), dict), d.keys()
assert len(x["gpus"]) == 8, len(x["gpus"])
if x != a:
    for k in sorted(set(x) | set(a)):
        if x.get(k) != a.get(k):
            print("%s: x86_64 %.200s, aarch64 %.200s" % (k, x.get(k), a.get(k)), file=sys.stderr)
    sys.exit(1)
PY
# No driver libraries: it says why, exit 3.
expect_exit 3 "$Q" -L /usr/aarch64-linux-gnu "$P" --tier passive
grep -q 'cannot load libnvidia-ml.so.1' "$TMP/out" || fail "aarch64 probe without NVML: $(cat "$TMP/out")"
echo "aarch64 static binary: $size bytes; $n plans and every fixture match under qemu-user"
