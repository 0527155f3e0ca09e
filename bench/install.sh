#!/bin/sh
# bench/install.sh [CUDA_MIB] [RATE_MBPS] [BUILD_MIB] [ROUNDS]   (root)
# The install stage with CUDA's download overlapping the driver's install
# (the default, [install] overlap = yes) against the same steps one after
# another (overlap = no), in the same run, alternated ROUNDS times (default
# 2), each on a fresh copy of the Debian 12 image root of
# vm-tests/image-install.sh:
#   - the driver: the packages method, real apt chrooted into the image,
#     against a local HTTPS repository in NVIDIA's layout
#     (vm-tests/lib-nvidia-repo.sh) whose nvidia-kernel-dkms postinst
#     stands in for DKMS's compile with fixed CPU work (sha256 of
#     BUILD_MIB MiB, default 6144);
#   - CUDA: the profile's components, generated in NVIDIA's redist layout
#     (CUDA_MIB MiB in all, default 160, incompressible), served by
#     tests/https-server.py limited to RATE_MBPS per transfer (default 2:
#     a slow link, the case the overlap is for), fetched by gpuboot as
#     --upstream (the test build replaces the manifest's pin).
# What is timed: the fetch and install stages together (the run's wall
# time less the other stages' durations in the status document: overlapped,
# the fetch stage's own duration runs inside the install's), and the whole
# run. Prints both per round and the
# ratio sequential / overlapped. Uses build/asan/gpuboot (the test build:
# the test repository key and the manifest pin hook); the time is apt,
# dpkg, the stand-in build and the transfers, not gpuboot's own code.
set -eu
cd "$(dirname "$0")/.."
CUDA_MIB=${1:-160}
RATE=${2:-2}
BUILD_MIB=${3:-6144}
ROUNDS=${4:-2}
GB=${GB_TEST:-build/asan/gpuboot}
[ "$(id -u)" = 0 ] || { echo "bench/install.sh: needs root (chroot)"; exit 1; }
make -s -j2 "$GB" >/dev/null
img=$(vm-tests/image-install.sh --build-only)
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/gpuboot-bench-install.XXXXXX")
export GNUPGHOME=$work/gnupg ASAN_OPTIONS=detect_leaks=0
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	grep " $work/" /proc/mounts | cut -d' ' -f2 | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$work"
}
trap cleanup EXIT
srv=$work/srv
root0=$work/root0
cp -a "$img/root" "$root0"
rm -f "$root0/etc/apt/sources.list" "$root0"/etc/apt/sources.list.d/*
kver=$(ls "$root0/lib/modules")
kimg=$(chroot "$root0" dpkg-query -W -f '${Version}' "linux-image-$kver")
kmeta=$(chroot "$root0" dpkg-query -W -f '${Version}' linux-image-cloud-amd64)
cat >"$work/bench.profile" <<'EOF'
[profile]
description = the driver and CUDA's runtime, no toolkit

[driver]
branch = lts

[cuda]
policy = newest-compatible
components = cuda_cudart, cuda_nvcc, libcublas, cuda_nvrtc

[toolkit]
install = no

[verify]
tier = passive
EOF
"$GB" --root "$root0" plan --json --target-gpu T4 --profile "$work/bench.profile" --method packages >"$work/plan.json"
eval "$(python3 -c "
import json
p=json.load(open('$work/plan.json'))
d=p['driver']
print('DV=%s REPO=%s RARCH=%s' % (d['version'], d['repository'], d['repository_arch']))
print('PKGS=\"%s\"' % ' '.join(d['packages']))")"

# ---- the repository and CUDA's components ----
. vm-tests/lib-nvidia-repo.sh
nv_driver_repo "$srv/compute/cuda/repos/$REPO/$RARCH" "$DV" 999.1.2 "$PKGS" "$kver" "$kimg" "$kmeta" \
	"head -c ${BUILD_MIB}M /dev/zero | sha256sum >/dev/null"
nv_sign_setup
nv_sign_repo "$srv/compute/cuda/repos/$REPO/$RARCH"
tests/make-cuda-redist.py "$work/plan.json" "$srv" "$CUDA_MIB"
MAN=$(ls "$srv"/compute/cuda/redist/redistrib_*.json)
export GPUBOOT_TEST_CUDA_MANIFEST_PIN="$(sha256sum "$MAN" | cut -d' ' -f1):$(stat -c %s "$MAN")"

# ---- the server (rate-limited), its CA trusted inside the image and by gpuboot ----
TMP=$work/tls
mkdir -p "$TMP"
. tests/integration/lib-tls.sh
make_certs
RATE_MBPS=$RATE python3 tests/https-server.py "$srv" "$TMP/good.pem" "$TMP/good.key" "$TMP/ports" 2>"$work/server.log" &
SRV=$!
for i in $(seq 50); do [ -s "$TMP/ports" ] && break; sleep 0.1; done
read -r PORT _ <"$TMP/ports"
cp "$TMP/ca.pem" "$root0/usr/local/share/ca-certificates/gpuboot-test-ca.crt"
chroot "$root0" update-ca-certificates >/dev/null 2>&1
printf '[install]\noverlap = no\n' >"$work/sequential.conf"
printf '[install]\noverlap = yes\n' >"$work/overlap.conf"

one() { # mode: prints "fetch+install seconds" "run seconds"
	r=$work/root-$1
	rm -rf "$r"
	cp -a "$root0" "$r"
	t0=$(date +%s.%N)
	"$GB" --root "$r" --config "$work/$1.conf" run --target-gpu T4 --profile "$work/bench.profile" --method packages \
		--upstream "https://127.0.0.1:$PORT" --ca-file "$TMP/ca.pem" --state-dir "$r/var/lib/gpuboot" \
		>"$work/$1.out" 2>"$work/$1.err" || { echo "bench: the $1 run failed:" >&2; tail -n 5 "$work/$1.err" >&2; exit 1; }
	t1=$(date +%s.%N)
	python3 -c "
import json
d=json.load(open('$r/var/lib/gpuboot/status.json'))
st={s['name']: s for s in d['stages']}
assert st['fetch']['result']=='ok' and st['install']['result']=='ok', st
assert d['install']['cuda']['tree_changed'] and d['install']['driver']['packages_changed']
other = sum(s['duration_ms'] for s in d['stages'] if s['name'] not in ('fetch', 'install')) / 1000
print('%.1f %.1f' % ($t1 - $t0 - other, $t1 - $t0))"
	rm -rf "$r"
}
echo "bench/install.sh: driver $DV (packages, stand-in build: sha256 of $BUILD_MIB MiB), CUDA $CUDA_MIB MiB at $RATE MB/s per transfer"
n=0
seq_sum=0 ovl_sum=0
while [ "$n" -lt "$ROUNDS" ]; do
	set -- $(one sequential)
	s_stage=$1 s_run=$2
	set -- $(one overlap)
	o_stage=$1 o_run=$2
	echo "  round $((n + 1)): fetch+install one after another ${s_stage} s (run ${s_run} s), overlapped ${o_stage} s (run ${o_run} s)"
	seq_sum=$(echo "$seq_sum $s_stage" | awk '{ print $1 + $2 }')
	ovl_sum=$(echo "$ovl_sum $o_stage" | awk '{ print $1 + $2 }')
	n=$((n + 1))
done
echo "$seq_sum $ovl_sum" | awk '{ printf "fetch+install: one after another %.1f s, overlapped %.1f s: %.2fx\n", $1, $2, $1 / $2 }'
