# training: multi-GPU, multi-node model training.
#
# The driver follows NVIDIA's production branch (newest fixes and hardware
# support), CUDA the newest release that driver runs natively, with the
# libraries frameworks load at run time. The Container Toolkit is installed
# (most training runs in containers), the fabric manager wherever NVSwitches
# are present, nvidia_peermem (GPUDirect RDMA) where Mellanox NICs are.
# Verification runs the active tier: a memory pattern test, bandwidth and
# FLOPS against figures derived from the device itself.

[profile]
description = multi-GPU, multi-node model training

[driver]
branch = production        # lts | production | latest | R580 | 580.95.05
module_flavor = auto       # auto | open | proprietary

[cuda]
policy = newest-compatible # newest-compatible | none | 12.8
components = cuda_cudart, cuda_nvcc, cuda_nvrtc, cuda_cupti, cuda_nvml_dev, cuda_cccl, libcublas, libcufft, libcurand, libcusolver, libcusparse, libnvjitlink

[toolkit]
install = yes

[daemons]
fabricmanager = auto       # auto: only where NVSwitches are present
gpudirect = yes            # load nvidia_peermem when Mellanox NICs are present

[verify]
tier = active
min_gpu_memory_gib = 16    # training large models: the seed's "A100 80GB or H100 class"
ecc_required = no
min_network_gbps = 100     # multi-node: a plain 10 Gb/s VPC network halves training speed
min_disk_write_mbps = 1000 # local NVMe for data loading (the seed's dd check: > 1 GB/s)
