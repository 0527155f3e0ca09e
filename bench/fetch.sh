#!/bin/sh
# bench/fetch.sh [SIZE_MIB_EACH] [COUNT] [RATE_MBPS]
# At least 1 GiB across several .tar.xz artifacts served over HTTPS on
# loopback (optionally rate-limited per transfer like a real link): gpuboot's
# fetch (parallel transfers, sha256 as the bytes arrive) then unpack (several
# at once, libarchive) against the naive way, one after another for each
# artifact: curl -o, sha256sum -c, tar xJf. Both measured in the same run.
set -eu
cd "$(dirname "$0")/.."
MIB=${1:-320}
COUNT=${2:-4}
RATE=${3:-0}
BF=build/asan/tools/bench-fetch
[ -x build/bench/bench-fetch ] && BF=build/bench/bench-fetch
T=$(mktemp -d /var/tmp/gpuboot-bench.XXXXXX)
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/www"
echo "making $COUNT artifacts of about $MIB MiB (xz)..."
i=0
while [ "$i" -lt "$COUNT" ]; do
	# Compressible like real libraries: random bytes in base64 with repetition.
	head -c $((MIB * 1024 * 1024 * 3 / 4)) /dev/urandom | base64 -w 76 | head -c $((MIB * 1024 * 1024 * 2)) >"$T/data$i"
	tar -C "$T" -cf - "data$i" | xz -1 -T2 >"$T/www/comp$i.tar.xz"
	rm "$T/data$i"
	i=$((i + 1))
done
du -sh "$T/www"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 1 \
	-subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null
RATE_MBPS=$RATE python3 tests/https-server.py "$T/www" "$T/cert.pem" "$T/key.pem" "$T/port" 2>/dev/null &
SRV=$!
for k in $(seq 50); do [ -f "$T/port" ] && break; sleep 0.1; done
PORT=$(cut -d' ' -f1 "$T/port")
ARGS=""
for f in "$T"/www/*.tar.xz; do
	ARGS="$ARGS https://127.0.0.1:$PORT/$(basename "$f") $(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f")"
done
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
# The naive way.
for f in "$T"/www/*.tar.xz; do sha256sum "$f" | cut -d' ' -f1 >"$f.sum"; done
dl=0 hs=0 up=0
t0=$(date +%s.%N)
for f in "$T"/www/*.tar.xz; do
	b=$(basename "$f")
	a=$(date +%s.%N)
	curl -s --cacert "$T/cert.pem" -o "$T/naive-$b" "https://127.0.0.1:$PORT/$b"
	c=$(date +%s.%N)
	echo "$(cat "$f.sum")  $T/naive-$b" | sha256sum -c --quiet
	d=$(date +%s.%N)
	mkdir -p "$T/naive-out-$b" && tar -C "$T/naive-out-$b" -xJf "$T/naive-$b"
	e=$(date +%s.%N)
	dl=$(python3 -c "print($dl + $c - $a)"); hs=$(python3 -c "print($hs + $d - $c)"); up=$(python3 -c "print($up + $e - $d)")
done
t1=$(date +%s.%N)
echo "naive: download $dl s, sha256sum (reads the files back) $hs s, tar xJf $up s"
rm -rf "$T"/naive-*
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
# gpuboot.
mkdir -p "$T/out"
# shellcheck disable=SC2086
"$BF" "$T/state" "$T/cert.pem" "$T/out" "$(nproc)" $ARGS
t2=$(date +%s.%N)
python3 -c "
naive, gb = $t1 - $t0, $t2 - $t1
print(f'naive (curl -o; sha256sum -c; tar xJf, one after another): {naive:.2f} s')
print(f'gpuboot (parallel fetch, sha256 in the same pass, parallel unpack): {gb:.2f} s')
print(f'ratio: {naive / gb:.2f}x   (rate limit: {\"none\" if float(\"$RATE\") == 0 else \"$RATE MB/s per transfer\"})')
"
