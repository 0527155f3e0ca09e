/* SPDX-License-Identifier: MIT */
/* gpuboot-probe: the GPU checks, in a small glibc program that dlopens the
 * driver's libnvidia-ml.so.1 and libcuda.so.1 (a static musl program cannot).
 * gpuboot runs it from a memfd under a timeout, so a hang or crash in the
 * vendor's library never takes gpuboot down. It measures and reports; the
 * verdict (thresholds, pass/fail) is gpuboot's.
 *
 * usage: gpuboot-probe [--tier passive|active] [--fp64] [--pattern-mib N]
 *                      [--bw-mib N] [--host-mib N] [--load-ms N] [--fabric-wait-ms N]
 *                      [--gpus LIST]
 * --gpus narrows the active tier to the NVML indices listed ("0,3"); the
 * passive facts cover every GPU. --load-ms is half the FP32 load's length
 * where NVML has no timestamped utilisation samples (fma_sliced says how
 * long the load is otherwise).
 *
 * The active tier runs one worker thread per GPU (its own context, stream,
 * events, device buffers and pinned host buffer), then the peer copies in
 * rounds of disjoint pairs, the NVLink pairs of a round at once.
 * stdout: one JSON document. exit: 0 measured (even if a GPU is bad),
 * 2 bad usage, 3 the driver libraries could not be used (JSON says why).
 *
 * Portability: it must run on the oldest glibc gpuboot supports, so it
 * binds the old symbol versions explicitly (probe-start.S, the .symver lines
 * below) and a test reads its symbol versions. JSON is written by hand here:
 * json-c's static library pulls getrandom (GLIBC_2.25). pthread_create is
 * taken from libpthread.so.0 with dlopen at run time: linked, it would bind
 * GLIBC_2.34 (where glibc moved it into libc) on a new build host. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvapi.h"

#if defined(__x86_64__)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver memcpy,memcpy@GLIBC_2.2.5");
__asm__(".symver clock_gettime,clock_gettime@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver dlopen,dlopen@GLIBC_2.17");
__asm__(".symver dlsym,dlsym@GLIBC_2.17");
__asm__(".symver dlerror,dlerror@GLIBC_2.17");
__asm__(".symver dlclose,dlclose@GLIBC_2.17");
#endif

#define PROBE_VERSION 1
#define MAX_GPUS 64
#define GB_SLICES_MAX 400 /* FMA slices of one load, at most */

extern const char gb_probe_ptx[];

#define DECL(type, field, sym, req) __typeof__(type) field;
struct nvml {
	void *h;
	GB_NVML_FUNCS(DECL)
};
struct cuda {
	void *h;
	GB_CUDA_FUNCS(DECL)
};
#undef DECL

static struct nvml nv;
static struct cuda cu;

/* ---- a minimal JSON writer: objects, arrays, escaped strings ---- */

static int depth;
static int first[32] = { 1 };

static void jsep(void)
{
	if (!first[depth])
		fputc(',', stdout);
	first[depth] = 0;
}

static void jkey(const char *k)
{
	jsep();
	if (k)
		printf("\"%s\":", k);
}

static void jopen(const char *k, char c)
{
	jkey(k);
	fputc(c, stdout);
	depth++;
	first[depth] = 1;
}

static void jclose(char c)
{
	fputc(c, stdout);
	depth--;
}

static void jstr(const char *k, const char *v)
{
	jkey(k);
	if (!v) {
		fputs("null", stdout);
		return;
	}
	fputc('"', stdout);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p);
		else
			fputc(*p, stdout);
	}
	fputc('"', stdout);
}

static void jint(const char *k, long long v)
{
	jkey(k);
	printf("%lld", v);
}

static void jdbl(const char *k, double v)
{
	jkey(k);
	if (v != v)
		fputs("null", stdout);
	else
		printf("%.4f", v);
}

static void jbool(const char *k, int v)
{
	jkey(k);
	fputs(v ? "true" : "false", stdout);
}

static void jnull(const char *k)
{
	jkey(k);
	fputs("null", stdout);
}

/* ---- helpers ---- */

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *cu_err(CUresult r)
{
	const char *s = NULL;
	if (cu.error_string && cu.error_string(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown CUDA error";
}

static int load(void **h, const char *lib, const char *const *syms, void ***fields, const int *req, size_t n, char *err,
                size_t errsz)
{
	*h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!*h) {
		const char *e = dlerror();
		snprintf(err, errsz, "cannot load %s: %s", lib, e ? e : "not found");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		*fields[i] = dlsym(*h, syms[i]);
		if (!*fields[i] && req[i]) {
			snprintf(err, errsz, "%s has no %s (driver too old?)", lib, syms[i]);
			return -1;
		}
	}
	return 0;
}

static int load_nvml(char *err, size_t errsz)
{
#define SYM(type, field, sym, r) sym,
#define FLD(type, field, sym, r) (void **)&nv.field,
#define REQ(type, field, sym, r) r,
	static const char *const syms[] = { GB_NVML_FUNCS(SYM) };
	void **fields[] = { GB_NVML_FUNCS(FLD) };
	static const int req[] = { GB_NVML_FUNCS(REQ) };
	return load(&nv.h, "libnvidia-ml.so.1", syms, fields, req, sizeof(syms) / sizeof(syms[0]), err, errsz);
}

static int load_cuda(char *err, size_t errsz)
{
#undef FLD
#define FLD(type, field, sym, r) (void **)&cu.field,
	static const char *const syms[] = { GB_CUDA_FUNCS(SYM) };
	void **fields[] = { GB_CUDA_FUNCS(FLD) };
	static const int req[] = { GB_CUDA_FUNCS(REQ) };
	return load(&cu.h, "libcuda.so.1", syms, fields, req, sizeof(syms) / sizeof(syms[0]), err, errsz);
#undef SYM
#undef FLD
#undef REQ
}

/* ---- per-GPU state ---- */

struct gpu {
	nvmlDevice_t dev;
	unsigned before_pids[64]; /* other processes on it when the probe started */
	unsigned n_before;
	char bus_id[32]; /* "00000000:00:06.0" from NVML */
	int cuda_index; /* -1: not seen by CUDA */
	CUdevice cudev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f_fill, f_check, f_read, f_fma32, f_fma64;
	CUdeviceptr buf, buf2, errs, sink;
	size_t buf_bytes, bw_bytes, host_bytes;
	size_t free_at_start; /* device memory free when the pattern buffer was sized */
	int sm_count, cc_major, cc_minor, clock_khz, bus_width;
	unsigned nvml_bus_width, mem_max_mhz, sm_max_mhz;
	char error[256];
	/* results */
	double jit_ms, fill_check_ms, d2d_gbps, read_gbps, fp32_tflops, fp64_tflops, h2d_gbps, d2h_gbps;
	long long pattern_errors;
	int util_max, util_samples, util_windows, load_gen, load_width;
	double util_window_ms; /* the whole sample window read (nvmlDeviceGetSamples) */
	const char *util_source; /* "samples", "utilization_rates" */
	double fp32_timed_ms, fp32_settle_ms, fp32_slice_min, fp32_slice_max, fp64_timed_ms;
	int fp32_timed_slices, fp32_slices;
	CUevent sl_ev[GB_SLICES_MAX + 1]; /* between the FMA slices, made as needed */
	unsigned sm_clock_load_mhz;
	unsigned long long events_under_load;
	CUstream stream;
	CUevent e0, e1;
	/* the worker: its thread and when it ran (ms since the probe started) */
	int selected;
	pthread_t thread;
	double worker_start_ms, worker_end_ms;
	/* where the worker's time went, ms */
	double ph_setup, ph_pattern, ph_device_bw, ph_fma, ph_host_alloc, ph_host_copies;
	double ph_context, ph_device_alloc, ph_host_free, warmup_left; /* within the above */
	/* NVLink as NVML reports it: state -1 no such link, 0 down, 1 up */
	signed char nvl_state[GB_NVML_NVLINK_MAX_LINKS];
	int nvl_type[GB_NVML_NVLINK_MAX_LINKS];
	unsigned nvl_version[GB_NVML_NVLINK_MAX_LINKS];
	char nvl_remote[GB_NVML_NVLINK_MAX_LINKS][32];
};

static struct gpu gpus[MAX_GPUS];
static unsigned n_gpus;
static double t_start;

struct options {
	int active, fp64;
	size_t pattern_mib, bw_mib, host_mib;
	int load_ms;
	int fabric_wait_ms; /* --fabric-wait-ms: how long the NVLink fabric may take to come up */
	int narrowed;
	unsigned char want[MAX_GPUS]; /* --gpus: the NVML indices to exercise */
};

/* pthread_create and pthread_join from libpthread.so.0 at run time (the
 * header comment says why); on glibc >= 2.34 that stub forwards to libc. */
static int (*thr_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static int (*thr_join)(pthread_t, void **);

static int threads_load(void)
{
	void *h = dlopen("libpthread.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	*(void **)&thr_create = dlsym(h, "pthread_create");
	*(void **)&thr_join = dlsym(h, "pthread_join");
	return thr_create && thr_join ? 0 : -1;
}

/* Run fn(arg[i]) for every i, each in its own thread where threads are
 * available (in the caller otherwise), and wait for all. */
static void run_all(void *(*fn)(void *), void **args, unsigned n)
{
	pthread_t t[MAX_GPUS] = { 0 };
	int started[MAX_GPUS] = { 0 };

	for (unsigned i = 0; i < n && i < MAX_GPUS; i++)
		started[i] = thr_create && thr_create(&t[i], NULL, fn, args[i]) == 0;
	for (unsigned i = 0; i < n && i < MAX_GPUS; i++)
		if (!started[i])
			fn(args[i]);
	for (unsigned i = 0; i < n && i < MAX_GPUS; i++)
		if (started[i])
			thr_join(t[i], NULL);
}

/* ECC, remapped rows and retired pages: the memory's health, as NVML sees it. */
static void memory_health(struct gpu *g)
{
	int cur, pend, rows = 0;
	unsigned u1, u2, u3, u4;
	unsigned long long ull;

	jopen("ecc", '{');
	if (nv.ecc_mode && nv.ecc_mode(g->dev, &cur, &pend) == NVML_SUCCESS) {
		jbool("supported", 1);
		jbool("enabled", cur == 1);
		jbool("pending_enabled", pend == 1);
		if (nv.ecc_errors &&
		    nv.ecc_errors(g->dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull) == NVML_SUCCESS)
			jint("volatile_uncorrected", (long long)ull);
		if (nv.ecc_errors &&
		    nv.ecc_errors(g->dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &ull) == NVML_SUCCESS)
			jint("aggregate_uncorrected", (long long)ull);
	} else {
		jbool("supported", 0);
	}
	jclose('}');

	jopen("remapped_rows", '{');
	if (nv.remapped_rows && nv.remapped_rows(g->dev, &u1, &u2, &u3, &u4) == NVML_SUCCESS) {
		rows = 1;
		jbool("supported", 1);
		jint("correctable", u1);
		jint("uncorrectable", u2);
		jbool("pending", u3 != 0);
		jbool("failure", u4 != 0);
	} else {
		jbool("supported", 0);
	}
	jclose('}');

	/* Retired pages are what GPUs before Ampere have instead of row
	 * remapping: asked only where there is none. */
	jopen("retired_pages", '{');
	if (!rows && nv.retired_pending && nv.retired_pending(g->dev, &cur) == NVML_SUCCESS) {
		unsigned count = 0;
		jbool("supported", 1);
		jbool("pending", cur == 1);
		if (nv.retired_pages)
			(void)nv.retired_pages(g->dev, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &count, NULL);
		jint("double_bit", count);
	} else {
		jbool("supported", 0);
	}
	jclose('}');
}

/* NVLink: every link NVML knows of, whether it is up, its version and what
 * is at the far end (a GPU by its PCI address, or an NVSwitch). */
static void nvlink_facts(struct gpu *g)
{
	int any = 0;

	for (unsigned l = 0; l < GB_NVML_NVLINK_MAX_LINKS; l++) {
		int st = 0;
		nvmlPciInfo_t pci;
		g->nvl_state[l] = -1;
		g->nvl_type[l] = -1;
		if (!nv.nvlink_state || nv.nvlink_state(g->dev, l, &st) != NVML_SUCCESS)
			continue;
		g->nvl_state[l] = st == 1;
		if (nv.nvlink_version)
			(void)nv.nvlink_version(g->dev, l, &g->nvl_version[l]);
		memset(&pci, 0, sizeof(pci));
		if (nv.nvlink_remote_pci && nv.nvlink_remote_pci(g->dev, l, &pci) == NVML_SUCCESS)
			snprintf(g->nvl_remote[l], sizeof(g->nvl_remote[l]), "%s", pci.busId);
		if (nv.nvlink_remote_type)
			(void)nv.nvlink_remote_type(g->dev, l, &g->nvl_type[l]);
		if (!any)
			jopen("nvlink", '[');
		any = 1;
		jopen(NULL, '{');
		jint("link", l);
		jbool("up", st == 1);
		jint("version", g->nvl_version[l]);
		jstr("remote_bus_id", g->nvl_remote[l][0] ? g->nvl_remote[l] : NULL);
		jstr("remote_type", g->nvl_type[l] == GB_NVLINK_REMOTE_GPU      ? "gpu"
		                    : g->nvl_type[l] == GB_NVLINK_REMOTE_SWITCH ? "nvswitch"
		                    : g->nvl_type[l] < 0                        ? NULL
		                                                                : "other");
		jclose('}');
	}
	if (any)
		jclose(']');
}

/* nvmlProcessInfo_t as _v3 fills it (nvml.h) */
struct nv_process {
	unsigned pid;
	unsigned long long used_memory;
	unsigned gpu_instance, compute_instance;
	unsigned long long used_cc_protected;
};

/* nvmlProcessUtilizationSample_t (nvml.h) */
struct nv_process_sample {
	unsigned pid;
	unsigned long long timestamp;
	unsigned sm_util, mem_util, enc_util, dec_util;
};

/* The SM utilisation (%) from which a process counts as computing. On the
 * H200 (580.159.04) a process that only holds memory read 1, a PyTorch
 * matmul loop 25 (tests/gpu/nvml-process-util.py, docs/verification.md). */
#define BUSY_SM_UTIL 5

/* NVML's recent per-process samples of the GPU, read once per count: n
 * samples (0: nobody computed in the window), or -1 when not known (no
 * samples API: then every process counts as computing). NVML wants room
 * for its whole sample buffer (72 entries on the H200). */
struct samples {
	struct nv_process_sample s[256];
	int n;
};

static void samples_read(const struct gpu *g, struct samples *sm)
{
	unsigned n = 256;
	nvmlReturn_t r = nv.process_util ? nv.process_util(g->dev, sm->s, &n, 0) : NVML_ERROR_NOT_SUPPORTED;
	sm->n = r == NVML_SUCCESS ? (int)(n < 256 ? n : 256) : r == NVML_ERROR_NOT_FOUND ? 0 : -1;
}

/* Did PID compute in them? 1 yes, 0 no, -1 not known. */
static int pid_computed(const struct samples *sm, unsigned pid)
{
	if (sm->n < 0)
		return -1;
	for (int i = 0; i < sm->n; i++)
		if (sm->s[i].pid == pid && sm->s[i].sm_util >= BUSY_SM_UTIL)
			return 1;
	return 0;
}

/* The other compute processes on the GPU: how many, how many computed
 * (the rest only hold memory), the memory they hold; their pids kept for
 * the count after the measurements. -1 when NVML cannot say. */
static int other_processes_now(struct gpu *g, int *ret_busy, unsigned long long *ret_bytes, int keep)
{
	struct nv_process p[64];
	unsigned n = 64, self = (unsigned)getpid();
	int others = 0, busy = 0;
	unsigned long long bytes = 0;
	struct samples sm;
	nvmlReturn_t r = nv.processes(g->dev, &n, p);

	if (r == NVML_ERROR_INSUFFICIENT_SIZE)
		return *ret_busy = (int)n, *ret_bytes = 0, (int)n; /* more than 64: others, surely */
	if (r != NVML_SUCCESS)
		return -1;
	samples_read(g, &sm);
	for (unsigned i = 0; i < n && i < 64; i++) {
		int c;
		if (p[i].pid == self)
			continue;
		others++;
		bytes += p[i].used_memory;
		c = pid_computed(&sm, p[i].pid);
		busy += c != 0;
		if (keep && g->n_before < 64)
			g->before_pids[g->n_before++] = p[i].pid;
	}
	*ret_busy = busy;
	*ret_bytes = bytes;
	return others;
}

/* After the measurements: other processes that were not there before, or
 * that computed (a memory holder that started computing); -1 when unknown. */
static int other_processes(const struct gpu *g)
{
	struct nv_process p[64];
	unsigned n = 64, self = (unsigned)getpid();
	int late = 0;
	struct samples sm;
	nvmlReturn_t r = nv.processes(g->dev, &n, p);
	if (r == NVML_ERROR_INSUFFICIENT_SIZE)
		return (int)n;
	if (r != NVML_SUCCESS)
		return -1;
	samples_read(g, &sm);
	for (unsigned i = 0; i < n && i < 64; i++) {
		int before = 0;
		if (p[i].pid == self)
			continue;
		for (unsigned k = 0; k < g->n_before; k++)
			before |= g->before_pids[k] == p[i].pid;
		late += !before || pid_computed(&sm, p[i].pid) != 0;
	}
	return late;
}

/* One GPU's NVML facts. What only the active tier judges (the maximum
 * clocks and bus width its peaks are derived from, the other processes on
 * the GPU) is read for the active tier only: the passive tier is ~40 ms,
 * and those calls were a quarter of it on the H200. */
static void passive_gpu(unsigned i, int active)
{
	struct gpu *g = &gpus[i];
	char name[96] = "", uuid[96] = "";
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	int cur;
	unsigned u1, u2;
	unsigned long long ull;

	jopen(NULL, '{');
	jint("index", i);
	if (nv.handle(i, &g->dev) != NVML_SUCCESS) {
		jstr("error", "nvmlDeviceGetHandleByIndex failed");
		jclose('}');
		return;
	}
	if (nv.pci(g->dev, &pci) == NVML_SUCCESS) {
		snprintf(g->bus_id, sizeof(g->bus_id), "%s", pci.busId);
		jstr("pci_bus_id", pci.busId);
		jint("pci_device_id", pci.pciDeviceId >> 16);
	}
	nv.name(g->dev, name, sizeof(name));
	nv.uuid(g->dev, uuid, sizeof(uuid));
	jstr("name", name);
	jstr("uuid", uuid);
	if (nv.memory(g->dev, &mem) == NVML_SUCCESS)
		jint("memory_total_bytes", (long long)mem.total);

	memory_health(g);

	if ((nv.clock_events && nv.clock_events(g->dev, &ull) == NVML_SUCCESS) ||
	    (nv.throttle_reasons && nv.throttle_reasons(g->dev, &ull) == NVML_SUCCESS))
		jint("clock_event_reasons", (long long)ull);
	else
		jnull("clock_event_reasons");
	if (nv.persistence && nv.persistence(g->dev, &cur) == NVML_SUCCESS)
		jbool("persistence_mode", cur == 1);
	if (nv.compute_mode && nv.compute_mode(g->dev, &cur) == NVML_SUCCESS)
		jstr("compute_mode", cur == 0   ? "default"
		                     : cur == 2 ? "prohibited"
		                     : cur == 3 ? "exclusive_process"
		                                : "exclusive_thread");
	if (nv.virt_mode && nv.virt_mode(g->dev, &u1) == NVML_SUCCESS) {
		static const char *const modes[] = GB_NVML_VIRT_MODES;
		jstr("virtualization_mode", u1 < sizeof(modes) / sizeof(modes[0]) ? modes[u1] : "unknown");
	}
	if (nv.mig_mode && nv.mig_mode(g->dev, &u1, &u2) == NVML_SUCCESS)
		jbool("mig_enabled", u1 == 1);
	else
		jbool("mig_enabled", 0);

	jopen("pcie", '{');
	if (nv.pcie_gen && nv.pcie_gen(g->dev, &u1) == NVML_SUCCESS)
		jint("current_gen", u1);
	if (nv.pcie_width && nv.pcie_width(g->dev, &u1) == NVML_SUCCESS)
		jint("current_width", u1);
	if (nv.pcie_max_gen && nv.pcie_max_gen(g->dev, &u1) == NVML_SUCCESS)
		jint("max_gen", u1);
	if (nv.pcie_max_width && nv.pcie_max_width(g->dev, &u1) == NVML_SUCCESS)
		jint("max_width", u1);
	jclose('}');

	if (active) {
		jopen("clocks", '{');
		if (nv.max_clock && nv.max_clock(g->dev, NVML_CLOCK_SM, &g->sm_max_mhz) == NVML_SUCCESS)
			jint("sm_max_mhz", g->sm_max_mhz);
		if (nv.max_clock && nv.max_clock(g->dev, NVML_CLOCK_MEM, &g->mem_max_mhz) == NVML_SUCCESS)
			jint("mem_max_mhz", g->mem_max_mhz);
		if (nv.clock && nv.clock(g->dev, NVML_CLOCK_SM, &u1) == NVML_SUCCESS)
			jint("sm_current_mhz", u1);
		jclose('}');
		if (nv.bus_width && nv.bus_width(g->dev, &g->nvml_bus_width) == NVML_SUCCESS)
			jint("memory_bus_width_bits", g->nvml_bus_width);
	}
	if (nv.temperature && nv.temperature(g->dev, 0, &u1) == NVML_SUCCESS)
		jint("temperature_c", u1);
	if (nv.fabric_info) {
		gb_nvml_fabric_info fi;
		memset(&fi, 0, sizeof(fi));
		if (nv.fabric_info(g->dev, &fi) == NVML_SUCCESS && fi.state != 0) {
			jopen("fabric", '{');
			jint("state", fi.state);
			jstr("state_name", fi.state == 1   ? "not_started"
			                   : fi.state == 2 ? "in_progress"
			                   : fi.state == 3 ? "completed"
			                                   : "unknown");
			jint("status", fi.status);
			jclose('}');
		}
	}
	nvlink_facts(g);
	if (active && nv.processes) {
		int busy = 0, others;
		unsigned long long held = 0;
		others = other_processes_now(g, &busy, &held, 1);
		if (others >= 0) {
			jint("compute_processes", others);
			jint("compute_processes_busy", busy); /* the rest only hold memory */
			jint("other_processes_memory_bytes", (long long)held);
		}
	}
	jclose('}');
}

/* ---- active checks ---- */

#define CK(call, what)                                                                                        \
	do {                                                                                                  \
		CUresult _r = (call);                                                                         \
		if (_r != CUDA_SUCCESS) {                                                                     \
			snprintf(g->error, sizeof(g->error), "%s: %s (CUDA error %d)", what, cu_err(_r), _r); \
			return -1;                                                                            \
		}                                                                                             \
	} while (0)

static int launch(struct gpu *g, CUfunction f, unsigned blocks, unsigned threads, void **params)
{
	CK(cu.launch(f, blocks, 1, 1, threads, 1, 1, 0, g->stream, params, NULL), "cuLaunchKernel");
	return 0;
}

static int setup(struct gpu *g, const struct options *o)
{
	double t;
	size_t free_b = 0, total_b = 0;

	CK(cu.get(&g->cudev, g->cuda_index), "cuDeviceGet");
	cu.attribute(&g->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->cudev);
	cu.attribute(&g->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->cudev);
	cu.attribute(&g->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->cudev);
	cu.attribute(&g->clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, g->cudev);
	cu.attribute(&g->bus_width, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, g->cudev);
	t = now_ms();
	if (!g->ctx)
		CK(cu.ctx_retain(&g->ctx, g->cudev), "cuDevicePrimaryCtxRetain");
	CK(cu.ctx_set(g->ctx), "cuCtxSetCurrent");
	g->ph_context = now_ms() - t;
	t = now_ms();
	{
		CUresult r = cu.module_load(&g->mod, gb_probe_ptx);
		if (r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) {
			snprintf(g->error, sizeof(g->error),
			         "PTX JIT compiler missing: libnvidia-ptxjitcompiler.so.1 is not installed (CUDA error "
			         "221)");
			return -1;
		}
		CK(r, "cuModuleLoadData (PTX JIT)");
	}
	g->jit_ms = now_ms() - t;
	CK(cu.function(&g->f_fill, g->mod, "gb_fill"), "cuModuleGetFunction gb_fill");
	CK(cu.function(&g->f_check, g->mod, "gb_check"), "cuModuleGetFunction gb_check");
	CK(cu.function(&g->f_read, g->mod, "gb_read"), "cuModuleGetFunction gb_read");
	CK(cu.function(&g->f_fma32, g->mod, "gb_fma32"), "cuModuleGetFunction gb_fma32");
	CK(cu.function(&g->f_fma64, g->mod, "gb_fma64"), "cuModuleGetFunction gb_fma64");
	t = now_ms();
	CK(cu.mem_info(&free_b, &total_b), "cuMemGetInfo");
	g->free_at_start = free_b;
	/* The pattern buffer: what was asked, at most a quarter of free memory. */
	g->buf_bytes = o->pattern_mib << 20;
	if (g->buf_bytes > free_b / 4)
		g->buf_bytes = (free_b / 4) & ~(size_t)0xfffff;
	g->bw_bytes = o->bw_mib << 20;
	if (g->bw_bytes > g->buf_bytes)
		g->bw_bytes = g->buf_bytes;
	CK(cu.mem_alloc(&g->buf, g->buf_bytes), "cuMemAlloc (pattern buffer)");
	CK(cu.mem_alloc(&g->buf2, g->bw_bytes), "cuMemAlloc (copy buffer)");
	CK(cu.mem_alloc(&g->errs, 64), "cuMemAlloc");
	CK(cu.mem_alloc(&g->sink, 64), "cuMemAlloc");
	CK(cu.memset32(g->errs, 0, 16), "cuMemsetD32");
	CK(cu.stream_create(&g->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	CK(cu.event_create(&g->e0, 0), "cuEventCreate");
	CK(cu.event_create(&g->e1, 0), "cuEventCreate");
	g->ph_device_alloc = now_ms() - t;
	return 0;
}

static unsigned blocks_for(const struct gpu *g)
{
	return (unsigned)(g->sm_count > 0 ? g->sm_count : 1) * 8;
}

/* Time one operation with events; best of reps after one warm-up. */
static int timed(struct gpu *g, int (*op)(struct gpu *, void *), void *arg, int reps, double *best_ms)
{
	float ms;
	*best_ms = 1e30;
	if (op(g, arg) < 0)
		return -1;
	for (int i = 0; i < reps; i++) {
		CK(cu.event_record(g->e0, g->stream), "cuEventRecord");
		if (op(g, arg) < 0)
			return -1;
		CK(cu.event_record(g->e1, g->stream), "cuEventRecord");
		CK(cu.event_sync(g->e1), "cuEventSynchronize");
		CK(cu.event_elapsed(&ms, g->e0, g->e1), "cuEventElapsedTime");
		if (ms < *best_ms)
			*best_ms = ms;
	}
	return 0;
}

static int op_d2d(struct gpu *g, void *arg)
{
	(void)arg;
	CK(cu.copy_dtod(g->buf2, g->buf, g->bw_bytes, g->stream), "cuMemcpyDtoDAsync");
	return 0;
}

static int op_read(struct gpu *g, void *arg)
{
	unsigned long long nvec = g->buf_bytes / 16;
	void *params[] = { &g->buf, &nvec, &g->sink };
	(void)arg;
	return launch(g, g->f_read, blocks_for(g) * 2, 256, params);
}

struct worker_arg {
	struct gpu *g;
	const struct options *o;
};

struct host_copy {
	void *host;
	size_t bytes;
	int to_device;
};

static int op_host(struct gpu *g, void *arg)
{
	struct host_copy *h = arg;
	if (h->to_device)
		CK(cu.copy_htod(g->buf2, h->host, h->bytes, g->stream), "cuMemcpyHtoDAsync");
	else
		CK(cu.copy_dtoh(h->host, g->buf2, h->bytes, g->stream), "cuMemcpyDtoHAsync");
	return 0;
}

static int pattern(struct gpu *g)
{
	unsigned long long n = g->buf_bytes / 4;
	unsigned seed = 0x5eed1234u ^ (unsigned)g->cuda_index;
	unsigned errs[16];
	void *pf[] = { &g->buf, &n, &seed };
	void *pc[] = { &g->buf, &n, &seed, &g->errs };
	double t = now_ms();

	if (launch(g, g->f_fill, blocks_for(g), 256, pf) < 0 || launch(g, g->f_check, blocks_for(g), 256, pc) < 0)
		return -1;
	/* A second pass with the complement catches cells stuck at the first value. */
	seed = ~seed;
	if (launch(g, g->f_fill, blocks_for(g), 256, pf) < 0 || launch(g, g->f_check, blocks_for(g), 256, pc) < 0)
		return -1;
	CK(cu.stream_sync(g->stream), "cuStreamSynchronize");
	CK(cu.copy_dtoh_sync(errs, g->errs, sizeof(errs)), "cuMemcpyDtoH (pattern errors)");
	g->pattern_errors = errs[0];
	g->fill_check_ms = now_ms() - t;
	return 0;
}

/* The pinned host buffer. Pinning is host and driver work that the driver
 * serialises across contexts (under UVA each pinned buffer is mapped for
 * every context), so it is done while the GPU runs the FP32 slices, in a
 * thread of its own (the worker keeps the slices queued meanwhile): neither
 * waits for the other, and nothing timed overlaps. */
struct pinned {
	struct gpu *g;
	void *host;
	size_t bytes;
	double end_ms; /* when the pinning ended (now_ms) */
	int done; /* set (atomically) by the pinning thread when it has ended */
};

static void *pin_host(void *arg)
{
	struct pinned *p = arg;
	double t = now_ms();
	if (cu.ctx_set(p->g->ctx) != CUDA_SUCCESS || cu.host_alloc(&p->host, p->bytes, 0) != CUDA_SUCCESS)
		p->host = NULL;
	p->end_ms = now_ms();
	p->g->ph_host_alloc = p->end_ms - t;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The FMA load as a stream of short kernels ("slices", SLICE_MS each) on
 * the worker's stream, an event between each two, kept SLICES_AHEAD deep
 * so the GPU never idles while the host watches:
 * - settle: the first slice is a warm-up; the load is settled from the
 *   first slice whose rate is within SETTLE_TOL of the one before it (a
 *   GPU whose clocks still ramp runs each slice faster than the last), or
 *   after SETTLE_MAX_MS of slices at the latest;
 * - the figure: every settled slice's work over their summed event time,
 *   at least min_timed_ms of them;
 * - the utilisation (FP32 only): NVML's GPU utilisation sample
 *   (nvmlDeviceGetSamples) of a whole sample window that lies inside the
 *   load (its window, from the sample before it to its own timestamp,
 *   begins after the first slice was queued and ends while slices are still
 *   queued); the load lasts until one such window has been read. Without
 *   timestamped samples (an older or partial NVML, the fake), the load lasts
 *   2 x load_ms and nvmlDeviceGetUtilizationRates is read from 1.4 x
 *   load_ms on, as the probe did with one warm-up kernel and one timed one.
 * On the H200 the rate is flat from the first slice on (64.74-64.79
 * TFLOP/s per 10 ms slice), and the samples come every ~200 ms, each the
 * busy share since the last (docs/verification.md). */
#define SLICE_MS 10
#define SLICES_AHEAD 4
#define PIN_AHEAD 25 /* queued before the pinning starts: it blocks launches (below) */
#define SETTLE_TOL 0.01
#define SETTLE_MAX_MS 200.0
#define FMA_MIN_TIMED_MS 100.0
#define FMA_MAX_MS 4000.0 /* the load's cap, whatever the utilisation samples say */
#define UTIL_WINDOW_MIN_MS 20.0
#define UTIL_WINDOW_MAX_MS 2000.0
#define NVML_POLL_MS 20.0

static unsigned long long realtime_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (unsigned long long)t.tv_sec * 1000000ull + (unsigned long long)t.tv_nsec / 1000ull;
}

/* The GPU utilisation samples since *last: each one whose window lies
 * inside the load (the sample before it came after busy0) counts. 0 read,
 * -1 the samples cannot be used (then the caller falls back). */
static int util_windows(struct gpu *g, unsigned long long busy0, unsigned long long *last)
{
	gb_nvml_sample sm[64];
	unsigned n = 64;
	int type = 0;
	unsigned long long now = realtime_us();
	nvmlReturn_t r = nv.samples_get(g->dev, GB_NVML_GPU_UTILIZATION_SAMPLES, *last, &type, &n, sm);

	if (r == NVML_ERROR_NOT_FOUND)
		return 0; /* no sample since *last */
	if (r != NVML_SUCCESS || type != 1 /* NVML_VALUE_TYPE_UNSIGNED_INT */)
		return -1;
	for (unsigned i = 1; i < n && i < 64; i++) /* in time order (NVML gives them so) */
		for (unsigned k = i; k > 0 && sm[k].ts < sm[k - 1].ts; k--) {
			gb_nvml_sample x = sm[k];
			sm[k] = sm[k - 1];
			sm[k - 1] = x;
		}
	for (unsigned i = 0; i < n && i < 64; i++) {
		double win;
		if (sm[i].ts <= *last)
			continue;
		if (sm[i].ts > now + 100000ull)
			return -1; /* not the realtime clock: the windows cannot be placed */
		win = (double)(sm[i].ts - *last) / 1e3;
		if (*last > busy0 && win >= UTIL_WINDOW_MIN_MS && win <= UTIL_WINDOW_MAX_MS) {
			if (!g->util_windows || (int)sm[i].v.ui > g->util_max)
				g->util_max = (int)sm[i].v.ui;
			g->util_window_ms = win;
			g->util_windows++;
			g->util_samples++;
		}
		*last = sm[i].ts;
	}
	return 0;
}

/* The clocks and clock event reasons while loaded. */
static void clocks_under_load(struct gpu *g)
{
	unsigned mhz;
	unsigned long long ev;
	if (nv.clock && nv.clock(g->dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)
		g->sm_clock_load_mhz = mhz;
	if ((nv.clock_events && nv.clock_events(g->dev, &ev) == NVML_SUCCESS) ||
	    (nv.throttle_reasons && nv.throttle_reasons(g->dev, &ev) == NVML_SUCCESS))
		g->events_under_load |= ev;
}

struct fma_run {
	int fp64, util; /* FP64 kernel; read the utilisation (FP32) */
	double min_timed_ms, fallback_ms; /* the timed minimum; without samples, the load's length */
	double tflops, timed_ms, settle_ms, slice_min, slice_max;
	int timed_slices, slices;
};

/* One load's state while it runs. */
struct fma_state {
	CUfunction f;
	void **params;
	double flops, t0, t_nvml, prev_rate, gpu_ms, timed_ms, timed_flops;
	unsigned long long busy0, last; /* realtime us: the load's start, the last utilisation sample seen */
	unsigned launched, done, settled; /* settled: the first timed slice, 0 not yet */
	unsigned timed_from; /* the first slice that started after the pinning ended */
	int timed_from_set, samples, stop;
	struct pinned *pin;
	int rates_max, rates_n; /* nvmlDeviceGetUtilizationRates, the fallback */
};

/* Launch slice k (its event k+1 after it); the events are made as needed. */
static int slice_launch(struct gpu *g, struct fma_state *st)
{
	unsigned k = st->launched;
	if (k == 0) {
		if (!g->sl_ev[0])
			CK(cu.event_create(&g->sl_ev[0], 0), "cuEventCreate");
		CK(cu.event_record(g->sl_ev[0], g->stream), "cuEventRecord");
	}
	if (!g->sl_ev[k + 1])
		CK(cu.event_create(&g->sl_ev[k + 1], 0), "cuEventCreate");
	if (launch(g, st->f, blocks_for(g), 256, st->params) < 0)
		return -1;
	CK(cu.event_record(g->sl_ev[k + 1], g->stream), "cuEventRecord");
	st->launched++;
	return 0;
}

/* The slices done by now: their rates, the settle, the timed sums. */
static int slices_done(struct gpu *g, struct fma_run *fr, struct fma_state *st)
{
	CUresult q;
	/* The pinning over: the slices after the first one not done yet (its
	 * end event not ready at a time after the pinning ended) start after
	 * it; with none queued, the next one launched. The utilisation windows
	 * count from here too. */
	if (!st->timed_from_set && (!st->pin || __atomic_load_n(&st->pin->done, __ATOMIC_ACQUIRE))) {
		unsigned k = st->done + 1;
		while (k <= st->launched && cu.event_query(g->sl_ev[k]) != CUDA_ERROR_NOT_READY)
			k++;
		st->timed_from = k <= st->launched ? k : st->launched;
		st->timed_from_set = 1;
		st->busy0 = st->last = realtime_us();
		st->gpu_ms = 0;
	}
	while (st->done < st->launched && (q = cu.event_query(g->sl_ev[st->done + 1])) != CUDA_ERROR_NOT_READY) {
		float ms = 0;
		double rate;
		CK(q, fr->fp64 ? "kernel gb_fma64" : "kernel gb_fma32");
		CK(cu.event_elapsed(&ms, g->sl_ev[st->done], g->sl_ev[st->done + 1]), "cuEventElapsedTime");
		if (ms <= 0)
			ms = 1e-3f;
		rate = st->flops / (ms / 1e3) / 1e12;
		if (st->timed_from_set && st->done >= st->timed_from)
			st->gpu_ms += ms;
		if (!st->settled && st->done >= 1 && st->timed_from_set && st->done >= st->timed_from &&
		    ((rate >= st->prev_rate * (1 - SETTLE_TOL) && rate <= st->prev_rate * (1 + SETTLE_TOL)) ||
		     st->gpu_ms >= SETTLE_MAX_MS)) {
			st->settled = st->done;
			fr->settle_ms = st->gpu_ms - ms;
		}
		if (st->settled) {
			st->timed_ms += ms;
			st->timed_flops += st->flops;
			fr->timed_slices++;
			fr->slice_min = rate < fr->slice_min ? rate : fr->slice_min;
			fr->slice_max = rate > fr->slice_max ? rate : fr->slice_max;
		}
		st->prev_rate = rate;
		st->done++;
	}
	return 0;
}

/* NVML while loaded, every NVML_POLL_MS (its calls cost up to ms each):
 * clocks, event reasons, the utilisation samples; the current utilisation
 * from 1.4 x fallback_ms on (the fallback, and a backup should the
 * samples never place a window). */
static void fma_nvml(struct gpu *g, struct fma_run *fr, struct fma_state *st, double elapsed)
{
	nvmlUtilization_t u;

	if (!st->settled || now_ms() - st->t_nvml < NVML_POLL_MS)
		return;
	st->t_nvml = now_ms();
	clocks_under_load(g);
	if (!fr->util)
		return;
	if (st->samples && util_windows(g, st->busy0, &st->last) < 0)
		st->samples = 0; /* unusable: the fallback from here on */
	if (elapsed >= 1.4 * fr->fallback_ms && nv.utilization && nv.utilization(g->dev, &u) == NVML_SUCCESS) {
		st->rates_max = (int)u.gpu > st->rates_max ? (int)u.gpu : st->rates_max;
		st->rates_n++;
	}
}

/* Keep SLICES_AHEAD slices queued until the load may stop, then let the
 * queued ones finish (they are timed too). */
static int fma_watch(struct gpu *g, struct fma_run *fr, struct fma_state *st)
{
	while (!st->stop || st->done < st->launched) {
		double elapsed = now_ms() - st->t0;
		if (slices_done(g, fr, st) < 0)
			return -1;
		if (!st->stop) {
			fma_nvml(g, fr, st, elapsed);
			st->stop = st->settled && st->timed_ms >= fr->min_timed_ms &&
			           (!fr->util || (st->samples ? g->util_windows > 0 : elapsed >= 2 * fr->fallback_ms));
			st->stop |= elapsed >= FMA_MAX_MS + 2 * fr->fallback_ms || st->launched >= GB_SLICES_MAX;
			while (!st->stop && st->launched < st->done + SLICES_AHEAD)
				if (slice_launch(g, st) < 0)
					return -1;
		}
		usleep(2000);
	}
	return 0;
}

static int fma_sliced(struct gpu *g, struct fma_run *fr, struct pinned *pin)
{
	double peak_guess =
	    (double)g->sm_count * (fr->fp64 ? 64 : 128) * 2 * (g->clock_khz > 0 ? g->clock_khz * 1e3 : 1.5e9);
	double per_iter = (double)blocks_for(g) * 256 * 256; /* 128 FMA per iteration */
	unsigned iters = (unsigned)(peak_guess * (SLICE_MS / 1000.0) / per_iter);
	void *params[] = { &g->sink, &iters };
	struct fma_state st = { .f = fr->fp64 ? g->f_fma64 : g->f_fma32, .params = params };
	int pinning = 0, rc = 0;
	pthread_t pin_thread;

	if (iters < 16)
		iters = 16;
	st.flops = per_iter * iters;
	st.samples = fr->util && nv.samples_get;
	fr->slice_min = 1e30;
	fr->slice_max = 0;
	st.busy0 = st.last = realtime_us();
	st.pin = pin;
	st.t0 = now_ms();
	while (rc == 0 && st.launched < (pin ? PIN_AHEAD : SLICES_AHEAD))
		rc = slice_launch(g, &st);
	if (rc == 0 && pin) {
		/* In its own thread while the queued slices run (or here, without
		 * threads). cuMemHostAlloc holds the context while it pins (the
		 * worker's launches wait for it: 88-176 ms for 256 MiB on the
		 * H200), hence the deep queue, and no slice that ran before it
		 * ended is timed. */
		if (thr_create && thr_create(&pin_thread, NULL, pin_host, pin) == 0) {
			pinning = 1;
		} else {
			pin_host(pin);
			if (rc == 0 && cu.ctx_set(g->ctx) != CUDA_SUCCESS) {
				snprintf(g->error, sizeof(g->error), "cuCtxSetCurrent failed after pinning");
				rc = -1;
			}
		}
	}
	if (rc == 0)
		rc = fma_watch(g, fr, &st);
	if (pinning) /* on every path: the pinning thread writes pin */
		thr_join(pin_thread, NULL);
	if (pin && pin->host)
		g->warmup_left = now_ms() - pin->end_ms; /* > 0: the pinning was hidden behind the load */
	if (fr->util && (!st.samples || !g->util_windows)) {
		/* no whole sample window: the current utilisation, read late in the load */
		g->util_windows = 0;
		g->util_max = st.rates_max;
		g->util_samples = st.rates_n;
	}
	if (fr->util)
		g->util_source = g->util_windows ? "samples" : st.rates_n ? "utilization_rates" : NULL;
	fr->slices = (int)st.launched;
	fr->timed_ms = st.timed_ms;
	fr->tflops = st.timed_ms > 0 ? st.timed_flops / (st.timed_ms / 1e3) / 1e12 : 0;
	return rc;
}

static int host_copies(struct gpu *g, void *host, size_t bytes)
{
	g->host_bytes = bytes;
	struct host_copy h = { host, bytes, 1 };
	double ms;
	unsigned v;

	if (timed(g, op_host, &h, 5, &ms) < 0)
		return -1;
	g->h2d_gbps = bytes / (ms / 1e3) / 1e9;
	/* The link as trained while loaded (an idle link reads low): copies
	 * queued for at least ~5 ms (256 MiB at 55 GB/s) while NVML reads it. */
	for (size_t k = 0; k < (256u << 20) / bytes || k == 0; k++)
		if (op_host(g, &h) < 0)
			return -1;
	if (nv.pcie_gen && nv.pcie_gen(g->dev, &v) == NVML_SUCCESS)
		g->load_gen = (int)v;
	if (nv.pcie_width && nv.pcie_width(g->dev, &v) == NVML_SUCCESS)
		g->load_width = (int)v;
	CK(cu.stream_sync(g->stream), "cuStreamSynchronize");
	h.to_device = 0;
	if (timed(g, op_host, &h, 5, &ms) < 0)
		return -1;
	g->d2h_gbps = bytes / (ms / 1e3) / 1e9;
	return 0;
}

static void active_gpu_json(const struct gpu *g)
{
	jopen("active", '{');
	if (g->error[0]) {
		jstr("error", g->error);
		jclose('}');
		return;
	}
	jint("cuda_index", g->cuda_index);
	{
		char cc[16];
		snprintf(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
		jstr("compute_capability", cc);
	}
	jint("sm_count", g->sm_count);
	jint("sm_clock_max_khz", g->clock_khz);
	jint("memory_bus_width_bits", g->bus_width);
	jdbl("jit_ms", g->jit_ms);
	jint("pattern_bytes", (long long)g->buf_bytes);
	jint("memory_free_bytes", (long long)g->free_at_start);
	jint("pattern_errors", g->pattern_errors);
	jdbl("pattern_ms", g->fill_check_ms);
	jint("bandwidth_bytes", (long long)g->bw_bytes);
	jdbl("d2d_copy_gbps", g->d2d_gbps);
	jdbl("read_gbps", g->read_gbps);
	jdbl("fp32_tflops", g->fp32_tflops);
	if (g->fp64_tflops > 0)
		jdbl("fp64_tflops", g->fp64_tflops);
	jdbl("fp32_timed_ms", g->fp32_timed_ms);
	jint("fp32_timed_slices", g->fp32_timed_slices);
	jint("fp32_slices", g->fp32_slices);
	jdbl("fp32_settle_ms", g->fp32_settle_ms);
	jdbl("fp32_slice_min_tflops", g->fp32_timed_slices ? g->fp32_slice_min : 0);
	jdbl("fp32_slice_max_tflops", g->fp32_slice_max);
	if (g->fp64_tflops > 0)
		jdbl("fp64_timed_ms", g->fp64_timed_ms);
	jint("utilization_max_pct", g->util_samples ? g->util_max : -1);
	jstr("utilization_source", g->util_source);
	jint("utilization_windows", g->util_windows);
	jdbl("utilization_window_ms", g->util_window_ms);
	jint("sm_clock_under_load_mhz", g->sm_clock_load_mhz);
	jint("clock_event_reasons_under_load", (long long)g->events_under_load);
	jdbl("h2d_pinned_gbps", g->h2d_gbps);
	jdbl("d2h_pinned_gbps", g->d2h_gbps);
	jint("pcie_gen_under_load", g->load_gen);
	jint("pcie_width_under_load", g->load_width);
	jdbl("worker_start_ms", g->worker_start_ms);
	jdbl("worker_end_ms", g->worker_end_ms);
	jopen("phases_ms", '{');
	jdbl("setup", g->ph_setup);
	jdbl("pattern", g->ph_pattern);
	jdbl("device_bandwidth", g->ph_device_bw);
	jdbl("fma", g->ph_fma);
	jdbl("host_alloc", g->ph_host_alloc);
	jdbl("host_copies", g->ph_host_copies);
	jdbl("host_free", g->ph_host_free);
	jdbl("context", g->ph_context);
	jdbl("device_alloc", g->ph_device_alloc);
	jdbl("warmup_left", g->warmup_left);
	jclose('}');
	jint("host_bytes", (long long)g->host_bytes);
	jclose('}');
}

/* A decimal size in MiB (or ms), 1 .. 2^22. The probe links nothing of
 * gpuboot's, so the digits are read here, bounded. */
static int parse_size(const char *s, size_t *ret)
{
	size_t v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (size_t)(*s - '0');
		if (v > (1ul << 22))
			return -1;
	}
	if (v == 0)
		return -1;
	*ret = v;
	return 0;
}

/* On an NVSwitch system the fabric manager registers each GPU with the
 * fabric after it starts (NVML's fabric state: not started, in progress,
 * completed), and until then cuInit fails with error 802: wait while any
 * GPU is not started or in progress, at most max_ms, polling every 100 ms.
 * Returns the milliseconds waited. */
static double fabric_wait(unsigned count, int max_ms)
{
	double t0 = now_ms();
	if (!nv.fabric_info || max_ms <= 0)
		return 0;
	for (;;) {
		int pending = 0;
		for (unsigned i = 0; i < count; i++) {
			nvmlDevice_t d;
			gb_nvml_fabric_info fi;
			memset(&fi, 0, sizeof(fi));
			if (nv.handle(i, &d) == NVML_SUCCESS && nv.fabric_info(d, &fi) == NVML_SUCCESS &&
			    (fi.state == 1 || fi.state == 2))
				pending++;
		}
		if (!pending || now_ms() - t0 >= max_ms)
			return now_ms() - t0;
		usleep(100000);
	}
}

/* Load libcuda and cuInit; -1 with the reason in err. */
static int cuda_start(char *err, size_t errsz, double *ret_ms)
{
	double t;
	CUresult r;

	if (load_cuda(err, errsz) < 0)
		return -1;
	t = now_ms();
	r = cu.init(0);
	*ret_ms = now_ms() - t;
	if (r == CUDA_ERROR_SYSTEM_NOT_READY) {
		snprintf(err, errsz,
		         "cuInit: system not ready (CUDA error 802): on an NVSwitch system the fabric manager "
		         "is not running or not ready");
		return -1;
	}
	if (r != CUDA_SUCCESS) {
		snprintf(err, errsz, "cuInit: %s (CUDA error %d)", cu_err(r), r);
		return -1;
	}
	return 0;
}

struct active_times {
	double cuinit, cuinit_wait, contexts, workers, peers, teardown;
};

/* cuInit in a thread of its own, started before nvmlInit: it takes ~100
 * ms on the H200 (the driver initialises every GPU), the NVML facts ~30
 * ms, and neither waits for the other. */
static struct {
	pthread_t thread;
	int threaded, rc;
	double ms;
	char err[512];
} cboot;

static void *cuda_boot(void *arg)
{
	(void)arg;
	cboot.rc = cuda_start(cboot.err, sizeof(cboot.err), &cboot.ms);
	return NULL;
}

/* One hardware work queue per context: every worker uses one stream, and
 * the driver's default of 8 doubles what context creation and destruction
 * cost (serialised across GPUs): 100 -> 50 ms and 65 -> 28 ms per H200, the
 * figures unchanged. gpuboot removed the caller's CUDA_* variables; this one
 * is the probe's own. Set before any thread starts (setenv is not
 * thread-safe). */
static void cuda_boot_start(void)
{
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
	(void)threads_load(); /* without threads, the workers run one after another */
	cboot.threaded = thr_create && thr_create(&cboot.thread, NULL, cuda_boot, NULL) == 0;
}

/* cuInit's result: joined where it ran in its thread, else run here. */
static int cuda_boot_wait(char *err, size_t errsz, struct active_times *t)
{
	double t0 = now_ms();
	if (cboot.threaded)
		thr_join(cboot.thread, NULL);
	else
		cuda_boot(NULL);
	t->cuinit_wait = now_ms() - t0;
	t->cuinit = cboot.ms;
	if (cboot.rc < 0)
		snprintf(err, errsz, "%s", cboot.err);
	return cboot.rc;
}

/* "0,2,5": NVML indices, each below MAX_GPUS. */
static int parse_gpus(const char *s, struct options *o)
{
	unsigned v = 0;
	int digits = 0;

	o->narrowed = 1;
	for (;; s++) {
		if (*s >= '0' && *s <= '9') {
			v = v * 10 + (unsigned)(*s - '0');
			if (v >= MAX_GPUS)
				return -1;
			digits++;
		} else if ((*s == ',' || *s == '\0') && digits) {
			o->want[v] = 1;
			v = 0;
			digits = 0;
			if (!*s)
				return 0;
		} else {
			return -1;
		}
	}
}

static int parse_args(int argc, char **argv, struct options *o)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tier") && i + 1 < argc) {
			const char *t = argv[++i];
			if (!strcmp(t, "passive"))
				o->active = 0;
			else if (!strcmp(t, "active") || !strcmp(t, "full"))
				o->active = 1;
			else
				return -1;
		} else if (!strcmp(argv[i], "--fp64")) {
			o->fp64 = 1;
		} else if (!strcmp(argv[i], "--pattern-mib") && i + 1 < argc) {
			if (parse_size(argv[++i], &o->pattern_mib) < 0)
				return -1;
		} else if (!strcmp(argv[i], "--host-mib") && i + 1 < argc) {
			if (parse_size(argv[++i], &o->host_mib) < 0)
				return -1;
		} else if (!strcmp(argv[i], "--bw-mib") && i + 1 < argc) {
			if (parse_size(argv[++i], &o->bw_mib) < 0)
				return -1;
		} else if (!strcmp(argv[i], "--gpus") && i + 1 < argc) {
			if (parse_gpus(argv[++i], o) < 0)
				return -1;
		} else if (!strcmp(argv[i], "--fabric-wait-ms") && i + 1 < argc) {
			size_t v;
			if (parse_size(argv[++i], &v) < 0 || v > 600000)
				return -1;
			o->fabric_wait_ms = (int)v;
		} else if (!strcmp(argv[i], "--load-ms") && i + 1 < argc) {
			size_t v;
			if (parse_size(argv[++i], &v) < 0 || v > 10000)
				return -1;
			o->load_ms = (int)v;
		} else {
			return -1;
		}
	}
	return 0;
}

/* Match CUDA devices to NVML's by PCI address. */
static void match_cuda_devices(int cuda_count)
{
	for (unsigned i = 0; i < n_gpus; i++)
		gpus[i].cuda_index = -1;
	for (int c = 0; c < cuda_count; c++) {
		CUdevice d;
		int dom = 0, bus = 0, dev = 0;
		char id[32];
		if (cu.get(&d, c) != CUDA_SUCCESS)
			continue;
		cu.attribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
		cu.attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
		cu.attribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
		snprintf(id, sizeof(id), "%08x:%02x:%02x.0", (unsigned)dom, (unsigned)bus, (unsigned)dev);
		for (unsigned i = 0; i < n_gpus; i++)
			if (!strcasecmp(id, gpus[i].bus_id))
				gpus[i].cuda_index = c;
	}
}

/* One GPU's whole active tier, in its own thread: its context made current
 * here (the current context is per thread), its module, stream, buffers and
 * a pinned host buffer allocated by this worker (during the FP32 warm-up),
 * then every measurement. Nothing is shared with the other workers; main
 * reads the results after the join. */
static void *gpu_worker(void *arg)
{
	struct worker_arg *w = arg;
	struct gpu *g = w->g;
	const struct options *o = w->o;
	struct pinned pin = { g, NULL, (o->host_mib < o->bw_mib ? o->host_mib : o->bw_mib) << 20, 0, 0 };
	struct fma_run f32 = { .util = 1, .min_timed_ms = FMA_MIN_TIMED_MS, .fallback_ms = o->load_ms };
	struct fma_run f64 = { .fp64 = 1, .min_timed_ms = FMA_MIN_TIMED_MS, .fallback_ms = o->load_ms / 2.0 };
	double ms, t = now_ms();

	g->worker_start_ms = t - t_start;
	if (setup(g, o) < 0)
		goto out;
	g->ph_setup = now_ms() - t;
	if (pattern(g) < 0)
		goto out;
	t = now_ms();
	g->ph_pattern = g->fill_check_ms;
	if (timed(g, op_d2d, NULL, 3, &ms) == 0)
		g->d2d_gbps = 2.0 * g->bw_bytes / (ms / 1e3) / 1e9;
	if (!g->error[0] && timed(g, op_read, NULL, 3, &ms) == 0)
		g->read_gbps = (double)(g->buf_bytes & ~(size_t)15) / (ms / 1e3) / 1e9;
	g->ph_device_bw = now_ms() - t;
	t = now_ms();
	if (g->error[0] || fma_sliced(g, &f32, &pin) < 0)
		goto out;
	g->fp32_tflops = f32.tflops;
	g->fp32_timed_ms = f32.timed_ms;
	g->fp32_settle_ms = f32.settle_ms;
	g->fp32_timed_slices = f32.timed_slices;
	g->fp32_slices = f32.slices;
	g->fp32_slice_min = f32.slice_min;
	g->fp32_slice_max = f32.slice_max;
	if (o->fp64 && fma_sliced(g, &f64, NULL) < 0)
		goto out;
	g->fp64_tflops = f64.tflops;
	g->fp64_timed_ms = f64.timed_ms;
	g->ph_fma = now_ms() - t;
	if (!pin.host) {
		snprintf(g->error, sizeof(g->error), "cuMemHostAlloc of %zu MiB pinned memory failed", pin.bytes >> 20);
		goto out;
	}
	t = now_ms();
	(void)host_copies(g, pin.host, pin.bytes < g->bw_bytes ? pin.bytes : g->bw_bytes);
	g->ph_host_copies = now_ms() - t;
out:
	if (pin.host) {
		t = now_ms();
		cu.host_free(pin.host);
		g->ph_host_free = now_ms() - t;
	}
	g->worker_end_ms = now_ms() - t_start;
	return NULL;
}

/* Every selected GPU at once: one worker each. */
static void run_workers(const struct options *o)
{
	struct worker_arg wa[MAX_GPUS];
	void *args[MAX_GPUS];
	unsigned n = 0;

	for (unsigned i = 0; i < n_gpus; i++)
		if (gpus[i].selected && !gpus[i].error[0]) {
			wa[n].g = &gpus[i];
			wa[n].o = o;
			args[n] = &wa[n];
			n++;
		}
	run_all(gpu_worker, args, n);
}

/* How a and b reach each other: NVLink when a's links go to b, or both
 * GPUs have links up to NVSwitches; PCIe otherwise. */
static int nvlink_between(const struct gpu *a, const struct gpu *b)
{
	int a_sw = 0, b_sw = 0;
	for (unsigned l = 0; l < GB_NVML_NVLINK_MAX_LINKS; l++) {
		if (a->nvl_state[l] == 1 && a->nvl_remote[l][0] && !strcasecmp(a->nvl_remote[l], b->bus_id))
			return 1;
		a_sw |= a->nvl_state[l] == 1 && a->nvl_type[l] == GB_NVLINK_REMOTE_SWITCH;
		b_sw |= b->nvl_state[l] == 1 && b->nvl_type[l] == GB_NVLINK_REMOTE_SWITCH;
	}
	return a_sw && b_sw;
}

struct peer_result {
	unsigned src, dst, round;
	int can, nvlink;
	double gbps;
};

struct peer_lane {
	struct peer_result *r[MAX_GPUS * 2]; /* the directions this lane measures, in order */
	unsigned n;
};

/* Copy from src's device memory into dst's, timed on src's stream. */
static void peer_copy(struct peer_result *p)
{
	struct gpu *ga = &gpus[p->src], *gb = &gpus[p->dst];
	size_t bytes = ga->bw_bytes / 4 < gb->bw_bytes ? ga->bw_bytes / 4 : gb->bw_bytes;
	float ms = 0, best = 1e30f;

	cu.can_access_peer(&p->can, ga->cudev, gb->cudev);
	if (!p->can)
		return;
	cu.ctx_set(ga->ctx);
	(void)cu.enable_peer(gb->ctx, 0); /* already enabled (the other direction) is fine */
	for (int rep = 0; rep < 4; rep++) {
		if (cu.event_record(ga->e0, ga->stream) != CUDA_SUCCESS ||
		    cu.copy_peer(gb->buf2, gb->ctx, ga->buf, ga->ctx, bytes, ga->stream) != CUDA_SUCCESS ||
		    cu.event_record(ga->e1, ga->stream) != CUDA_SUCCESS || cu.event_sync(ga->e1) != CUDA_SUCCESS ||
		    cu.event_elapsed(&ms, ga->e0, ga->e1) != CUDA_SUCCESS)
			return;
		if (rep > 0 && ms < best)
			best = ms;
	}
	p->gbps = bytes / (best / 1e3) / 1e9;
}

static void *peer_lane_run(void *arg)
{
	struct peer_lane *l = arg;
	for (unsigned i = 0; i < l->n; i++)
		peer_copy(l->r[i]);
	return NULL;
}

/* The pairs in rounds (the circle method: in each round every GPU is in at
 * most one pair). Within a round the NVLink pairs run at once, each on its
 * own links; the PCIe pairs run one after another in one more lane, as
 * they may share a switch or the root complex. */
static unsigned peer_rounds(struct peer_result *res, unsigned cap)
{
	unsigned sel[MAX_GPUS + 1], m = 0, n = 0;

	for (unsigned i = 0; i < n_gpus; i++)
		if (gpus[i].selected && !gpus[i].error[0] && gpus[i].ctx)
			sel[m++] = i;
	if (m < 2 || !cu.can_access_peer || !cu.copy_peer || !cu.enable_peer)
		return 0;
	if (m % 2)
		sel[m++] = MAX_GPUS; /* the bye */
	for (unsigned r = 0; r + 1 < m; r++) {
		static struct peer_lane lanes[MAX_GPUS / 2 + 1];
		void *args[MAX_GPUS / 2 + 1];
		unsigned nl = 0, pcie = MAX_GPUS / 2;
		lanes[pcie].n = 0;
		for (unsigned k = 0; k < m / 2; k++) {
			/* position 0 stays, the others rotate by r */
			unsigned pa = k == 0 ? 0 : 1 + (k - 1 + r) % (m - 1), pb = 1 + (m - 2 - k + r) % (m - 1);
			unsigned a = sel[pa], b = sel[pb];
			struct peer_lane *l;
			if (a == MAX_GPUS || b == MAX_GPUS || n + 2 > cap)
				continue;
			l = nvlink_between(&gpus[a], &gpus[b]) ? &lanes[nl++] : &lanes[pcie];
			if (l != &lanes[pcie])
				l->n = 0;
			for (int d = 0; d < 2; d++) {
				struct peer_result *p = &res[n++];
				memset(p, 0, sizeof(*p));
				p->src = d ? b : a;
				p->dst = d ? a : b;
				p->round = r;
				p->nvlink = l != &lanes[pcie];
				l->r[l->n++] = p;
			}
		}
		for (unsigned i = 0; i < nl; i++)
			args[i] = &lanes[i];
		if (lanes[pcie].n)
			args[nl++] = &lanes[pcie];
		run_all(peer_lane_run, args, nl);
	}
	return n;
}

static void peers_json(const struct peer_result *res, unsigned n)
{
	jopen("peers", '[');
	for (unsigned i = 0; i < n; i++) {
		jopen(NULL, '{');
		jint("src", res[i].src);
		jint("dst", res[i].dst);
		jint("round", res[i].round);
		jstr("path", res[i].nvlink ? "nvlink" : "pcie");
		jbool("can_access", res[i].can);
		if (res[i].can && res[i].gbps > 0)
			jdbl("gbps", res[i].gbps);
		jclose('}');
	}
	jclose(']');
}

/* After the peers: each GPU's buffers, stream and context, one GPU after
 * another (the driver serialises context destruction anyway). */
static void teardown(void)
{
	for (unsigned i = 0; i < n_gpus; i++) {
		struct gpu *g = &gpus[i];
		if (!g->ctx)
			continue;
		cu.ctx_set(g->ctx);
		cu.mem_free(g->buf);
		cu.mem_free(g->buf2);
		if (g->stream)
			cu.stream_destroy(g->stream);
		cu.ctx_release(g->cudev);
	}
}

/* Every selected GPU's primary context, made here one after another before
 * the workers start: the driver serialises context creation, and created
 * from the workers at once the two took 210 and 370 ms on the H200 pair,
 * one after another 250 ms together. A failure is left to the worker's
 * setup, which retries and names it. */
static void contexts_up_front(void)
{
	for (unsigned i = 0; i < n_gpus; i++) {
		struct gpu *g = &gpus[i];
		if (g->selected && !g->error[0] && cu.get(&g->cudev, g->cuda_index) == CUDA_SUCCESS &&
		    cu.ctx_retain(&g->ctx, g->cudev) != CUDA_SUCCESS)
			g->ctx = NULL;
	}
}

/* The active tier: cuInit, the workers, the peers, and its JSON. -1 with
 * the reason in err when CUDA cannot start. */
static int active_tier(const struct options *o, struct active_times *t, char *err, size_t errsz)
{
	static struct peer_result peers[MAX_GPUS * (MAX_GPUS - 1)];
	int cuda_count = 0, cuda_version = 0;
	unsigned n_peers;
	double t0;

	if (cuda_boot_wait(err, errsz, t) < 0)
		return -1;
	cu.driver_version(&cuda_version);
	cu.count(&cuda_count);
	match_cuda_devices(cuda_count);
	for (unsigned i = 0; i < n_gpus; i++) {
		gpus[i].selected = !o->narrowed || o->want[i];
		if (gpus[i].selected && gpus[i].cuda_index < 0)
			snprintf(gpus[i].error, sizeof(gpus[i].error), "CUDA does not see this GPU");
	}
	t0 = now_ms();
	contexts_up_front();
	t->contexts = now_ms() - t0;
	t0 = now_ms();
	run_workers(o);
	t->workers = now_ms() - t0;
	t0 = now_ms();
	n_peers = peer_rounds(peers, sizeof(peers) / sizeof(peers[0]));
	t->peers = now_ms() - t0;

	jopen("cuda", '{');
	jint("driver_api_version", cuda_version);
	jint("device_count", cuda_count);
	jbool("threads", thr_create != NULL);
	jclose('}');
	jopen("active", '[');
	for (unsigned i = 0; i < n_gpus; i++) {
		if (!gpus[i].selected)
			continue;
		jopen(NULL, '{');
		jint("index", i);
		active_gpu_json(&gpus[i]);
		jclose('}');
	}
	jclose(']');
	peers_json(peers, n_peers);
	t0 = now_ms();
	teardown();
	t->teardown = now_ms() - t0;
	return 0;
}

static int nvml_failed(const char *err)
{
	jstr("error", err);
	jstr("stage", "nvml");
	jclose('}');
	fputc('\n', stdout);
	return 3;
}

int main(int argc, char **argv)
{
	struct options o = { .active = 0, .pattern_mib = 4096, .bw_mib = 1024, .host_mib = 256, .load_ms = 600 };
	struct active_times at = { 0 };
	char err[512] = "", drv[96] = "";
	double t_nvml, t_fabric = 0;
	unsigned count = 0;
	nvmlReturn_t nr;

	t_start = now_ms();
	if (parse_args(argc, argv, &o) < 0) {
		fprintf(stderr, "usage: gpuboot-probe [--tier passive|active] [--fp64] [--pattern-mib N] [--bw-mib N] "
		                "[--host-mib N] [--load-ms N] [--fabric-wait-ms N] [--gpus LIST]\n");
		return 2;
	}
	jopen(NULL, '{');
	jint("probe_version", PROBE_VERSION);
	jstr("tier", o.active ? "active" : "passive");
	if (load_nvml(err, sizeof(err)) < 0)
		return nvml_failed(err);
	if (o.active && !o.fabric_wait_ms)
		cuda_boot_start();
	nr = nv.init();
	t_nvml = now_ms() - t_start;
	if (nr != NVML_SUCCESS) {
		if (cboot.threaded) /* never exit with a thread inside libcuda */
			thr_join(cboot.thread, NULL);
		snprintf(err, sizeof(err), "nvmlInit failed: %s (NVML error %d); is the nvidia module loaded?",
		         nv.error_string(nr), nr);
		return nvml_failed(err);
	}
	nv.driver_version(drv, sizeof(drv));
	jstr("driver_version", drv);
	nv.count(&count);
	if (count > MAX_GPUS)
		count = MAX_GPUS;
	n_gpus = count;
	/* the fabric first, then CUDA (which fails until it is up) */
	t_fabric = fabric_wait(count, o.fabric_wait_ms);
	if (o.active && o.fabric_wait_ms)
		cuda_boot_start();
	jint("nvml_gpu_count", count);
	jopen("gpus", '[');
	for (unsigned i = 0; i < count; i++)
		passive_gpu(i, o.active);
	jclose(']');
	/* What the probe saw of CUDA's environment: gpuboot cleans it. */
	jstr("env_cuda_visible_devices", getenv("CUDA_VISIBLE_DEVICES"));
	if (o.narrowed) {
		jopen("gpus_requested", '[');
		for (unsigned i = 0; i < MAX_GPUS; i++)
			if (o.want[i])
				jint(NULL, i);
		jclose(']');
	}
	if (o.active && active_tier(&o, &at, err, sizeof(err)) < 0) {
		jopen("cuda", '{');
		jstr("error", err);
		jclose('}');
	}
	/* The GPUs' compute processes again, after the measurements (the probe's
	 * own contexts are gone by now, and its pid is left out anyway): one that
	 * started during them made them untrustworthy. -1: not known. */
	if (o.active && nv.processes) {
		jopen("compute_processes_after", '[');
		for (unsigned i = 0; i < count; i++)
			jint(NULL, other_processes(&gpus[i]));
		jclose(']');
	}
	jopen("timings_ms", '{');
	jdbl("nvml_init", t_nvml);
	jdbl("fabric_wait", t_fabric); /* the NVLink fabric coming up (--fabric-wait-ms) */
	jdbl("cu_init", at.cuinit);
	jdbl("cu_init_wait", at.cuinit_wait); /* what of cuInit the NVML facts did not hide */
	jdbl("workers", at.workers);
	jdbl("peers", at.peers);
	jdbl("contexts", at.contexts);
	jdbl("teardown", at.teardown);
	jdbl("total", now_ms() - t_start);
	jclose('}');
	jclose('}');
	fputc('\n', stdout);
	if (!o.active) {
		/* The passive tier leaves NVML's teardown (3.4 ms on the H200) to
		 * the process's end: the kernel closes its files. */
		fflush(stdout);
		_exit(ferror(stdout) ? 1 : 0);
	}
	nv.shutdown();
	return 0;
}
