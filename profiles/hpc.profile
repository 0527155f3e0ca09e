# hpc: scientific computing (CFD, CAE, molecular dynamics) in double precision.
#
# FP64 throughput is gated (a GPU with consumer-class FP64 fails), ECC must
# be on (silent memory errors corrupt results), and the LTS branch keeps the
# stack stable for long campaigns. The compiler and the math libraries are
# installed: HPC codes are often built on the node.

[profile]
description = double-precision scientific computing

[driver]
branch = lts
module_flavor = auto

[cuda]
policy = newest-compatible
components = cuda_cudart, cuda_nvcc, cuda_nvrtc, cuda_cupti, cuda_nvml_dev, cuda_cccl, libcublas, libcufft, libcurand, libcusolver, libcusparse, libnvjitlink

[toolkit]
install = no               # HPC schedulers (Slurm) run jobs without containers by default

[daemons]
fabricmanager = auto
gpudirect = yes

[verify]
tier = active
fp64_gate = yes            # FP64 at least 1/4 of FP32, measured
ecc_required = yes
min_network_gbps = 100
