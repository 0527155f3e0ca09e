/* SPDX-License-Identifier: MIT */
/* The verification stage: gather the checks, each with its value, its
 * threshold and where that came from, and one line of hint on failure. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/test-knob.h"
#include "shared/root.h"
#include "shared/util.h"
#include "verify.h"

#define GB_NVLINK_MAX_PEERS 8

const char *gb_check_state_to_string(enum gb_check_state s)
{
	switch (s) {
	case GB_CHECK_PASS: return "pass";
	case GB_CHECK_FAIL: return "fail";
	case GB_CHECK_SKIP: return "skip";
	case GB_CHECK_INFO: return "info";
	}
	return "?";
}

void gb_verify_result_done(struct gb_verify_result *r)
{
	free(r->checks);
	json_object_put(r->probe);
	memset(r, 0, sizeof(*r));
}

struct gb_check *gb_verify_add(struct gb_verify_result *r, const char *name, const char *subject)
{
	struct gb_check *c;
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		struct gb_check *nv =
		    nc > r->cap && nc <= SIZE_MAX / sizeof(*nv) ? realloc(r->checks, nc * sizeof(*nv)) : NULL;
		if (!nv) {
			/* It might have been a failure: count it as one, and let gb_verify say so. */
			r->dropped++;
			r->failed++;
			return NULL;
		}
		r->checks = nv;
		r->cap = nc;
	}
	c = &r->checks[r->n++];
	memset(c, 0, sizeof(*c));
	gb_strscpy(c->name, sizeof(c->name), name);
	gb_strscpy(c->subject, sizeof(c->subject), subject);
	c->state = GB_CHECK_INFO;
	return c;
}

_printf_(2, 3) static void set_hint(struct gb_check *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->hint, sizeof(c->hint), fmt, ap);
	va_end(ap);
}

_printf_(2, 3) static void set_text(struct gb_check *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->text, sizeof(c->text), fmt, ap);
	va_end(ap);
}

/* A numeric check against a minimum (op ">=") or exact value ("=="). */
static struct gb_check *num(struct gb_verify_result *r, const char *name, const char *subject, double value,
                            const char *op, double threshold, const char *unit, const char *source)
{
	struct gb_check *c = gb_verify_add(r, name, subject);
	bool ok;
	if (!c)
		return NULL;
	c->has_value = c->has_threshold = true;
	c->value = value;
	c->threshold = threshold;
	gb_strscpy(c->op, sizeof(c->op), op);
	gb_strscpy(c->unit, sizeof(c->unit), unit ? unit : "");
	gb_strscpy(c->source, sizeof(c->source), source ? source : "");
	ok = streq(op, ">=") ? value >= threshold : streq(op, "<=") ? value <= threshold : value == threshold;
	c->state = ok ? GB_CHECK_PASS : GB_CHECK_FAIL;
	return c;
}

static struct gb_check *flag(struct gb_verify_result *r, const char *name, const char *subject, bool ok,
                             const char *text, const char *source)
{
	struct gb_check *c = gb_verify_add(r, name, subject);
	if (!c)
		return NULL;
	gb_strscpy(c->text, sizeof(c->text), text);
	gb_strscpy(c->source, sizeof(c->source), source ? source : "");
	c->state = ok ? GB_CHECK_PASS : GB_CHECK_FAIL;
	return c;
}

static bool skipped(const struct gb_verify_opts *o, const char *name)
{
	for (char *const *s = o->skip; s && *s; s++) {
		size_t n = strlen(*s);
		if (strncmp(name, *s, n) == 0 && (name[n] == '\0' || name[n] == '.'))
			return true;
	}
	return false;
}

/* XIDs the driver logged since boot: /dev/kmsg (root only) under the root. */
/* A GPU that did not initialise (its firmware, GSP, did not boot): NVRM's
 * line, kept for the hint of the GPU count. */
static bool gpu_init_line(const char *rec, char *init, size_t n)
{
	const char *x = strstr(rec, "NVRM:");
	if (!x || (!strstr(x, "RmInitAdapter failed") && !strstr(x, "_kgspBootGspRm") && !strstr(x, "GSP Timeout") &&
	           !strstr(x, "need firmware to initialize GSP")))
		return false;
	if (!init[0] || strstr(x, "RmInitAdapter failed")) {
		snprintf(init, n, "%.150s", x);
		init[strcspn(init, "\n")] = '\0';
	}
	return true;
}

/* "NVRM: Xid (PCI:0000:1b:00): 79, pid=..., GPU has fallen off the bus." */
static int xid_line(const char *line, unsigned *total, unsigned *bad, char *last, size_t lastn)
{
	static const unsigned critical[] = { 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 };
	const char *x = strstr(line, "NVRM: Xid"), *colon;
	uint32_t code = 0;
	char num_s[8] = "";

	if (!x)
		return 0;
	(*total)++;
	colon = strstr(x, "): ");
	if (colon) {
		size_t k = strspn(colon + 3, "0123456789");
		if (k > 0 && k < sizeof(num_s)) {
			memcpy(num_s, colon + 3, k);
			num_s[k] = '\0';
			(void)gb_safe_atou32(num_s, 10, &code);
		}
	}
	for (size_t j = 0; j < ARRAY_SIZE(critical); j++)
		if (code == critical[j]) {
			(*bad)++;
			snprintf(last, lastn, "%.150s", x);
		}
	return 0;
}

static void check_xids(struct gb_ctx *ctx, struct gb_verify_result *r, char *init, size_t init_n)
{
	int fd = gb_root_openat(ctx->root, "dev/kmsg", O_RDONLY | O_NONBLOCK);
	char rec[8192], last[160] = "";
	unsigned total = 0, bad = 0;
	struct gb_check *c;

	if (fd < 0) {
		c = gb_verify_add(r, "driver.xid", "system");
		if (c) {
			c->state = GB_CHECK_SKIP;
			set_text(c, "kernel log not readable (%s)", strerror(-fd));
		}
		return;
	}
	for (int i = 0; i < 100000; i++) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue; /* overwritten records */
		if (n <= 0)
			break;
		rec[n] = '\0';
		/* /dev/kmsg gives one record a read; a file (a capture) gives lines */
		for (char *line = rec, *nl; line && *line; line = nl) {
			nl = strchr(line, '\n');
			if (nl)
				*nl++ = '\0';
			if (gpu_init_line(line, init, init_n))
				continue;
			if (xid_line(line, &total, &bad, last, sizeof(last)) < 0)
				break;
		}
	}
	close(fd);
	c = num(r, "driver.xid_critical", "system", bad, "<=", 0, "events",
	        "critical XIDs (48, 63, 64, 74, 79, 92, 94, 95, 119, 120) in the kernel log since boot");
	if (c) {
		set_text(c, "%u XID(s), %u critical%s%s", total, bad, last[0] ? "; last: " : "", last);
		if (bad)
			set_hint(
			    c,
			    "the GPU reported critical errors (%s); drain the node and check the GPU with the vendor",
			    last);
	}
}

static void check_device_nodes(struct gb_ctx *ctx, struct gb_verify_result *r, unsigned n_gpus, bool active)
{
	char missing[256] = "";
	size_t o = 0;
	const char *fixed[] = { "dev/nvidiactl", active ? "dev/nvidia-uvm" : NULL };
	struct gb_check *c;

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (fixed[i] && !gb_root_lexists(ctx->root, fixed[i]) && o < sizeof(missing))
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, "%s/%s", o ? ", " : "", fixed[i]);
	for (unsigned i = 0; i < n_gpus && o < sizeof(missing); i++) {
		char p[32];
		snprintf(p, sizeof(p), "dev/nvidia%u", i);
		if (!gb_root_lexists(ctx->root, p))
			o += (size_t)snprintf(missing + o, sizeof(missing) - o, "%s/%s", o ? ", " : "", p);
	}
	c = flag(r, "driver.device_nodes", "system", o == 0, o ? missing : "present",
	         "/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidiaN per GPU");
	if (c && o)
		set_hint(c,
		         "device nodes missing (%s): load nvidia_uvm, or run nvidia-modprobe -u -c=0 (gpuboot --repair "
		         "does both)",
		         missing);
}

static void gpu_subject(char *buf, size_t n, unsigned i, const char *bus)
{
	snprintf(buf, n, "gpu%u %s", i, bus ? bus : "");
}

/* What a GPU's passive facts say that nothing gates on: how it is
 * virtualised (NVML), its persistence mode. */
static void passive_info(struct gb_verify_result *r, const struct gb_facts *f, const char *s, json_object *g)
{
	const char *vm = gb_json_get_str(g, "virtualization_mode");
	struct gb_check *c;

	if (vm && (c = gb_verify_add(r, "gpu.virtualization", s))) {
		if (streq(vm, "pass-through"))
			set_text(c, "pass-through (NVML): the whole GPU is given to this virtual machine%s%s%s",
			         f->cloud.hypervisor ? ", hypervisor " : "",
			         f->cloud.hypervisor ? f->cloud.hypervisor : "",
			         f->cloud.hypervisor ? " (detect)" : "");
		else
			set_text(c, "%s (NVML)", streq(vm, "none") ? "bare metal" : vm);
	}
	if (gb_json_get(g, "persistence_mode") && (c = gb_verify_add(r, "gpu.persistence_mode", s)))
		set_text(c, "%s", gb_json_get_bool(g, "persistence_mode", false) ? "on" : "off");
}

static void passive_gpu(const struct gb_verify_opts *o, struct gb_verify_result *r, json_object *g, unsigned i,
                        const struct gb_facts *f)
{
	char s[48];
	double v;
	json_object *ecc = gb_json_get(g, "ecc"), *rr = gb_json_get(g, "remapped_rows"),
	            *rp = gb_json_get(g, "retired_pages"), *pcie = gb_json_get(g, "pcie");
	struct gb_check *c;

	gpu_subject(s, sizeof(s), i, gb_json_get_str(g, "pci_bus_id"));
	c = gb_verify_add(r, "gpu.identity", s);
	if (c) {
		set_text(c, "%s %s", gb_json_get_str(g, "name") ? gb_json_get_str(g, "name") : "?",
		         gb_json_get_str(g, "uuid") ? gb_json_get_str(g, "uuid") : "");
		c->state = GB_CHECK_INFO;
	}
	if (gb_json_get_num(g, "memory_total_bytes", &v) && o->min_gpu_memory_gib > 0) {
		c = num(r, "gpu.memory", s, v / (1024.0 * 1024 * 1024), ">=", o->min_gpu_memory_gib, "GiB",
		        "profile: min_gpu_memory_gib");
		if (c && c->state == GB_CHECK_FAIL)
			set_hint(
			    c,
			    "%.1f GiB is less than the profile needs (%.0f GiB): use a larger GPU or another profile",
			    c->value, c->threshold);
	}
	if (gb_json_get_bool(ecc, "supported", false)) {
		bool on = gb_json_get_bool(ecc, "enabled", false);
		if (o->ecc_required) {
			c = flag(r, "ecc.enabled", s, on, on ? "on" : "off", "profile: ecc_required");
			if (c && !on)
				set_hint(c, "ECC is off and the profile requires it: nvidia-smi -e 1, then reboot");
		}
		if (gb_json_get_num(ecc, "volatile_uncorrected", &v)) {
			c = num(r, "ecc.uncorrected_errors", s, v, "<=", 0, "errors",
			        "volatile uncorrected ECC errors since the driver loaded");
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(c, "uncorrectable memory errors: the data on this GPU cannot be trusted; "
				            "drain it and reset, replace if they recur");
		}
	} else if (o->ecc_required) {
		c = flag(r, "ecc.enabled", s, false, "not supported", "profile: ecc_required");
		if (c)
			set_hint(c, "this GPU has no ECC and the profile requires it: use a data-center GPU");
	}
	if (gb_json_get_bool(rr, "supported", false)) {
		bool pend = gb_json_get_bool(rr, "pending", false), fail = gb_json_get_bool(rr, "failure", false);
		c = flag(r, "memory.remapped_rows", s, !pend && !fail,
		         pend   ? "remap pending"
		         : fail ? "remap failed"
		                : "none pending",
		         "NVML remapped rows: pending or failed remaps");
		if (c && (pend || fail))
			set_hint(c, "%s",
			         pend ? "a row remap is pending: reset the GPU (or reboot) to apply it before use"
			              : "row remapping failed: the GPU's memory is out of spare rows; replace the GPU");
	} else if (gb_json_get_bool(rp, "supported", false)) {
		bool pend = gb_json_get_bool(rp, "pending", false);
		c = flag(r, "memory.retired_pages", s, !pend, pend ? "retirement pending" : "none pending",
		         "NVML retired pages pending");
		if (c && pend)
			set_hint(c, "a page retirement is pending: reboot to apply it");
	}
	if (gb_json_get_num(g, "clock_event_reasons", &v)) {
		unsigned long long ev = (unsigned long long)v;
		unsigned long long bad = ev & (0x8ull | 0x40ull | 0x80ull);
		c = flag(r, "clocks.slowdown", s, bad == 0, bad ? "hardware slowdown active" : "no hardware slowdown",
		         "NVML clock event reasons: HW slowdown, HW thermal, power brake");
		if (c) {
			set_text(c, "reasons 0x%llx%s", ev, bad ? " (hardware slowdown)" : "");
			if (bad)
				set_hint(c, "the GPU is throttled by hardware (thermal or power brake): check cooling "
				            "and power delivery");
		}
	}
	{
		const char *cm = gb_json_get_str(g, "compute_mode");
		if (cm) {
			c = flag(r, "gpu.compute_mode", s, !streq(cm, "prohibited"), cm,
			         "compute mode must allow CUDA contexts");
			if (c && streq(cm, "prohibited"))
				set_hint(c, "compute mode is Prohibited: nvidia-smi -c DEFAULT");
		}
	}
	{
		json_object *fab = gb_json_get(g, "fabric");
		double st = 0, status = 0;
		if (fab && f->n_nvswitches > 0 && gb_json_get_num(fab, "state", &st)) {
			gb_json_get_num(fab, "status", &status);
			c = flag(r, "fabric.state", s, st == 3 && status == 0,
			         gb_json_get_str(fab, "state_name") ? gb_json_get_str(fab, "state_name") : "?",
			         "NVML GPU fabric state on NVSwitch systems: completed, status success");
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(c,
				         "the NVLink fabric is not ready (the probe waited for it: fabric.wait): check "
				         "that nvidia-fabricmanager runs at the driver's version (journalctl -u "
				         "nvidia-fabricmanager; NVLSM too on B200/B300)");
		}
	}
	c = gb_verify_add(r, "gpu.mig", s);
	/* With MIG on, CUDA reaches MIG instances only, never the whole GPU: say
	 * what is tested, so a verdict is not read as covering what it did not. */
	if (c)
		set_text(
		    c, "%s",
		    gb_json_get_bool(g, "mig_enabled", false)
		        ? "MIG enabled: NVML's health checks cover the whole GPU; CUDA reaches MIG instances only, so "
		          "the active checks do not measure this GPU whole"
		        : "MIG disabled: the active checks measure the whole GPU");
	passive_info(r, f, s, g);
	if (pcie) {
		double mg = 0, mw = 0;
		c = gb_verify_add(r, "pcie.link_idle", s);
		if (c && gb_json_get_num(pcie, "max_gen", &mg) && gb_json_get_num(pcie, "max_width", &mw)) {
			double cg = 0, cw = 0;
			gb_json_get_num(pcie, "current_gen", &cg);
			gb_json_get_num(pcie, "current_width", &cw);
			set_text(c, "Gen%.0f x%.0f at idle (max Gen%.0f x%.0f); checked under load by the active tier",
			         cg, cw, mg, mw);
		}
	}
}

/* Device memory: the pattern test, and read and copy bandwidth against the
 * peak derived from the memory clock and bus width. */
static void active_memory(struct gb_verify_result *r, const char *s, json_object *a, double memclk, double bus,
                          double min_pattern_gib)
{
	char src[200];
	struct gb_check *c;
	double v;

	if (gb_json_get_num(a, "pattern_errors", &v)) {
		double bytes = 0, free_b = 0;
		gb_json_get_num(a, "pattern_bytes", &bytes);
		gb_json_get_num(a, "memory_free_bytes", &free_b);
		c = num(r, "memory.pattern", s, v, "<=", 0, "bad words",
		        "every word of the buffer written with an address-dependent pattern and its complement, then "
		        "checked");
		if (c) {
			/* what it covered: a sample of the memory, at most a quarter of what was free */
			set_text(c, "%.0f bad words in %.2f GiB tested (%.1f GiB free then)", v, bytes / (1u << 30),
			         free_b / (1u << 30));
			if (v > 0)
				set_hint(c, "GPU memory returned wrong data: drain the node, reset the GPU, replace it "
				            "if it recurs");
		}
		if (min_pattern_gib > 0) {
			char src2[96];
			snprintf(src2, sizeof(src2), "profile: min_pattern_gib %g", min_pattern_gib);
			c = num(r, "memory.pattern_coverage", s, bytes / (1u << 30), ">=", min_pattern_gib, "GiB",
			        src2);
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(c,
				         "the pattern test covered only %.2f GiB: %.1f GiB was free (other processes "
				         "hold the "
				         "rest); free the GPU and run verify again",
				         bytes / (1u << 30), free_b / (1u << 30));
		}
	}
	if (memclk > 0 && bus > 0) {
		double peak = gb_peak_memory_gbps((unsigned)memclk, (unsigned)bus);
		if (gb_json_get_num(a, "read_gbps", &v)) {
			snprintf(src, sizeof(src), "%.2f x derived peak %.0f GB/s (%.0f MHz x 2 x %.0f bit / 8)",
			         GB_EFF_READ, peak, memclk, bus);
			c = num(r, "memory.read_bandwidth", s, v, ">=", GB_EFF_READ * peak, "GB/s", src);
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(c,
				         "device memory reads at %.0f%% of its derived peak: another process may be "
				         "using the GPU, or the memory is degraded",
				         100 * v / peak);
		}
		if (gb_json_get_num(a, "d2d_copy_gbps", &v)) {
			snprintf(src, sizeof(src), "%.2f x derived peak %.0f GB/s (bytes read + written)", GB_EFF_COPY,
			         peak);
			c = num(r, "memory.copy_bandwidth", s, v, ">=", GB_EFF_COPY * peak, "GB/s", src);
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(c,
				         "device-to-device copies run at %.0f%% of the derived peak: the GPU is shared "
				         "or degraded",
				         100 * v / peak);
		}
	}
}

/* FP32 (and, where the profile gates on it, FP64) throughput against the
 * peak derived from the SM count, lanes per SM and clock. */
static void active_compute(const struct gb_verify_opts *o, struct gb_verify_result *r, const char *s, json_object *a,
                           int major, int minor, double sms, double clk)
{
	char src[200];
	struct gb_check *c;
	double v;

	if (sms > 0 && clk > 0) {
		unsigned lanes = gb_fp32_lanes_per_sm(major, minor);
		double peak = gb_peak_flops_tflops((unsigned)sms, lanes, (unsigned)clk);
		double fp32 = 0;
		if (lanes && gb_json_get_num(a, "fp32_tflops", &fp32)) {
			snprintf(src, sizeof(src),
			         "%.2f x derived peak %.1f TFLOP/s (%.0f SMs x %u FP32 lanes x 2 x %.0f MHz)",
			         GB_EFF_FP32, peak, sms, lanes, clk);
			c = num(r, "compute.fp32", s, fp32, ">=", GB_EFF_FP32 * peak, "TFLOP/s", src);
			if (c && c->state == GB_CHECK_FAIL)
				set_hint(
				    c, "FP32 throughput is %.0f%% of the derived peak: the GPU is throttled or shared",
				    100 * fp32 / peak);
		}
		if (o->fp64_gate) {
			unsigned l64 = gb_fp64_lanes_per_sm(major, minor);
			double p64 = gb_peak_flops_tflops((unsigned)sms, l64, (unsigned)clk);
			if (gb_json_get_num(a, "fp64_tflops", &v)) {
				snprintf(src, sizeof(src), "%.2f x derived peak %.1f TFLOP/s (%u FP64 lanes/SM)",
				         GB_EFF_FP64, p64, l64);
				c = num(r, "compute.fp64", s, v, ">=", GB_EFF_FP64 * p64, "TFLOP/s", src);
				if (c && c->state == GB_CHECK_FAIL)
					set_hint(c, "FP64 throughput is %.0f%% of the derived peak", 100 * v / p64);
				if (fp32 > 0) {
					c = num(r, "compute.fp64_ratio", s, v / fp32, ">=", GB_FP64_GATE_RATIO,
					        "FP64/FP32",
					        "profile: fp64_gate (double precision at least 1/4 of single)");
					if (c && c->state == GB_CHECK_FAIL)
						set_hint(c,
						         "this GPU's FP64 is %.0f%% of its FP32: scientific codes in "
						         "double precision will crawl; use an A100/H100-class GPU",
						         100 * v / fp32);
				}
			} else {
				c = flag(r, "compute.fp64", s, false, "not measured", "profile: fp64_gate");
			}
		}
	}
}

/* The PCIe link under load against its maximum, and pinned host copies
 * against the link's derived peak. */
static void active_pcie(struct gb_verify_result *r, const char *s, json_object *a, json_object *pcie)
{
	char src[200];
	struct gb_check *c;
	double v, mg = 0, mw = 0;

	if (gb_json_get_num(pcie, "max_gen", &mg) && gb_json_get_num(pcie, "max_width", &mw)) {
		double lg = 0, lw = 0;
		gb_json_get_num(a, "pcie_gen_under_load", &lg);
		gb_json_get_num(a, "pcie_width_under_load", &lw);
		c = flag(r, "pcie.link_under_load", s, lg >= mg && lw >= mw, "",
		         "NVML link generation and width during a host copy, against the maximum");
		if (c) {
			set_text(c, "Gen%.0f x%.0f (max Gen%.0f x%.0f)", lg, lw, mg, mw);
			if (c->state == GB_CHECK_FAIL)
				set_hint(c,
				         "the PCIe link trained at Gen%.0f x%.0f instead of Gen%.0f x%.0f: reseat the "
				         "GPU or riser, check BIOS PCIe settings",
				         lg, lw, mg, mw);
		}
		{
			double peak = gb_peak_pcie_gbps((int)mg, (int)mw);
			const char *dirs[] = { "h2d_pinned_gbps", "d2h_pinned_gbps" };
			const char *names[] = { "pcie.host_to_device", "pcie.device_to_host" };
			for (int d = 0; d < 2 && peak > 0; d++)
				if (gb_json_get_num(a, dirs[d], &v)) {
					snprintf(src, sizeof(src), "%.2f x derived peak %.1f GB/s (Gen%.0f x%.0f)",
					         GB_EFF_PCIE, peak, mg, mw);
					c = num(r, names[d], s, v, ">=", GB_EFF_PCIE * peak, "GB/s", src);
					if (c && c->state == GB_CHECK_FAIL)
						set_hint(c,
						         "pinned host copies reach %.0f%% of the link's peak: the link "
						         "is degraded or shared",
						         100 * v / peak);
				}
		}
	}
}

static void active_gpu(const struct gb_verify_opts *o, struct gb_verify_result *r, json_object *g, json_object *a,
                       unsigned i)
{
	char s[48];
	double sms = 0, clk = 0, memclk = 0, bus = 0, v;
	int major = 0, minor = 0;
	const char *cc = gb_json_get_str(a, "compute_capability"), *err = gb_json_get_str(a, "error");
	json_object *clocks = gb_json_get(g, "clocks"), *pcie = gb_json_get(g, "pcie");
	struct gb_check *c;

	gpu_subject(s, sizeof(s), i, gb_json_get_str(g, "pci_bus_id"));
	if (err) {
		c = flag(r, "cuda.context", s, false, err, "a CUDA context and the probe's kernels");
		if (c)
			set_hint(c, "CUDA cannot use this GPU: %s", err);
		return;
	}
	flag(r, "cuda.context", s, true, "context, PTX JIT and kernels ran", "the probe's kernels");
	if (cc)
		sscanf(cc, "%d.%d", &major, &minor);
	gb_json_get_num(a, "sm_count", &sms);
	gb_json_get_num(clocks, "sm_max_mhz", &clk);
	gb_json_get_num(clocks, "mem_max_mhz", &memclk);
	if (!gb_json_get_num(g, "memory_bus_width_bits", &bus))
		gb_json_get_num(a, "memory_bus_width_bits", &bus);

	active_memory(r, s, a, memclk, bus, o->min_pattern_gib);
	active_compute(o, r, s, a, major, minor, sms, clk);
	if (gb_json_get_num(a, "utilization_max_pct", &v) && v >= 0) {
		double mhz = 0, win = 0;
		char usrc[200];
		const char *how = gb_json_get_str(a, "utilization_source");
		bool whole = how && streq(how, "samples") && gb_json_get_num(a, "utilization_window_ms", &win);
		/* whole: NVML's sample of a window that lay inside the load, else
		 * its current figure, read late in a load long enough to fill it */
		snprintf(usrc, sizeof(usrc), "%s (the seed's > 70%%)",
		         whole ? "NVML utilisation sample of a whole window inside the FP32 load"
		               : "NVML utilisation while the FP32 kernel ran");
		c = num(r, "gpu.utilization_under_load", s, v, ">=", GB_MIN_UTILIZATION, "%", usrc);
		gb_json_get_num(a, "sm_clock_under_load_mhz", &mhz);
		if (c && whole)
			set_text(c,
			         "%.0f%% busy on this GPU over a %.0f ms sample window, SM clock %.0f MHz, while its "
			         "FP32 kernels ran",
			         v, win, mhz);
		else if (c)
			set_text(c, "%.0f%% busy on this GPU, SM clock %.0f MHz, while its FP32 kernel ran", v, mhz);
		if (c && c->state == GB_CHECK_FAIL)
			set_hint(c,
			         "the GPU was busy only %.0f%% of the time under a saturating kernel: it is shared or "
			         "stalling",
			         v);
	}
	if (gb_json_get_num(a, "clock_event_reasons_under_load", &v)) {
		unsigned long long bad = (unsigned long long)v & (0x8ull | 0x20ull | 0x40ull | 0x80ull);
		c = flag(r, "clocks.throttle_under_load", s, bad == 0,
		         bad ? "throttled" : "no thermal or hardware throttling",
		         "NVML clock event reasons while loaded");
		if (c && bad)
			set_hint(c,
			         "the GPU throttled under load (reasons 0x%llx): check cooling, power caps and airflow",
			         bad);
	}
	if (pcie)
		active_pcie(r, s, a, pcie);
	if (gb_json_get_num(g, "compute_processes", &v)) {
		double busy = v, held = 0;
		/* the ones that computed in NVML's recent samples; the others only hold memory */
		gb_json_get_num(g, "compute_processes_busy", &busy);
		gb_json_get_num(g, "other_processes_memory_bytes", &held);
		c = num(r, "gpu.idle_before_test", s, busy, "<=", 0, "processes",
		        "NVML compute processes that computed on the GPU when verify started");
		if (c && c->state == GB_CHECK_FAIL)
			set_hint(
			    c,
			    "%.0f other process(es) compute on this GPU: its measurements are not trustworthy; run "
			    "verify on an idle GPU",
			    busy);
		if (v > busy && (c = gb_verify_add(r, "gpu.other_processes", s)))
			set_text(c,
			         "%.0f other process(es) hold %.1f GiB without computing: measured beside them, on the "
			         "memory left",
			         v - busy, held / (1u << 30));
	}
}

/* Another process that started during the measurements (the probe counts
 * the GPUs' compute processes again after them, its own left out). */
static void check_idle_after(struct gb_verify_result *r, json_object *gpus)
{
	json_object *after = gb_json_get_array(r->probe, "compute_processes_after");
	for (size_t i = 0; after && i < gb_json_len(after); i++) {
		json_object *v = gb_json_idx(after, i);
		char s[80];
		struct gb_check *c;
		double n;
		if (!v || !json_object_is_type(v, json_type_int) || (n = json_object_get_int(v)) < 0)
			continue;
		gpu_subject(s, sizeof(s), (unsigned)i, gb_json_get_str(gb_json_idx(gpus, i), "pci_bus_id"));
		c = num(r, "gpu.idle_after_test", s, n, "<=", 0, "processes",
		        "NVML compute processes on the GPU after the measurements, the probe's own left out");
		if (c && c->state == GB_CHECK_FAIL)
			set_hint(c,
			         "%.0f other process(es) started on this GPU during the measurements: they are not "
			         "trustworthy; run verify on an idle GPU",
			         n);
	}
}

int gb_verify_integration(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o,
                          struct gb_verify_result *r);

/* The kernel module and the userspace must be the same version. */
static void check_version_match(struct gb_verify_result *r, const struct gb_facts *f)
{
	struct gb_check *c;
	const char *uv = gb_json_get_str(r->probe, "driver_version");
	bool same = uv && f->nvidia.loaded_version && streq(uv, f->nvidia.loaded_version);
	c = flag(r, "driver.version_match", "system", same, "",
	         "kernel module version (/proc/driver/nvidia/version) = userspace version (NVML)");
	if (c) {
		set_text(c, "module %s, userspace %s", f->nvidia.loaded_version ? f->nvidia.loaded_version : "none",
		         uv ? uv : "?");
		if (!same)
			set_hint(c,
			         "\"Driver/library version mismatch\": the module loaded (%s) is not the "
			         "userspace installed (%s); reboot, or gpuboot --repair to reload the module",
			         f->nvidia.loaded_version ? f->nvidia.loaded_version : "none", uv ? uv : "?");
	}
}

/* One GPU's NVLink links as the probe read them from NVML. */
struct nvl_summary {
	unsigned present, up, to_peer, gpu_peers, switch_up, version;
	char down[100]; /* the links down, by number */
};

static void nvlink_summary(json_object *g, const char *peer_bus, struct nvl_summary *ns)
{
	json_object *links = gb_json_get_array(g, "nvlink");
	const char *peers[GB_NVLINK_MAX_PEERS];
	size_t o = 0;

	memset(ns, 0, sizeof(*ns));
	for (size_t i = 0; links && i < gb_json_len(links); i++) {
		json_object *l = gb_json_idx(links, i);
		const char *rb = gb_json_get_str(l, "remote_bus_id"), *rt = gb_json_get_str(l, "remote_type");
		double num_l = 0, ver = 0;
		bool known = false;
		gb_json_get_num(l, "link", &num_l);
		ns->present++;
		if (!gb_json_get_bool(l, "up", false)) {
			if (o < sizeof(ns->down))
				o += (size_t)snprintf(ns->down + o, sizeof(ns->down) - o, "%s%.0f", o ? ", " : "",
				                      num_l);
			continue;
		}
		ns->up++;
		if (gb_json_get_num(l, "version", &ver) && !ns->version)
			ns->version = (unsigned)ver;
		ns->switch_up += rt && streq(rt, "nvswitch");
		if (rb && peer_bus && strcasecmp(rb, peer_bus) == 0)
			ns->to_peer++;
		if (!rb || (rt && !streq(rt, "gpu")))
			continue;
		for (unsigned k = 0; k < ns->gpu_peers && !known; k++)
			known = strcasecmp(peers[k], rb) == 0;
		if (!known && ns->gpu_peers < GB_NVLINK_MAX_PEERS)
			peers[ns->gpu_peers++] = rb;
	}
}

/* Every GPU with NVLink: each link NVML knows of is up. */
static void check_nvlink_gpu(struct gb_verify_result *r, json_object *g, unsigned i)
{
	struct nvl_summary ns;
	struct gb_check *c;
	char s[48];

	nvlink_summary(g, NULL, &ns);
	if (!ns.present)
		return;
	gpu_subject(s, sizeof(s), i, gb_json_get_str(g, "pci_bus_id"));
	c = flag(r, "nvlink.links", s, ns.up == ns.present, "",
	         "NVML nvmlDeviceGetNvLinkState: every NVLink link of the GPU is up");
	if (!c)
		return;
	set_text(c, "%u of %u links up (NVML version %u)%s%s", ns.up, ns.present, ns.version,
	         ns.down[0] ? "; down: " : "", ns.down);
	if (ns.up < ns.present)
		set_hint(c,
		         "NVLink degraded: %u of %u links up (down: %s); peer traffic falls back to fewer links: "
		         "reset the GPU (nvidia-smi -r), check the NVLink bridge or baseboard, nvidia-smi nvlink -s",
		         ns.up, ns.present, ns.down);
}

/* The gate for an NVLink pair: links to the peer (found, expected) x the
 * per-link rate of the generation. Direct links: those whose far end is the
 * peer, plus the links down where the GPU has one NVLink peer only (then a
 * lost link was one to it). Through NVSwitches: the links of the worse end. */
static void peer_nvlink(struct gb_verify_result *r, const char *subj, double gbps, json_object *ga, json_object *gb,
                        json_object *aa, unsigned b)
{
	struct nvl_summary sa, sb;
	unsigned found, expected;
	int major = 0, minor = 0;
	const char *cc = gb_json_get_str(aa, "compute_capability"), *gen = "NVLink";
	double rate, gate;
	char src[200];
	struct gb_check *c;

	nvlink_summary(ga, gb_json_get_str(gb, "pci_bus_id"), &sa);
	nvlink_summary(gb, NULL, &sb);
	if (sa.to_peer) {
		found = sa.to_peer;
		expected = found + (sa.gpu_peers <= 1 ? sa.present - sa.up : 0);
	} else {
		found = sa.up < sb.up ? sa.up : sb.up;
		expected = sa.present < sb.present ? sa.present : sb.present;
	}
	if (cc)
		sscanf(cc, "%d.%d", &major, &minor);
	rate = gb_nvlink_link_gbps(major, minor, sa.version, &gen);
	gate = GB_EFF_NVLINK * expected * rate;
	snprintf(src, sizeof(src), "%.2f x %u %s links x %.0f GB/s per direction (links from NVML)", GB_EFF_NVLINK,
	         expected, gen, rate);
	c = num(r, "peer.bandwidth", subj, gbps, ">=", gate, "GB/s", src);
	if (!c)
		return;
	set_text(c, "%u of %u %s links %s gpu%u up%s%s", found, expected, gen, sa.to_peer ? "to" : "(NVSwitch) toward",
	         b, sa.down[0] ? "; down: " : "", sa.down);
	if (found < expected)
		c->state = GB_CHECK_FAIL;
	if (c->state == GB_CHECK_FAIL)
		set_hint(c,
		         "NVLink peer path degraded: %u of %u links up, %.0f GB/s of the %.0f expected: reset the GPUs "
		         "(nvidia-smi -r), check the NVLink bridge or baseboard and the fabric manager; nvidia-smi "
		         "nvlink -s",
		         found, expected, gbps, expected * rate);
}

/* A PCIe pair: a floor under the narrower link's derived peak. */
static void peer_pcie(struct gb_verify_result *r, const char *subj, double gbps, json_object *ga, json_object *gb)
{
	json_object *p[2] = { gb_json_get(ga, "pcie"), gb_json_get(gb, "pcie") };
	double peak = 0, gen = 0, width = 0;
	char src[200];
	struct gb_check *c;

	for (int k = 0; k < 2; k++) {
		double g = 0, w = 0, pk;
		gb_json_get_num(p[k], "max_gen", &g);
		gb_json_get_num(p[k], "max_width", &w);
		pk = gb_peak_pcie_gbps((int)g, (int)w);
		if (pk > 0 && (peak == 0 || pk < peak)) {
			peak = pk;
			gen = g;
			width = w;
		}
	}
	if (peak > 0)
		snprintf(src, sizeof(src),
		         "%.2f x the narrower link's derived peak %.1f GB/s (Gen%.0f x%.0f): a floor for a broken path",
		         GB_EFF_PEER_PCIE, peak, gen, width);
	else
		snprintf(src, sizeof(src), "half a PCIe Gen3 x16 link (the link's maximum is unknown)");
	c = num(r, "peer.bandwidth", subj, gbps,
	        ">=", peak > 0 ? GB_EFF_PEER_PCIE * peak : gb_peak_pcie_gbps(3, 16) / 2, "GB/s", src);
	if (c)
		set_text(c, "PCIe path (no NVLink between these GPUs)");
	if (c && c->state == GB_CHECK_FAIL)
		set_hint(c, "peer copies over PCIe crawl: a link or the PCIe switch is degraded, or ACS/IOMMU "
		            "settings route peer traffic through the CPU; check nvidia-smi topo -m");
}

static json_object *active_entry(json_object *act, unsigned idx)
{
	for (size_t i = 0; act && i < gb_json_len(act); i++) {
		json_object *ai = gb_json_idx(act, i);
		double v = -1;
		if (gb_json_get_num(ai, "index", &v) && v == idx)
			return gb_json_get(ai, "active");
	}
	return NULL;
}

/* Peer bandwidth between every pair of GPUs the probe measured, against the
 * gate of the path NVML reports between them. */
static void check_peers(struct gb_verify_result *r, json_object *peers, json_object *gpus, json_object *act)
{
	size_t ng = gpus ? gb_json_len(gpus) : 0;

	for (size_t i = 0; peers && i < gb_json_len(peers); i++) {
		json_object *pi = gb_json_idx(peers, i);
		const char *path = gb_json_get_str(pi, "path");
		double a = 0, b = 0, gbps = 0;
		struct gb_check *c;
		char subj[48];
		gb_json_get_num(pi, "src", &a);
		gb_json_get_num(pi, "dst", &b);
		snprintf(subj, sizeof(subj), "gpu%.0f->gpu%.0f", a, b);
		if (!gb_json_get_bool(pi, "can_access", false)) {
			c = gb_verify_add(r, "peer.bandwidth", subj);
			if (c) {
				c->state = GB_CHECK_SKIP;
				set_text(c, "no peer access between these GPUs");
			}
		} else if (!gb_json_get_num(pi, "gbps", &gbps) || a < 0 || b < 0 || a >= ng || b >= ng) {
			c = flag(r, "peer.bandwidth", subj, false, "peer copy failed", "cuMemcpyPeerAsync");
			if (c)
				set_hint(c, "peer access is reported but the copy failed: check dmesg for XIDs");
		} else if (path && streq(path, "nvlink")) {
			peer_nvlink(r, subj, gbps, gb_json_idx(gpus, (size_t)a), gb_json_idx(gpus, (size_t)b),
			            active_entry(act, (unsigned)a), (unsigned)b);
		} else {
			peer_pcie(r, subj, gbps, gb_json_idx(gpus, (size_t)a), gb_json_idx(gpus, (size_t)b));
		}
	}
}

/* How the per-GPU workers ran: how many at once at most (from the start and
 * end of each), and where the time went. */
static void check_parallel(struct gb_verify_result *r, json_object *act)
{
	json_object *t = gb_json_get(r->probe, "timings_ms");
	size_t n = act ? gb_json_len(act) : 0;
	unsigned most = 0;
	double workers = 0, peers = 0, cuinit = 0, contexts = 0, teardown = 0;
	struct gb_check *c;

	for (size_t i = 0; i < n; i++) {
		double si = 0, ei = 0;
		unsigned at = 0;
		json_object *ai = gb_json_get(gb_json_idx(act, i), "active");
		if (!gb_json_get_num(ai, "worker_start_ms", &si) || !gb_json_get_num(ai, "worker_end_ms", &ei))
			continue;
		for (size_t k = 0; k < n; k++) {
			json_object *ak = gb_json_get(gb_json_idx(act, k), "active");
			double sk = 0, ek = 0;
			if (gb_json_get_num(ak, "worker_start_ms", &sk) && gb_json_get_num(ak, "worker_end_ms", &ek))
				at += sk <= si && si < ek;
		}
		most = at > most ? at : most;
	}
	gb_json_get_num(t, "workers", &workers);
	gb_json_get_num(t, "peers", &peers);
	gb_json_get_num(t, "cu_init", &cuinit);
	gb_json_get_num(t, "contexts", &contexts);
	gb_json_get_num(t, "teardown", &teardown);
	c = gb_verify_add(r, "verify.parallel", "system");
	if (c)
		set_text(c,
		         "%zu GPU worker(s), at most %u at once; cuInit %.0f ms, contexts %.0f ms, workers %.0f ms, "
		         "peers %.0f ms, teardown %.0f ms",
		         n, most, cuinit, contexts, workers, peers, teardown);
}

/* GPUBOOT_GPUS named a GPU NVML does not have: the narrowing missed. */
static void check_requested(struct gb_verify_result *r, json_object *gpus)
{
	json_object *req = gb_json_get_array(r->probe, "gpus_requested");
	size_t ng = gpus ? gb_json_len(gpus) : 0;
	struct gb_check *c;

	for (size_t i = 0; req && i < gb_json_len(req); i++) {
		int idx = json_object_get_int(gb_json_idx(req, i));
		if (idx >= 0 && (size_t)idx < ng)
			continue;
		/* The narrowing's own entry turns into the failure. */
		c = NULL;
		for (size_t k = 0; k < r->n && !c; k++)
			if (streq(r->checks[k].name, "verify.gpus"))
				c = &r->checks[k];
		if (!c)
			c = gb_verify_add(r, "verify.gpus", "system");
		if (c) {
			c->state = GB_CHECK_FAIL;
			set_text(c, "GPUBOOT_GPUS names GPU %d; NVML has %zu", idx, ng);
			set_hint(c, "GPUBOOT_GPUS names a GPU that is not there: list NVML indices below %zu", ng);
		}
		return;
	}
}

/* The active tier: cuInit, each GPU's measurements, peer copies. */
static void active_checks(const struct gb_verify_opts *o, struct gb_verify_result *r, json_object *gpus)
{
	json_object *act = gb_json_get_array(r->probe, "active"), *cuda = gb_json_get(r->probe, "cuda");
	struct gb_check *c;

	if (gb_json_get_str(cuda, "error")) {
		c = flag(r, "cuda.init", "system", false, gb_json_get_str(cuda, "error"), "cuInit");
		if (c)
			set_hint(c, "%s",
			         strstr(gb_json_get_str(cuda, "error"), "802")
			             ? "start nvidia-fabricmanager (NVSwitch systems need it before CUDA works)"
			             : "CUDA cannot initialise: check dmesg and the driver installation");
	}
	for (size_t i = 0; act && i < gb_json_len(act); i++) {
		json_object *ai = gb_json_idx(act, i);
		double idx = 0;
		gb_json_get_num(ai, "index", &idx);
		if (gpus && idx < gb_json_len(gpus))
			active_gpu(o, r, gb_json_idx(gpus, (size_t)idx), gb_json_get(ai, "active"), (unsigned)idx);
	}
	check_parallel(r, act);
	check_requested(r, gpus);
	check_peers(r, gb_json_get_array(r->probe, "peers"), gpus, act);
}

/* How long the probe waits for the NVLink fabric on an NVSwitch system
 * (the fabric manager registers every GPU after it starts; CUDA fails with
 * error 802 until then): docs/verification.md. */
#define FABRIC_WAIT_MS "120000"

struct probe_args {
	char pattern[16], bw[16], load[16], gpus[128], fabric[16];
	char *args[16];
};

/* --gpus 0,2 (or GPUBOOT_GPUS="0,2"): the active tier on those GPUs only
 * (NVML indices), a narrowing on purpose (docs/verification.md), named in
 * the results. */
static bool gpus_narrowed(const struct gb_verify_opts *o, struct gb_verify_result *r, char *buf, size_t n)
{
	const char *e = o->gpus ? o->gpus : getenv("GPUBOOT_GPUS");
	struct gb_check *c;
	bool ok;

	if (!e || !*e)
		return false;
	ok = strlen(e) < n && strspn(e, "0123456789,") == strlen(e) && e[0] != ',' && e[strlen(e) - 1] != ',' &&
	     !strstr(e, ",,");
	c = flag(r, "verify.gpus", "system", ok, "", "GPUBOOT_GPUS: the GPUs the active tier runs on, narrowed");
	if (c) {
		c->state = ok ? GB_CHECK_INFO : GB_CHECK_FAIL;
		set_text(c, "active checks on GPUs %.60s only (GPUBOOT_GPUS)", e);
		if (!ok)
			set_hint(c, "GPUBOOT_GPUS must list NVML indices separated by commas, such as 0,1");
	}
	if (ok)
		gb_strscpy(buf, n, e);
	return ok;
}

/* The probe's arguments, and what the environment removed from its run. */
static void probe_args(const struct gb_verify_opts *o, const struct gb_facts *f, bool active,
                       struct gb_verify_result *r, struct probe_args *pa)
{
	size_t na = 0;
	char cleaned[160];
	size_t n_cleaned = gb_probe_env_cleaned(cleaned, sizeof(cleaned));
	struct gb_check *c = gb_verify_add(r, "env.cleaned", "system");

	if (c)
		set_text(c, "%s%s",
		         n_cleaned ? "removed for the probe: " : "nothing to remove (no CUDA_* or LD_PRELOAD)",
		         cleaned);
	pa->args[na++] = (char *)"--tier";
	pa->args[na++] = (char *)(active ? "active" : "passive");
	if (f->n_nvswitches > 0) {
		gb_strscpy(pa->fabric, sizeof(pa->fabric), FABRIC_WAIT_MS);
		if (gb_test_knob("GPUBOOT_PROBE_FABRIC_WAIT_MS"))
			gb_strscpy(pa->fabric, sizeof(pa->fabric), gb_test_knob("GPUBOOT_PROBE_FABRIC_WAIT_MS"));
		pa->args[na++] = (char *)"--fabric-wait-ms";
		pa->args[na++] = pa->fabric;
	}
	if (active) {
		if (o->fp64_gate)
			pa->args[na++] = (char *)"--fp64";
		{
			const char *e = gb_test_knob("GPUBOOT_PROBE_PATTERN_MIB");
			if (e)
				gb_strscpy(pa->pattern, sizeof(pa->pattern), e);
			e = gb_test_knob("GPUBOOT_PROBE_BW_MIB");
			if (e)
				gb_strscpy(pa->bw, sizeof(pa->bw), e);
			e = gb_test_knob("GPUBOOT_PROBE_LOAD_MS");
			if (e)
				gb_strscpy(pa->load, sizeof(pa->load), e);
		}
		pa->args[na++] = (char *)"--pattern-mib";
		pa->args[na++] = pa->pattern;
		pa->args[na++] = (char *)"--bw-mib";
		pa->args[na++] = pa->bw;
		pa->args[na++] = (char *)"--load-ms";
		pa->args[na++] = pa->load;
		if (gpus_narrowed(o, r, pa->gpus, sizeof(pa->gpus))) {
			pa->args[na++] = (char *)"--gpus";
			pa->args[na++] = pa->gpus;
		}
	}
	pa->args[na] = NULL;
}

int gb_verify(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o, struct gb_verify_result *r)
{
	uint64_t t0 = ctx->ops->now_monotonic_ns(ctx->ops), tp;
	bool active = !streq(o->tier, "passive");
	struct probe_args pa = { .pattern = "4096", .bw = "1024", .load = "600" };
	char err[512] = "", init[160] = "";
	int exit_code = -1, rc;
	json_object *gpus;
	struct gb_check *c;
	double v;

	memset(r, 0, sizeof(*r));
	/* The driver: loaded, and the same version as its userspace. */
	c = flag(r, "driver.loaded", "system", f->nvidia.loaded_version != NULL,
	         f->nvidia.loaded_version ? f->nvidia.loaded_version : "no nvidia module",
	         "/proc/driver/nvidia/version");
	if (c && !f->nvidia.loaded_version)
		set_hint(c, "the nvidia kernel module is not loaded (nvidia-smi: \"couldn't communicate with the "
		            "NVIDIA driver\"): run gpuboot --repair; dmesg says why it failed");
	/* A run judges the driver it planned: another version loaded (an old
	 * module still in memory, a package manager's other pick) is no success. */
	if (o->expected_driver && f->nvidia.loaded_version) {
		bool same = streq(o->expected_driver, f->nvidia.loaded_version);
		c = flag(r, "driver.planned_version", "system", same, "", "the plan's driver version");
		if (c) {
			set_text(c, "loaded %s, planned %s", f->nvidia.loaded_version, o->expected_driver);
			if (!same)
				set_hint(c,
				         "the loaded nvidia module is %s but the plan installed %s: the old module is "
				         "still in memory or another package won; reboot, or gpuboot --repair",
				         f->nvidia.loaded_version, o->expected_driver);
		}
	}

	probe_args(o, f, active, r, &pa);
	tp = ctx->ops->now_monotonic_ns(ctx->ops);
	rc = gb_probe_run(ctx, pa.args, o->probe_timeout_ms, &r->probe, &exit_code, err, sizeof(err));
	if (rc == -ENOMEM)
		gb_log_error("Failed to run the probe: out of memory"); /* gpuboot's failure, not the GPU's */
	r->probe_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - tp) / 1e6;
	if (rc < 0) {
		c = flag(r, "probe", "system", false, err, "gpuboot-probe run from a memfd under a timeout");
		if (c)
			set_hint(c, "%s",
			         rc == -ENOENT      ? "NVIDIA's drivers need glibc: use a glibc distribution"
			         : rc == -ETIMEDOUT ? "NVIDIA's libraries hung: the GPU or driver is wedged; check "
			                              "dmesg for XIDs, reset or reboot"
			         : rc == -ECHILD
			             ? "NVIDIA's libraries crashed: reinstall the driver userspace (gpuboot --repair)"
			             : "the probe failed; run gpuboot verify -v");
		goto tail;
	}
	if (gb_json_get_str(r->probe, "error")) {
		c = flag(r, "driver.userspace", "system", false, gb_json_get_str(r->probe, "error"),
		         "libnvidia-ml.so.1 loads and initialises");
		if (c)
			set_hint(c,
			         "the driver's userspace is missing or cannot talk to the kernel module: %s; run "
			         "gpuboot --repair",
			         gb_json_get_str(r->probe, "error"));
		goto tail;
	}
	flag(r, "driver.userspace", "system", true, "libnvidia-ml.so.1 loaded and initialised", "NVML");
	check_version_match(r, f);
	gpus = gb_json_get_array(r->probe, "gpus");
	if (gb_json_get_num(r->probe, "nvml_gpu_count", &v)) {
		c = num(r, "gpu.count", "system", v, "==", (double)f->n_gpus, "GPUs",
		        "NVML's GPU count = NVIDIA display/3D PCI functions");
		if (c && c->state == GB_CHECK_FAIL)
			set_hint(c,
			         "NVML sees %.0f GPU(s) but PCI has %zu: a GPU failed to initialise (check dmesg for "
			         "RmInitAdapter / XID 79) or is bound to another driver",
			         v, f->n_gpus);
	}
	/* NVSwitches: how long the fabric took to come up before the checks */
	if (f->n_nvswitches > 0 && gb_json_get_num(gb_json_get(r->probe, "timings_ms"), "fabric_wait", &v)) {
		c = gb_verify_add(r, "fabric.wait", "system");
		if (c)
			set_text(
			    c,
			    "waited %.0f ms (at most %s) for the fabric manager to register every GPU with the NVLink "
			    "fabric before the checks",
			    v, pa.fabric);
	}
	for (size_t i = 0; gpus && i < gb_json_len(gpus); i++) {
		passive_gpu(o, r, gb_json_idx(gpus, i), (unsigned)i, f);
		check_nvlink_gpu(r, gb_json_idx(gpus, i), (unsigned)i);
	}
	if (active) {
		/* the pattern floor is never above what the probe was asked to test */
		struct gb_verify_opts oa = *o;
		uint32_t asked_mib = 0;
		if (gb_safe_atou32(pa.pattern, 10, &asked_mib) == 0 && oa.min_pattern_gib * 1024.0 > asked_mib)
			oa.min_pattern_gib = asked_mib / 1024.0;
		active_checks(&oa, r, gpus);
		check_idle_after(r, gpus);
	}
tail:
	check_device_nodes(ctx, r, (unsigned)f->n_gpus, active);
	check_xids(ctx, r, init, sizeof(init));
	/* GPUs missing from NVML, and the kernel said why: name its line. */
	for (size_t i = 0; init[0] && i < r->n; i++)
		if (streq(r->checks[i].name, "gpu.count") && r->checks[i].state == GB_CHECK_FAIL)
			set_hint(&r->checks[i],
			         "a GPU did not initialise; the kernel says \"%s\": its firmware (GSP) did not start: "
			         "install this driver's GSP firmware, or power-cycle the instance "
			         "(docs/load.md#the-causes, gsp-firmware)",
			         init);
	if (streq(o->tier, "full"))
		gb_verify_integration(ctx, f, o, r);
	/* Skipped by the site: keep the entry, mark it. */
	for (size_t i = 0; i < r->n; i++)
		if (skipped(o, r->checks[i].name) && r->checks[i].state == GB_CHECK_FAIL) {
			r->checks[i].state = GB_CHECK_SKIP;
			snprintf(r->checks[i].hint, sizeof(r->checks[i].hint),
			         "skipped by the site configuration ([checks] skip)");
		}
	for (size_t i = 0; i < r->n; i++)
		r->failed += r->checks[i].state == GB_CHECK_FAIL;
	r->wall_ms = (double)(ctx->ops->now_monotonic_ns(ctx->ops) - t0) / 1e6;
	(void)exit_code;
	return r->dropped ? -ENOMEM : 0;
}

json_object *gb_checks_to_json(const struct gb_verify_result *r)
{
	json_object *arr = gb_json_new_array();
	for (size_t i = 0; i < r->n; i++) {
		const struct gb_check *c = &r->checks[i];
		json_object *o = gb_json_new_object();
		gb_json_add(o, "name", gb_json_new_string(c->name));
		gb_json_add(o, "subject", gb_json_new_string(c->subject));
		gb_json_add(o, "result", gb_json_new_string(gb_check_state_to_string(c->state)));
		gb_json_add(o, "value", c->has_value ? gb_json_new_double(c->value) : NULL);
		gb_json_add(o, "text", c->text[0] ? gb_json_new_string(c->text) : NULL);
		gb_json_add(o, "op", c->has_threshold ? gb_json_new_string(c->op) : NULL);
		gb_json_add(o, "threshold", c->has_threshold ? gb_json_new_double(c->threshold) : NULL);
		gb_json_add(o, "unit", c->unit[0] ? gb_json_new_string(c->unit) : NULL);
		gb_json_add(o, "threshold_source", c->source[0] ? gb_json_new_string(c->source) : NULL);
		gb_json_add(o, "hint", c->hint[0] ? gb_json_new_string(c->hint) : NULL);
		gb_json_append(arr, o);
	}
	return arr;
}

void gb_verify_print(const struct gb_verify_result *r, FILE *out)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct gb_check *c = &r->checks[i];
		char val[200];
		if (c->has_value && c->has_threshold)
			snprintf(val, sizeof(val), "%.2f %s (%s %.2f)", c->value, c->unit, c->op, c->threshold);
		else if (c->has_value)
			snprintf(val, sizeof(val), "%.2f %s; %s", c->value, c->unit, c->text);
		else
			snprintf(val, sizeof(val), "%s", c->text);
		fprintf(out, "%-4s %-28s %-24s %s\n", gb_check_state_to_string(c->state), c->name, c->subject, val);
		if (c->state == GB_CHECK_FAIL && c->hint[0])
			fprintf(out, "     -> %s\n", c->hint);
	}
	fprintf(out, "%u failed of %zu checks in %.0f ms (probe %.0f ms)\n", r->failed, r->n + r->dropped, r->wall_ms,
	        r->probe_ms);
	if (r->dropped)
		fprintf(out, "%u check(s) lost to an allocation failure, counted as failed\n", r->dropped);
}
