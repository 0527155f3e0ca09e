# render: 3D rendering, visualisation and CAD on data-center GPUs.
#
# Needs the driver's graphics userspace (OpenGL, Vulkan, EGL), not only
# compute. Professional features (RTX Virtual Workstation, vGPU/GRID) need
# NVIDIA's licensed driver, which cannot be downloaded: on a vGPU, gpuboot
# refuses with exit 12 and says so instead of installing a driver that
# cannot work there.

[profile]
description = rendering and visualisation (graphics userspace)

[driver]
branch = production
module_flavor = auto
graphics = yes

[cuda]
policy = newest-compatible
components = cuda_cudart, cuda_nvrtc

[toolkit]
install = yes

[daemons]
fabricmanager = no
gpudirect = no

[verify]
tier = active
