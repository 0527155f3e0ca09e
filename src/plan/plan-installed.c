/* SPDX-License-Identifier: MIT */
/* What is already there is an input: a driver, CUDA or Container Toolkit
 * that satisfies the profile is kept, one that does not is replaced (with
 * the reason naming what is wrong), and nothing is installed over a working
 * machine without a word. replace_installed (never | if-unsatisfied |
 * always) decides; never turns an unsatisfying install into a refusal. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exit-codes.h"
#include "plan-internal.h"
#include "shared/util.h"

/* Why the installed driver does not satisfy the plan's needs, or "" when it does. */
static void driver_unsatisfied(const struct gb_plan *p, const struct gb_profile *prof,
                               const struct gb_site_config *site, char *why, size_t n)
{
	const char *v = p->in.installed.version, *fl = p->in.installed.flavor;
	unsigned b = gb_plan_version_branch(v);

	why[0] = '\0';
	for (size_t i = 0; i < p->n_gpus && !why[0]; i++) {
		const struct gb_plan_gpu *g = &p->gpus[i];
		if (b < g->min_branch)
			snprintf(why, n, "%s needs R%u or newer", g->name, g->min_branch);
		else if (g->last_branch && b > g->last_branch)
			snprintf(why, n, "%s's last branch is R%u", g->name, g->last_branch);
		else if (g->open_required && streq(fl, "proprietary"))
			snprintf(why, n, "%s needs the open kernel module", g->name);
		else if (g->open == GB_OPEN_NO && streq(fl, "open"))
			snprintf(why, n, "%s runs only the proprietary kernel module", g->name);
	}
	if (why[0])
		return;
	if (prof->flavor == GB_FLAVOR_OPEN && streq(fl, "proprietary"))
		snprintf(why, n, "the profile asks for the open kernel module");
	else if (prof->flavor == GB_FLAVOR_PROPRIETARY && streq(fl, "open"))
		snprintf(why, n, "the profile asks for the proprietary kernel module");
	else if (site && site->pinned_driver[0] && !streq(site->pinned_driver, v))
		snprintf(why, n, "the site pins driver %s", site->pinned_driver);
	else if (prof->policy == GB_POLICY_VERSION && prof->pinned_version[0] && !streq(prof->pinned_version, v))
		snprintf(why, n, "the profile pins driver %s", prof->pinned_version);
	else if (prof->policy == GB_POLICY_BRANCH && prof->pinned_branch && prof->pinned_branch != b)
		snprintf(why, n, "the profile pins branch R%u", prof->pinned_branch);
	else if (!p->in.installed.module && !p->in.repair)
		snprintf(why, n, "no kernel module of it for kernel %s (userspace only)",
		         p->in.kernel_release[0] ? p->in.kernel_release : "of the target");
	/* The CUDA the plan installs (chosen for the plan's driver) must run on it. */
	if (!why[0] && p->cuda.release && gb_version_cmp(v, p->cuda.release->min_driver) < 0)
		snprintf(why, n, "CUDA %s needs >= %s", p->cuda.release->version, p->cuda.release->min_driver);
	(void)prof;
}

/* Under the lts policy an installed branch past its end of life does not
 * satisfy: it is replaced where the plan installs a supported branch in
 * its place (its own choice alive, another branch, something it can fetch;
 * true, why set). Elsewhere it is kept, and eol_why/eol_fix say why and
 * what to do (the branch-eol warning). The distribution's own branch
 * (Debian 12's R535, 13's R550) is the distribution's to update: only an
 * explicit --method packages|runfile moves a machine off it (replacing it
 * otherwise broke the Debian guests with no network). */
static bool eol_replaces(struct gb_plan *p, const struct gb_profile *prof, enum gb_replace_policy pol, char *why,
                         size_t n)
{
	const struct gb_branch *ib = gb_catalog_branch(gb_plan_version_branch(p->in.installed.version));
	const struct gb_branch *tb = gb_catalog_branch(p->driver.branch);
	const struct gb_distro *dd = gb_plan_distro(p);
	char to[96], policy[40];

	if (!ib || !ib->eol || !gb_plan_date_past(p, ib->eol))
		return false;
	if (!tb || tb == ib || (tb->eol && gb_plan_date_past(p, tb->eol)))
		return false; /* the plan's own choice ended too: decide_driver said why */
	snprintf(to, sizeof(to), "%s (R%u, %s, supported to %s)", p->driver.version, tb->branch,
	         gb_branch_type_to_string(tb->type), tb->eol ? tb->eol : "a date not yet announced");
	if (p->driver.eol_keep)
		return false; /* replacing it was refused: gb_plan_make said why */
	if (p->in.repair) {
		SAY(p->driver.eol_why, "--repair rebuilds what is installed and never switches branches");
		SAY(p->driver.eol_fix, "a run (not --repair) under the lts policy replaces it with %s", to);
	} else if (prof->policy != GB_POLICY_LTS) {
		SAY(p->driver.eol_why,
		    "the profile's policy %s keeps a working driver (only lts replaces a branch past its end of life)",
		    gb_policy_to_string(prof, policy, sizeof(policy)));
		SAY(p->driver.eol_fix,
		    "[driver] branch = lts in the profile, or replace_installed = always, installs %s", to);
	} else if (pol == GB_REPLACE_NEVER) {
		SAY(p->driver.eol_why, "replace_installed = never");
		SAY(p->driver.eol_fix, "replace_installed = if-unsatisfied lets gpuboot replace it with %s", to);
	} else if (p->in.offline) {
		SAY(p->driver.eol_why, "--offline: %s cannot be downloaded", p->driver.version);
		SAY(p->driver.eol_fix, "run gpuboot once with the network or a mirror: it replaces it with %s", to);
	} else if (!p->in.method[0] && dd && dd->distro_driver &&
	           gb_plan_version_branch(dd->distro_driver) == ib->branch) {
		SAY(p->driver.eol_why,
		    "R%u is %s %s's own driver branch (its packages carry no newer one), and gpuboot moves a machine "
		    "off the distribution's driver only when asked",
		    ib->branch, p->in.os_id, p->in.os_version);
		SAY(p->driver.eol_fix,
		    "%s (or [install] method in gpuboot.conf) replaces it with %s; or move to a release whose own "
		    "packages carry a supported branch",
		    gb_plan_other_methods(p), to);
	} else {
		p->driver.eol_replace = true;
		snprintf(why, n,
		         "R%u reached its end of life on %s (NVIDIA's lifecycle: no more fixes) and the lts policy "
		         "wants a supported branch",
		         ib->branch, ib->eol);
		return true;
	}
	return false;
}

/* The installed driver becomes the plan's driver. */
static void keep_driver(struct gb_plan *p)
{
	const struct gb_branch *b;
	const char *arch = gb_cpu_arch_target(p->in.arch)->name;

	SAY(p->driver.version, "%s", p->in.installed.version);
	p->driver.branch = gb_plan_version_branch(p->in.installed.version);
	b = gb_catalog_branch(p->driver.branch);
	p->driver.branch_type = b ? gb_branch_type_to_string(b->type) : NULL;
	p->driver.eol = b ? b->eol : NULL;
	p->driver.runfile = gb_catalog_runfile(p->in.installed.version, arch);
	if (p->in.installed.flavor[0]) {
		p->driver.flavor = streq(p->in.installed.flavor, "open") ? GB_DRIVER_OPEN : GB_DRIVER_PROPRIETARY;
		SAY(p->driver.flavor_reason, "the installed module is %s", gb_driver_flavor_name(p->driver.flavor));
	}
	SAY(p->driver.reason, "the installed %s is kept (%s)", p->in.installed.version,
	    p->in.installed.loaded ? "loaded" : "on disk");
}

void gb_plan_decide_driver_action(struct gb_plan *p, const struct gb_profile *prof, const struct gb_site_config *site)
{
	const char *v = p->in.installed.version,
	           *fl = p->in.installed.flavor[0] ? p->in.installed.flavor : "flavour unknown";
	enum gb_replace_policy pol =
	    site && site->replace_installed_set ? site->replace_installed : prof->replace_installed;
	char why[GB_REASON / 2];

	if (!v[0]) {
		p->driver.action = GB_ACTION_INSTALL;
		SAY(p->driver.action_reason, "no NVIDIA driver is installed");
		return;
	}
	driver_unsatisfied(p, prof, site, why, sizeof(why));
	if (!why[0])
		eol_replaces(p, prof, pol, why, sizeof(why));
	if (p->in.repair) {
		/* A kernel change: rebuild what is there, never switch branch or flavour. */
		p->driver.action = p->in.installed.module ? GB_ACTION_KEEP : GB_ACTION_REBUILD;
		keep_driver(p);
		SAY(p->driver.action_reason, "--repair: %s %s %s for kernel %s", v, fl,
		    p->in.installed.module ? "has its module" : "is rebuilt",
		    p->in.kernel_release[0] ? p->in.kernel_release : "the target");
		return;
	}
	if (why[0] && pol == GB_REPLACE_NEVER) {
		gb_plan_refuse(
		    p, GB_EXIT_UNSUPPORTED_GPU,
		    "the installed driver %s %s does not satisfy the profile (%s) and replace_installed = never", v, fl,
		    why);
		return;
	}
	if (why[0] || (pol == GB_REPLACE_ALWAYS && !streq(v, p->driver.version))) {
		p->driver.action = GB_ACTION_REPLACE;
		if (why[0])
			SAY(p->driver.action_reason, "%s %s: %s; replaced by %s", v, fl, why, p->driver.version);
		else
			SAY(p->driver.action_reason,
			    "%s %s satisfies the profile, but replace_installed = always; replaced by %s", v, fl,
			    p->driver.version);
		return;
	}
	p->driver.action = GB_ACTION_KEEP;
	keep_driver(p);
	if (p->driver.eol && gb_plan_date_past(p, p->driver.eol))
		SAY(p->driver.action_reason,
		    "%s %s (%s) is kept: every GPU supports R%u, the flavour is allowed, the profile's CUDA runs on "
		    "it; "
		    "R%u ended on %s, but %s (warning branch-eol)",
		    v, fl, p->in.installed.source, p->driver.branch, p->driver.branch, p->driver.eol,
		    p->driver.eol_why[0] ? p->driver.eol_why : "nothing replaces it here");
	else
		SAY(p->driver.action_reason,
		    "%s %s (%s) satisfies the profile: every GPU supports R%u, the flavour is allowed, the profile's "
		    "CUDA "
		    "runs on it",
		    v, fl, p->in.installed.source, p->driver.branch);
}

void gb_plan_decide_cuda_action(struct gb_plan *p)
{
	char want[16];
	const char *dot;

	if (!p->cuda.release) {
		p->cuda.action = GB_ACTION_NONE;
		SAY(p->cuda.action_reason, "no CUDA in the plan");
		return;
	}
	/* "13.0" of "13.0.0": installs live side by side in /usr/local/cuda-X.Y */
	SAY(want, "%s", p->cuda.version);
	dot = strchr(want, '.');
	if (dot && strchr(dot + 1, '.'))
		*strchr(dot + 1, '.') = '\0';
	for (size_t i = 0; i < p->in.n_cuda_installed; i++)
		if (streq(p->in.cuda_installed[i], want)) {
			p->cuda.action = GB_ACTION_KEEP;
			SAY(p->cuda.installed, "%s", want);
			SAY(p->cuda.action_reason,
			    "CUDA %s is installed (/usr/local/cuda-%s) and is what the profile needs", want, want);
			return;
		}
	if (p->in.repair) {
		/* A repair rebuilds and reloads the driver's modules; CUDA stays. */
		p->cuda.action = GB_ACTION_NONE;
		SAY(p->cuda.action_reason, "--repair leaves CUDA as it is%s%s (a run installs %s)",
		    p->in.n_cuda_installed ? ": " : "", p->in.n_cuda_installed ? p->in.cuda_installed[0] : "", want);
		return;
	}
	p->cuda.action = GB_ACTION_INSTALL;
	if (p->in.n_cuda_installed)
		SAY(p->cuda.action_reason, "CUDA %s is installed, the profile needs %s: installed beside it",
		    p->in.cuda_installed[0], want);
	else
		SAY(p->cuda.action_reason, "no CUDA is installed");
}

void gb_plan_decide_toolkit_action(struct gb_plan *p, const struct gb_profile *prof)
{
	const char *have = p->in.toolkit_installed;

	if (!p->toolkit.version) {
		p->toolkit.action = GB_ACTION_NONE;
		SAY(p->toolkit.action_reason, "the profile installs no Container Toolkit");
		return;
	}
	if (!have[0] && p->in.n_engines == 0 && !p->in.engines_unknown && !prof->toolkit_always) {
		p->toolkit.action = GB_ACTION_NONE;
		p->toolkit.version = NULL;
		SAY(p->toolkit.action_reason,
		    "no container engine here (docker, containerd, podman, CRI-O): the toolkit configures the engines "
		    "present; install one first, or set [toolkit] install = always");
		return;
	}
	if (!have[0]) {
		p->toolkit.action = GB_ACTION_INSTALL;
		SAY(p->toolkit.action_reason, "no Container Toolkit is installed");
	} else if (!isdigit((unsigned char)have[0])) {
		/* nvidia-ctk without its package: its version cannot be shown */
		p->toolkit.action = GB_ACTION_REPLACE;
		SAY(p->toolkit.action_reason,
		    "nvidia-ctk is there without its package (version %s): it cannot be shown to be at the floor %s, "
		    "the fix for %s; replaced by %s",
		    have, gb_catalog_ctk_min(), gb_catalog_ctk_min_cve(), p->toolkit.version);
	} else if (gb_version_cmp(have, gb_catalog_ctk_min()) < 0) {
		p->toolkit.action = GB_ACTION_REPLACE;
		SAY(p->toolkit.action_reason,
		    "%s is older than the floor %s, so it is vulnerable to %s; replaced by %s", have,
		    gb_catalog_ctk_min(), gb_catalog_ctk_min_why(), p->toolkit.version);
	} else {
		p->toolkit.action = GB_ACTION_KEEP;
		p->toolkit.version = NULL;
		SAY(p->toolkit.action_reason, "%s is installed, at or above the floor %s (the fix for %s)", have,
		    gb_catalog_ctk_min(), gb_catalog_ctk_min_cve());
	}
}

bool gb_plan_changes_nothing(const struct gb_plan *p)
{
	if (p->refusal_code || p->driver.action == GB_ACTION_UNSET)
		return false;
	return p->driver.action == GB_ACTION_KEEP && p->driver.fm_only == GB_ACTION_UNSET &&
	       p->cuda.action != GB_ACTION_INSTALL &&
	       (p->toolkit.action == GB_ACTION_UNSET || p->toolkit.action == GB_ACTION_KEEP ||
	        p->toolkit.action == GB_ACTION_NONE) &&
	       (p->kernel.action == GB_KERNEL_ACTION_UNSET || p->kernel.action == GB_KERNEL_ACTION_NONE) &&
	       (p->nouveau.action == GB_NOUVEAU_ACTION_UNSET || p->nouveau.action == GB_NOUVEAU_ACTION_NONE);
}
