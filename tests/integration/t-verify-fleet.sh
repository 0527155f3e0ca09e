# gpuboot verify at fleet shape, against the fake NVIDIA libraries: the
# per-GPU workers of the probe run at once (a serial probe fails here), the
# peer gates follow the NVLink topology NVML reports (a pair with 12 of its
# 18 links is named and fails; a PCIe pair keeps a PCIe gate), the caller's
# CUDA_VISIBLE_DEVICES does not reach the probe (and is named), and
# GPUBOOT_GPUS narrows the active tier on purpose.
. tests/integration/lib.sh
FAKE=$PWD/build/fake-nvidia
[ -f "$FAKE/libcuda.so.1" ] || fail "fake libraries missing (make fake-nvidia)"
M=$TMP/machine
cp -a "$FIX/h100x8-ubuntu2204" "$M"
mkdir -p "$M/dev"
for n in nvidiactl nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7; do : >"$M/dev/$n"; done
export GPUBOOT_PROBE_PATTERN_MIB=64 GPUBOOT_PROBE_BW_MIB=8 GPUBOOT_PROBE_LOAD_MS=50 LD_LIBRARY_PATH=$FAKE
for v in $(env | sed -n 's/^\(CUDA_[A-Za-z0-9_]*\)=.*/\1/p') LD_PRELOAD GPUBOOT_GPUS; do unset "$v"; done
S=$TMP/state
verify() { # expected-exit [env...]
	code=$1
	shift
	rm -rf "$S"
	expect_exit "$code" env "$@" "$GB" --root "$M" verify --tier active --json --state-dir "$S" --run-dir "$S/run"
}
# check NAME SUBJECT RESULT [TEXT-SUBSTRING]: one check of the last run, as expected
check() {
	python3 - "$S/status.json" "$@" <<'PY' || fail "check $*"
import json, sys
d = json.load(open(sys.argv[1]))
name, subj, res = sys.argv[2:5]
text = sys.argv[5] if len(sys.argv) > 5 else ""
cs = [c for c in d["checks"] if c["name"] == name and c["subject"].split()[0] == subj]
assert len(cs) == 1, (name, subj, cs)
c = cs[0]
assert c["result"] == res, c
assert text in ((c["text"] or "") + " " + (c["threshold_source"] or "") + " " + (c["hint"] or "")), (text, c)
PY
}
failed_checks() { python3 -c "
import json; d = json.load(open('$S/status.json'))
print(' '.join(sorted('%s@%s' % (c['name'], c['subject'].split()[0]) for c in d['checks'] if c['result'] == 'fail')))"; }

# 1. Eight GPUs at once: every fake kernel launch takes 30 ms of real time
# and is recorded; all eight GPUs must have been inside a launch together.
verify 0 FAKE_NV_LAUNCH_MS=30 FAKE_NV_TRACE="$TMP/trace" FAKE_NV_ENV_LOG="$TMP/envlog"
# The probe's own driver setting (one work queue per context), seen by cuInit.
grep -qx "CUDA_DEVICE_MAX_CONNECTIONS=1" "$TMP/envlog" || fail "cuInit saw $(cat "$TMP/envlog")"
python3 - "$TMP/trace" <<'PY' || fail "the GPU workers did not run at once"
import sys
iv = [tuple(float(x) for x in l.split()) for l in open(sys.argv[1])]
gpus = {int(g) for g, _, _ in iv}
assert gpus == set(range(8)), gpus
most = max(len({int(g) for g, s, e in iv if s <= t < e}) for _, t, _ in iv)
print("at most", most, "GPUs at once over", len(iv), "launches")
assert most == 8, most
PY
check verify.parallel system info "8 GPU worker(s), at most 8 at once"
check verify.parallel system info "ms, contexts "
# NVSwitch machine: 18 links each, the gate from 18 NVLink4 links.
check nvlink.links gpu0 pass "18 of 18 links up"
check peer.bandwidth "gpu0->gpu5" pass "18 of 18 NVLink4 links (NVSwitch)"
check peer.bandwidth "gpu0->gpu5" pass "0.70 x 18 NVLink4 links x 25 GB/s"
check env.cleaned system info "nothing to remove"

# 2. GPUs bridged in pairs: an NVLink pair with 18 links up passes against
# 18 x 25 GB/s (NVML reports version 7 there: the compute capability
# decides the generation), a PCIe-only pair against the PCIe floor.
verify 0 FAKE_NV_SCENARIO=bridged
check peer.bandwidth "gpu0->gpu1" pass "18 of 18 NVLink4 links to gpu1 up"
check peer.bandwidth "gpu1->gpu0" pass "0.70 x 18 NVLink4 links x 25 GB/s per direction"
check peer.bandwidth "gpu0->gpu2" pass "PCIe path"
check peer.bandwidth "gpu0->gpu2" pass "0.25 x the narrower link's derived peak 63.0 GB/s (Gen5 x16)"
python3 -c "
import json; d = json.load(open('$S/status.json'))
n = [c for c in d['checks'] if c['name'] == 'peer.bandwidth']
assert len(n) == 56 and all(c['result'] == 'pass' for c in n), len(n)" || fail "bridged: every ordered pair measured once"

# 3. The 2-3 pair with 12 of its 18 links: named, and the check fails.
verify 15 FAKE_NV_SCENARIO=bridged-degraded
[ "$(failed_checks)" = "nvlink.links@gpu2 nvlink.links@gpu3 peer.bandwidth@gpu2->gpu3 peer.bandwidth@gpu3->gpu2" ] ||
	fail "degraded pair: $(failed_checks)"
check nvlink.links gpu2 fail "12 of 18 links up (NVML version 7); down: 12, 13, 14, 15, 16, 17"
check peer.bandwidth "gpu2->gpu3" fail "12 of 18 NVLink4 links to gpu3 up"
check peer.bandwidth "gpu2->gpu3" fail "NVLink peer path degraded: 12 of 18 links up"
check peer.bandwidth "gpu0->gpu1" pass "18 of 18"

# 4. CUDA_VISIBLE_DEVICES (and an MPS pipe) in the caller's environment: the
# probe does not see them, every GPU is verified, and they are named.
verify 0 CUDA_VISIBLE_DEVICES=0 CUDA_DEVICE_ORDER=FASTEST_FIRST CUDA_MPS_PIPE_DIRECTORY=/nonexistent
[ "$(failed_checks)" = "" ] || fail "CUDA_VISIBLE_DEVICES: $(failed_checks)"
check env.cleaned system info "CUDA_VISIBLE_DEVICES=0"
check env.cleaned system info "CUDA_MPS_PIPE_DIRECTORY=/nonexistent"
check cuda.context gpu7 pass
python3 -c "
import json; d = json.load(open('$S/status.json'))
assert d['probe']['env_cuda_visible_devices'] is None" 2>/dev/null ||
	python3 -c "
import json; d = json.load(open('$TMP/out'))
assert d['probe']['env_cuda_visible_devices'] is None, d['probe']['env_cuda_visible_devices']" ||
	fail "the probe saw CUDA_VISIBLE_DEVICES"

# 5. GPUBOOT_GPUS narrows the active tier on purpose, and says so.
verify 0 GPUBOOT_GPUS=1,6
check verify.gpus system info "active checks on GPUs 1,6 only"
check compute.fp32 gpu1 pass
check compute.fp32 gpu6 pass
python3 -c "
import json; d = json.load(open('$S/status.json'))
subj = {c['subject'].split()[0] for c in d['checks'] if c['name'] == 'compute.fp32'}
assert subj == {'gpu1', 'gpu6'}, subj
assert {c['subject'] for c in d['checks'] if c['name'] == 'peer.bandwidth'} == {'gpu1->gpu6', 'gpu6->gpu1'}" ||
	fail "GPUBOOT_GPUS=1,6 did not narrow the active tier"
verify 15 GPUBOOT_GPUS=1,,x
[ "$(failed_checks)" = "verify.gpus@system" ] || fail "bad GPUBOOT_GPUS: $(failed_checks)"
verify 15 GPUBOOT_GPUS=1,9
[ "$(failed_checks)" = "verify.gpus@system" ] || fail "GPUBOOT_GPUS of an absent GPU: $(failed_checks)"
check verify.gpus system fail "GPUBOOT_GPUS names GPU 9; NVML has 8"
echo ok
