/* SPDX-License-Identifier: MIT */
/* Property tests over generated fact sets: whatever the machine, the plan
 * never puts CUDA above the driver, a branch above a GPU's last branch, the
 * open module on a GPU without open support, and never refuses without a
 * reason and a contract exit code. With a random installed driver: one
 * that satisfies the profile is never replaced (replace_installed =
 * if-unsatisfied) and one that is kept does satisfy it; the plan's arch is
 * the target's; no plan passes a gate the GPU's catalog figures cannot.
 * An installed Container Toolkit that NVIDIA's June 2026 bulletin (a_id
 * 5850) lists as affected by CVE-2026-24260 (up to and including 1.19.0) is
 * never kept, and the plan never installs one. What ages is warned: a plan
 * whose branch ended has a branch-eol warning, one whose branch ends within
 * 90 days a branch-eol-soon, a toolkit below the floor left in place a
 * toolkit-below-floor, a catalog more than 120 days old a catalog-stale,
 * and none of them otherwise; under lts an ended branch is never kept
 * without its warning (the plans are made on three dates). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exit-codes.h"
#include "plan/plan.h"
#include "plan/profile.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "catalog/catalog.h"
#include "unit.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *const oses[][3] = {
	{ "ubuntu", "20.04", "apt" }, { "ubuntu", "22.04", "apt" }, { "ubuntu", "24.04", "apt" },
	{ "debian", "12", "apt" },    { "rhel", "9.4", "dnf" },     { "rocky", "8.10", "dnf" },
	{ "amzn", "2023", "dnf" },    { "fedora", "41", "dnf" },    { "sles", "15.6", "zypper" },
	{ "alpine", "3.20", "apk" },  { "ubuntu", "18.04", "apt" }, { "", "", "" },
};
static const char *const kernels[] = { "5.4.0-200-generic", "5.15.0-105-generic",     "6.8.0-45-generic",
	                               "4.14.1-1-default",  "3.10.0-1160.el7.x86_64", "6.17.0-5-generic",
	                               "6.5.0-1020-gcp" };

/* The installed driver satisfies the plan's needs (the test's own reading
 * of docs/plan.md, not the plan's code). */
static bool installed_satisfies(const struct gb_plan *p)
{
	const char *v = p->in.installed.version, *fl = p->in.installed.flavor;
	unsigned b = 0;
	for (const char *c = v; *c >= '0' && *c <= '9'; c++)
		b = b * 10 + (unsigned)(*c - '0');
	if (!v[0] || !p->in.installed.module)
		return false;
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		if (b < g->min_branch || (g->last_branch && b > g->last_branch))
			return false;
		if ((g->open_required && streq(fl, "proprietary")) || (g->open == GB_OPEN_NO && streq(fl, "open")))
			return false;
	}
	return !p->cuda.release || gb_version_cmp(v, p->cuda.release->min_driver) >= 0;
}

/* Days from a to b (YYYY-MM-DD), the test's own arithmetic. */
static long days(const char *a, const char *b)
{
	struct tm x = { 0 }, y = { 0 };
	CHECK(strptime(a, "%Y-%m-%d", &x) != NULL && strptime(b, "%Y-%m-%d", &y) != NULL);
	return (long)((timegm(&y) - timegm(&x)) / 86400);
}

static bool has_warning(const struct gb_plan *p, const char *code)
{
	for (size_t i = 0; i < p->n_warnings; i++)
		if (streq(p->warnings[i].code, code))
			return p->warnings[i].text[0] && p->warnings[i].fix[0];
	return false;
}

/* The installed driver's branch ended before the plan's date. */
static bool installed_ended(const struct gb_plan *p)
{
	unsigned b = 0;
	const struct gb_branch *br;
	for (const char *c = p->in.installed.version; *c >= '0' && *c <= '9'; c++)
		b = b * 10 + (unsigned)(*c - '0');
	br = gb_catalog_branch(b);
	return br && br->eol && days(br->eol, p->today) > 0;
}

static void check_installed(const struct gb_plan *p, bool flavor_auto, bool lts)
{
	CHECK(p->driver.action != GB_ACTION_UNSET && p->driver.action_reason[0]);
	if (p->driver.action == GB_ACTION_UNSET)
		return;
	if (!p->in.installed.version[0]) {
		CHECK(p->driver.action == GB_ACTION_INSTALL);
		return;
	}
	if (flavor_auto && installed_satisfies(p)) {
		/* under lts an ended branch satisfies no longer: replaced, naming its end */
		if (lts && installed_ended(p) && p->driver.action != GB_ACTION_KEEP)
			CHECK(strstr(p->driver.action_reason, "reached its end of life") != NULL);
		else
			CHECK(p->driver.action == GB_ACTION_KEEP);
	}
	if (p->driver.action == GB_ACTION_KEEP && installed_ended(p))
		CHECK(has_warning(p, "branch-eol")); /* kept, never silently */
	if (p->driver.action == GB_ACTION_KEEP) {
		CHECK(installed_satisfies(p));
		CHECK(streq(p->driver.version, p->in.installed.version));
		CHECK(p->driver.method == GB_METHOD_NONE);
	} else {
		CHECK(p->driver.action == GB_ACTION_REPLACE);
	}
}

static void check_gates(const struct gb_plan *p)
{
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_gpu_traits *t = gb_catalog_traits(p->gpus[i].device);
		if (t && t->memory_mib)
			CHECK(t->memory_mib / 1024.0 + 1e-9 >= p->verify.min_gpu_memory_gib);
	}
}

/* Installed toolkit versions as dpkg and rpm name them ("" = none; an
 * nvidia-ctk without its package is "unknown"). */
static const char *const toolkits[] = { "",         "1.16.1-1", "1.17.8-1", "1.18.2-1",
	                                "1.19.0-1", "1.19.1-1", "1.20.0-1", "unknown" };

/* The bulletin's reading, not the plan's code: affected up to and
 * including 1.19.0 (the package revision after '-' aside), or unknown. */
static bool toolkit_affected(const char *v)
{
	char up[32];
	size_t n = strcspn(v, "-");
	if (v[0] < '0' || v[0] > '9' || n >= sizeof(up))
		return true;
	memcpy(up, v, n);
	up[n] = '\0';
	return gb_version_cmp(up, "1.19.0") <= 0;
}

static void check_toolkit(const struct gb_plan *p, const struct gb_profile *prof)
{
	const char *have = p->in.toolkit_installed;

	if (p->refusal_code || p->toolkit.action == GB_ACTION_UNSET)
		return;
	CHECK(p->toolkit.action_reason[0] != '\0');
	if (!prof->toolkit) {
		CHECK(p->toolkit.action == GB_ACTION_NONE);
		return;
	}
	if (p->toolkit.action == GB_ACTION_KEEP) {
		CHECK(have[0] && !toolkit_affected(have));
		CHECK(p->toolkit.version == NULL);
	}
	if (have[0] && toolkit_affected(have)) {
		CHECK(p->toolkit.action == GB_ACTION_REPLACE);
		CHECK(strstr(p->toolkit.action_reason, "CVE-2026-24260") != NULL);
		if (isdigit((unsigned char)have[0]))
			CHECK(strstr(p->toolkit.action_reason, "a_id 5850") != NULL);
	}
	if (p->toolkit.action == GB_ACTION_INSTALL || p->toolkit.action == GB_ACTION_REPLACE) {
		CHECK(p->toolkit.version != NULL);
		if (p->toolkit.version) {
			CHECK(!toolkit_affected(p->toolkit.version));
			CHECK(streq(p->toolkit.version, "1.19.1")); /* no site pin here */
		}
	}
	CHECK(strstr(p->toolkit.reason, "1.19.1 (the floor: CVE-2026-24260") != NULL);
	CHECK(strstr(p->toolkit.reason, "a_id 5850") != NULL);
}

/* Each warning where its fact holds, and only there. */
static void check_warnings(const struct gb_plan *p, const struct gb_profile *prof)
{
	const struct gb_branch *b = p->refusal_code ? NULL : gb_catalog_branch(p->driver.branch);
	long left = b && b->eol ? days(p->today, b->eol) : 1000;
	const char *have = p->in.toolkit_installed;

	CHECK(has_warning(p, "catalog-stale") == (days(gb_catalog_date, p->today) > 120));
	CHECK(has_warning(p, "branch-eol") == (left < 0));
	CHECK(has_warning(p, "branch-eol-soon") == (left >= 0 && left <= 90));
	CHECK(has_warning(p, "toolkit-below-floor") ==
	      (!p->refusal_code && !prof->toolkit && have[0] && toolkit_affected(have)));
	for (size_t i = 0; i < p->n_warnings; i++)
		CHECK(p->warnings[i].text[0] && p->warnings[i].fix[0]);
}

static void check_plan(const struct gb_plan *p, const char *target_arch, bool flavor_auto, bool lts)
{
	bool reasons = true;

	if (p->refusal_code) {
		CHECK(p->refusal[0] != '\0');
		CHECK(p->refusal_code == GB_EXIT_USAGE || p->refusal_code == GB_EXIT_UNSUPPORTED ||
		      p->refusal_code == GB_EXIT_NO_GPU || p->refusal_code == GB_EXIT_UNSUPPORTED_GPU);
		return;
	}
	CHECK(streq(p->in.arch, target_arch));
	if (p->driver.repo_arch[0])
		CHECK(streq(p->driver.repo_arch, streq(target_arch, "aarch64") ? "sbsa" : "x86_64"));
	check_installed(p, flavor_auto, lts);
	check_gates(p);
	if (p->driver.action == GB_ACTION_KEEP)
		return; /* an installed version need not be a catalog runfile */
	CHECK(p->driver.runfile != NULL);
	if (!p->driver.runfile)
		return;
	CHECK(streq(p->driver.runfile->version, p->driver.version));
	CHECK(streq(p->driver.runfile->arch, streq(p->in.arch, "aarch64") ? "aarch64" : "x86_64"));
	CHECK(p->driver.flavor == GB_DRIVER_OPEN || p->driver.flavor == GB_DRIVER_PROPRIETARY);
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		CHECK(!g->last_branch || p->driver.branch <= g->last_branch);
		CHECK(p->driver.branch >= g->min_branch);
		CHECK(!(p->driver.flavor == GB_DRIVER_OPEN && g->open == GB_OPEN_NO));
		CHECK(!(p->driver.flavor == GB_DRIVER_PROPRIETARY && g->open_required));
		if (p->cuda.release)
			CHECK(p->cuda.release->oldest_arch <= g->arch);
	}
	if (p->cuda.release) {
		CHECK(gb_version_cmp(p->cuda.release->min_driver, p->driver.version) <= 0);
		CHECK(p->cuda.release->manifest != NULL);
	}
	reasons &= p->driver.reason[0] && p->driver.flavor_reason[0] && p->driver.method_reason[0];
	reasons &= p->cuda.reason[0] && p->toolkit.reason[0] && p->kernel.reason[0] && p->nouveau.reason[0];
	reasons &= p->secure_boot.reason[0] && p->verify.reason[0];
	for (size_t i = 0; i < p->n_daemons; i++)
		reasons &= p->daemons[i].reason[0] != '\0';
	CHECK(reasons);
	CHECK(!p->kernel.reboot_required || p->kernel.action == GB_KERNEL_ACTION_INSTALL_HWE);
}

int main(void)
{
	struct gb_profile prof[8];
	size_t nprof = 0, plans = 0, refusals = 0, toolkits_replaced = 0, toolkits_kept = 0;
	size_t eol_kept = 0, eol_replaced = 0, warned_soon = 0, fm_installed = 0;
	/* today; R595 ends within 90 days; the catalog (2026-12-04) is stale and R595 ended */
	static const char *const dates[] = { "2026-11-30", "2027-01-15", "2027-06-01" };
	struct gb_gpu_overrides ov = { 0 };
	struct gb_site_config site = { 0 };
	char err[512];

	for (size_t i = 0; i < gb_builtin_profiles_len; i++) {
		CHECK_INT(gb_profile_parse(gb_builtin_profiles[i].name, "built-in", gb_builtin_profiles[i].text,
		                           strlen(gb_builtin_profiles[i].text), &prof[nprof], err, sizeof(err)),
		          0);
		nprof++;
	}
	/* Every GPU the catalog knows, alone, with every profile. */
	for (size_t d = 0; d < gb_pci_names_len; d++) {
		if (gb_pci_names[d].arch == GB_ARCH_UNKNOWN && rnd(8))
			continue;
		for (size_t pi = 0; pi < nprof; pi++) {
			struct gb_plan_input in = { .secure_boot = -1, .kernel_known = true, .headers = true };
			struct gb_plan p;
			unsigned o = rnd(ARRAY_SIZE(oses));
			gb_strscpy(in.os_id, sizeof(in.os_id), oses[o][0]);
			gb_strscpy(in.os_version, sizeof(in.os_version), oses[o][1]);
			gb_strscpy(in.pkgmgr, sizeof(in.pkgmgr), oses[o][2]);
			gb_strscpy(in.libc, sizeof(in.libc), streq(oses[o][0], "alpine") ? "musl" : "glibc");
			gb_strscpy(in.arch, sizeof(in.arch), rnd(4) ? "x86_64" : "aarch64");
			gb_strscpy(in.platform, sizeof(in.platform),
			           streq(in.arch, "x86_64") ? "linux-x86_64" : "linux-sbsa");
			gb_strscpy(in.kernel_release, sizeof(in.kernel_release), kernels[rnd(ARRAY_SIZE(kernels))]);
			gb_strscpy(in.kernel_flavour, sizeof(in.kernel_flavour), "generic");
			in.secure_boot = (int)rnd(3) - 1;
			in.headers = rnd(2);
			in.nouveau_loaded = rnd(2);
			in.nouveau_bound = in.nouveau_loaded && rnd(2);
			in.n_devices = rnd(4) ? 1 : 2 + rnd(2);
			for (size_t k = 0; k < in.n_devices; k++) {
				in.devices[k].device = k == 0 ? gb_pci_names[d].device
				                              : gb_pci_names[rnd((unsigned)gb_pci_names_len)].device;
				in.devices[k].count = 1 + rnd(8);
			}
			in.n_nvswitches = rnd(6) ? 0 : 4;
			in.mellanox = rnd(2) * 8;
			if (rnd(2)) {
				/* Something already installed: a real runfile version, some flavour. */
				const struct gb_runfile *rf = &gb_runfiles[rnd((unsigned)gb_runfiles_len)];
				gb_strscpy(in.installed.version, sizeof(in.installed.version), rf->version);
				gb_strscpy(in.installed.flavor, sizeof(in.installed.flavor),
				           rnd(2) ? "open" : "proprietary");
				gb_strscpy(in.installed.source, sizeof(in.installed.source), "module");
				in.installed.loaded = rnd(2);
				in.installed.module = in.installed.loaded || rnd(2);
			}
			/* the toolkit from the count, so the draws above stay as they were */
			gb_strscpy(in.toolkit_installed, sizeof(in.toolkit_installed),
			           toolkits[plans % ARRAY_SIZE(toolkits)]);
			in.n_engines = (unsigned)(plans / ARRAY_SIZE(toolkits) % 3);
			CHECK_INT(gb_plan_make(&in, &prof[pi], rnd(2) ? &site : NULL, &ov,
			                       dates[plans % ARRAY_SIZE(dates)], &p, err, sizeof(err)),
			          0);
			check_plan(&p, in.arch,
			           prof[pi].flavor == GB_FLAVOR_AUTO && prof[pi].policy != GB_POLICY_VERSION &&
			               prof[pi].policy != GB_POLICY_BRANCH,
			           prof[pi].policy == GB_POLICY_LTS);
			check_toolkit(&p, &prof[pi]);
			check_warnings(&p, &prof[pi]);
			eol_kept += p.driver.action == GB_ACTION_KEEP && has_warning(&p, "branch-eol");
			eol_replaced += p.driver.action == GB_ACTION_REPLACE &&
			                strstr(p.driver.action_reason, "reached its end of life") != NULL;
			for (size_t w = 0; w < p.n_warnings; w++)
				warned_soon += streq(p.warnings[w].code, "branch-eol-soon");
			toolkits_replaced += p.toolkit.action == GB_ACTION_REPLACE;
			toolkits_kept += p.toolkit.action == GB_ACTION_KEEP;
			/* NVSwitches: no plan installs a driver without its fabric manager
			 * (its method's package in the list, or already there) */
			if (in.n_nvswitches && !p.refusal_code && p.fm_need &&
			    !(p.driver.action == GB_ACTION_KEEP || p.driver.action == GB_ACTION_REBUILD)) {
				bool listed = false;
				for (size_t k = 0; k < p.driver.n_packages; k++)
					listed |= p.fm_package[0] && streq(p.driver.packages[k].name, p.fm_package);
				CHECK(listed || streq(in.fabricmanager_installed, p.driver.version));
				CHECK(p.driver.method == GB_METHOD_PACKAGES || !listed);
				fm_installed += listed;
			}
			plans++;
			refusals += p.refusal_code != 0;
			gb_plan_done(&p);
		}
	}
	printf("%zu plans checked, %zu refused; %zu toolkits replaced, %zu kept\n", plans, refusals, toolkits_replaced,
	       toolkits_kept);
	printf("%zu ended branches kept with a warning, %zu replaced; %zu warned as ending soon\n", eol_kept,
	       eol_replaced, warned_soon);
	CHECK(toolkits_replaced > 100 && toolkits_kept > 100);
	CHECK(eol_kept > 5 && eol_replaced > 10 && warned_soon > 10);
	printf("%zu NVSwitch plans install the fabric manager with the driver\n", fm_installed);
	CHECK(fm_installed > 0);
	CHECK(plans > 5000);
	CHECK(refusals > 0 && plans - refusals > 1000);
	for (size_t i = 0; i < nprof; i++)
		gb_profile_done(&prof[i]);
	UNIT_DONE();
}
