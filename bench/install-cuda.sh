#!/bin/sh
# bench/install-cuda.sh [MIB_EACH] [COUNT] [ROUNDS]   (BENCH_DIR: where to work, /var/tmp)
# gb_install_cuda's unpack of COUNT generated CUDA components (.tar.xz in
# NVIDIA's <name>-linux-x86_64-<ver>-archive/ layout, compressible like
# real libraries) into a fresh image root: in parallel (threads: one per
# component, at most the CPUs and 8) against one after another (--threads
# 1), the same code and archives in the same run, alternated ROUNDS times.
# Prints the unpack seconds of each and the ratio. Built optimised (-O2,
# no sanitizers) from build/dev's objects (BENCH_NO_BUILD=1: use the
# build/bench/install-tool already there, e.g. on another machine with
# LD_LIBRARY_PATH=build/bench/lib).
set -eu
cd "$(dirname "$0")/.."
MIB=${1:-64}
COUNT=${2:-8}
ROUNDS=${3:-3}
B=build/bench/install-tool
if [ "${BENCH_NO_BUILD:-}" != 1 ]; then
	make -s -j2 build/dev/gpuboot >/dev/null
	OBJS=$(find build/dev/src -name '*.o' ! -path '*/cmd/*' ! -name main.o | sort)
	mkdir -p build/bench
	# shellcheck disable=SC2086,SC2046
	cc -std=gnu11 -D_GNU_SOURCE -O2 -Isrc $(pkg-config --cflags libcurl openssl libarchive libkmod json-c) \
		-o "$B" tests/tools/install-tool.c $OBJS $(pkg-config --libs libcurl openssl libarchive libkmod json-c) -lpthread
fi
T=$(mktemp -d "${BENCH_DIR:-/var/tmp}/gpuboot-bench-cuda.XXXXXX")
trap 'rm -rf "$T"' EXIT
echo "making $COUNT components of about $MIB MiB each (xz)..."
ARGS=""
i=0
while [ "$i" -lt "$COUNT" ]; do
	top=comp$i-linux-x86_64-13.0.$i-archive
	mkdir -p "$T/src/$top/lib" "$T/src/$top/include"
	head -c $((MIB * 1024 * 1024 * 3 / 8)) /dev/urandom | base64 -w 76 >"$T/src/$top/lib/libcomp$i.so.13"
	head -c $((MIB * 1024 * 1024 / 2)) /dev/zero >>"$T/src/$top/lib/libcomp$i.so.13"
	j=0
	while [ "$j" -lt 200 ]; do
		echo "/* header $j */" >"$T/src/$top/include/comp${i}_h$j.h"
		j=$((j + 1))
	done
	tar -C "$T/src" -cf - "$top" | xz -1 -T2 >"$T/a$i"
	rm -rf "$T/src/$top"
	h=$(sha256sum "$T/a$i" | cut -d' ' -f1)
	mv "$T/a$i" "$T/$h"
	ARGS="$ARGS --component comp$i:13.0.$i:$T/$h"
	i=$((i + 1))
done
du -sh "$T" | cut -f1
one() { # threads -> unpack seconds
	rm -rf "$T/root" "$T/state"
	mkdir -p "$T/root"
	sync
	# shellcheck disable=SC2086,SC2046
	GPUBOOT_FAKE_OPS="record=$T/record" "$B" --method cuda --root "$T/root" --state "$T/state" \
		--cuda-version 13.0.0 --threads "$1" $ARGS 2>/dev/null |
		python3 -c 'import json,sys; d=json.load(sys.stdin); assert not d["error"], d["error"]; print(d["unpack_seconds"], d["threads"])'
}
r=0
seq_t=0 par_t=0 threads=""
while [ "$r" -lt "$ROUNDS" ]; do
	s=$(one 1 | cut -d' ' -f1)
	p=$(one 0)
	threads=${p#* }
	p=${p% *}
	echo "round $r: one after another ${s}s, parallel (${threads} threads) ${p}s"
	seq_t=$(python3 -c "print($seq_t + $s)")
	par_t=$(python3 -c "print($par_t + $p)")
	r=$((r + 1))
done
echo "cpus $(nproc), $COUNT components x ${MIB} MiB: one after another ${seq_t}s, parallel ${par_t}s," \
	"ratio $(python3 -c "print(round($seq_t / $par_t, 2))")x"
