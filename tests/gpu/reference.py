#!/usr/bin/env python3
"""PyTorch's own figures on this GPU, measured the way the probe measures:
1 GiB buffers, best of N after a warm-up, CUDA events. Prints JSON.

d2d_copy_gbps counts bytes read + written (2 x size), as the probe does."""
import json
import sys

import torch

def best(fn, reps=5):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    out = 1e30
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        out = min(out, s.elapsed_time(e))
    return out / 1e3

def main():
    n = 1 << 30
    dev = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    torch.cuda.set_device(dev)
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty(n, dtype=torch.uint8, device="cuda")
    a.fill_(7)
    d2d = 2 * n / best(lambda: b.copy_(a)) / 1e9
    h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    h.fill_(5)
    h2d = n / best(lambda: b.copy_(h, non_blocking=True)) / 1e9
    d2h = n / best(lambda: h.copy_(b, non_blocking=True)) / 1e9
    torch.backends.cuda.matmul.allow_tf32 = False
    m = 8192
    x = torch.randn(m, m, device="cuda", dtype=torch.float32)
    y = torch.randn(m, m, device="cuda", dtype=torch.float32)
    fp32 = 2 * m ** 3 / best(lambda: x @ y, 3) / 1e12
    print(json.dumps({"device": torch.cuda.get_device_name(dev), "d2d_copy_gbps": d2d, "h2d_pinned_gbps": h2d,
                      "d2h_pinned_gbps": d2h, "fp32_matmul_tflops": fp32}))

if __name__ == "__main__":
    main()
