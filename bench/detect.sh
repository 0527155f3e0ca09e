#!/bin/sh
# bench/detect.sh: whole-process time of `gpuboot detect --json` on the
# 8-GPU fixture, median of many runs, beside `cat` of exactly the files
# detect reads (the floor: one process that opens and reads the same bytes).
# usage: bench/detect.sh [BINARY] [RUNS]     (default build/gpuboot, 300)
set -eu
cd "$(dirname "$0")/.."
BIN=${1:-build/gpuboot}
RUNS=${2:-300}
FIX=tests/fixtures/h100x8-ubuntu2204
[ -x "$BIN" ] || { echo "bench: $BIN missing (make static)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The files detect reads, from its own capture of the fixture.
"$BIN" --root "$FIX" detect --json --capture "$tmp/cap" >/dev/null
(cd "$tmp/cap" && find . -type f | sed 's|^\./||') | while read -r f; do
	[ -f "$FIX/$f" ] && printf '%s\n' "$FIX/$f"
done >"$tmp/files"
python3 - "$BIN" "$FIX" "$RUNS" "$tmp/files" <<'PY'
import statistics, subprocess, sys, time
binary, fix, runs, listing = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
files = open(listing).read().split()
def bench(argv):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts), min(ts)
for _ in range(20):  # warm the page cache
    subprocess.run([binary, "--root", fix, "detect", "--json"], stdout=subprocess.DEVNULL)
g = bench([binary, "--root", fix, "detect", "--json"])
c = bench(["cat"] + files)
print(f"files read by detect: {len(files)}")
print(f"gpuboot detect --json: median {g[0]:.2f} ms (min {g[1]:.2f}) over {runs} runs")
print(f"cat of the same files: median {c[0]:.2f} ms (min {c[1]:.2f})")
print(f"ratio gpuboot/cat: {g[0]/c[0]:.2f}x; goal: median <= 10 ms -> {'met' if g[0] <= 10 else 'NOT met'}")
PY
