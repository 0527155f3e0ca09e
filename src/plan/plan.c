/* SPDX-License-Identifier: MIT */
/* The decisions. Each records its value and a one-line reason a person can
 * check against the catalog, the facts and the profile. */
#include "plan.h"
#include "plan-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exit-codes.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

/* What each architecture needs and allows (NVIDIA's release notes; data/SOURCES.md). */
static const struct {
	enum gb_arch arch;
	unsigned min_branch; /* the first branch that supports it */
	unsigned last_branch; /* 0: still supported */
	bool open_required;
} arch_rules[] = {
	{ GB_ARCH_KEPLER, 0, 470, false }, { GB_ARCH_MAXWELL, 0, 580, false }, { GB_ARCH_PASCAL, 0, 580, false },
	{ GB_ARCH_VOLTA, 0, 580, false },  { GB_ARCH_TURING, 410, 0, false },  { GB_ARCH_AMPERE, 450, 0, false },
	{ GB_ARCH_ADA, 525, 0, false },    { GB_ARCH_HOPPER, 525, 0, false },  { GB_ARCH_BLACKWELL, 570, 0, true },
};

/* Grace-based boards (the catalog's traits): the open module is required,
 * and GH200 with R580+ needs the driver to manage its coherent memory. */
static bool is_grace_board(uint16_t d)
{
	const struct gb_gpu_traits *t = gb_catalog_traits(d);
	return t && t->grace;
}

/* Branches Ubuntu ships as signed precompiled modules (linux-modules-nvidia-*-server). */
static const unsigned ubuntu_signed_branches[] = { 535, 550, 570, 580, 595 };

void gb_plan_say(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, n, fmt, ap);
	va_end(ap);
}

#define refuse gb_plan_refuse
void gb_plan_refuse(struct gb_plan *p, int code, const char *fmt, ...)
{
	va_list ap;
	if (p->refusal_code)
		return;
	p->refusal_code = code;
	va_start(ap, fmt);
	vsnprintf(p->refusal, sizeof(p->refusal), fmt, ap);
	va_end(ap);
}

void gb_plan_done(struct gb_plan *p)
{
	gb_strv_free(p->cuda.components);
	gb_strv_free(p->verify.skip);
	memset(p, 0, sizeof(*p));
}

static const char *arch_name(enum gb_arch a)
{
	const char *s = gb_arch_to_string(a);
	return s ? s : "unknown";
}

const struct gb_distro *gb_plan_distro(const struct gb_plan *p)
{
	return gb_distro_find(p->in.os_id, p->in.os_version);
}

const char *gb_plan_other_methods(const struct gb_plan *p)
{
	const struct gb_distro *d = gb_plan_distro(p);
	return d && gb_repo_key_find(d->key_pin) ? "--method packages or --method runfile" : "--method runfile";
}

/* ---- GPUs ---- */

static int resolve_gpus(struct gb_plan *p, const struct gb_profile *prof, const struct gb_gpu_overrides *ov)
{
	for (size_t i = 0; i < p->in.n_devices && p->n_gpus < GB_PLAN_MAX_GPUS; i++) {
		struct gb_plan_gpu *g = &p->gpus[p->n_gpus++];
		uint16_t d = p->in.devices[i].device;
		const struct gb_pci_name *c = gb_catalog_pci_lookup(d);
		const struct gb_gpu_override *o = gb_gpu_override_find(ov, d);

		memset(g, 0, sizeof(*g));
		g->device = d;
		g->count = p->in.devices[i].count;
		if (c) {
			SAY(g->name, "%s", c->name);
			g->arch = c->arch;
			SAY(g->cc, "%s", c->cc ? c->cc : "");
			g->open = c->open;
			g->last_branch = c->legacy_branch;
			SAY(g->source, "catalog (pci.ids%s)",
			    c->open == GB_OPEN_LISTED    ? ", NVIDIA's open-module list"
			    : c->open == GB_OPEN_BY_ARCH ? "; open support by architecture"
			                                 : "");
			g->vgpu = strstr(c->name, "vGPU") != NULL;
		}
		if (o) {
			if (o->name)
				SAY(g->name, "%s", o->name);
			if (o->arch != GB_ARCH_UNKNOWN)
				g->arch = o->arch;
			if (o->cc[0])
				SAY(g->cc, "%s", o->cc);
			g->open = o->open;
			g->open_required = o->open_required;
			if (o->min_branch)
				g->min_branch = o->min_branch;
			if (o->last_branch)
				g->last_branch = o->last_branch;
			g->pinned_branch = o->pinned_branch;
			g->vgpu = o->vgpu;
			SAY(g->source, "site override %s", o->source);
		}
		if (!c && !o) {
			if (!prof->allow_unknown_gpus) {
				refuse(p, GB_EXIT_UNSUPPORTED_GPU,
				       "NVIDIA device 10de:%04x is not in the catalog; describe it in "
				       "/etc/gpuboot/gpus.d/%04x.conf "
				       "([gpu %04x] architecture = ..., open_module = ...) or use a profile with "
				       "allow_unknown_gpus = yes",
				       d, d, d);
				return 0;
			}
			SAY(g->name, "unknown NVIDIA device %04x", d);
			g->unknown = true;
			g->arch = GB_ARCH_BLACKWELL; /* newest rules: newest branch, open module */
			g->open = GB_OPEN_LISTED;
			g->open_required = true;
			SAY(g->source,
			    "not in the catalog: newest branch with the open module (profile allows unknown GPUs)");
		}
		if (g->arch == GB_ARCH_UNKNOWN) {
			refuse(p, GB_EXIT_UNSUPPORTED_GPU,
			       "%s (10de:%04x) predates Kepler: no supported driver branch can drive it (the last were "
			       "R390 and older)",
			       g->name, d);
			return 0;
		}
		for (size_t r = 0; r < ARRAY_SIZE(arch_rules); r++)
			if (arch_rules[r].arch == g->arch) {
				if (!g->min_branch)
					g->min_branch = arch_rules[r].min_branch;
				if (!g->last_branch)
					g->last_branch = arch_rules[r].last_branch;
				g->open_required |= arch_rules[r].open_required;
			}
		if (c && c->chip && (streq(c->chip, "GB110") || streq(c->chip, "GB112")) && g->min_branch < 580)
			g->min_branch = 580; /* Blackwell Ultra: R580 */
		if (is_grace_board(d)) {
			g->open_required = true;
			if (g->min_branch < 535)
				g->min_branch = 535;
		}
		if (g->open == GB_OPEN_NO)
			g->open_required = false;
		{
			/* kept on the proprietary module by default (the catalog's traits, docs/plan.md); a
			 * device NVIDIA lists later than its architecture's first branch, or in the open
			 * module's list later than R515 */
			const struct gb_gpu_traits *t = gb_catalog_traits(d);
			g->held_back |= t && t->held_back;
			if (t && t->min_branch > g->min_branch && !(o && o->min_branch))
				g->min_branch = t->min_branch;
			g->open_from = t ? t->open_from : 0;
		}
		if (g->vgpu && prof->graphics) {
			refuse(p, GB_EXIT_UNSUPPORTED_GPU,
			       "%s is a vGPU: rendering on it needs NVIDIA's licensed vGPU/RTX vWS guest driver, which "
			       "cannot be "
			       "downloaded; install it from your NVIDIA licensing portal",
			       g->name);
			return 0;
		}
	}
	return 0;
}

/* Chips with double precision at 1/2 or 1/3 of single precision; the rest
 * run FP64 at 1/32 or 1/64 and cannot pass an FP64 gate. */
static const char *const full_fp64_chips[] = { "GK110", "GK110B", "GK180", "GK210", "GP100",
	                                       "GV100", "GA100",  "GH100", "GB100" };

static bool fp64_check(struct gb_plan *p)
{
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_pci_name *c = gb_catalog_pci_lookup(p->gpus[i].device);
		bool full = false;
		if (!c || !c->chip || p->gpus[i].unknown)
			continue; /* a site override or an unknown ID: measured at verify */
		for (size_t j = 0; j < ARRAY_SIZE(full_fp64_chips); j++)
			full |= streq(c->chip, full_fp64_chips[j]);
		if (!full) {
			refuse(p, GB_EXIT_UNSUPPORTED_GPU,
			       "the profile gates on FP64 but %s (%s) runs FP64 at 1/32 to 1/64 of FP32: it cannot "
			       "pass; use an A100/H100/B200-class GPU or a profile without fp64_gate",
			       p->gpus[i].name, c->chip);
			return false;
		}
	}
	return true;
}

/* ---- driver branch and version ---- */

bool gb_plan_date_past(const struct gb_plan *p, const char *date)
{
	int64_t d, t;
	return gb_date_days(date, &d) >= 0 && gb_date_days(p->today, &t) >= 0 && d < t;
}

static bool branch_alive(const struct gb_plan *p, const struct gb_branch *b)
{
	return !b->eol || !gb_plan_date_past(p, b->eol);
}

static bool in_list(unsigned b, const unsigned *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == b)
			return true;
	return false;
}

/* The branch of a driver version: "580.95.05" -> 580; 0 when unreadable. */
#define version_branch gb_plan_version_branch
unsigned gb_plan_version_branch(const char *version)
{
	char major[12];
	uint32_t b = 0;
	size_t k = strcspn(version, ".");

	if (k == 0 || k >= sizeof(major))
		return 0;
	memcpy(major, version, k);
	major[k] = '\0';
	return gb_safe_atou32(major, 10, &b) < 0 ? 0 : (unsigned)b;
}

/* The kernel module flavour: what the GPUs require, then the profile, the
 * hold-back list, and NVIDIA's default for the branch. need_open_by and
 * need_prop_by name a GPU that requires the open or the proprietary module. */
static void decide_flavor(struct gb_plan *p, const struct gb_profile *prof, const char *need_open_by,
                          const char *need_prop_by)
{
	const struct gb_plan_gpu *hb = NULL, *late_open = NULL;
	for (size_t i = 0; i < p->n_gpus; i++) {
		if (p->gpus[i].held_back)
			hb = &p->gpus[i];
		if (p->gpus[i].open_from && (!late_open || p->gpus[i].open_from > late_open->open_from))
			late_open = &p->gpus[i];
	}
	if (need_open_by) {
		if (prof->flavor == GB_FLAVOR_PROPRIETARY) {
			refuse(p, GB_EXIT_UNSUPPORTED_GPU,
			       "the profile asks for the proprietary module but %s requires the open one",
			       need_open_by);
			return;
		}
		p->driver.flavor = GB_DRIVER_OPEN;
		SAY(p->driver.flavor_reason, "%s requires the open kernel module", need_open_by);
	} else if (need_prop_by) {
		if (prof->flavor == GB_FLAVOR_OPEN) {
			refuse(p, GB_EXIT_UNSUPPORTED_GPU,
			       "the profile asks for the open module but %s (%s) only runs the proprietary one",
			       need_prop_by, arch_name(p->gpus[0].arch));
			return;
		}
		p->driver.flavor = GB_DRIVER_PROPRIETARY;
		SAY(p->driver.flavor_reason, "%s predates Turing: the open module does not support it", need_prop_by);
	} else if (prof->flavor == GB_FLAVOR_OPEN) {
		p->driver.flavor = GB_DRIVER_OPEN;
		SAY(p->driver.flavor_reason, "the profile asks for the open module and every GPU supports it");
	} else if (p->driver.branch >= gb_proprietary_removed_from) {
		/* no proprietary module to choose (a hold-back, a profile's ask) */
		if (prof->flavor == GB_FLAVOR_PROPRIETARY) {
			refuse(
			    p, GB_EXIT_UNSUPPORTED,
			    "the profile asks for the proprietary module, which R%u does not have (NVIDIA removed it "
			    "from R%u on: r%u Driver Installation Guide, 4.1); use module_flavor = auto or a branch "
			    "before R%u",
			    p->driver.branch, gb_proprietary_removed_from, gb_proprietary_removed_from,
			    gb_proprietary_removed_from);
			return;
		}
		p->driver.flavor = GB_DRIVER_OPEN;
		SAY(p->driver.flavor_reason,
		    "R%u has only the open kernel module (NVIDIA removed the proprietary one from R%u on)%s%s%s",
		    p->driver.branch, gb_proprietary_removed_from, hb ? "; the hold-back of " : "", hb ? hb->name : "",
		    hb ? " cannot apply" : "");
	} else if (prof->flavor == GB_FLAVOR_PROPRIETARY) {
		p->driver.flavor = GB_DRIVER_PROPRIETARY;
		SAY(p->driver.flavor_reason, "the profile asks for the proprietary module");
	} else if (hb) {
		p->driver.flavor = GB_DRIVER_PROPRIETARY;
		p->driver.gsp_off = true;
		SAY(p->driver.flavor_reason,
		    "%s (%04x) is on the hold-back list: AWS's EKS AMI (Amazon Linux 2023) loads it with the "
		    "proprietary module and the GSP firmware off, NVreg_EnableGpuFirmware=0 (g4dn, g5, g5g: a "
		    "workaround for those instances' GSP issue, possible only on the proprietary module); gpuboot runs "
		    "the same stack (module_flavor = open overrides)",
		    hb->name, hb->device);
	} else if (p->driver.branch < 560) {
		p->driver.flavor = GB_DRIVER_PROPRIETARY;
		SAY(p->driver.flavor_reason, "before R560 NVIDIA's default is the proprietary module where the "
		                             "GPU does not require the open one");
	} else if (late_open && late_open->open_from > p->driver.branch) {
		p->driver.flavor = GB_DRIVER_PROPRIETARY;
		SAY(p->driver.flavor_reason,
		    "NVIDIA's open kernel module lists %s (%04x) from R%u on: R%u's proprietary one", late_open->name,
		    late_open->device, late_open->open_from, p->driver.branch);
	} else {
		p->driver.flavor = GB_DRIVER_OPEN;
		SAY(p->driver.flavor_reason, "every GPU is Turing or newer and supported by the open module, "
		                             "NVIDIA's default from R560");
	}
}

/* The open kernel modules begin with R515 (the catalog's
 * gb_open_module_from): an install or a replacement with the open module
 * on an older branch is refused here, before prepare changes anything (the
 * runfile's installer would refuse it after). A kept or rebuilt driver
 * (--repair) keeps its own module, whatever the profile asks. */
static bool open_module_exists(struct gb_plan *p, const struct gb_profile *prof)
{
	const struct gb_plan_gpu *late = NULL;

	if (p->driver.flavor != GB_DRIVER_OPEN ||
	    !(p->driver.action == GB_ACTION_INSTALL || p->driver.action == GB_ACTION_REPLACE))
		return true;
	if (p->driver.branch < gb_open_module_from) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s the open module, which R%u does not have (NVIDIA's open kernel modules begin with R%u); "
		       "use module_flavor = auto or a branch from R%u on",
		       prof->flavor == GB_FLAVOR_OPEN ? "the profile asks for" : "the plan chose", p->driver.branch,
		       gb_open_module_from, gb_open_module_from);
		return false;
	}
	for (size_t i = 0; i < p->n_gpus; i++)
		if (p->gpus[i].open_from > p->driver.branch && (!late || p->gpus[i].open_from > late->open_from))
			late = &p->gpus[i];
	if (!late)
		return true;
	refuse(p, GB_EXIT_UNSUPPORTED,
	       "%s the open module, whose R%u does not list %s (%04x): NVIDIA's open kernel module supports it from "
	       "R%u on; use module_flavor = auto (the proprietary module on R%u) or a branch from R%u on",
	       prof->flavor == GB_FLAVOR_OPEN ? "the profile asks for" : "the plan chose", p->driver.branch, late->name,
	       late->device, late->open_from, p->driver.branch, late->open_from);
	return false;
}

static const struct gb_branch *newest_branch(const struct gb_plan *p, enum gb_branch_policy pol, unsigned pin_branch,
                                             unsigned lo, unsigned hi, const char *rarch, bool ubuntu_sb)
{
	const struct gb_branch *chosen = NULL;
	size_t nb;
	const struct gb_branch *branches = gb_catalog_branches(&nb);

	/* Newest branch of the policy's kind, alive today, with a runfile for
	 * this arch, inside what every GPU supports. */
	for (size_t i = nb; i > 0 && !chosen; i--) {
		const struct gb_branch *b = &branches[i - 1];
		bool kind_ok;
		if (b->branch < lo || (hi && b->branch > hi))
			continue;
		if (!gb_catalog_newest_runfile(b->branch, rarch))
			continue;
		if (ubuntu_sb && !in_list(b->branch, ubuntu_signed_branches, ARRAY_SIZE(ubuntu_signed_branches)))
			continue;
		if (pol == GB_POLICY_BRANCH) {
			if (b->branch == pin_branch)
				chosen = b;
			continue;
		}
		if (!branch_alive(p, b))
			continue;
		kind_ok = pol == GB_POLICY_LATEST       ? b->type != GB_BRANCH_LEGACY
		          : pol == GB_POLICY_PRODUCTION ? (b->type == GB_BRANCH_PRODUCTION || b->type == GB_BRANCH_LTSB)
		                                        : b->type == GB_BRANCH_LTSB;
		if (kind_ok)
			chosen = b;
	}
	return chosen;
}

/* No branch fits: a pinned one the catalog has no runfile of (exit 2, the
 * catalog's date and the fix), one outside what the GPUs support, or no
 * branch of the policy alive (exit 12). pin_branch 0: a policy. */
static void refuse_no_branch(struct gb_plan *p, const char *policy, unsigned pin_branch, unsigned lo, unsigned hi,
                             const char *rarch, bool ubuntu_sb)
{
	if (pin_branch && pin_branch >= lo && (!hi || pin_branch <= hi) && !ubuntu_sb &&
	    gb_catalog_branch(pin_branch) && !gb_catalog_newest_runfile(pin_branch, rarch))
		refuse(p, GB_EXIT_USAGE,
		       "pinned branch R%u has no %s runfile in this catalog (of %s): a signed catalog update that adds "
		       "one (docs/catalog.md), or another branch",
		       pin_branch, rarch, gb_catalog_in_force()->date);
	else if (pin_branch)
		refuse(p, GB_EXIT_UNSUPPORTED_GPU,
		       "pinned branch R%u is outside R%u%s for these GPUs, or has no %s runfile%s", pin_branch, lo,
		       hi ? "..last" : "+", rarch, ubuntu_sb ? " signed by Ubuntu" : "");
	else
		refuse(p, GB_EXIT_UNSUPPORTED_GPU,
		       "no %s driver branch alive on %s supports these GPUs (R%u%s) on %s%s", policy, p->today, lo,
		       hi ? " up to their last branch" : " or newer", rarch,
		       ubuntu_sb ? " with Ubuntu-signed modules" : "");
}

static void say_branch_reason(struct gb_plan *p, const char *policy, bool pinned_branch, bool pinned_by_gpu,
                              unsigned lo, unsigned hi, unsigned branch, const char *rarch, bool ubuntu_sb)
{
	char range[48];
	if (lo && hi)
		snprintf(range, sizeof(range), "R%u to R%u", lo, hi);
	else if (hi)
		snprintf(range, sizeof(range), "up to R%u", hi);
	else
		snprintf(range, sizeof(range), "R%u and newer", lo);
	if (pinned_branch) {
		/* a pin is taken alive or not: its end of life is a warning, not "alive" */
		SAY(p->driver.reason,
		    "pinned to branch R%u by %s, within what every GPU supports (%s); newest %s runfile of it in this "
		    "catalog (of %s)%s",
		    branch, pinned_by_gpu ? "a gpus.d override" : "the profile", range, rarch,
		    gb_catalog_in_force()->date, ubuntu_sb ? "; limited to branches Ubuntu signs (Secure Boot)" : "");
		return;
	}
	SAY(p->driver.reason,
	    "policy %s%s: the newest such branch alive on %s within what every GPU supports (%s) is "
	    "R%u; newest %s runfile of it in this catalog (of %s)%s",
	    policy, pinned_by_gpu ? " (pinned by a gpus.d override)" : "", p->today, range, branch, rarch,
	    gb_catalog_in_force()->date, ubuntu_sb ? "; limited to branches Ubuntu signs (Secure Boot)" : "");
}

/* A pinned version (the site, the profile, or the distribution's own):
 * its runfile and branch, within what the GPUs support; NULL refused. */
static const struct gb_branch *pinned_version_branch(struct gb_plan *p, const char *pin_version, unsigned lo,
                                                     unsigned hi, const char *rarch, const struct gb_site_config *site)
{
	unsigned b = version_branch(pin_version);
	p->driver.runfile = gb_catalog_runfile(pin_version, rarch);
	if (!p->driver.runfile) {
		refuse(p, GB_EXIT_USAGE, "pinned driver %s is not a known %s runfile in the catalog", pin_version,
		       rarch);
		return NULL;
	}
	if (b < lo || (hi && b > hi)) {
		char hb[24] = " and newer";
		if (hi)
			snprintf(hb, sizeof(hb), " to R%u", hi);
		refuse(p, GB_EXIT_UNSUPPORTED_GPU, "pinned driver %s is outside what the GPUs support (R%u%s)",
		       pin_version, lo, hb);
		return NULL;
	}
	p->driver.branch = b;
	if (streq(p->in.method, "distro"))
		SAY(p->driver.reason, "%s %s packages %s itself (%s asks for the distribution's driver)", p->in.os_id,
		    p->in.os_version, pin_version, p->in.method_by);
	else
		SAY(p->driver.reason, "pinned to %s by %s; a real %s runfile", pin_version,
		    site && site->pinned_driver[0] ? "the site configuration" : "the profile", rarch);
	return gb_catalog_branch(b);
}

/* The distribution's packages may lack the open module (Debian 12: its open
 * module no longer builds against bookworm's kernel; data/SOURCES.md). */
static void distro_flavor(struct gb_plan *p, const char *need_open_by)
{
	const struct gb_distro *dd = gb_plan_distro(p);
	if (!dd || dd->distro_open || p->driver.flavor != GB_DRIVER_OPEN)
		return;
	if (need_open_by) {
		refuse(p, GB_EXIT_UNSUPPORTED_GPU,
		       "%s needs the open kernel module, which %s %s's own packages do not provide at %s; use --method "
		       "packages",
		       need_open_by, p->in.os_id, p->in.os_version, p->driver.version);
		return;
	}
	p->driver.flavor = GB_DRIVER_PROPRIETARY;
	SAY(p->driver.flavor_reason,
	    "%s %s packages %s with the proprietary module only (its open module, 535.261.03, no longer builds "
	    "against the release's current kernel)",
	    p->in.os_id, p->in.os_version, p->driver.version);
}

/* The version the distribution packages (--method distro), or NULL refused. */
static const char *distro_driver(struct gb_plan *p)
{
	const struct gb_distro *dd = gb_plan_distro(p);
	if (dd && dd->distro_driver)
		return dd->distro_driver;
	refuse(p, GB_EXIT_UNSUPPORTED,
	       "%s: %s %s packages no NVIDIA driver gpuboot knows (Debian 12 and 13 do); use --method packages or "
	       "runfile",
	       p->in.method_by, p->in.os_id[0] ? p->in.os_id : "this system", p->in.os_version);
	return NULL;
}

/* Where an ageing branch moves to: the newest lts branch alive, else
 * production, in the GPUs' window; 0 = none. */
static unsigned supported_branch(const struct gb_plan *p, unsigned lo, unsigned hi, const char *rarch, bool ubuntu_sb)
{
	const struct gb_branch *s = newest_branch(p, GB_POLICY_LTS, 0, lo, hi, rarch, ubuntu_sb);
	if (!s)
		s = newest_branch(p, GB_POLICY_PRODUCTION, 0, lo, hi, rarch, ubuntu_sb);
	return s ? s->branch : 0;
}

/* The plan's own branch is past its end of life (a pin, the distribution's
 * packages, the GPUs' last branch): why it is still the plan's, and what to
 * do instead: the branch-eol warning's words. */
static void say_target_eol(struct gb_plan *p, const char *pinned_by, const char *hi_by)
{
	const struct gb_branch *s = p->driver.supported ? gb_catalog_branch(p->driver.supported) : NULL;
	char to[96] = "no branch alive today supports these GPUs";

	if (s)
		snprintf(to, sizeof(to), "R%u (%s, supported to %s)", s->branch, gb_branch_type_to_string(s->type),
		         s->eol ? s->eol : "a date not yet announced");
	if (streq(p->in.method, "distro")) {
		SAY(p->driver.eol_why, "%s %s's own packages (%s distro) carry no newer branch", p->in.os_id,
		    p->in.os_version, p->in.method_by);
		if (s)
			SAY(p->driver.eol_fix,
			    "%s installs %s; or move to a release whose own packages carry a supported branch",
			    gb_plan_other_methods(p), to);
		else
			SAY(p->driver.eol_fix, "%s", to);
	} else if (pinned_by) {
		SAY(p->driver.eol_why, "%s pins it", pinned_by);
		SAY(p->driver.eol_fix, "%s%s", s ? "raise the pin to a supported branch: " : "", to);
	} else {
		SAY(p->driver.eol_why, "it is the last branch of %s", hi_by ? hi_by : "these GPUs");
		SAY(p->driver.eol_fix,
		    "no branch alive today supports %s: NVIDIA fixes its driver no more; retire the GPU, or accept the "
		    "risk",
		    hi_by ? hi_by : "these GPUs");
	}
}

static void decide_driver(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site)
{
	unsigned lo = 0, hi = 0, pinned_gpu = 0;
	const char *lo_by = NULL, *hi_by = NULL;
	const char *rarch = gb_cpu_arch_target(p->in.arch)->name;
	const struct gb_branch *chosen = NULL;
	char policy_buf[40];
	const char *policy = gb_policy_to_string(prof, policy_buf, sizeof(policy_buf));
	bool ubuntu_sb = p->in.secure_boot == 1 && streq(p->in.os_id, "ubuntu") &&
	                 !(site && site->signing_key && site->signing_cert);
	bool need_open = false, need_prop = false;
	const char *need_open_by = NULL, *need_prop_by = NULL;
	enum gb_branch_policy pol = prof->policy;
	unsigned pin_branch = prof->pinned_branch;
	const char *pin_version = prof->pinned_version;

	if (site && site->pinned_driver[0]) {
		pol = GB_POLICY_VERSION;
		pin_version = site->pinned_driver;
		policy = site->pinned_driver;
	}
	if (streq(p->in.method, "distro")) {
		/* The distribution's own packages: their version is the driver. */
		pin_version = distro_driver(p);
		if (!pin_version)
			return;
		pol = GB_POLICY_VERSION;
		policy = pin_version;
	}
	for (size_t i = 0; i < p->n_gpus; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		if (g->min_branch > lo) {
			lo = g->min_branch;
			lo_by = g->name;
		}
		if (g->last_branch && (!hi || g->last_branch < hi)) {
			hi = g->last_branch;
			hi_by = g->name;
		}
		if (g->pinned_branch)
			pinned_gpu = g->pinned_branch;
		if (g->open_required && !need_open) {
			need_open = true;
			need_open_by = g->name;
		}
		if (g->open == GB_OPEN_NO && !need_prop) {
			need_prop = true;
			need_prop_by = g->name;
		}
	}
	if (hi && lo > hi) {
		refuse(p, GB_EXIT_UNSUPPORTED_GPU,
		       "no driver branch supports this GPU mix: %s needs R%u or newer, %s's last branch is R%u", lo_by,
		       lo, hi_by, hi);
		return;
	}
	if (need_open && need_prop) {
		refuse(p, GB_EXIT_UNSUPPORTED_GPU,
		       "no module flavour fits this GPU mix: %s needs the open kernel module, %s only runs the "
		       "proprietary one",
		       need_open_by, need_prop_by);
		return;
	}
	if (pinned_gpu)
		pin_branch = pinned_gpu, pol = GB_POLICY_BRANCH;

	if (pol == GB_POLICY_VERSION) {
		chosen = pinned_version_branch(p, pin_version, lo, hi, rarch, site);
		if (!chosen)
			return;
	} else {
		chosen = newest_branch(p, pol, pin_branch, lo, hi, rarch, ubuntu_sb);
		if (!chosen && pol != GB_POLICY_BRANCH && hi) {
			/* The GPUs' last branch is older than any branch of that kind: take it. */
			const struct gb_runfile *rf = gb_catalog_newest_runfile(hi, rarch);
			if (rf)
				chosen = gb_catalog_branch(hi);
			if (chosen)
				SAY(p->driver.reason,
				    "%s's last branch is R%u (legacy, no longer %s); newest %s runfile of it in this "
				    "catalog (of %s)",
				    hi_by, hi, policy, rarch, gb_catalog_in_force()->date);
		}
		if (!chosen) {
			refuse_no_branch(p, policy, pol == GB_POLICY_BRANCH ? pin_branch : 0, lo, hi, rarch, ubuntu_sb);
			return;
		}
		p->driver.branch = chosen->branch;
		p->driver.runfile = gb_catalog_newest_runfile(chosen->branch, rarch);
		if (!p->driver.reason[0])
			say_branch_reason(p, policy, pol == GB_POLICY_BRANCH, pinned_gpu != 0, lo, hi, chosen->branch,
			                  rarch, ubuntu_sb);
	}
	SAY(p->driver.version, "%s", p->driver.runfile->version);
	if (chosen) {
		p->driver.branch_type = gb_branch_type_to_string(chosen->type);
		p->driver.eol = chosen->eol;
	}
	p->driver.supported = supported_branch(p, lo, hi, rarch, ubuntu_sb);
	if (chosen && !branch_alive(p, chosen))
		say_target_eol(p,
		               pol == GB_POLICY_VERSION
		                   ? (site && site->pinned_driver[0] ? "the site configuration ([pins] driver)"
		                                                     : "the profile ([driver] branch)")
		               : pol == GB_POLICY_BRANCH
		                   ? (pinned_gpu ? "a gpus.d override (branch)" : "the profile ([driver] branch)")
		                   : NULL,
		               hi_by);

	decide_flavor(p, prof, need_open_by, need_prop_by);
	if (streq(p->in.method, "distro"))
		distro_flavor(p, need_open_by);
}

/* ---- distribution, method, kernel, Secure Boot ---- */

static bool platform_check(struct gb_plan *p)
{
	const struct gb_cpu_arch *arch = gb_cpu_arch_find(p->in.arch);
	const struct gb_os *os;

	if (streq(p->in.libc, "musl")) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s uses musl libc; NVIDIA's driver userspace is built for glibc and cannot load there; use a "
		       "glibc distribution (Ubuntu, Debian, RHEL, Amazon Linux)",
		       p->in.os_id[0] ? p->in.os_id : "this system");
		return false;
	}
	if (!arch || !arch->supported) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "CPU architecture '%s' is not supported: NVIDIA's data-center drivers are built for x86_64 and "
		       "aarch64",
		       p->in.arch[0] ? p->in.arch : "unknown");
		return false;
	}
	os = gb_os_find(p->in.os_id);
	if (os && os->min_version && p->in.os_version[0] && gb_version_cmp(p->in.os_version, os->min_version) < 0) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s %s is older than the oldest supported release (%s %s): NVIDIA publishes no driver for it",
		       p->in.os_id, p->in.os_version, os->id, os->min_version);
		return false;
	}
	return true;
}

/* Secure Boot with a site key: the kernel must already trust its
 * certificate (one of its keys in /proc/keys has the certificate's key id),
 * or no module gpuboot signs could load: refuse before anything changes. */
static int decide_site_key(struct gb_plan *p, const struct gb_site_config *site)
{
	const char *id = site->signing_cert_key_id;
	p->secure_boot.strategy = GB_SB_SIGN_WITH_KEY;
	if (!p->in.kernel_keys_known || p->in.target_os) {
		SAY(p->secure_boot.reason,
		    "Secure Boot is on: modules are signed with the site key %s (certificate %s, key id %s); the "
		    "kernel's keys are not known here, so its trust is checked when the module loads",
		    site->signing_key, site->signing_cert_subject, id);
		return 0;
	}
	for (size_t i = 0; i < p->in.n_kernel_keys; i++)
		if (id[0] && strcasecmp(p->in.kernel_keys[i].key_id, id) == 0) {
			SAY(p->secure_boot.reason,
			    "Secure Boot is on: modules are signed with the site key %s, whose certificate the kernel "
			    "trusts ('%s: %s' in /proc/keys)",
			    site->signing_key, p->in.kernel_keys[i].name, p->in.kernel_keys[i].key_id);
			return 0;
		}
	refuse(p, GB_EXIT_UNSUPPORTED,
	       "Secure Boot is on and the kernel does not trust the site certificate '%s' (key id %s, [secure_boot] "
	       "signing_cert); enrol it in the firmware db (GCE: --signature-database-file, AWS: uefi-data, QEMU: "
	       "virt-fw-vars --add-db) or as a MOK",
	       site->signing_cert_subject, id);
	return -1;
}

/* The kernel's key (/proc/keys) named NAME, or NULL. */
static const char *kernel_key_named(const struct gb_plan *p, const char *name)
{
	for (size_t i = 0; i < p->in.n_kernel_keys; i++)
		if (name[0] && streq(p->in.kernel_keys[i].name, name))
			return p->in.kernel_keys[i].key_id;
	return NULL;
}

/* Secure Boot and a kept driver whose module for this kernel is already
 * signed (the site's prebuilt module from the mirror, or one signed before):
 * it loads as it is when the kernel trusts its signer; no key is needed on
 * the node. A signer the kernel does not hold is refused before any change. */
static int decide_signed_kept(struct gb_plan *p)
{
	const char *signer = p->in.installed.signer, *id;
	p->secure_boot.strategy = GB_SB_MODULES_SIGNED;
	if (!p->in.kernel_keys_known) {
		SAY(p->secure_boot.reason,
		    "Secure Boot is on: the installed modules are signed by '%s'; the kernel's keys are not known "
		    "here, so its trust is checked when the module loads",
		    signer);
		return 0;
	}
	id = kernel_key_named(p, signer);
	if (id) {
		SAY(p->secure_boot.reason,
		    "Secure Boot is on: the installed modules are signed by '%s', whose certificate the kernel "
		    "trusts ('%s: %s' in /proc/keys); they load as they are",
		    signer, signer, id);
		return 0;
	}
	refuse(p, GB_EXIT_UNSUPPORTED,
	       "Secure Boot is on and the installed NVIDIA modules are signed by '%s', which the kernel does not "
	       "trust (not in /proc/keys); enrol that certificate in the firmware db (GCE: "
	       "--signature-database-file, AWS: uefi-data, QEMU: virt-fw-vars --add-db) or as a MOK, or set "
	       "[secure_boot] signing_key and signing_cert (an enrolled MOK) in gpuboot.conf to sign them again",
	       signer);
	return -1;
}

/* Secure Boot with the site's certificate and no key ([secure_boot]
 * signing_cert alone): the modules come signed from the site mirror
 * (gpuboot modules build --module-key/--module-cert), checked against this
 * certificate; the kernel must trust it. Whether the mirror has them is
 * known after the method (mirror_signed_check). */
static int decide_site_cert(struct gb_plan *p, const struct gb_site_config *site)
{
	const char *id = site->signing_cert_key_id;
	p->secure_boot.strategy = GB_SB_MODULES_SIGNED;
	if (p->in.kernel_keys_known && !p->in.target_os) {
		bool trusted = false;
		for (size_t i = 0; i < p->in.n_kernel_keys; i++)
			trusted |= id[0] && strcasecmp(p->in.kernel_keys[i].key_id, id) == 0;
		if (!trusted) {
			refuse(p, GB_EXIT_UNSUPPORTED,
			       "Secure Boot is on and the kernel does not trust the site certificate '%s' (key id %s, "
			       "[secure_boot] signing_cert); enrol it in the firmware db (GCE: "
			       "--signature-database-file, AWS: uefi-data, QEMU: virt-fw-vars --add-db) or as a MOK",
			       site->signing_cert_subject, id);
			return -1;
		}
	}
	SAY(p->secure_boot.reason,
	    "Secure Boot is on: the modules come from the site mirror signed with the site certificate '%s' "
	    "(key id %s%s); no signing key on this node",
	    site->signing_cert_subject, id,
	    p->in.kernel_keys_known && !p->in.target_os ? ", which the kernel trusts" : "");
	return 0;
}

/* After the method: [secure_boot] signing_cert alone needs the mirror's
 * signed modules; DKMS would build modules nothing here can sign. */
static void mirror_signed_check(struct gb_plan *p, const struct gb_site_config *site)
{
	if (p->refusal_code || p->secure_boot.strategy != GB_SB_MODULES_SIGNED || p->driver.action == GB_ACTION_KEEP ||
	    !(site && site->signing_cert && !site->signing_key))
		return;
	if (p->driver.module_source && streq(p->driver.module_source, "mirror"))
		return;
	refuse(p, GB_EXIT_UNSUPPORTED,
	       "Secure Boot is on and gpuboot.conf gives [secure_boot] signing_cert without signing_key (modules "
	       "signed at the site), but the modules would be built here: %s; publish this kernel's module signed "
	       "with that certificate (gpuboot modules build --module-key --module-cert) or give this node "
	       "signing_key too",
	       p->driver.module_source_reason[0] ? p->driver.module_source_reason
	                                         : "the distro method's DKMS is the only source for this method");
}

/* Ubuntu's signed precompiled modules for the kernel the node runs: the
 * package of that kernel's ABI, linux-modules-nvidia-<branch>-server[-open]-
 * <release> ("linux-modules-nvidia-580-server-open-6.8.0-48-generic", which
 * Depends on linux-image-6.8.0-48-generic and nvidia-kernel-common-580-server).
 * Not the flavour's metapackage (...-580-server-open-generic): that one
 * Depends on the ABI package of the archive's newest kernel of the flavour,
 * which pulls that kernel's image too: the modules of a kernel the node does
 * not run (README, "Ubuntu's archive"). The flavour alone only where the
 * release is not known. */
static void ubuntu_modules_package(struct gb_plan *p)
{
	SAY(p->secure_boot.package, "linux-modules-nvidia-%u-server%s-%s", p->driver.branch,
	    p->driver.flavor == GB_DRIVER_OPEN ? "-open" : "",
	    p->in.kernel_release[0] ? p->in.kernel_release : p->in.kernel_flavour);
}

/* Secure Boot: Ubuntu's signed precompiled modules (returns 1), a site
 * signing key or not needed (0), or a refusal (-1). */
static int decide_secure_boot(struct gb_plan *p, const struct gb_site_config *site, bool ubuntu)
{
	if (p->in.secure_boot == 1) {
		if (site && site->signing_key && site->signing_cert) {
			return decide_site_key(p, site);
		} else if (!ubuntu && p->driver.action == GB_ACTION_KEEP && p->in.installed.signer[0]) {
			return decide_signed_kept(p);
		} else if (!ubuntu && site && site->signing_cert && p->driver.action != GB_ACTION_KEEP) {
			return decide_site_cert(p, site);
		} else if (ubuntu && p->in.kernel_flavour[0] && p->driver.action == GB_ACTION_KEEP) {
			/* a kept driver's modules are loaded or load as they are */
			p->secure_boot.strategy = GB_SB_UBUNTU_SIGNED;
			ubuntu_modules_package(p);
			SAY(p->secure_boot.reason,
			    "Secure Boot is on: the kept driver's modules (Ubuntu's precompiled modules for the %s "
			    "kernel "
			    "are signed with Canonical's key, which shim trusts)",
			    p->in.kernel_flavour);
		} else if (ubuntu && p->in.kernel_flavour[0]) {
			/* Ubuntu's archive carries the driver at its own versions
			 * (580.159.03-0ubuntu..., not the catalog's NVIDIA versions), and
			 * no install method of this gpuboot installs from it yet (issue
			 * #27): refused before any change, with what works today. */
			ubuntu_modules_package(p);
			refuse(p, GB_EXIT_UNSUPPORTED,
			       "Secure Boot is on: the modules must be Ubuntu's precompiled ones signed with "
			       "Canonical's key (%s with nvidia-driver-%u-server%s from Ubuntu's archive), which this "
			       "gpuboot does not install yet; install those two packages first (gpuboot then keeps and "
			       "verifies them), or set [secure_boot] signing_key and signing_cert (an enrolled MOK) in "
			       "gpuboot.conf, or turn Secure Boot off",
			       p->secure_boot.package, p->driver.branch,
			       p->driver.flavor == GB_DRIVER_OPEN ? "-open" : "");
			p->secure_boot.package[0] = '\0';
			return -1;
		} else {
			refuse(p, GB_EXIT_UNSUPPORTED,
			       "Secure Boot is on and %s has no signed NVIDIA modules; set [secure_boot] signing_key "
			       "and signing_cert (an enrolled MOK) in gpuboot.conf, or turn Secure Boot off",
			       p->in.os_id[0] ? p->in.os_id : "this distribution");
			return -1;
		}
	} else {
		p->secure_boot.strategy = GB_SB_NOT_NEEDED;
		SAY(p->secure_boot.reason, "%s",
		    p->in.secure_boot == 0 ? "Secure Boot is off"
		    : p->in.target_os      ? "target OS: Secure Boot is checked at first boot"
		                           : "not booted with EFI: no Secure Boot");
	}
	return p->in.secure_boot == 1 && p->secure_boot.strategy == GB_SB_UBUNTU_SIGNED;
}

/* One package of the driver's list, held with the driver and installed at
 * its exact version, unless it keeps versions of its own (NVIDIA's pinning
 * package, NVLSM, infiniband-diags); a branch lock or a module stream as
 * its kind says (effect/pkg.h). */
static struct gb_pkg_spec *add_package(struct gb_plan *p, enum gb_pkg_kind kind, bool own_version, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static struct gb_pkg_spec *add_package(struct gb_plan *p, enum gb_pkg_kind kind, bool own_version, const char *fmt, ...)
{
	struct gb_pkg_spec *s;
	va_list ap;

	if (p->driver.n_packages >= ARRAY_SIZE(p->driver.packages))
		return NULL;
	s = &p->driver.packages[p->driver.n_packages++];
	*s = (struct gb_pkg_spec){ .hold = true, .kind = kind };
	va_start(ap, fmt);
	vsnprintf(s->name, sizeof(s->name), fmt, ap);
	va_end(ap);
	if (!own_version)
		gb_strscpy(s->version, sizeof(s->version), p->driver.version);
	return s;
}

/* Debian's own packages (contrib, non-free, non-free-firmware): the module
 * built by DKMS, the GSP firmware, the userspace at the same version (the
 * catalog's gb_debian_drivers and gb_debian_userspace, which the install
 * installs). */
static void method_distro(struct gb_plan *p, const struct gb_site_config *site)
{
	const struct gb_debian_driver *deb = gb_debian_driver_find(gb_driver_flavor_name(p->driver.flavor));
	bool mirror;

	p->driver.method = GB_METHOD_DISTRO;
	gb_plan_decide_module_source(p, site); /* the mirror's prebuilt packages, or DKMS */
	mirror = p->driver.n_prebuilt > 0;
	SAY(p->driver.method_reason,
	    "%s: %s %s's own NVIDIA packages from contrib and non-free (those components added to the existing "
	    "sources), the %s module %s for each installed kernel, held at %s",
	    p->in.method_by, p->in.os_id, p->in.os_version, gb_driver_flavor_name(p->driver.flavor),
	    mirror ? "from the site mirror's prebuilt package" : "built by DKMS", p->driver.version);
	if (deb && !mirror)
		add_package(p, GB_PKG_NAME, false, "%s", deb->kmod_package);
	for (size_t i = 0; gb_debian_userspace[i]; i++)
		add_package(p, GB_PKG_NAME, false, "%s", gb_debian_userspace[i]);
	for (size_t i = 0; i < p->driver.n_prebuilt; i++) {
		struct gb_pkg_spec *sp = add_package(p, GB_PKG_NAME, true, "%s", p->driver.prebuilt[i].package);
		if (sp)
			SAY(sp->version, "%s", p->driver.prebuilt[i].version);
	}
}

/* Whether the machine needs the fabric manager, and why (a literal). */
static const char *fabricmanager_need(const struct gb_plan *p, const struct gb_profile *prof)
{
	if (prof->fabricmanager == GB_NO || !(p->in.n_nvswitches > 0 || prof->fabricmanager == GB_YES))
		return NULL;
	/* --target-gpu assumes a board's switches: said as an assumption */
	return !p->in.n_nvswitches ? "the profile asks for it"
	       : p->in.target_gpu  ? "NVSwitches assumed (an 8-GPU HGX board, --target-gpu)"
	       : p->in.nvswitches_assumed
	           ? "NVSwitches assumed (eight GPUs of an HGX board whose switches sit behind its ConnectX bridge, "
	             "no PCI functions of this host)"
	           : "NVSwitches present";
}

/* The fabric manager's package beside the driver's, at the driver's exact
 * version (data/nvswitch-facts-2026-12.md): NVIDIA's repositories name it
 * nvidia-fabricmanager from R580, before that nvidia-fabricmanager-<branch>
 * (apt) and nvidia-fabric-manager (rpm); Ubuntu's archive keeps the branch
 * in the name (nvidia-fabricmanager-580). */
static void add_fabricmanager(struct gb_plan *p, bool rpm, bool ubuntu_archive)
{
	if (!p->fm_need || p->driver.n_packages >= ARRAY_SIZE(p->driver.packages))
		return;
	if (ubuntu_archive || (!rpm && p->driver.branch < 580))
		SAY(p->fm_package, "nvidia-fabricmanager-%u", p->driver.branch);
	else
		SAY(p->fm_package, "%s",
		    rpm && p->driver.branch < 580 ? "nvidia-fabric-manager" : "nvidia-fabricmanager");
	add_package(p, GB_PKG_NAME, false, "%s", p->fm_package);
	/* NVLSM and the InfiniBand tools it needs, at their own versions (NVIDIA's
	 * driver container installs "nvlsm infiniband-diags" unpinned) */
	if (p->nvlsm && p->driver.n_packages + 2 <= ARRAY_SIZE(p->driver.packages)) {
		add_package(p, GB_PKG_NAME, true, "nvlsm");
		add_package(p, GB_PKG_NAME, true, "infiniband-diags");
	}
}

/* IMEX beside the driver on a GB200/GB300 compute tray, at the driver's
 * exact version (data/nvswitch-facts-2026-12.md): nvidia-imex from R580,
 * nvidia-imex-<branch> for R550-R570 (apt and rpm alike), and in Ubuntu's
 * archive; none before R550. */
static void add_imex(struct gb_plan *p, bool ubuntu_archive)
{
	if (!p->imex || p->driver.branch < 550)
		return;
	if (ubuntu_archive || p->driver.branch < 580)
		SAY(p->imex_package, "nvidia-imex-%u", p->driver.branch);
	else
		SAY(p->imex_package, "nvidia-imex");
	if (!add_package(p, GB_PKG_NAME, false, "%s", p->imex_package))
		p->imex_package[0] = '\0';
}

/* A GB200 or GB300 compute tray: a Grace superchip of Blackwell, whose
 * GPUs reach the other trays of its NVL72 rack through the NVLink switch
 * trays; memory shared across trays needs IMEX. */
static bool needs_imex(const struct gb_plan *p)
{
	for (size_t i = 0; i < p->n_gpus; i++)
		if (is_grace_board(p->gpus[i].device) && p->gpus[i].arch == GB_ARCH_BLACKWELL)
			return true;
	return false;
}

/* NVLSM: the fabric manager of a board whose switches sit behind its
 * ConnectX bridge (B200, B300: NVLink5) needs NVIDIA's NVLink Subnet Manager,
 * or it fails (NV_WARN_NOTHING_TO_DO); the fabric manager's unit starts it. */
static bool needs_nvlsm(const struct gb_plan *p)
{
	for (size_t i = 0; p->fm_need && i < p->n_gpus; i++) {
		const struct gb_gpu_traits *t = gb_catalog_traits(p->gpus[i].device);
		if (t && t->nvswitches_hidden)
			return true;
	}
	return false;
}

/* A kept driver on NVSwitches whose fabric manager is missing or of another
 * version: the fabric manager alone at the driver's exact version from
 * NVIDIA's repository, held beside it, nothing of the driver touched (no
 * driver package, no DKMS, no module rebuilt). Where nothing can bring it
 * (Debian's own driver: Debian packages none; no NVIDIA repository, or
 * none whose key gpuboot pins) the plan refuses before any change, naming
 * the fix. --repair installs no package (a kernel hook runs inside the
 * package manager's transaction): the load says what is missing. */
static void fm_for_kept(struct gb_plan *p, const struct gb_distro *d, bool apt, bool dnf)
{
	const char *have = p->in.fabricmanager_installed[0] ? p->in.fabricmanager_installed : "none is installed";

	if (!p->fm_need || p->in.repair || streq(p->in.fabricmanager_installed, p->driver.version))
		return;
	if (streq(p->in.os_id, "debian") && d && d->distro_driver &&
	    gb_plan_version_branch(d->distro_driver) == p->driver.branch) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s: the fabric manager must run at the kept driver's version %s (%s), and R%u is %s %s's own "
		       "driver, whose packages bring no fabric manager; use --method packages to replace the driver "
		       "with NVIDIA's (its %s repository carries nvidia-fabricmanager at the driver's version)",
		       p->fm_need, p->driver.version, have, p->driver.branch, p->in.os_id, p->in.os_version, d->repo);
		return;
	}
	if (p->in.offline) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s: the fabric manager must run at the kept driver's version %s (%s), and --offline downloads "
		       "nothing; run gpuboot once with the network or a mirror (it installs nvidia-fabricmanager %s "
		       "alone from NVIDIA's repository), or install it first",
		       p->fm_need, p->driver.version, have, p->driver.version);
		return;
	}
	if (!d || !(apt || dnf) || !gb_repo_key_find(d->key_pin)) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s: the fabric manager must run at the kept driver's version %s (%s), and %s; install "
		       "nvidia-fabricmanager %s first (NVIDIA's redistributable archive), or replace the driver "
		       "with one whose method brings it",
		       p->fm_need, p->driver.version, have,
		       d && (apt || dnf) ? "NVIDIA signs its repository with a key gpuboot does not pin yet"
		                         : "NVIDIA publishes no repository gpuboot drives here",
		       p->driver.version);
		return;
	}
	p->driver.fm_only = p->in.fabricmanager_installed[0] ? GB_ACTION_REPLACE : GB_ACTION_INSTALL;
	SAY(p->driver.repo, "%s", d->repo);
	SAY(p->driver.repo_key, "%s", d->key_pin);
	SAY(p->driver.repo_arch, "%s", gb_cpu_arch_target(p->in.arch)->cuda_repo);
	add_fabricmanager(p, dnf, false);
	SAY(p->driver.method_reason,
	    "the installed driver is kept; its fabric manager only (%s): %s %s from NVIDIA's repository "
	    "developer.download.nvidia.com/compute/cuda/repos/%s/%s/ (key pinned by fingerprint), held; no driver "
	    "package, no DKMS, no module rebuilt",
	    p->in.fabricmanager_installed[0] ? "replacing the installed one of another version" : "none is installed",
	    p->fm_package, p->driver.version, p->driver.repo, p->driver.repo_arch);
}

/* How the driver gets onto the machine: kept, runfile, or packages. */
static void decide_method(struct gb_plan *p, const struct gb_distro *d, bool precompiled,
                          const struct gb_site_config *site)
{
	enum gb_pkgmgr pm = gb_pkgmgr_from_string(p->in.pkgmgr);
	bool apt = pm == GB_PKGMGR_APT, dnf = pm == GB_PKGMGR_DNF;
	/* zypper (SLES 15): NVIDIA's sles15 repository when asked for
	 * (--method packages), its metapackage at the driver's version; the
	 * default there stays the runfile */
	bool zyp = pm == GB_PKGMGR_ZYPPER && streq(p->in.method, "packages");

	if (p->driver.action == GB_ACTION_KEEP) {
		p->driver.method = GB_METHOD_NONE;
		SAY(p->driver.method_reason, "the installed driver is kept: nothing to install");
		fm_for_kept(p, d, apt, dnf);
	} else if (streq(p->in.method, "distro")) {
		method_distro(p, site);
	} else if (streq(p->in.method, "runfile")) {
		p->driver.method = GB_METHOD_RUNFILE;
		SAY(p->driver.method_reason, "%s: NVIDIA's .run, verified by sha256, installed with the %s module",
		    p->in.method_by, gb_driver_flavor_name(p->driver.flavor));
	} else if (streq(p->in.method, "packages") && !(d && (apt || dnf || zyp))) {
		refuse(p, GB_EXIT_UNSUPPORTED, "%s packages: NVIDIA publishes no repository gpuboot drives for %s %s",
		       p->in.method_by, p->in.os_id[0] ? p->in.os_id : "this system", p->in.os_version);
	} else if (streq(p->in.method, "packages") && !precompiled && !gb_repo_key_find(d->key_pin)) {
		/* the run would refuse the repository's key: so does the plan, first */
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "%s packages: NVIDIA signs its %s repository with a key gpuboot does not pin yet, so it "
		       "cannot be trusted; use --method runfile%s",
		       p->in.method_by, d->repo, d->distro_driver ? " or --method distro" : "");
	} else if (p->driver.branch <= 470 && !precompiled) {
		const struct gb_branch *lb = gb_catalog_branch(p->driver.branch);
		p->driver.method = GB_METHOD_RUNFILE;
		SAY(p->driver.method_reason,
		    "R%u is a legacy branch%s%s: NVIDIA's repositories carry no packages of it for current releases; "
		    "NVIDIA's .run, verified by sha256, with the %s module",
		    p->driver.branch, lb && lb->eol ? ", past end of life since " : "", lb && lb->eol ? lb->eol : "",
		    gb_driver_flavor_name(p->driver.flavor));
	} else if (precompiled) {
		p->driver.method = GB_METHOD_PACKAGES;
		SAY(p->driver.method_reason,
		    "Ubuntu's archive: signed precompiled modules plus nvidia-driver-%u-server%s", p->driver.branch,
		    p->driver.flavor == GB_DRIVER_OPEN ? "-open" : "");
		add_package(p, GB_PKG_NAME, false, "%s", p->secure_boot.package);
		add_package(p, GB_PKG_NAME, false, "nvidia-driver-%u-server%s", p->driver.branch,
		            p->driver.flavor == GB_DRIVER_OPEN ? "-open" : "");
		add_fabricmanager(p, false, true);
		add_imex(p, true);
	} else if (d && (apt || dnf || zyp) && !gb_repo_key_find(d->key_pin)) {
		p->driver.method = GB_METHOD_RUNFILE;
		SAY(p->driver.method_reason,
		    "NVIDIA signs its %s repository with a key gpuboot does not pin yet: NVIDIA's .run instead, "
		    "verified by sha256, with the %s module",
		    d->repo, gb_driver_flavor_name(p->driver.flavor));
	} else if (d && (apt || dnf || zyp)) {
		p->driver.method = GB_METHOD_PACKAGES;
		SAY(p->driver.repo, "%s", d->repo);
		SAY(p->driver.repo_key, "%s", d->key_pin);
		SAY(p->driver.repo_arch, "%s", gb_cpu_arch_target(p->in.arch)->cuda_repo);
		SAY(p->driver.method_reason,
		    "NVIDIA publishes a repository for %s %s: developer.download.nvidia.com/compute/cuda/repos/%s/%s/ "
		    "(key pinned by fingerprint)",
		    p->in.os_id, p->in.os_version, p->driver.repo, p->driver.repo_arch);
		if (apt) {
			/* NVIDIA's pinning package carries its own version scheme */
			add_package(p, GB_PKG_NAME, true, "nvidia-driver-pinning-%u", p->driver.branch);
			add_package(p, GB_PKG_NAME, false, "%s",
			            p->driver.flavor == GB_DRIVER_OPEN ? "nvidia-open" : "cuda-drivers");
		} else if (zyp) {
			/* SLES: no module streams; the metapackage, locked by zypper addlock
			 * after the install (NVIDIA's driver installation guide, SUSE) */
			add_package(p, GB_PKG_NAME, false, "%s",
			            p->driver.flavor == GB_DRIVER_OPEN ? "nvidia-open" : "cuda-drivers");
		} else if (!d->module_streams) {
			/* RHEL 10 has no module streams: the packages, then a versionlock on the
			 * branch (NVIDIA's driver installation guide r620, Kernel Modules, Table 5). */
			add_package(p, GB_PKG_NAME, false, "%s",
			            p->driver.flavor == GB_DRIVER_OPEN ? "nvidia-open" : "cuda-drivers");
			add_package(p, GB_PKG_BRANCH_LOCK, false, "*nvidia*%u*", p->driver.branch);
		} else {
			struct gb_pkg_spec *m = add_package(p, GB_PKG_STREAM, false, "nvidia-driver");
			if (m)
				SAY(m->stream, "%u-%s", p->driver.branch,
				    p->driver.flavor == GB_DRIVER_OPEN ? "open" : "dkms");
		}
		add_fabricmanager(p, dnf || zyp, false);
		add_imex(p, false);
	} else {
		p->driver.method = GB_METHOD_RUNFILE;
		SAY(p->driver.method_reason, "%s: NVIDIA's .run, verified by sha256 and installed with the %s module",
		    d ? "no package manager gpuboot drives here"
		      : (p->in.os_id[0] ? "no NVIDIA repository for this distribution and release"
		                        : "unknown distribution"),
		    gb_driver_flavor_name(p->driver.flavor));
	}
}

/* The running kernel is older than kmin and the distribution has a newer
 * one: Ubuntu's HWE metapackage, Debian's kernel from backports (image and
 * headers metapackages of the architecture, from that suite). Installed in
 * prepare; the live machine reboots into it. */
static void plan_newer_kernel(struct gb_plan *p, const struct gb_distro *d, bool grace, const char *kmin,
                              const char *why)
{
	const char *debarch = gb_cpu_arch_target(p->in.arch)->deb;
	p->kernel.action = GB_KERNEL_ACTION_INSTALL_HWE;
	p->kernel.reboot_required = true;
	if (d->hwe_suite) {
		SAY(p->kernel.package, "linux-image-%s", debarch);
		SAY(p->kernel.headers, "linux-headers-%s", debarch);
		SAY(p->kernel.suite, "%s", d->hwe_suite);
		SAY(p->kernel.reason,
		    "kernel %s is older than %s (%s); %s's kernel (%s) is new enough: install %s and %s from %s "
		    "(it must be in apt's sources), reboot into it",
		    p->in.kernel_release, kmin, why, d->hwe_suite, d->hwe_kernel, p->kernel.package, p->kernel.headers,
		    d->hwe_suite);
		return;
	}
	if (streq(p->in.kernel_flavour, "nvidia-64k") || grace)
		SAY(p->kernel.package, "linux-nvidia-64k-hwe-%s", p->in.os_version);
	else
		SAY(p->kernel.package, "%s", d->hwe_meta);
	SAY(p->kernel.reason,
	    "kernel %s is older than %s (%s); Ubuntu %s's HWE kernel (%s) is new enough: install %s, reboot into it",
	    p->in.kernel_release, kmin, why, p->in.os_version, d->hwe_kernel, p->kernel.package);
}

static void decide_method_kernel_sb(struct gb_plan *p, const struct gb_site_config *site)
{
	const struct gb_distro *d = gb_plan_distro(p);
	const struct gb_branch *b = gb_catalog_branch(p->driver.branch);
	bool ubuntu = streq(p->in.os_id, "ubuntu");
	bool apt = gb_pkgmgr_from_string(p->in.pkgmgr) == GB_PKGMGR_APT;
	bool precompiled = false;
	char kxy[16] = "", minname[32];
	const char *kmin = b && b->min_kernel ? b->min_kernel : "3.10";
	bool grace = false, site_min = false;
	int r;

	for (size_t i = 0; i < p->n_gpus; i++)
		grace |= is_grace_board(p->gpus[i].device);
	if (grace && streq(p->in.arch, "aarch64"))
		kmin = "6.5";
	if (site && site->kernel_minimum[0] && gb_version_cmp(site->kernel_minimum, kmin) > 0) {
		kmin = site->kernel_minimum;
		site_min = true;
	}

	/* Secure Boot first: it can decide the method. */
	r = decide_secure_boot(p, site, ubuntu);
	if (r < 0)
		return;
	precompiled = r > 0;

	decide_method(p, d, precompiled, site);
	mirror_signed_check(p, site);
	if (p->refusal_code)
		return;

	/* Kernel. */
	SAY(p->kernel.minimum, "%s", kmin);
	p->kernel.action = GB_KERNEL_ACTION_NONE;
	if (!p->in.kernel_known) {
		SAY(p->kernel.reason,
		    "the kernel is not known when planning for a target OS: checked against R%u's minimum %s at first "
		    "boot",
		    p->driver.branch, kmin);
		return;
	}
	gb_kernel_xy(p->in.kernel_release, kxy, sizeof(kxy));
	if (gb_version_cmp(kxy, kmin) < 0) {
		const char *why = site_min ? "the site's [kernel] minimum"
		                  : grace  ? "Grace platform support"
		                           : "the branch's minimum";
		if (apt && d && d->hwe_kernel && (ubuntu ? d->hwe_meta != NULL : d->hwe_suite != NULL) &&
		    gb_version_cmp(d->hwe_kernel, kmin) >= 0)
			plan_newer_kernel(p, d, grace, kmin, why);
		else
			refuse(p, GB_EXIT_UNSUPPORTED,
			       "kernel %s is older than %s (%s), and no newer kernel is known for %s %s",
			       p->in.kernel_release, kmin, why, p->in.os_id, p->in.os_version);
		return;
	}
	if (site_min)
		snprintf(minname, sizeof(minname), "the site's minimum");
	else
		snprintf(minname, sizeof(minname), "R%u's minimum", p->driver.branch);
	if (precompiled) {
		SAY(p->kernel.reason, "kernel %s meets %s %s; precompiled modules need no headers",
		    p->in.kernel_release, minname, kmin);
	} else if (p->driver.action == GB_ACTION_KEEP && p->in.installed.module) {
		SAY(p->kernel.reason, "the kept driver has its module for kernel %s%s: no headers needed",
		    p->in.kernel_release, p->in.installed.loaded ? " (loaded)" : "");
	} else if (!p->in.headers && p->in.custom_kernel) {
		refuse(p, GB_EXIT_UNSUPPORTED,
		       "custom kernel %s: no distribution package can hold its headers, and the modules must be built "
		       "for it; supply its headers under /lib/modules/%s/build, or use a kernel from the distribution",
		       p->in.kernel_release, p->in.kernel_release);
	} else if (!p->in.headers) {
		p->kernel.action = GB_KERNEL_ACTION_INSTALL_HEADERS;
		const struct gb_os *os = gb_os_lookup(p->in.os_id, p->in.os_id_like);
		if (os && os->headers)
			SAY(p->kernel.package, os->headers, p->in.kernel_release);
		SAY(p->kernel.reason, "the modules are built for the running kernel %s, whose headers are missing%s",
		    p->in.kernel_release, p->kernel.package[0] ? "" : ": install them before running gpuboot");
	} else {
		SAY(p->kernel.reason, "kernel %s meets %s %s and its headers are present", p->in.kernel_release,
		    minname, kmin);
	}
}

/* ---- nouveau ---- */

static void decide_nouveau(struct gb_plan *p)
{
	const struct gb_plan_input *in = &p->in;
	if (in->nouveau_loaded && in->nouveau_bound) {
		if (p->kernel.reboot_required) {
			p->nouveau.action = GB_NOUVEAU_ACTION_REBOOT;
			SAY(p->nouveau.reason, "nouveau drives a GPU; it is blacklisted (initramfs rebuilt if it holds "
			                       "nouveau) and the kernel reboot already planned clears it");
		} else {
			p->nouveau.action = GB_NOUVEAU_ACTION_UNLOAD;
			SAY(p->nouveau.reason, "nouveau drives a GPU: blacklist it, rebuild the initramfs if it holds "
			                       "nouveau, unload it; if a console holds it, reboot");
		}
	} else if (in->nouveau_loaded) {
		p->nouveau.action = GB_NOUVEAU_ACTION_UNLOAD;
		SAY(p->nouveau.reason, "nouveau is loaded (no GPU bound): blacklist and unload it");
	} else if (!in->nouveau_blacklisted && p->driver.action == GB_ACTION_KEEP && in->installed.loaded) {
		p->nouveau.action = GB_NOUVEAU_ACTION_NONE;
		SAY(p->nouveau.reason,
		    "the kept driver %s is loaded and nouveau is not: nothing to change (a blacklist "
		    "is written when gpuboot installs a driver)",
		    in->installed.version);
	} else if (!in->nouveau_blacklisted) {
		p->nouveau.action = GB_NOUVEAU_ACTION_BLACKLIST;
		SAY(p->nouveau.reason,
		    "nouveau is not loaded but not blacklisted: blacklist it so it never claims the GPU at boot");
	} else {
		p->nouveau.action = GB_NOUVEAU_ACTION_NONE;
		SAY(p->nouveau.reason, "nouveau is not loaded and already blacklisted");
	}
}

/* ---- CUDA ---- */

/* The profile's CUDA components found in the plan's release's manifest for
 * the platform, each "name version"; the missing ones named in the reason. */
static int cuda_components(struct gb_plan *p, const struct gb_profile *prof)
{
	char dropped[256] = "";
	size_t nd = 0, n = 0;

	p->cuda.components = calloc(1, sizeof(char *));
	if (!p->cuda.components)
		return -ENOMEM;
	for (char **c = prof->cuda_components; c && *c; c++) {
		const struct gb_cuda_component *found = NULL;
		for (size_t i = 0; i < gb_cuda_components_len; i++) {
			const struct gb_cuda_component *x = &gb_cuda_components[i];
			if (streq(x->release, p->cuda.release->manifest) && streq(x->name, *c) &&
			    gb_cuda_component_for(x, p->in.platform))
				found = x;
		}
		if (found) {
			char **nv = realloc(p->cuda.components, (n + 2) * sizeof(char *));
			char buf[96];
			if (!nv)
				return -ENOMEM;
			p->cuda.components = nv;
			snprintf(buf, sizeof(buf), "%s %s", found->name, found->version);
			nv[n] = strdup(buf);
			nv[++n] = NULL;
			if (!nv[n - 1])
				return -ENOMEM;
		} else {
			size_t o = strlen(dropped);
			snprintf(dropped + o, sizeof(dropped) - o, "%s%s", nd++ ? ", " : "", *c);
		}
	}
	if (dropped[0]) {
		size_t o = strlen(p->cuda.reason);
		snprintf(p->cuda.reason + o, sizeof(p->cuda.reason) - o, "; not in %s for %s: %s",
		         p->cuda.release->manifest, p->in.platform, dropped);
	}
	return 0;
}

/* "13.0" -> 13 */
static unsigned cuda_major(const char *v)
{
	unsigned m = 0;
	for (; *v >= '0' && *v <= '9' && m < 1000; v++)
		m = m * 10 + (unsigned)(*v - '0');
	return m;
}

static int decide_cuda(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site, char *err,
                       size_t errsz)
{
	enum gb_arch oldest = GB_ARCH_BLACKWELL;
	const char *oldest_by = NULL;
	const char *pinned = site && site->pinned_cuda[0]   ? site->pinned_cuda
	                     : prof->cuda == GB_CUDA_PINNED ? prof->cuda_version
	                                                    : NULL;
	char skipped[160] = "";
	const struct gb_distro *dd = gb_plan_distro(p);
	unsigned last_major = dd ? dd->cuda_last_major : 0;
	char os_dropped[120] = "";

	if (prof->cuda == GB_CUDA_NONE && !pinned) {
		SAY(p->cuda.reason, "the profile installs no CUDA");
		return 0;
	}
	for (size_t i = 0; i < p->n_gpus; i++)
		if (p->gpus[i].arch < oldest) {
			oldest = p->gpus[i].arch;
			oldest_by = p->gpus[i].name;
		}
	for (size_t i = gb_cuda_releases_len; i > 0 && !p->cuda.release; i--) {
		const struct gb_cuda_release *r = &gb_cuda_releases[i - 1];
		if (pinned) {
			size_t l = strlen(r->version);
			if (strncmp(pinned, r->version, l) != 0 || (pinned[l] && pinned[l] != '.'))
				continue;
			if (!r->manifest) {
				snprintf(err, errsz,
				         "pinned CUDA %s: its redistrib manifest is not in the catalog, so it cannot "
				         "be verified; pin one of 11.8, 12.8, 13.0",
				         pinned);
				return -EINVAL;
			}
			if (gb_version_cmp(r->min_driver, p->driver.version) > 0) {
				refuse(p, GB_EXIT_UNSUPPORTED_GPU,
				       "pinned CUDA %s needs driver %s or newer; the plan's driver is %s", pinned,
				       r->min_driver, p->driver.version);
				return 0;
			}
			if (r->oldest_arch > oldest) {
				refuse(p, GB_EXIT_UNSUPPORTED_GPU, "pinned CUDA %s no longer supports %s (%s)", pinned,
				       arch_name(oldest), oldest_by);
				return 0;
			}
			if (last_major && cuda_major(r->version) > last_major) {
				refuse(
				    p, GB_EXIT_UNSUPPORTED,
				    "pinned CUDA %s does not support %s %s: NVIDIA dropped it from CUDA %u.0 on (the "
				    "release notes); pin CUDA %u.x, or move to a newer release",
				    pinned, p->in.os_id, p->in.os_version, last_major + 1, last_major);
				return 0;
			}
			p->cuda.release = r;
			SAY(p->cuda.reason, "pinned to %s by %s; needs driver >= %s (plan: %s)", r->manifest,
			    site && site->pinned_cuda[0] ? "the site configuration" : "the profile", r->min_driver,
			    p->driver.version);
			break;
		}
		if (gb_version_cmp(r->min_driver, p->driver.version) > 0 || r->oldest_arch > oldest)
			continue;
		if (last_major && cuda_major(r->version) > last_major) {
			SAY(os_dropped, "; CUDA %u dropped %s %s (NVIDIA's CUDA %u.0 release notes)", last_major + 1,
			    p->in.os_id, p->in.os_version, last_major + 1);
			continue;
		}
		if (!r->manifest) {
			size_t o = strlen(skipped);
			snprintf(skipped + o, sizeof(skipped) - o, "%s%s", o ? ", " : "", r->version);
			continue;
		}
		p->cuda.release = r;
		SAY(p->cuda.reason,
		    "newest CUDA with a verified manifest in the catalog that driver %s runs natively (needs >= %s) "
		    "and that still supports %s: %s%s%s%s%s",
		    p->driver.version, r->min_driver, arch_name(oldest), r->manifest, skipped[0] ? "; " : "", skipped,
		    skipped[0] ? " would also run but their manifests are not in the catalog" : "", os_dropped);
	}
	if (!pinned && !p->cuda.release) {
		refuse(
		    p, GB_EXIT_UNSUPPORTED_GPU,
		    "the profile needs CUDA but no CUDA release in the catalog runs on driver %s and supports %s (%s)",
		    p->driver.version, arch_name(oldest), oldest_by);
		return 0;
	}
	if (!p->cuda.release) {
		snprintf(err, errsz, "pinned CUDA %s is not a CUDA release the catalog knows", pinned);
		return -EINVAL;
	}
	SAY(p->cuda.version, "%s", p->cuda.release->manifest);
	return cuda_components(p, prof);
}

/* CUDA again, for the driver the plan now has (a kept one). Under --repair a
 * driver no CUDA in the catalog runs on keeps its CUDA as it is: a repair
 * rebuilds modules, it installs no CUDA. */
static int redecide_cuda(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site, char *err,
                         size_t errsz)
{
	int r;
	gb_strv_free(p->cuda.components);
	memset(&p->cuda, 0, sizeof(p->cuda));
	r = decide_cuda(p, prof, site, err, errsz);
	if (r < 0 || !p->refusal_code || !p->in.repair)
		return r;
	p->refusal_code = 0;
	p->refusal[0] = '\0';
	gb_strv_free(p->cuda.components);
	memset(&p->cuda, 0, sizeof(p->cuda));
	SAY(p->cuda.reason, "--repair keeps driver %s, and no CUDA the profile could take runs on it: none planned",
	    p->driver.version);
	return 0;
}

/* ---- the rest ---- */

static void add_named(struct gb_plan_named *arr, size_t *n, size_t max, const char *name, const char *value,
                      const char *reason)
{
	if (*n >= max)
		return;
	gb_strscpy(arr[*n].name, sizeof(arr[*n].name), name);
	gb_strscpy(arr[*n].value, sizeof(arr[*n].value), value ? value : "");
	gb_strscpy(arr[*n].reason, sizeof(arr[*n].reason), reason);
	(*n)++;
}

/* nvidia-imex after the modules and the fabric manager: its nodes from the
 * site ([imex] nodes), never guessed; without them it is not started (one
 * tray alone needs no IMEX) and the plan warns (imex-not-configured). */
static void decide_imex(struct gb_plan *p)
{
	char r[GB_REASON], pkg[96] = "";

	if (p->imex_package[0])
		SAY(pkg, "; %s is installed with the driver at its version %s and held there", p->imex_package,
		    p->driver.version);
	if (p->n_imex_nodes)
		snprintf(r, sizeof(r),
		         "GB200/GB300 compute tray: IMEX shares GPU memory across the trays of the NVLink domain%s; "
		         "/etc/nvidia-imex/nodes_config.cfg from the site's [imex] nodes (%u), then started after the "
		         "modules",
		         pkg, p->n_imex_nodes);
	else
		snprintf(r, sizeof(r),
		         "GB200/GB300 compute tray: IMEX shares GPU memory across the trays of the NVLink domain%s; "
		         "not configured ([imex] nodes is unset in gpuboot.conf): not started, single-node only",
		         pkg);
	add_named(p->daemons, &p->n_daemons, ARRAY_SIZE(p->daemons), "nvidia-imex", NULL, r);
}

static void decide_daemons_modules(struct gb_plan *p, const struct gb_profile *prof)
{
	char r[GB_REASON];
	bool grace_580 = false;

	add_named(p->daemons, &p->n_daemons, ARRAY_SIZE(p->daemons), "nvidia-persistenced", NULL,
	          "keeps the driver initialised between jobs on a server (no X): fast CUDA start, stable clocks");
	if (p->fm_need) {
		const char *why = p->fm_need;
		bool installs = p->driver.action == GB_ACTION_INSTALL || p->driver.action == GB_ACTION_REPLACE;
		if (p->fm_package[0])
			snprintf(
			    r, sizeof(r),
			    "%s: NVLink through NVSwitches needs the fabric manager, or CUDA fails with error 802; "
			    "%s is installed %s at its version %s and held there%s",
			    why, p->fm_package, p->driver.fm_only ? "beside the kept driver" : "with the driver",
			    p->driver.version,
			    p->nvlsm ? "; NVLSM (nvlsm) and infiniband-diags beside it: the NVLink5 switches "
			               "behind the ConnectX bridge need NVIDIA's NVLink Subnet Manager, which the "
			               "fabric manager's unit starts"
			             : "");
		else
			snprintf(r, sizeof(r),
			         "%s: NVLink through NVSwitches needs the fabric manager, or CUDA fails with error 802",
			         why);
		/* (one at the driver's version already installed, by a package or
		 * by an earlier run, is left as it is) */
		if (installs && !p->fm_package[0] && !p->nvlsm && p->driver.method == GB_METHOD_RUNFILE &&
		    !streq(p->in.fabricmanager_installed, p->driver.version)) {
			const struct gb_plan_redist_offer *o = NULL;
			for (size_t i = 0; i < p->in.n_redist && !o; i++)
				if (streq(p->in.redist[i].version, p->driver.version))
					o = &p->in.redist[i];
			if (o) {
				p->driver.fm_redist = *o;
				SAY(r,
				    "%s: NVLink through NVSwitches needs the fabric manager, or CUDA fails with error "
				    "802; "
				    "the fabricmanager and libnvidia_nscq archives at the driver's version %s are "
				    "placed with "
				    "the driver, from NVIDIA's redistributable manifest %s (sha256 %.16s..., listed in "
				    "the "
				    "site mirror's signed manifest)",
				    why, p->driver.version, o->path, o->sha256);
			}
		}
		if (p->nvlsm)
			add_named(
			    p->daemons, &p->n_daemons, ARRAY_SIZE(p->daemons), "nvlsm", NULL,
			    "NVIDIA's NVLink Subnet Manager: the NVLink5 switches sit behind the board's ConnectX "
			    "bridge; the fabric manager's unit starts it, and fails without it");
		add_named(p->daemons, &p->n_daemons, ARRAY_SIZE(p->daemons), "nvidia-fabricmanager", NULL, r);
		/* The fabric manager runs at exactly the driver's version: a driver
		 * installed by a method that brings none would end at the load.
		 * Refused before any change, unless the site put the fabric
		 * manager of the planned version there. */
		if (installs && !p->fm_package[0] && !p->driver.fm_redist.path[0] &&
		    !streq(p->in.fabricmanager_installed, p->driver.version)) {
			const struct gb_distro *dd = gb_plan_distro(p);
			char have[80];
			SAY(have, "%s",
			    p->in.fabricmanager_installed[0] ? p->in.fabricmanager_installed : "none is installed");
			if (p->driver.method == GB_METHOD_DISTRO)
				refuse(
				    p, GB_EXIT_UNSUPPORTED,
				    "%s: the fabric manager must run at the driver's version %s, and %s %s packages no "
				    "fabric manager (%s); use --method packages: NVIDIA's %s repository carries "
				    "nvidia-fabricmanager at the driver's version",
				    why, p->driver.version, p->in.os_id, p->in.os_version, have,
				    dd ? dd->repo : "NVIDIA's");
			else
				refuse(
				    p, GB_EXIT_UNSUPPORTED,
				    "%s: the fabric manager must run at the driver's version %s, and the %s method "
				    "has no trusted source for it (%s); use --method packages where NVIDIA publishes "
				    "a repository, a signed mirror (--mirror) listing "
				    "compute/nvidia-driver/redist/redistrib_%s.json and its archives (docs/mirror.md), "
				    "or install nvidia-fabricmanager %s first (NVIDIA ships it apart from the .run, "
				    "in that manifest's archives, whose hash gpuboot pins nowhere; %s)",
				    why, p->driver.version, gb_driver_method_name(p->driver.method), have,
				    p->driver.version, p->driver.version,
				    p->nvlsm               ? "NVLSM, which these boards need, is in no archive"
				    : p->in.redist_note[0] ? p->in.redist_note
				                           : "the mirror lists none");
		}
	}
	if (p->imex)
		decide_imex(p);
	add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "nvidia", NULL, "the driver");
	add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "nvidia_uvm", NULL,
	          "unified memory: CUDA needs it");
	add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "nvidia_modeset", NULL, "needed by nvidia_drm");
	add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "nvidia_drm", NULL,
	          prof->graphics ? "graphics: DRM/KMS for Vulkan and EGL"
	                         : "DRM device nodes (container runtimes expect them)");
	if (p->nvlsm)
		add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "ib_umad", NULL,
		          "NVLSM reaches the NVLink5 switches through the ConnectX bridge's InfiniBand management "
		          "datagrams (/dev/infiniband/umad*)");
	if (p->in.mellanox > 0 && prof->gpudirect)
		add_named(p->modules, &p->n_modules, ARRAY_SIZE(p->modules), "nvidia_peermem", NULL,
		          "Mellanox NICs present and the profile wants GPUDirect RDMA");
	for (size_t i = 0; i < p->n_gpus; i++)
		grace_580 |= is_grace_board(p->gpus[i].device) && p->driver.branch >= 580;
	/* the hold-back's stack: the GSP firmware off with the proprietary module,
	 * whatever the action (a run resumed after its install keeps the driver
	 * it installed, and must plan the same parameters) */
	if (p->driver.gsp_off && p->driver.flavor == GB_DRIVER_PROPRIETARY)
		add_named(p->params, &p->n_params, ARRAY_SIZE(p->params), "nvidia", "NVreg_EnableGpuFirmware=0",
		          "the hold-back's stack (AWS's EKS AMI on g4dn, g5, g5g): the proprietary module with the GSP "
		          "firmware off");
	if (grace_580)
		add_named(
		    p->params, &p->n_params, ARRAY_SIZE(p->params), "nvidia", "NVreg_CoherentGPUMemoryMode=driver",
		    "a Grace board (GH200, GB200, GB300) with R580+: the driver manages the GPU's coherent memory "
		    "instead of onlining it as a NUMA node (NVIDIA's CDMM for hardware-coherent platforms)");
}

static void decide_toolkit(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site)
{
	const char *ctk_floor = gb_catalog_ctk_min();

	if (!prof->toolkit) {
		SAY(p->toolkit.reason, "the profile installs no Container Toolkit");
		return;
	}
	p->toolkit.version = site && site->pinned_toolkit[0] ? site->pinned_toolkit : ctk_floor;
	if (gb_version_cmp(p->toolkit.version, ctk_floor) < 0) {
		refuse(p, GB_EXIT_USAGE,
		       "the site pins Container Toolkit %s, older than the floor %s (%s); raise the pin",
		       p->toolkit.version, ctk_floor, gb_catalog_ctk_min_why());
		return;
	}
	if (streq(p->toolkit.version, ctk_floor))
		SAY(p->toolkit.reason,
		    "nvidia-container-toolkit, -base, libnvidia-container-tools, libnvidia-container1 pinned to one "
		    "version, %s (the floor: %s; it has the earlier container-escape fixes too); then nvidia-ctk "
		    "runtime configure and CDI",
		    p->toolkit.version, gb_catalog_ctk_min_why());
	else
		SAY(p->toolkit.reason,
		    "nvidia-container-toolkit, -base, libnvidia-container-tools, libnvidia-container1 pinned to one "
		    "version, %s (site pin, above the floor %s); then nvidia-ctk runtime configure and CDI",
		    p->toolkit.version, ctk_floor);
}

static int decide_verify(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site)
{
	SAY(p->verify.tier, "%s", prof->tier);
	p->verify.min_gpu_memory_gib = prof->min_gpu_memory_gib;
	p->verify.fp64_gate = prof->fp64_gate;
	p->verify.ecc_required = prof->ecc_required;
	p->verify.min_network_gbps = prof->min_network_gbps;
	p->verify.min_disk_write_mbps = prof->min_disk_write_mbps;
	p->verify.skip = calloc(1, sizeof(char *));
	if (!p->verify.skip)
		return -ENOMEM;
	for (char **s = site ? site->skip_checks : NULL; s && *s; s++) {
		size_t n = 0;
		char **nv;
		while (p->verify.skip[n])
			n++;
		nv = realloc(p->verify.skip, (n + 2) * sizeof(char *));
		if (!nv)
			return -ENOMEM;
		p->verify.skip = nv;
		nv[n] = strdup(*s);
		nv[n + 1] = NULL;
		if (!nv[n])
			return -ENOMEM; /* a skip lost would run a check the site turned off */
	}
	SAY(p->verify.reason,
	    "tier %s from the profile; bandwidth and FLOPS thresholds are derived at run time from each device "
	    "(clocks, bus width, SMs), the gates below from the profile",
	    prof->tier);
	return 0;
}

/* One pass of the decisions; keep_why (the second pass): the installed
 * driver is kept though its branch ended, for that reason, fixed by keep_fix. */
static int plan_make(const struct gb_plan_input *in, const struct gb_profile *prof, const struct gb_site_config *site,
                     const struct gb_gpu_overrides *ov, const char *today, const char *keep_why, const char *keep_fix,
                     struct gb_plan *ret, char *err, size_t errsz)
{
	struct gb_plan *p = ret;
	int r;

	memset(p, 0, sizeof(*p));
	p->in = *in;
	gb_strscpy(p->today, sizeof(p->today), today);
	gb_strscpy(p->profile, sizeof(p->profile), prof->name);
	gb_strscpy(p->profile_source, sizeof(p->profile_source), prof->source);
	if (keep_why) {
		p->driver.eol_keep = true;
		SAY(p->driver.eol_why, "%s", keep_why);
		SAY(p->driver.eol_fix, "%s", keep_fix);
	}

	if (!platform_check(p))
		goto out;
	if (in->n_devices == 0) {
		refuse(p, GB_EXIT_NO_GPU,
		       "no NVIDIA GPU found (no PCI function of vendor 10de with a display or 3D class); for an image "
		       "build, plan with --target-gpu MODEL");
		goto out;
	}
	r = resolve_gpus(p, prof, ov);
	if (r < 0)
		goto fail;
	if (p->refusal_code)
		goto out;
	if (prof->fp64_gate && !fp64_check(p))
		goto out;
	decide_driver(p, prof, site);
	if (p->refusal_code)
		goto out;
	/* CUDA for the plan's driver: what an installed driver must also run. */
	r = decide_cuda(p, prof, site, err, errsz);
	if (r < 0)
		goto fail;
	if (p->refusal_code)
		goto out;
	gb_plan_decide_driver_action(p, prof, site);
	if (p->refusal_code || !open_module_exists(p, prof))
		goto out;
	/* A kept driver is the plan's driver: CUDA is decided again for it, so
	 * the reason names it and (--repair keeps any driver) CUDA never needs
	 * a newer one. */
	if (p->driver.action == GB_ACTION_KEEP || p->driver.action == GB_ACTION_REBUILD) {
		r = redecide_cuda(p, prof, site, err, errsz);
		if (r < 0)
			goto fail;
		if (p->refusal_code)
			goto out;
	}
	p->fm_need = fabricmanager_need(p, prof);
	p->nvlsm = needs_nvlsm(p);
	p->imex = needs_imex(p);
	if (p->imex && site && site->n_imex_nodes) {
		SAY(p->imex_nodes, "%s", site->imex_nodes);
		p->n_imex_nodes = site->n_imex_nodes;
	}
	decide_method_kernel_sb(p, site);
	if (p->refusal_code)
		goto out;
	decide_nouveau(p);
	gb_plan_decide_cuda_action(p);
	decide_toolkit(p, prof, site);
	gb_plan_decide_toolkit_action(p, prof);
	decide_daemons_modules(p, prof);
	if (p->refusal_code)
		goto out;
	r = decide_verify(p, prof, site);
	if (r < 0)
		goto fail;
	gb_plan_check_gates(p, prof);
out:
	return 0;
fail:
	gb_plan_done(p); /* what was decided before the failure */
	return r;
}

/* A driver replaced only because its branch ended (lts) must not turn a
 * working machine into a refusal (a kernel the new branch cannot use, a
 * fabric manager of its version missing): then it is kept, and the
 * warning names what stood in the way. */
int gb_plan_make(const struct gb_plan_input *in, const struct gb_profile *prof, const struct gb_site_config *site,
                 const struct gb_gpu_overrides *ov, const char *today, struct gb_plan *ret, char *err, size_t errsz)
{
	char why[GB_REASON], version[32], fix[GB_REASON];
	int r = plan_make(in, prof, site, ov, today, NULL, NULL, ret, err, errsz);

	if (r < 0 || !ret->refusal_code || !ret->driver.eol_replace) {
		if (r >= 0)
			gb_plan_decide_warnings(ret);
		return r;
	}
	gb_strscpy(version, sizeof(version), ret->driver.version);
	SAY(why, "replacing it with %s would be refused (exit %d: %s)", version, ret->refusal_code, ret->refusal);
	SAY(fix, "resolve what refuses %s, then run gpuboot again: under the lts policy it replaces the ended branch",
	    version);
	gb_plan_done(ret);
	r = plan_make(in, prof, site, ov, today, why, fix, ret, err, errsz);
	if (r >= 0)
		gb_plan_decide_warnings(ret);
	return r;
}
