/* SPDX-License-Identifier: MIT */
/* A fake libnvidia-ml.so.1: the ABI subset gpuboot-probe uses, answering
 * from the scenario in fake.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"

#include "probe/nvapi.h" /* the ABI the probe expects, declared once */

#define OK 0
#define NOT_SUPPORTED 3
#define INVALID 2
#define INSUFFICIENT 7

static unsigned idx(void *d)
{
	return (unsigned)((unsigned long)d - 1);
}

/* What the kernel logs while NVML opens the GPUs, in the scenarios where
 * that goes wrong (the lines a T4 and an H100 logged; docs/load.md). */
static void kernel_says(const char *line)
{
	const char *path = getenv("FAKE_NV_KMSG");
	FILE *f;
	if (!path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "3,1200,5000000,-;%s\n", line);
	fclose(f);
}

nvmlReturn_t nvmlInit_v2(void)
{
	if (fake_is("hang"))
		sleep(3600);
	if (fake_is("crash"))
		raise(SIGSEGV);
	if (fake_is("gsp-fail")) {
		kernel_says("NVRM: _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP");
		kernel_says("NVRM: GPU 0000:00:04.0: RmInitAdapter failed! (0x62:0x40:2020)");
		kernel_says("NVRM: GPU 0000:00:04.0: rm_init_adapter failed, device minor number 0");
	}
	if (fake_is("xid79"))
		kernel_says(
		    "NVRM: Xid (PCI:0000:00:04): 79, pid=1234, name=gpuboot-probe, GPU has fallen off the bus.");
	return OK;
}
nvmlReturn_t nvmlShutdown(void)
{
	return OK;
}
const char *nvmlErrorString(nvmlReturn_t r)
{
	return r == OK ? "Success" : "Unknown Error";
}
/* The version of the library as installed: the real libnvidia-ml.so.1 is a
 * link to libnvidia-ml.so.<version>, and NVML reports that version. */
static int installed_version(char *v, unsigned n)
{
	Dl_info info;
	char real[PATH_MAX];
	const char *base, *ver;
	if (!dladdr((void *)installed_version, &info) || !info.dli_fname || !realpath(info.dli_fname, real))
		return -1;
	base = strrchr(real, '/');
	base = base ? base + 1 : real;
	if (strncmp(base, "libnvidia-ml.so.", 16) != 0)
		return -1;
	ver = base + 16;
	if (!strchr(ver, '.'))
		return -1; /* libnvidia-ml.so.1 itself: the build tree's copy */
	snprintf(v, n, "%s", ver);
	return 0;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned n)
{
	const char *d = getenv("FAKE_NV_DRIVER");
	if (fake_is("mismatch"))
		snprintf(v, n, "535.161.08");
	else if (d)
		snprintf(v, n, "%s", d);
	else if (installed_version(v, n) < 0)
		snprintf(v, n, "535.183.01");
	return OK;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
	*n = fake_is("gsp-fail") ? 0 : fake_gpus(); /* nvidia-smi: "No devices were found" */
	return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
	if (i >= fake_gpus())
		return INVALID;
	*d = (void *)(unsigned long)(i + 1);
	return OK;
}
nvmlReturn_t nvmlDeviceGetName(void *d, char *n, unsigned len)
{
	(void)d;
	snprintf(n, len, "NVIDIA H100 80GB HBM3");
	return OK;
}
nvmlReturn_t nvmlDeviceGetUUID(void *d, char *n, unsigned len)
{
	snprintf(n, len, "GPU-fake0000-0000-0000-0000-00000000000%u", idx(d));
	return OK;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *d, nvmlPciInfo_t *p)
{
	memset(p, 0, sizeof(*p));
	p->bus = fake_bus[idx(d)];
	p->pciDeviceId = 0x233010de;
	snprintf(p->busId, sizeof(p->busId), "00000000:%02x:00.0", fake_bus[idx(d)]);
	return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(void *d, nvmlMemory_t *m)
{
	(void)d;
	m->total = 85520809984ull;
	m->used = 0;
	m->free = m->total;
	return OK;
}
nvmlReturn_t nvmlDeviceGetEccMode(void *d, int *cur, int *pend)
{
	(void)d;
	*cur = *pend = 1;
	return OK;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n)
{
	(void)type;
	(void)counter;
	*n = fake_is("ecc") && idx(d) == 1 ? 2 : 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(void *d, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure)
{
	int p = fake_is("remap-pending") && idx(d) == 2;
	*corr = 0;
	*unc = p ? 1 : 0;
	*pending = p;
	*failure = 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(void *d, int *p)
{
	(void)d;
	(void)p;
	return NOT_SUPPORTED; /* Hopper: remapped rows instead */
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
	(void)d;
	*r = 0x1; /* GPU idle */
	return OK;
}
nvmlReturn_t nvmlDeviceGetPersistenceMode(void *d, int *m)
{
	(void)d;
	*m = 1;
	return OK;
}
/* the H200 capture's "Virtualization Mode : Pass-Through" (a KVM guest) */
nvmlReturn_t nvmlDeviceGetVirtualizationMode(void *d, unsigned *m)
{
	(void)d;
	*m = 1;
	return OK;
}
nvmlReturn_t nvmlDeviceGetComputeMode(void *d, int *m)
{
	(void)d;
	*m = 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetMigMode(void *d, unsigned *cur, unsigned *pend)
{
	(void)d;
	*cur = *pend = 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(void *d, unsigned *v)
{
	*v = (unsigned)fake_link_gen(idx(d));
	return OK;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(void *d, unsigned *v)
{
	*v = (unsigned)fake_link_width(idx(d));
	return OK;
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(void *d, unsigned *v)
{
	(void)d;
	*v = 5;
	return OK;
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(void *d, unsigned *v)
{
	(void)d;
	*v = 16;
	return OK;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(void *d, int type, unsigned *mhz)
{
	(void)d;
	*mhz = type == 2 ? FAKE_MEM_MHZ : FAKE_SM_MHZ;
	return OK;
}
nvmlReturn_t nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz)
{
	return nvmlDeviceGetMaxClockInfo(d, type, mhz);
}
nvmlReturn_t nvmlDeviceGetMemoryBusWidth(void *d, unsigned *w)
{
	(void)d;
	*w = FAKE_BUS_WIDTH;
	return OK;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(void *d, nvmlUtilization_t *u)
{
	u->gpu = fake_is("busy") && idx(d) == 0 ? 55 : 100;
	u->memory = 20;
	return OK;
}
/* The GPU utilisation samples, as NVML keeps them: one every 200 ms of the
 * realtime clock, each the busy share since the one before (the busy
 * scenario's GPU 0 at 55%, the others 99%), the newest 20 of them, those
 * after lastSeen; none yet: NVML_ERROR_NOT_FOUND. */
nvmlReturn_t nvmlDeviceGetSamples(void *d, int type, unsigned long long last, int *vtype, unsigned *count,
                                  gb_nvml_sample *out)
{
	struct timespec t;
	unsigned long long now, ts;
	unsigned n = 0;

	if (type != GB_NVML_GPU_UTILIZATION_SAMPLES || !count)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	clock_gettime(CLOCK_REALTIME, &t);
	now = (unsigned long long)t.tv_sec * 1000000ull + (unsigned long long)t.tv_nsec / 1000ull;
	ts = now - now % 200000ull - 19 * 200000ull;
	for (unsigned i = 0; i < 20; i++, ts += 200000ull) {
		if (ts <= last || n >= *count)
			continue;
		if (out) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].ts = ts;
			out[n].v.ui = fake_is("busy") && idx(d) == 0 ? 55 : 99;
		}
		n++;
	}
	*vtype = 1; /* NVML_VALUE_TYPE_UNSIGNED_INT */
	*count = n;
	return n ? OK : 6; /* NVML_ERROR_NOT_FOUND */
}

/* busy: GPU 0 has another process throughout; busy-late: one starts on
 * GPU 0 after its first query (during the measurements); memory-held and
 * memory-full: one that only holds memory on GPU 0 (10 GiB, all but 2 GiB). */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *count, void *infos)
{
	static unsigned queried[8];
	unsigned cap = *count, i = idx(d);
	unsigned n =
	    (fake_is("busy") || fake_memory_held() || (fake_is("busy-late") && i < 8 && queried[i])) && i == 0 ? 1 : 0;
	if (i < 8)
		queried[i]++;
	*count = n;
	if (n > cap || !infos)
		return n ? INSUFFICIENT : OK;
	if (n) {
		struct {
			unsigned pid;
			unsigned long long mem;
			unsigned gi, ci;
			unsigned long long cc;
		} *p = infos;
		p[0].pid = 424242;
		p[0].mem = fake_memory_held() ? fake_memory_held() : 100ull << 30;
	}
	return OK;
}

/* Per-process samples: the busy processes compute, the memory holders not. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(void *d, void *samples, unsigned *count, unsigned long long since)
{
	struct {
		unsigned pid;
		unsigned long long ts;
		unsigned sm, mem, enc, dec;
	} *s = samples;
	(void)since;
	if (idx(d) != 0 || !(fake_is("busy") || fake_is("busy-late") || fake_memory_held()))
		return 6; /* NVML_ERROR_NOT_FOUND: no samples */
	if (*count < 1)
		return INSUFFICIENT;
	*count = 1;
	s[0].pid = 424242;
	s[0].ts = 1;
	s[0].sm = fake_memory_held() ? 1 : 90; /* an idle holder reads 1 on the H200 */
	s[0].mem = s[0].enc = s[0].dec = 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetTemperature(void *d, int s, unsigned *t)
{
	(void)d;
	(void)s;
	*t = 38;
	return OK;
}
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(void *d, gb_nvml_fabric_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	/* fabric-late: the fabric manager registers GPU 4 only ~0.3 s after the
	 * first question (as after its start) */
	static double first;
	struct timespec ts;
	double now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	if (!first)
		first = now;
	fi->state =
	    (fake_is("fabric-incomplete") || (fake_is("fabric-late") && now - first < 0.3)) && idx(d) == 4 ? 2 : 3;
	return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(void *d, unsigned link, int *active)
{
	if (link >= 18)
		return INVALID;
	*active = fake_link_up(idx(d), link);
	return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkVersion(void *d, unsigned link, unsigned *v)
{
	(void)d;
	if (link >= 18)
		return INVALID;
	/* bridged: 7 (NVLink 5.0), as some drivers report on Hopper; the compute capability decides */
	*v = fake_bridged() ? 7 : 6;
	return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void *d, unsigned link, nvmlPciInfo_t *p)
{
	unsigned i = idx(d);
	if (link >= 18 || !fake_link_up(i, link))
		return INVALID;
	memset(p, 0, sizeof(*p));
	if (fake_bridged())
		snprintf(p->busId, sizeof(p->busId), "00000000:%02x:00.0", fake_bus[i ^ 1u]);
	else
		snprintf(p->busId, sizeof(p->busId), "FFFFFFFF:FF:FF.0"); /* an NVSwitch, as a VM sees it */
	return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(void *d, unsigned link, int *type)
{
	if (link >= 18 || !fake_link_up(idx(d), link))
		return INVALID;
	*type = fake_bridged() ? 0 : 2;
	return OK;
}
