/* SPDX-License-Identifier: MIT */
/* The catalog in force: the built-in rows, or a newer update's over them
 * (docs/catalog.md). The update arrives checked for its signature, expiry
 * and rollback floor (fetch/catalog-file.c); here its rows are checked
 * against the built-in's and merged, copied into memory this file owns. */
#include "catalog.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/macro.h"
#include "shared/util.h"

/* The Container Toolkit floor built in. NVIDIA's "Security Bulletin: NVIDIA
 * Container Toolkit - June 2026" (a_id 5850, CVE-2026-24260, a
 * time-of-check time-of-use race, CVSS 8.5) lists all versions up to and
 * including 1.19.0 as affected and 1.19.1 as the updated version; 1.19.1
 * also carries the earlier container-escape fixes (CVE-2024-0132 in 1.16.2,
 * CVE-2025-23359 in 1.17.4, CVE-2025-23266/23267 in 1.17.8). */
#define CTK_MIN "1.19.1"
#define CTK_MIN_CVE "CVE-2026-24260"
#define CTK_MIN_WHY                                                                                                 \
	CTK_MIN_CVE ", a time-of-check time-of-use race (CVSS 8.5), which NVIDIA's security bulletin of June 2026 " \
	            "(a_id 5850) finds in every version up to and including 1.19.0 and fixes in " CTK_MIN

static struct {
	struct gb_catalog_info info;
	struct gb_branch *branches;
	size_t n_branches;
	struct gb_runfile *runfiles;
	size_t n_runfiles;
	const char *ctk_min, *ctk_min_cve, *ctk_min_why;
	char **owned; /* every string copied, freed by gb_catalog_reset */
	size_t n_owned;
	bool active;
} cur;

static struct {
	char text[512], fix[256];
} refusals[GB_CATALOG_MAX_REFUSALS];
static size_t n_refusals;

uint64_t gb_catalog_builtin_number(void)
{
	uint64_t n = 0;
	for (const char *s = gb_catalog_date; *s; s++)
		if (isdigit((unsigned char)*s))
			n = n * 10 + (uint64_t)(*s - '0');
	return n * 100;
}

const struct gb_catalog_info *gb_catalog_in_force(void)
{
	static struct gb_catalog_info builtin;
	if (cur.active)
		return &cur.info;
	builtin = (struct gb_catalog_info){ gb_catalog_builtin_number(), gb_catalog_date, NULL, gb_catalog_sources,
		                            gb_catalog_sources_len };
	return &builtin;
}

const struct gb_branch *gb_catalog_branches(size_t *n)
{
	*n = cur.active ? cur.n_branches : gb_branches_len;
	return cur.active ? cur.branches : gb_branches;
}

const struct gb_runfile *gb_catalog_runfiles(size_t *n)
{
	*n = cur.active ? cur.n_runfiles : gb_runfiles_len;
	return cur.active ? cur.runfiles : gb_runfiles;
}

const char *gb_catalog_ctk_min(void)
{
	return cur.active && cur.ctk_min ? cur.ctk_min : CTK_MIN;
}

const char *gb_catalog_builtin_ctk_min(void)
{
	return CTK_MIN;
}

const char *gb_catalog_ctk_min_cve(void)
{
	return cur.active && cur.ctk_min_cve ? cur.ctk_min_cve : CTK_MIN_CVE;
}

const char *gb_catalog_ctk_min_why(void)
{
	return cur.active && cur.ctk_min_why ? cur.ctk_min_why : CTK_MIN_WHY;
}

void gb_catalog_reset(void)
{
	for (size_t i = 0; i < cur.n_owned; i++)
		free(cur.owned[i]);
	free(cur.owned);
	free(cur.branches);
	free(cur.runfiles);
	free((void *)cur.info.sources);
	memset(&cur, 0, sizeof(cur));
	n_refusals = 0;
}

void gb_catalog_note_refusal(const char *text, const char *fix)
{
	if (n_refusals >= GB_CATALOG_MAX_REFUSALS)
		return;
	gb_strscpy(refusals[n_refusals].text, sizeof(refusals[0].text), text);
	gb_strscpy(refusals[n_refusals].fix, sizeof(refusals[0].fix), fix);
	n_refusals++;
}

const char *gb_catalog_refusal(size_t i, const char **fix)
{
	if (i >= n_refusals)
		return NULL;
	*fix = refusals[i].fix;
	return refusals[i].text;
}

/* ---- checking an update's rows ---- */

static bool say(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool say(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return false;
}

/* Printable ASCII, no control character, at most max bytes. */
static bool text_ok(const char *s, size_t max)
{
	size_t n = 0;
	if (!s)
		return false;
	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e)
			return false;
	return n > 0 && n <= max;
}

/* A driver or toolkit version: digits and dots, "580.173.02". */
static bool version_ok(const char *v, unsigned min_parts)
{
	unsigned parts = 0;
	if (!v || strlen(v) >= 32)
		return false;
	for (const char *s = v; *s;) {
		size_t k = strspn(s, "0123456789");
		if (k == 0 || k > 9)
			return false;
		parts++;
		s += k;
		if (*s == '.' && s[1])
			s++;
		else if (*s)
			return false;
	}
	return parts >= min_parts;
}

static bool date_ok(const char *d)
{
	int64_t x;
	return d && gb_date_days(d, &x) == 0;
}

static bool branch_ok(const struct gb_branch *b, size_t i, char *err, size_t errsz)
{
	if (b->branch < 100 || b->branch > 9999)
		return say(err, errsz, "branch %zu: its number %u is not a driver branch", i, b->branch);
	if (b->type != GB_BRANCH_LTSB && b->type != GB_BRANCH_PRODUCTION && b->type != GB_BRANCH_NEW_FEATURE &&
	    b->type != GB_BRANCH_LEGACY)
		return say(err, errsz, "branch R%u: an unknown type", b->branch);
	if (b->eol && !date_ok(b->eol))
		return say(err, errsz, "branch R%u: end of life '%s' is not a YYYY-MM-DD date", b->branch, b->eol);
	if (b->min_kernel && !version_ok(b->min_kernel, 2))
		return say(err, errsz, "branch R%u: min_kernel is not a kernel version like 4.15", b->branch);
	for (size_t k = 0; !b->min_kernel && k < gb_branches_len; k++)
		if (gb_branches[k].branch == b->branch)
			return true; /* the built-in row's */
	if (!b->min_kernel)
		return say(err, errsz, "branch R%u is new: it needs its min_kernel", b->branch);
	return true;
}

static bool runfile_ok(const struct gb_runfile *r, size_t i, char *err, size_t errsz)
{
	static const char *const cats[] = { "PRODUCTION", "TESLA", "NEW_FEATURE", "LEGACY" };
	bool cat = false;
	const char *u = r->url;
	size_t hex = r->sha256 ? strspn(r->sha256, "0123456789abcdef") : 0;

	if (!version_ok(r->version, 2))
		return say(err, errsz, "runfile %zu: its version is not a driver version like 580.173.02", i);
	if (!r->arch || (!streq(r->arch, "x86_64") && !streq(r->arch, "aarch64")))
		return say(err, errsz, "runfile %s: arch must be x86_64 or aarch64", r->version);
	for (size_t k = 0; r->category && k < ARRAY_SIZE(cats); k++)
		cat |= streq(r->category, cats[k]);
	if (!cat)
		return say(err, errsz, "runfile %s: category must be PRODUCTION, TESLA, NEW_FEATURE or LEGACY",
		           r->version);
	if (hex != 64 || r->sha256[64])
		return say(err, errsz, "runfile %s: sha256 is not 64 lower-case hex digits", r->version);
	if (r->size == 0 || r->size > (8ull << 30))
		return say(err, errsz, "runfile %s: size must be from 1 byte to 8 GiB", r->version);
	/* https://HOST/PATH: a mirror serves PATH below its own root */
	if (!text_ok(u, 1000) || !gb_startswith(u, "https://") || !strchr(u + 8, '/') || strstr(u, "/../") ||
	    strchr(u, ' ') || strchr(u, '\\'))
		return say(err, errsz, "runfile %s: url must be https://HOST/PATH, printable, no '..'", r->version);
	return true;
}

static bool floor_ok(const struct gb_catalog_update *u, char *err, size_t errsz)
{
	if (!u->ctk_min)
		return true;
	if (!version_ok(u->ctk_min, 2))
		return say(err, errsz, "container_toolkit_min is not a version like 1.19.1");
	if (gb_version_cmp(u->ctk_min, CTK_MIN) < 0)
		return say(err, errsz,
		           "container_toolkit_min %s is below the built-in floor %s: an update only raises it",
		           u->ctk_min, CTK_MIN);
	if (gb_version_cmp(u->ctk_min, CTK_MIN) > 0 && (!text_ok(u->ctk_min_cve, 40) || !text_ok(u->ctk_min_why, 400)))
		return say(err, errsz,
		           "container_toolkit_min %s raises the floor: it needs container_toolkit_min_cve (the "
		           "advisory, at most 40 characters) and container_toolkit_min_why (at most 400)",
		           u->ctk_min);
	return true;
}

static bool update_ok(const struct gb_catalog_update *u, char *err, size_t errsz)
{
	char digits[16];
	uint64_t day = 0;
	size_t k = 0;

	if (!date_ok(u->date))
		return say(err, errsz, "its date is not a YYYY-MM-DD date");
	for (const char *s = u->date; *s; s++)
		if (isdigit((unsigned char)*s))
			digits[k++] = *s;
	digits[k] = '\0';
	if (gb_safe_atou64(digits, 10, &day) < 0 || u->version / 100 != day)
		return say(err, errsz, "version %llu does not begin with its date %s (YYYYMMDDNN)",
		           (unsigned long long)u->version, u->date);
	if (u->n_sources == 0 || u->n_sources > GB_CATALOG_MAX_SOURCES)
		return say(err, errsz, "it must name its sources (1 to %d)", GB_CATALOG_MAX_SOURCES);
	for (size_t i = 0; i < u->n_sources; i++)
		if (!text_ok(u->sources[i], 512))
			return say(err, errsz, "source %zu is not one printable line of at most 512 characters", i);
	if (u->n_branches > GB_CATALOG_MAX_BRANCHES || u->n_runfiles > GB_CATALOG_MAX_RUNFILES)
		return say(err, errsz, "more than %d branches or %d runfiles", GB_CATALOG_MAX_BRANCHES,
		           GB_CATALOG_MAX_RUNFILES);
	for (size_t i = 0; i < u->n_branches; i++)
		if (!branch_ok(&u->branches[i], i, err, errsz))
			return false;
	for (size_t i = 0; i < u->n_runfiles; i++)
		if (!runfile_ok(&u->runfiles[i], i, err, errsz))
			return false;
	return floor_ok(u, err, errsz);
}

/* ---- merging ---- */

static const char *own(const char *s)
{
	char *c, **nv;
	if (!s)
		return NULL;
	nv = realloc(cur.owned, (cur.n_owned + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	cur.owned = nv;
	if (!(c = strdup(s)))
		return NULL;
	cur.owned[cur.n_owned++] = c;
	return c;
}

static int cmp_branch(const void *a, const void *b)
{
	unsigned x = ((const struct gb_branch *)a)->branch, y = ((const struct gb_branch *)b)->branch;
	return x < y ? -1 : x > y;
}

static int cmp_runfile(const void *a, const void *b)
{
	const struct gb_runfile *x = a, *y = b;
	int c = gb_version_cmp(x->version, y->version);
	return c ? c : strcmp(x->arch, y->arch);
}

static int merge_branches(const struct gb_catalog_update *u)
{
	cur.branches = calloc(gb_branches_len + u->n_branches, sizeof(*cur.branches));
	if (!cur.branches)
		return -ENOMEM;
	memcpy(cur.branches, gb_branches, gb_branches_len * sizeof(*cur.branches));
	cur.n_branches = gb_branches_len;
	for (size_t i = 0; i < u->n_branches; i++) {
		struct gb_branch b = u->branches[i], *at = NULL;
		for (size_t k = 0; k < cur.n_branches && !at; k++)
			if (cur.branches[k].branch == b.branch)
				at = &cur.branches[k];
		b.eol = own(b.eol);
		b.min_kernel = b.min_kernel ? own(b.min_kernel) : at->min_kernel;
		if ((u->branches[i].eol && !b.eol) || !b.min_kernel)
			return -ENOMEM;
		*(at ? at : &cur.branches[cur.n_branches++]) = b;
	}
	qsort(cur.branches, cur.n_branches, sizeof(*cur.branches), cmp_branch);
	return 0;
}

static int merge_runfiles(const struct gb_catalog_update *u)
{
	cur.runfiles = calloc(gb_runfiles_len + u->n_runfiles, sizeof(*cur.runfiles));
	if (!cur.runfiles)
		return -ENOMEM;
	memcpy(cur.runfiles, gb_runfiles, gb_runfiles_len * sizeof(*cur.runfiles));
	cur.n_runfiles = gb_runfiles_len;
	for (size_t i = 0; i < u->n_runfiles; i++) {
		const struct gb_runfile *s = &u->runfiles[i];
		struct gb_runfile r = { own(s->version), own(s->arch), own(s->category),
			                own(s->sha256),  s->size,      own(s->url) };
		struct gb_runfile *at = NULL;
		if (!r.version || !r.arch || !r.category || !r.sha256 || !r.url)
			return -ENOMEM;
		for (size_t k = 0; k < cur.n_runfiles && !at; k++)
			if (streq(cur.runfiles[k].version, r.version) && streq(cur.runfiles[k].arch, r.arch))
				at = &cur.runfiles[k];
		*(at ? at : &cur.runfiles[cur.n_runfiles++]) = r;
	}
	qsort(cur.runfiles, cur.n_runfiles, sizeof(*cur.runfiles), cmp_runfile);
	return 0;
}

static int merge(const struct gb_catalog_update *u)
{
	const char **src = calloc(u->n_sources, sizeof(*src));
	int r;

	if (!src)
		return -ENOMEM;
	cur.info.sources = src;
	for (size_t i = 0; i < u->n_sources; i++)
		if (!(src[i] = own(u->sources[i])))
			return -ENOMEM;
	cur.info.n_sources = u->n_sources;
	cur.info.version = u->version;
	cur.info.date = own(u->date);
	cur.info.origin = own(u->origin ? u->origin : "an update");
	if (!cur.info.date || !cur.info.origin)
		return -ENOMEM;
	if ((r = merge_branches(u)) < 0 || (r = merge_runfiles(u)) < 0)
		return r;
	if (u->ctk_min && gb_version_cmp(u->ctk_min, CTK_MIN) > 0) {
		cur.ctk_min = own(u->ctk_min);
		cur.ctk_min_cve = own(u->ctk_min_cve);
		cur.ctk_min_why = own(u->ctk_min_why);
		if (!cur.ctk_min || !cur.ctk_min_cve || !cur.ctk_min_why)
			return -ENOMEM;
	}
	return 0;
}

int gb_catalog_apply_update(const struct gb_catalog_update *u, char *err, size_t errsz)
{
	uint64_t builtin = gb_catalog_builtin_number();
	size_t saved = n_refusals;
	int r;

	if (u->version <= builtin) {
		snprintf(err, errsz,
		         "its version %llu is not newer than this gpuboot's built-in catalog (%llu, of %s): older "
		         "facts are refused",
		         (unsigned long long)u->version, (unsigned long long)builtin, gb_catalog_date);
		return -ESTALE;
	}
	if (!update_ok(u, err, errsz))
		return -EINVAL;
	gb_catalog_reset();
	n_refusals = saved; /* the refusals noted stand */
	r = merge(u);
	if (r < 0) {
		gb_catalog_reset();
		n_refusals = saved;
		snprintf(err, errsz, "out of memory");
		return r;
	}
	cur.active = true;
	return 0;
}
