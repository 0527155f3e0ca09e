# inference: serving models (TensorRT, Triton, vLLM) on one or a few GPUs.
#
# Stability first: the long-term-support branch, the CUDA runtime pieces a
# serving stack loads (no compiler), the Container Toolkit. No network or
# disk gates: serving nodes are sized by latency, which a first-boot check
# cannot measure.

[profile]
description = model serving on one or a few GPUs

[driver]
branch = lts
module_flavor = auto

[cuda]
policy = newest-compatible
components = cuda_cudart, cuda_nvrtc, libcublas, libnvjitlink

[toolkit]
install = yes

[daemons]
fabricmanager = auto
gpudirect = no

[verify]
tier = active
min_gpu_memory_gib = 15    # a T4 (16 GB, 15.x GiB usable) is the smallest serving GPU this profile accepts
