/* SPDX-License-Identifier: MIT */
/* What ages while a plan stands, warned with what to do: a branch past its
 * end of life or within GB_WARN_EOL_DAYS of it, a catalog older than
 * GB_WARN_CATALOG_DAYS, a Container Toolkit below the floor that the plan
 * leaves in place. The date is the plan's (the operations table's clock),
 * never the machine's time read here. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "plan-internal.h"
#include "shared/util.h"

static struct gb_plan_warning *warn(struct gb_plan *p, const char *code)
{
	struct gb_plan_warning *w;
	if (p->n_warnings >= GB_PLAN_MAX_WARNINGS)
		return NULL;
	w = &p->warnings[p->n_warnings++];
	w->code = code;
	return w;
}

/* Days from a to b ("YYYY-MM-DD"); false when either is not a date. */
static bool days_between(const char *a, const char *b, int64_t *ret)
{
	int64_t x, y;
	if (gb_date_days(a, &x) < 0 || gb_date_days(b, &y) < 0)
		return false;
	*ret = y - x;
	return true;
}

static void catalog_warning(struct gb_plan *p)
{
	const struct gb_catalog_info *c = gb_catalog_in_force();
	struct gb_plan_warning *w;
	const char *text, *fix;
	int64_t age;

	/* an update refused: the catalog in force stays, and the site learns why */
	for (size_t i = 0; (text = gb_catalog_refusal(i, &fix)); i++) {
		if (!(w = warn(p, "catalog-refused")))
			break;
		SAY(w->text, "%s; the catalog in force stays %llu of %s (%s)", text, (unsigned long long)c->version,
		    c->date, c->origin ? c->origin : "built-in");
		SAY(w->fix, "%s", fix);
	}
	if (!days_between(c->date, p->today, &age) || age <= GB_WARN_CATALOG_DAYS || !(w = warn(p, "catalog-stale")))
		return;
	if (c->origin)
		SAY(w->text,
		    "the catalog in force (version %llu, from %s) is of %s, %lld days before %s: driver releases, "
		    "end-of-life dates and security floors published since are not in it, so its choices may be "
		    "outdated",
		    (unsigned long long)c->version, c->origin, c->date, (long long)age, p->today);
	else
		SAY(w->text,
		    "this gpuboot's catalog (version %s) is of %s, %lld days before %s: driver releases, end-of-life "
		    "dates and security floors published since are not in it, so its choices may be outdated",
		    gb_catalog_version, gb_catalog_date, (long long)age, p->today);
	SAY(w->fix,
	    "update gpuboot to a release whose catalog is newer, or publish a newer signed catalog on the mirror "
	    "(docs/catalog.md; one more than %d days old is warned)",
	    GB_WARN_CATALOG_DAYS);
}

static void branch_warning(struct gb_plan *p)
{
	const struct gb_branch *b = gb_catalog_branch(p->driver.branch);
	const struct gb_branch *s = p->driver.supported ? gb_catalog_branch(p->driver.supported) : NULL;
	bool kept = p->driver.action == GB_ACTION_KEEP || p->driver.action == GB_ACTION_REBUILD;
	struct gb_plan_warning *w;
	int64_t left;

	if (!b || !b->eol || !days_between(p->today, b->eol, &left) || left > GB_WARN_EOL_DAYS)
		return;
	if (left < 0) {
		if (!(w = warn(p, "branch-eol")))
			return;
		SAY(w->text,
		    "R%u (%s) reached its end of life on %s, %lld days ago (NVIDIA's lifecycle, in this catalog of "
		    "%s): "
		    "its driver gets no more fixes, security ones included; the plan %s %s: %s",
		    b->branch, gb_branch_type_to_string(b->type), b->eol, (long long)-left, gb_catalog_in_force()->date,
		    kept ? "keeps" : "installs", p->driver.version,
		    p->driver.eol_why[0] ? p->driver.eol_why : "nothing replaces it here");
		SAY(w->fix, "%s", p->driver.eol_fix[0] ? p->driver.eol_fix : "move to a supported branch");
		return;
	}
	if (!(w = warn(p, "branch-eol-soon")))
		return;
	SAY(w->text,
	    "R%u (%s) reaches its end of life on %s, in %lld days (NVIDIA's lifecycle, in this catalog of %s): then "
	    "its driver gets no more fixes, security ones included; the plan %s %s",
	    b->branch, gb_branch_type_to_string(b->type), b->eol, (long long)left, gb_catalog_in_force()->date,
	    kept ? "keeps" : "installs", p->driver.version);
	if (s && s != b && (!s->eol || strcmp(s->eol, b->eol) > 0))
		SAY(w->fix,
		    "move to R%u (%s, supported to %s) before %s: [driver] branch = lts (or R%u) in the profile",
		    s->branch, gb_branch_type_to_string(s->type), s->eol ? s->eol : "a date not yet announced", b->eol,
		    s->branch);
	else
		SAY(w->fix,
		    "no branch in this catalog (of %s) supports these GPUs longer: update gpuboot for a newer one "
		    "before %s, or plan the GPUs' retirement",
		    gb_catalog_in_force()->date, b->eol);
}

/* Below the floor and left in place: the profile installs no toolkit (a
 * profile that does replaces it, with the reason naming the CVE). */
static void toolkit_warning(struct gb_plan *p)
{
	const char *have = p->in.toolkit_installed;
	struct gb_plan_warning *w;
	bool unknown = have[0] && !isdigit((unsigned char)have[0]);

	if (!have[0] || p->toolkit.action != GB_ACTION_NONE)
		return;
	if (!unknown && gb_version_cmp(have, gb_catalog_ctk_min()) >= 0)
		return;
	if (!(w = warn(p, "toolkit-below-floor")))
		return;
	if (unknown)
		SAY(w->text,
		    "an nvidia-ctk without its package is installed (version %s): it cannot be shown to be at the "
		    "floor %s, the fix for %s; the plan leaves it (%s)",
		    have, gb_catalog_ctk_min(), gb_catalog_ctk_min_cve(), p->toolkit.action_reason);
	else
		SAY(w->text,
		    "Container Toolkit %s is installed, below the floor %s: it is vulnerable to %s; the plan leaves it "
		    "(%s)",
		    have, gb_catalog_ctk_min(), gb_catalog_ctk_min_why(), p->toolkit.action_reason);
	SAY(w->fix,
	    "upgrade nvidia-container-toolkit, nvidia-container-toolkit-base, libnvidia-container-tools and "
	    "libnvidia-container1 to %s or newer, or remove them where no container uses "
	    "the GPUs; a profile with [toolkit] install = yes makes gpuboot replace it",
	    gb_catalog_ctk_min());
}

/* A GB200/GB300 compute tray whose IMEX domain the site has not named:
 * the plan invents no node list, so IMEX is not started and memory
 * shared across the rack's trays fails until the site names them. */
static void imex_warning(struct gb_plan *p)
{
	struct gb_plan_warning *w;

	if (!p->imex || p->n_imex_nodes || !(w = warn(p, "imex-not-configured")))
		return;
	SAY(w->text, "IMEX not configured: this GB200/GB300 compute tray is planned single-node only; nvidia-imex is "
	             "not started, so CUDA memory shared with the other trays of its NVLink domain fails");
	SAY(w->fix, "set [imex] nodes in gpuboot.conf to the addresses of every compute tray of the NVLink domain "
	            "(the same list on each), then run gpuboot again");
}

void gb_plan_decide_warnings(struct gb_plan *p)
{
	p->n_warnings = 0;
	catalog_warning(p);
	if (p->refusal_code)
		return;
	branch_warning(p);
	toolkit_warning(p);
	imex_warning(p);
}
