# gpuboot — see README.md. `make` builds the development binary, `make test`
# runs every test tier that needs no GPU and no VM, `make static` builds the
# static binary that ships.

VERSION    := 0.1.0
CC         ?= cc
PKGS       := libcurl openssl libarchive libkmod json-c
WARN       := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Wstrict-prototypes \
              -Wmissing-prototypes -Wno-missing-field-initializers -Wvla -Wpointer-arith
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -DGPUBOOT_VERSION='"$(VERSION)"' -Isrc $(WARN)

LIB_DIRS   := shared catalog effect detect plan verify status fetch run prepare install toolkit load repair
LIB_SRC    := $(sort $(wildcard $(patsubst %,src/%/*.c,$(LIB_DIRS))))
LIB_ASM    := src/verify/probe-blob.S
PROBE      := build/probe/gpuboot-probe
ASM_FLAGS  := -DPROBE_BIN='"$(PROBE)"'

MAIN_SRC   := src/main.c $(sort $(wildcard src/cmd/*.c))
HDRS       := $(wildcard src/*.h src/*/*.h)

# --- the development build: dynamic, against Debian's -dev packages ---
DEV        := build/dev
DEV_CFLAGS := $(BASE_CFLAGS) -Wno-format-truncation -O2 -g $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEV_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

V ?= 0
ifeq ($(V),0)
Q = @
endif

all: $(DEV)/gpuboot

$(DEV)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(DEV_CFLAGS) -c $< -o $@

# --- gpuboot-probe: a small glibc program, baseline symbols only (GLIBC_2.2.5
# on x86_64, GLIBC_2.17 on aarch64); build/probe/ is the build machine's,
# build/probe-ARCH/ another architecture's, cross-compiled ---
HOST_ARCH    := $(shell uname -m)
# cross_of ARCH: the toolchain prefix for ARCH ("" on the build machine's own)
cross_of      = $(if $(filter $(HOST_ARCH),$(1)),,$(1)-linux-gnu-)
probe_of      = $(if $(filter $(HOST_ARCH),$(1)),$(PROBE),build/probe-$(1)/gpuboot-probe)
PROBE_SRC    := src/probe/probe.c src/probe/nvapi.h src/probe/probe-start.S src/probe/kernels.ptx
PROBE_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Werror -fno-stack-protector -D_FORTIFY_SOURCE=0 -fPIE \
                -ffile-prefix-map=$(CURDIR)=.
# probe_build CROSS: the recipe, with CROSS's gcc and strip
define probe_build
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  PROBE   $@")
	$(Q)$(1)gcc $(PROBE_CFLAGS) -pie -nostartfiles -DPTX_FILE='"src/probe/kernels.ptx"' -o $@ \
		src/probe/probe.c src/probe/probe-start.S -l:libdl.so.2
	$(Q)$(1)strip $@
endef
$(PROBE): $(PROBE_SRC)
	$(call probe_build,)
build/probe-%/gpuboot-probe: $(PROBE_SRC)
	$(call probe_build,$*-linux-gnu-)

probe: $(PROBE)

%/src/verify/probe-blob.o: src/verify/probe-blob.S $(PROBE)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ASM_FLAGS) -c $< -o $@

$(DEV)/gpuboot: $(patsubst %.c,$(DEV)/%.o,$(LIB_SRC) $(MAIN_SRC)) $(DEV)/src/verify/probe-blob.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(DEV_LIBS)

# --- the test build: ASan + UBSan, with the test hooks ---
ASAN        := build/asan
SAN         := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS := $(BASE_CFLAGS) -Wno-format-truncation -O1 -g $(SAN) -DGB_TEST_HOOKS $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
UNIT_SRC    := $(sort $(wildcard tests/unit/test-*.c))
UNIT_BINS   := $(patsubst tests/unit/%.c,$(ASAN)/tests/%,$(UNIT_SRC))

$(ASAN)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) -c $< -o $@

$(ASAN)/gpuboot: $(patsubst %.c,$(ASAN)/%.o,$(LIB_SRC) $(MAIN_SRC)) $(ASAN)/src/verify/probe-blob.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(DEV_LIBS)

$(ASAN)/tests/%: tests/unit/%.c tests/unit/unit.h $(patsubst %.c,$(ASAN)/%.o,$(LIB_SRC)) $(ASAN)/src/verify/probe-blob.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) -Itests/unit -o $@ $< $(patsubst %.c,$(ASAN)/%.o,$(LIB_SRC)) $(ASAN)/src/verify/probe-blob.o $(DEV_LIBS)

# test drivers, run by integration tests
TOOL_SRC  := $(sort $(wildcard tests/tools/*.c))
TOOL_BINS := $(patsubst tests/tools/%.c,$(ASAN)/tools/%,$(TOOL_SRC))
$(ASAN)/tools/%: tests/tools/%.c $(patsubst %.c,$(ASAN)/%.o,$(LIB_SRC)) $(ASAN)/src/verify/probe-blob.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ASAN_CFLAGS) -o $@ $< $(patsubst %.c,$(ASAN)/%.o,$(LIB_SRC)) $(ASAN)/src/verify/probe-blob.o $(DEV_LIBS)

# --- fuzzers (clang + libFuzzer); `make test` replays their corpora ---
# The library is compiled once for all targets (fuzzer-no-link: coverage
# without libFuzzer's main), then each target is linked against it.
FUZZ        := build/fuzz
FUZZ_SRC    := $(sort $(wildcard tests/fuzz/fuzz-*.c))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(FUZZ)/%,$(FUZZ_SRC))
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := $(BASE_CFLAGS) -O1 -g $(FUZZ_SAN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_OBJS   := $(patsubst %.c,$(FUZZ)/obj/%.o,$(LIB_SRC)) $(FUZZ)/obj/src/verify/probe-blob.o

$(FUZZ)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ)/%: tests/fuzz/%.c tests/fuzz/fuzz-tmp.h $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) $(DEV_LIBS)

fuzz: $(FUZZ_BINS)
.SECONDARY: $(FUZZ_OBJS)

# --- allocation-failure torture: the shim LD_PRELOADed into the ASan build ---
ALLOC_SHIM := build/alloc/failalloc.so
$(ALLOC_SHIM): tests/alloc/failalloc.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SHIM    $@")
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl

# --- the static build: musl, every library from pinned Debian sources ---
# `make static` builds build/gpuboot for the build machine (and the same bytes
# as build/gpuboot-ARCH); `make static ARCH=aarch64` cross-compiles
# build/gpuboot-aarch64 (docs/static-build.md). Each architecture has its own
# dependency prefix, DEPS_<arch>; a cross one carries its own musl-gcc.
STATIC_ARCHES := x86_64 aarch64
ARCH         ?= $(HOST_ARCH)
STATIC       := build/static
STATIC_BINS  := $(patsubst %,build/gpuboot-%,$(STATIC_ARCHES))
STATIC_CFLAGS = $(BASE_CFLAGS) -Wno-format-truncation -Os -ffunction-sections -fdata-sections \
                -ffile-prefix-map=$(CURDIR)=. -I$(DEPS_$*)/include
STATIC_LIBS   = -L$(DEPS_$*)/lib -lcurl -lssl -lcrypto -larchive -lkmod -ljson-c -lzstd -llzma -lz -lpthread
musl_of       = $(if $(call cross_of,$(1)),$(DEPS_$(1))/musl/bin/musl-gcc,musl-gcc)

ifeq ($(filter $(ARCH),$(STATIC_ARCHES)),)
static:
	@echo "ARCH=$(ARCH): the static build supports $(STATIC_ARCHES)" >&2; exit 2
else ifeq ($(ARCH),$(HOST_ARCH))
static: build/gpuboot
else
static: build/gpuboot-$(ARCH)
endif

build/gpuboot: build/gpuboot-$(HOST_ARCH)
	cp $< $@

.SECONDEXPANSION:
$(STATIC_BINS): build/gpuboot-%: $(LIB_SRC) $(MAIN_SRC) $(HDRS) scripts/build-static-deps.sh $(LIB_ASM) $$(call probe_of,$$*)
	@mkdir -p $(STATIC)/$*
	$(eval DEPS_$* := $(shell scripts/build-static-deps.sh $*))
	@test -n "$(DEPS_$*)" || { echo "static dependencies for $* failed to build" >&2; exit 1; }
	@$(if $(Q),echo "  MUSL    $@")
	$(Q)$(call musl_of,$*) $(STATIC_CFLAGS) -static -Wl,--gc-sections -o $(STATIC)/$*/gpuboot.unstripped \
		-DPROBE_BIN='"$(call probe_of,$*)"' $(LIB_SRC) $(LIB_ASM) $(MAIN_SRC) $(STATIC_LIBS)
	$(call cross_of,$*)strip -o $@ $(STATIC)/$*/gpuboot.unstripped

# --- releases: both static binaries, SHA256SUMS and its Ed25519 signature ---
$(DEV)/release-sign: src/tools/release-sign.c $(patsubst %.c,$(DEV)/%.o,$(LIB_SRC)) $(DEV)/src/verify/probe-blob.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(DEV_CFLAGS) -o $@ $< $(patsubst %.c,$(DEV)/%.o,$(LIB_SRC)) $(DEV)/src/verify/probe-blob.o $(DEV_LIBS)

release: $(DEV)/release-sign
	$(MAKE) static ARCH=x86_64
	$(MAKE) static ARCH=aarch64
	scripts/release.sh build/gpuboot-x86_64 build/gpuboot-aarch64 $(DEV)/release-sign

# --- catalog ---
catalog:
	python3 scripts/gen-catalog.py
	python3 scripts/gen-profiles.py

# --- tests ---
deps:
	scripts/install-deps.sh

# The test build runs BUILD_JOBS compilers at once (every target's
# dependencies are complete; the static dependencies' cache is locked).
BUILD_JOBS ?= $(shell nproc)
test: deps
	$(MAKE) -j$(BUILD_JOBS) $(ASAN)/gpuboot $(UNIT_BINS) $(FUZZ_BINS) build/gpuboot $(STATIC_BINS) $(DEV)/gpuboot fake-nvidia $(TOOL_BINS) $(DEV)/release-sign $(ALLOC_SHIM)
	tests/run.sh

lint:
	scripts/lint.sh

# --- soak: the long versions of the reliability tests (docs/reliability.md) ---
SOAK_BUILD = $(MAKE) $(ASAN)/gpuboot $(ASAN)/tools/fetch-tool
soak-kill:
	$(SOAK_BUILD)
	KILLPOINTS=all KILL_JOBS=2 sh tests/integration/t-killpoints.sh

soak-mirror:
	$(SOAK_BUILD)
	MIRROR_SEQUENCES=1000 sh tests/integration/t-mirror-volume.sh

soak-powerloss:
	$(SOAK_BUILD)
	sh tests/integration/t-powerloss.sh
	sh tests/integration/t-fulldisk.sh

# soak-powercut: real power cuts (QEMU killed) under gpuboot's durable writes,
# POWERCUT_CYCLES boots of one guest disk (vm-tests/powercut.sh; ~1 min a
# cycle under TCG). Skipped (exit 77) where QEMU or the guest image is missing.
POWERCUT_CYCLES ?= 12
soak-powercut:
	$(MAKE) build/gpuboot
	vm-tests/powercut.sh $(POWERCUT_CYCLES); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# soak-realkill: the image install on Debian's real packages (network to
# deb.debian.org), the process tree killed for real at each point of
# vm-tests/image-kill.sh, then rerun: root; about an hour and a half.
soak-realkill:
	$(MAKE) build/gpuboot
	vm-tests/image-kill.sh; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# soak-fuzz: every fuzzer for FUZZ_RUNS executions or FUZZ_SECONDS each,
# FUZZ_JOBS at once; new inputs go to build/fuzz/new/<target>, then only
# those that add coverage are merged into tests/fuzz/corpus/<target>.
FUZZ_RUNS    ?= 10000000
FUZZ_SECONDS ?= 3600
FUZZ_JOBS    ?= $(shell nproc)
soak-fuzz: $(FUZZ_BINS)
	scripts/soak-fuzz.sh $(FUZZ_RUNS) $(FUZZ_SECONDS) $(FUZZ_JOBS)

# soak-alloc: every N, for plan, verify, the journal and the libraries' initialisation
soak-alloc: $(ASAN)/gpuboot fake-nvidia $(ALLOC_SHIM)
	tests/alloc/torture.sh plan 1
	tests/alloc/torture.sh tls 1
	tests/alloc/torture.sh verify 1
	tests/alloc/torture.sh journal 1

soak: soak-kill soak-mirror soak-powerloss soak-powercut soak-fuzz soak-alloc

# vm-tests: a real first boot under QEMU (TCG) with cloud-init; minutes, not seconds.
vm-test:
	scripts/install-deps.sh --vm
	$(MAKE) build/gpuboot $(DEV)/release-sign $(ASAN)/gpuboot $(ASAN)/tools/install-tool
	$(MAKE) static ARCH=aarch64
	GPUBOOT_RELEASE_DIR=build/vm-release GPUBOOT_RELEASE_URL=file:///media/gpuboot \
		scripts/release.sh build/gpuboot build/gpuboot-aarch64 $(DEV)/release-sign
	vm-tests/image-install.sh
	vm-tests/image-packages.sh
	vm-tests/run.sh

# vm-test-rpm: the packages method and the toolkit on rpm roots with real
# dnf 4 and rpm (Debian-built test roots with the os-release of RHEL 9,
# RHEL 8, Rocky 9, Alma 9, AL2023 and RHEL 10, vm-tests/image-rpm.sh and
# image-rpm-dnf.sh) and real zypper 1.14 (a Debian-built SLES 15 test root,
# vm-tests/image-rpm-sles15.sh); not in vm-test. A few minutes once its
# roots are cached.
vm-test-rpm:
	scripts/install-deps.sh --rpm
	$(MAKE) $(ASAN)/gpuboot
	vm-tests/image-rpm.sh

# vm-test-ubuntu: Ubuntu's own archive paths with real apt (the HWE kernel,
# Canonical's signed precompiled modules for the running ABI) on a
# Debian-built Ubuntu 22.04 test root (vm-tests/image-ubuntu.sh); not in
# vm-test. About a minute once the image root is cached.
vm-test-ubuntu:
	$(MAKE) $(ASAN)/gpuboot
	vm-tests/image-ubuntu.sh

# vm-test-prebuilt: the image whose NVIDIA module came from the site mirror
# (#25), booted plain and under Secure Boot with the site module certificate
# in db (vm-tests/run.sh bookworm-prebuilt-firstboot
# bookworm-prebuilt-secureboot-db); not in vm-test yet.
vm-test-prebuilt:
	scripts/install-deps.sh --vm
	$(MAKE) build/gpuboot $(DEV)/release-sign
	$(MAKE) static ARCH=aarch64
	GPUBOOT_RELEASE_DIR=build/vm-release GPUBOOT_RELEASE_URL=file:///media/gpuboot \
		scripts/release.sh build/gpuboot build/gpuboot-aarch64 $(DEV)/release-sign
	vm-tests/run.sh bookworm-prebuilt-firstboot bookworm-prebuilt-secureboot-db

# vm-test-slow: the scenarios too slow for .ci/run under TCG (docs/vm-tests.md):
# the NVIDIA module built by DKMS inside the guest at boot (about an hour).
vm-test-slow:
	scripts/install-deps.sh --vm
	$(MAKE) build/gpuboot $(DEV)/release-sign
	$(MAKE) static ARCH=aarch64
	GPUBOOT_RELEASE_DIR=build/vm-release GPUBOOT_RELEASE_URL=file:///media/gpuboot \
		scripts/release.sh build/gpuboot build/gpuboot-aarch64 $(DEV)/release-sign
	vm-tests/run.sh bookworm-nvidia-rebuild

# The benchmark's driver, optimised (not the ASan build).
build/bench/bench-fetch: tests/tools/bench-fetch.c $(patsubst %.c,$(DEV)/%.o,$(LIB_SRC)) $(DEV)/src/verify/probe-blob.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(DEV_CFLAGS) -o $@ $< $(patsubst %.c,$(DEV)/%.o,$(LIB_SRC)) $(DEV)/src/verify/probe-blob.o $(DEV_LIBS) -lpthread

bench: build/gpuboot build/bench/bench-fetch
	bench/detect.sh
	bench/fetch.sh

clean:
	rm -rf build

.PHONY: all static release catalog deps test lint bench clean fuzz probe vm-test vm-test-rpm vm-test-ubuntu vm-test-prebuilt vm-test-slow soak soak-kill soak-mirror soak-powerloss soak-powercut soak-fuzz soak-alloc soak-realkill

# --- the fake NVIDIA libraries the probe is pointed at in tests ---
FAKE_NV := build/fake-nvidia
$(FAKE_NV)/libnvidia-ml.so.1: tests/fake-nvidia/fake-nvml.c tests/fake-nvidia/fake.h src/probe/nvapi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FAKE    $@")
	$(Q)$(CC) -std=gnu11 -O1 -Wall -Wextra -Werror -Isrc -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<
$(FAKE_NV)/libcuda.so.1: tests/fake-nvidia/fake-cuda.c tests/fake-nvidia/fake.h src/probe/nvapi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FAKE    $@")
	$(Q)$(CC) -std=gnu11 -O1 -Wall -Wextra -Werror -Isrc -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<
fake-nvidia: $(FAKE_NV)/libnvidia-ml.so.1 $(FAKE_NV)/libcuda.so.1
