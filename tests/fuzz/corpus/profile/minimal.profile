# minimal: the driver only.
#
# For images that bring their own CUDA (containers carry it) or that only
# need the GPU visible: the LTS driver, no CUDA, no Container Toolkit, the
# passive checks (driver loaded, versions match, every GPU seen, ECC and
# link state) with no load on the GPU.

[profile]
description = the driver only

[driver]
branch = lts
module_flavor = auto

[cuda]
policy = none

[toolkit]
install = no

[daemons]
fabricmanager = auto
gpudirect = no

[verify]
tier = passive
