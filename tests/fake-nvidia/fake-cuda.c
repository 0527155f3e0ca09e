/* SPDX-License-Identifier: MIT */
/* A fake libcuda.so.1: contexts, modules, memory and kernels that take
 * virtual time according to the scenario, so the probe's measurements come
 * out as a healthy (or sick) H100 would give them. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"

#include "probe/nvapi.h" /* CUresult, CUdeviceptr: the ABI the probe expects */

struct ctx {
	unsigned dev;
	double vtime_ms;
	double real_until; /* the FP32 kernel "runs" in real time, for NVML sampling */
};
struct ev {
	struct ctx *ctx;
	double t;
};
struct func {
	const char *name;
};
struct alloc {
	CUdeviceptr addr;
	void *p;
	size_t n;
};

static struct ctx ctxs[8];
static __thread struct ctx *cur; /* the current context is per thread, as in CUDA */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct func funcs[] = { { "gb_fill" }, { "gb_check" }, { "gb_read" }, { "gb_fma32" }, { "gb_fma64" } };
static struct alloc allocs[256];
static size_t n_allocs;
static CUdeviceptr next_addr = 0x700000000000ull;

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double peak_mem(void)
{
	return FAKE_MEM_MHZ * 1e6 * 2 * FAKE_BUS_WIDTH / 8; /* bytes/s */
}

static double peak_pcie(unsigned i)
{
	int g = fake_link_gen(i), w = fake_link_width(i);
	double gt = g == 3 ? 8.0 : g == 4 ? 16.0 : 32.0;
	return gt * w * 128.0 / 130.0 / 8.0 * 1e9;
}

static void spend(double bytes_or_flops, double rate)
{
	if (cur)
		cur->vtime_ms += bytes_or_flops / rate * 1e3;
}

/* FAKE_NV_ENV_LOG: what the probe set for the driver, as cuInit saw it. */
CUresult cuInit(unsigned f)
{
	const char *log = getenv("FAKE_NV_ENV_LOG"), *v = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	FILE *fp;
	(void)f;
	if (log && (fp = fopen(log, "a"))) {
		fprintf(fp, "CUDA_DEVICE_MAX_CONNECTIONS=%s\n", v ? v : "(unset)");
		fclose(fp);
	}
	return fake_is("fabric") ? 802 : 0;
}
CUresult cuDriverGetVersion(int *v)
{
	*v = 12020;
	return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s)
{
	*s = r == 802 ? "system not yet initialized" : r == 221 ? "PTX JIT compiler library not found" : "fake error";
	return 0;
}
/* CUDA_VISIBLE_DEVICES as a list of indices: the devices CUDA shows, in that order. */
static unsigned visible(int *map)
{
	const char *v = getenv("CUDA_VISIBLE_DEVICES");
	unsigned n = 0;
	if (!v) {
		for (unsigned i = 0; i < fake_gpus(); i++)
			map[n++] = (int)i;
		return n;
	}
	while (*v && n < 8) {
		char *end;
		unsigned long i = strtoul(v, &end, 10);
		if (end == v || i >= fake_gpus())
			break; /* CUDA stops at the first invalid entry */
		map[n++] = (int)i;
		v = *end == ',' ? end + 1 : end;
	}
	return n;
}
CUresult cuDeviceGetCount(int *n)
{
	int map[8];
	*n = (int)visible(map);
	return 0;
}
CUresult cuDeviceGet(int *d, int i)
{
	int map[8];
	if (i < 0 || (unsigned)i >= visible(map))
		return 101; /* CUDA_ERROR_INVALID_DEVICE */
	*d = map[i];
	return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	switch (attr) {
	case 13: *v = FAKE_SM_MHZ * 1000; break;
	case 16: *v = FAKE_SMS; break;
	case 33: *v = (int)fake_bus[dev]; break;
	case 34: *v = 0; break;
	case 36: *v = FAKE_MEM_MHZ * 1000; break;
	case 37: *v = FAKE_BUS_WIDTH; break;
	case 50: *v = 0; break;
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	default: *v = 0;
	}
	return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int dev)
{
	ctxs[dev].dev = (unsigned)dev;
	*c = &ctxs[dev];
	return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev)
{
	(void)dev;
	return 0;
}
CUresult cuCtxSetCurrent(void *c)
{
	cur = c;
	return 0;
}
CUresult cuCtxSynchronize(void)
{
	return 0;
}
CUresult cuModuleLoadData(void **m, const void *image)
{
	if (fake_is("no-jit"))
		return 221;
	if (!strstr((const char *)image, ".version") || !strstr((const char *)image, ".entry gb_fma32"))
		return 218; /* CUDA_ERROR_INVALID_PTX */
	*m = (void *)funcs;
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name)
{
	(void)m;
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (!strcmp(funcs[i].name, name)) {
			*f = &funcs[i];
			return 0;
		}
	return 500; /* CUDA_ERROR_NOT_FOUND */
}

static struct alloc *find(CUdeviceptr a)
{
	struct alloc *r = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_allocs && !r; i++)
		if (allocs[i].addr == a)
			r = &allocs[i];
	pthread_mutex_unlock(&lock);
	return r;
}

/* FAKE_NV_LAUNCH_MS: the launch takes real time, recorded in FAKE_NV_TRACE. */
static void trace_launch(unsigned dev)
{
	const char *ms = getenv("FAKE_NV_LAUNCH_MS"), *path = getenv("FAKE_NV_TRACE");
	double t0 = now_ms();
	char line[96];
	int fd, n;
	if (!ms)
		return;
	usleep((useconds_t)(strtoul(ms, NULL, 10) * 1000));
	if (!path || (fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return;
	n = snprintf(line, sizeof(line), "%u %.3f %.3f\n", dev, t0, now_ms());
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

CUresult cuLaunchKernel(void *fp, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sh, void *stream, void **params, void **extra)
{
	struct func *f = fp;
	unsigned i = cur ? cur->dev : 0;
	double speed = fake_speed(i);
	(void)gy;
	(void)gz;
	(void)by;
	(void)bz;
	(void)sh;
	(void)stream;
	(void)extra;
	trace_launch(i);
	if (!strcmp(f->name, "gb_read")) {
		spend(*(unsigned long long *)params[1] * 16.0, 0.93 * speed * peak_mem());
	} else if (!strcmp(f->name, "gb_fill")) {
		spend(*(unsigned long long *)params[1] * 4.0, 0.9 * speed * peak_mem());
	} else if (!strcmp(f->name, "gb_check")) {
		struct alloc *a = find(*(CUdeviceptr *)params[3]);
		spend(*(unsigned long long *)params[1] * 4.0, 0.9 * speed * peak_mem());
		if (a && fake_is("bad-memory") && i == 5)
			((unsigned *)a->p)[0] += 17;
	} else if (!strcmp(f->name, "gb_fma32") || !strcmp(f->name, "gb_fma64")) {
		double flops = (double)gx * bx * *(unsigned *)params[1] * 256.0;
		double peak = FAKE_SMS * (f->name[6] == '3' ? 128.0 : 64.0) * 2 * FAKE_SM_MHZ * 1e6;
		spend(flops, 0.96 * speed * peak);
		if (cur)
			cur->real_until = now_ms() + 60;
	}
	return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	pthread_mutex_lock(&lock);
	if (n_allocs == sizeof(allocs) / sizeof(allocs[0])) {
		pthread_mutex_unlock(&lock);
		return 2;
	}
	allocs[n_allocs].addr = next_addr;
	allocs[n_allocs].n = n;
	allocs[n_allocs].p = n <= (1u << 20) ? calloc(1, n) : NULL;
	*p = next_addr;
	next_addr += (n + 0xfffff) & ~0xfffffull;
	n_allocs++;
	pthread_mutex_unlock(&lock);
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p)
{
	(void)p;
	return 0;
}
CUresult cuMemGetInfo_v2(size_t *f, size_t *t)
{
	*t = 85520809984ull;
	*f = *t - (1u << 30);
	if (fake_memory_held() && (cur ? cur->dev : 0) == 0) /* another process holds it */
		*f = *t - fake_memory_held();
	return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n)
{
	struct alloc *a = find(p);
	if (a && a->p)
		for (size_t i = 0; i < n && i * 4 < a->n; i++)
			((unsigned *)a->p)[i] = v;
	return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned f)
{
	(void)f;
	*p = malloc(n);
	return *p ? 0 : 2;
}
CUresult cuMemFreeHost(void *p)
{
	free(p);
	return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st)
{
	(void)d;
	(void)s;
	(void)st;
	spend(2.0 * n, 0.85 * fake_speed(cur ? cur->dev : 0) * peak_mem());
	return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *st)
{
	(void)d;
	(void)h;
	(void)st;
	spend((double)n, 0.88 * fake_speed(cur ? cur->dev : 0) * peak_pcie(cur ? cur->dev : 0));
	return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr s, size_t n, void *st)
{
	(void)h;
	(void)s;
	(void)st;
	spend((double)n, 0.88 * fake_speed(cur ? cur->dev : 0) * peak_pcie(cur ? cur->dev : 0));
	return 0;
}
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr s, size_t n)
{
	struct alloc *a = find(s);
	if (a && a->p)
		memcpy(h, a->p, n < a->n ? n : a->n);
	else
		memset(h, 0, n);
	return 0;
}
/* NVLink pairs: the links up x 25 GB/s x 0.87 (what the H200s reached);
 * PCIe pairs: 0.8 x the narrower link's peak. */
CUresult cuMemcpyPeerAsync(CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t n, void *st)
{
	unsigned a = ((struct ctx *)sc)->dev, b = ((struct ctx *)dc)->dev, links = fake_nvlinks_between(a, b);
	double pcie = peak_pcie(a) < peak_pcie(b) ? peak_pcie(a) : peak_pcie(b);
	(void)d;
	(void)s;
	(void)st;
	spend((double)n, links ? links * 25e9 * 0.87 : 0.8 * pcie);
	return 0;
}
CUresult cuDeviceCanAccessPeer(int *c, int a, int b)
{
	(void)a;
	(void)b;
	*c = 1;
	return 0;
}
CUresult cuCtxEnablePeerAccess(void *c, unsigned f)
{
	(void)c;
	(void)f;
	return 0;
}
CUresult cuStreamCreate(void **s, unsigned f)
{
	(void)f;
	*s = calloc(1, 16);
	return *s ? 0 : 2;
}
CUresult cuStreamDestroy_v2(void *s)
{
	free(s);
	return 0;
}
CUresult cuStreamSynchronize(void *s)
{
	(void)s;
	return 0;
}
CUresult cuEventCreate(void **e, unsigned f)
{
	(void)f;
	*e = calloc(1, sizeof(struct ev));
	return *e ? 0 : 2;
}
CUresult cuEventDestroy_v2(void *e)
{
	free(e);
	return 0;
}
CUresult cuEventRecord(void *e, void *st)
{
	struct ev *x = e;
	(void)st;
	x->ctx = cur;
	x->t = cur ? cur->vtime_ms : 0;
	return 0;
}
CUresult cuEventSynchronize(void *e)
{
	(void)e;
	return 0;
}
CUresult cuEventQuery(void *e)
{
	struct ev *x = e;
	return x->ctx && now_ms() < x->ctx->real_until ? 600 : 0;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b)
{
	*ms = (float)(((struct ev *)b)->t - ((struct ev *)a)->t);
	if (*ms <= 0)
		*ms = 0.001f;
	return 0;
}
