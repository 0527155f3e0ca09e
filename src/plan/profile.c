/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "context.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define ERR(...)                                   \
	do {                                       \
		snprintf(err, errsz, __VA_ARGS__); \
		return -EINVAL;                    \
	} while (0)

void gb_profile_done(struct gb_profile *p)
{
	free(p->name);
	free(p->source);
	free(p->description);
	gb_strv_free(p->cuda_components);
	memset(p, 0, sizeof(*p));
}

const char *gb_policy_to_string(const struct gb_profile *p, char *buf, size_t bufsz)
{
	switch (p->policy) {
	case GB_POLICY_LTS: return "lts";
	case GB_POLICY_PRODUCTION: return "production";
	case GB_POLICY_LATEST: return "latest";
	case GB_POLICY_BRANCH: snprintf(buf, bufsz, "R%u", p->pinned_branch); return buf;
	case GB_POLICY_VERSION: snprintf(buf, bufsz, "%s", p->pinned_version); return buf;
	}
	return "?";
}

/* ---- values the catalog and the verifier know: anything else is a typo ---- */

/* The checks the verifier emits: the names given to gb_verify_add() and its
 * helpers num() and flag() in src/verify/checks.c and src/verify/integration.c.
 * t-plan-cases.sh fails when this table and those sources disagree. */
static const char *const known_checks[] = {
	"clocks.slowdown",
	"clocks.throttle_under_load",
	"compute.fp32",
	"compute.fp64",
	"compute.fp64_ratio",
	"container.gpu_visible",
	"cuda.context",
	"cuda.init",
	"cuda.installed",
	"disk.write_bandwidth",
	"driver.device_nodes",
	"driver.loaded",
	"driver.userspace",
	"driver.version_match",
	"driver.planned_version",
	"driver.xid",
	"driver.xid_critical",
	"ecc.enabled",
	"env.cleaned",
	"ecc.uncorrected_errors",
	"fabric.state",
	"fabric.wait",
	"gpu.compute_mode",
	"gpu.count",
	"gpu.identity",
	"gpu.idle_before_test",
	"gpu.idle_after_test",
	"gpu.other_processes",
	"gpu.memory",
	"gpu.mig",
	"gpu.persistence_mode",
	"gpu.utilization_under_load",
	"gpu.virtualization",
	"memory.copy_bandwidth",
	"memory.pattern",
	"memory.pattern_coverage",
	"memory.read_bandwidth",
	"memory.remapped_rows",
	"memory.retired_pages",
	"network.link_rate",
	"nvlink.links",
	"pcie.device_to_host",
	"pcie.host_to_device",
	"pcie.link_idle",
	"pcie.link_under_load",
	"peer.bandwidth",
	"verify.gpus",
	"verify.parallel",
};

/* Does name begin with group and a '.'? ("gpu" of "gpu.count") */
static bool in_group(const char *name, const char *group, size_t glen)
{
	return strncmp(name, group, glen) == 0 && name[glen] == '.';
}

static const char *group_of(const char *name, char *buf, size_t n)
{
	const char *dot = strchr(name, '.');
	snprintf(buf, n, "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
	return buf;
}

/* Is known_checks[i] the first of its group? */
static bool first_of_group(size_t i)
{
	char g[32];
	group_of(known_checks[i], g, sizeof(g));
	for (size_t j = 0; j < i; j++)
		if (in_group(known_checks[j], g, strlen(g)))
			return false;
	return true;
}

static bool known_group(const char *g)
{
	for (size_t i = 0; i < ARRAY_SIZE(known_checks); i++)
		if (in_group(known_checks[i], g, strlen(g)))
			return true;
	return false;
}

/* The candidate nearest to what was typed, when near enough to be a typo
 * (or when it holds what was typed: "cudart" for "cuda_cudart"). */
struct nearest {
	char name[64];
	unsigned d;
};

static void nearest_add(struct nearest *n, const char *typed, const char *candidate)
{
	unsigned d = gb_conf_distance(typed, candidate);
	size_t lt = strlen(typed);

	if (lt >= 3 && strstr(candidate, typed))
		d = d < 2 ? d : 1;
	if (d <= (lt / 3 > 2 ? lt / 3 : 2) && (!n->name[0] || d < n->d)) {
		gb_strscpy(n->name, sizeof(n->name), candidate);
		n->d = d;
	}
}

/* A [checks] skip entry: a check name, or a whole group ("network", or
 * "network." which is stored as "network"). */
static bool known_check(char *s, char *why, size_t n)
{
	struct nearest near = { .d = 0 };
	char group[32];
	size_t l = strlen(s);

	if (l > 1 && s[l - 1] == '.')
		s[--l] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(known_checks); i++)
		if (streq(known_checks[i], s) || in_group(known_checks[i], s, l))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(known_checks); i++) {
		nearest_add(&near, s, known_checks[i]);
		if (first_of_group(i))
			nearest_add(&near, s, group_of(known_checks[i], group, sizeof(group)));
	}
	snprintf(why, n, "unknown check '%s' in skip", s);
	if (near.name[0])
		gb_conf_append(why, n, " (did you mean '%s'?)", near.name);
	group_of(s, group, sizeof(group));
	if (strchr(s, '.') && known_group(group)) {
		gb_conf_append(why, n, "; the %s checks are", group);
		for (size_t i = 0, k = 0; i < ARRAY_SIZE(known_checks); i++)
			if (in_group(known_checks[i], group, strlen(group)))
				gb_conf_append(why, n, "%s %s", k++ ? "," : "", known_checks[i]);
		return false;
	}
	gb_conf_append(why, n, "; give a check name (like memory.read_bandwidth) or a whole group:");
	for (size_t i = 0, k = 0; i < ARRAY_SIZE(known_checks); i++)
		if (first_of_group(i))
			gb_conf_append(why, n, "%s %s", k++ ? "," : "",
			               group_of(known_checks[i], group, sizeof(group)));
	return false;
}

/* Append the k names nearest to typed (by edit distance, then by order). */
static void append_nearest(char *why, size_t n, const char *typed, const char *const *names, size_t count, size_t k)
{
	bool used[128] = { false };

	for (size_t round = 0; round < k && round < count; round++) {
		size_t best = SIZE_MAX;
		unsigned bd = UINT32_MAX;
		for (size_t i = 0; i < count && i < ARRAY_SIZE(used); i++) {
			unsigned d = gb_conf_distance(typed, names[i]);
			if (!used[i] && d < bd) {
				bd = d;
				best = i;
			}
		}
		if (best == SIZE_MAX)
			break;
		used[best] = true;
		gb_conf_append(why, n, "%s %s", round ? "," : "", names[best]);
	}
}

/* A [cuda] components name: one that some redistrib manifest in the catalog holds. */
static bool known_component(const char *s, char *why, size_t n)
{
	const char *names[128];
	struct nearest near = { .d = 0 };
	size_t count = 0;

	for (size_t i = 0; i < gb_cuda_components_len; i++) {
		const char *x = gb_cuda_components[i].name;
		bool seen = false;
		if (streq(x, s))
			return true;
		for (size_t j = 0; j < count && !seen; j++)
			seen = streq(names[j], x);
		if (!seen && count < ARRAY_SIZE(names))
			names[count++] = x;
		nearest_add(&near, s, x);
	}
	snprintf(why, n, "unknown CUDA component '%s'", s);
	if (near.name[0])
		gb_conf_append(why, n, " (did you mean '%s'?)", near.name);
	gb_conf_append(why, n, "; nearest of the %zu the catalog's manifests hold:", count);
	append_nearest(why, n, s, names, count, 6);
	return false;
}

/* 580 of "580.95.05"; 0 when it does not start with a number and a dot. */
static unsigned version_branch(const char *v)
{
	const char *dot = strchr(v, '.');
	char buf[8];
	uint32_t b;

	if (!dot || dot == v || (size_t)(dot - v) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)(dot - v), v);
	return gb_safe_atou32(buf, 10, &b) < 0 ? 0 : b;
}

static void append_branches(char *why, size_t n)
{
	size_t nb;
	const struct gb_branch *v = gb_catalog_branches(&nb);
	for (size_t i = 0; i < nb; i++)
		gb_conf_append(why, n, "%s R%u", i ? "," : "", v[i].branch);
}

/* A branch pin (R580): one the catalog has a lifecycle entry for. */
static bool known_branch(unsigned b, char *why, size_t n)
{
	if (gb_catalog_branch(b))
		return true;
	snprintf(why, n, "no branch R%u in the catalog; it knows", b);
	append_branches(why, n);
	return false;
}

static bool same(const char *a, const char *b)
{
	return a && b && streq(a, b);
}

/* Keep the two versions nearest to v on one side: v[0] nearest, v[1] next.
 * side is -1 for those below v, +1 for those above. */
static void keep_near(const char *v[2], const char *x, int side)
{
	if (same(v[0], x) || same(v[1], x))
		return;
	if (!v[0] || gb_version_cmp(x, v[0]) * side < 0) {
		v[1] = v[0];
		v[0] = x;
	} else if (!v[1] || gb_version_cmp(x, v[1]) * side < 0) {
		v[1] = x;
	}
}

/* A driver version pin: a runfile the catalog has (for some architecture);
 * otherwise name the versions of that branch nearest to it. */
static bool known_driver(const char *v, char *why, size_t n)
{
	const char *below[2] = { NULL, NULL }, *above[2] = { NULL, NULL }, *newest = NULL;
	unsigned b = version_branch(v);
	size_t k = 0;

	size_t nr;
	const struct gb_runfile *rf = gb_catalog_runfiles(&nr);

	for (size_t i = 0; i < nr; i++) {
		const char *x = rf[i].version;
		int c;
		if (streq(x, v))
			return true;
		if (version_branch(x) != b)
			continue;
		c = gb_version_cmp(x, v);
		keep_near(c < 0 ? below : above, x, c < 0 ? -1 : 1);
		if (!newest || gb_version_cmp(x, newest) > 0)
			newest = x;
	}
	snprintf(why, n, "driver %s is not a runfile in the catalog", v);
	if (!newest) {
		gb_conf_append(why, n, "; it has no R%u runfile; the catalog's branches are", b);
		append_branches(why, n);
		return false;
	}
	gb_conf_append(why, n, "; the R%u versions nearest to it:", b);
	for (int i = 1; i >= 0; i--)
		if (below[i])
			gb_conf_append(why, n, "%s %s", k++ ? "," : "", below[i]);
	for (int i = 0; i < 2; i++)
		if (above[i])
			gb_conf_append(why, n, "%s %s", k++ ? "," : "", above[i]);
	if (!same(newest, above[0]) && !same(newest, above[1]) && !same(newest, below[0]))
		gb_conf_append(why, n, " (newest %s)", newest);
	return false;
}

/* A CUDA pin: a release ("12.8") or its manifest ("12.8.0") whose
 * redistrib manifest is in the catalog (nothing else can be verified). */
static bool known_cuda(const char *v, char *why, size_t n)
{
	const struct gb_cuda_release *hit = NULL;

	for (size_t i = 0; i < gb_cuda_releases_len; i++) {
		const struct gb_cuda_release *r = &gb_cuda_releases[i];
		if (streq(r->version, v) || (r->manifest && streq(r->manifest, v)))
			hit = r;
	}
	if (hit && hit->manifest)
		return true;
	if (hit)
		snprintf(why, n,
		         "CUDA %s is known, but its redistrib manifest is not in the catalog, so it cannot be "
		         "verified",
		         v);
	else
		snprintf(why, n, "no CUDA release %s in the catalog", v);
	gb_conf_append(why, n, "; installable:");
	for (size_t i = 0, k = 0; i < gb_cuda_releases_len; i++)
		if (gb_cuda_releases[i].manifest)
			gb_conf_append(why, n, "%s %s", k++ ? "," : "", gb_cuda_releases[i].version);
	return false;
}

/* A Container Toolkit pin: the floor in force (gb_catalog_ctk_min, the
 * first release with the fix its advisory names) or a later one. */
static bool known_toolkit(const char *v, char *why, size_t n)
{
	if (gb_version_cmp(v, gb_catalog_ctk_min()) >= 0)
		return true;
	snprintf(why, n, "toolkit %s is older than %s, the floor: %s", v, gb_catalog_ctk_min(),
	         gb_catalog_ctk_min_why());
	return false;
}

static int parse_branch_policy(const char *v, struct gb_profile *p)
{
	uint32_t b;
	if (streq(v, "lts"))
		p->policy = GB_POLICY_LTS;
	else if (streq(v, "production"))
		p->policy = GB_POLICY_PRODUCTION;
	else if (streq(v, "latest"))
		p->policy = GB_POLICY_LATEST;
	else if (gb_version_valid(v)) {
		p->policy = GB_POLICY_VERSION;
		gb_strscpy(p->pinned_version, sizeof(p->pinned_version), v);
	} else if (gb_safe_atou32(v[0] == 'R' ? v + 1 : v, 10, &b) == 0 && b >= 300 && b < 2000) {
		p->policy = GB_POLICY_BRANCH;
		p->pinned_branch = b;
	} else
		return -EINVAL;
	return 0;
}

static int parse_flavor(const char *v, struct gb_profile *p)
{
	if (streq(v, "auto"))
		p->flavor = GB_FLAVOR_AUTO;
	else if (streq(v, "open"))
		p->flavor = GB_FLAVOR_OPEN;
	else if (streq(v, "proprietary"))
		p->flavor = GB_FLAVOR_PROPRIETARY;
	else
		return -EINVAL;
	return 0;
}

static int parse_cuda_policy(const char *v, struct gb_profile *p)
{
	if (streq(v, "none"))
		p->cuda = GB_CUDA_NONE;
	else if (streq(v, "newest-compatible"))
		p->cuda = GB_CUDA_NEWEST;
	else if (gb_version_valid(v) && strlen(v) < sizeof(p->cuda_version)) {
		p->cuda = GB_CUDA_PINNED;
		gb_strscpy(p->cuda_version, sizeof(p->cuda_version), v);
	} else
		return -EINVAL;
	return 0;
}

/* The first name that is not a CUDA component name (a-z, 0-9, '_'), or NULL. */
static const char *bad_component(char **names)
{
	for (char **x = names; x && *x; x++)
		for (const char *q = *x; *q; q++)
			if (!(islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_'))
				return *x;
	return NULL;
}

_printf_(3, 4) static int bad(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int set_str(char **field, const char *v)
{
	free(*field);
	*field = strdup(v);
	return *field ? 0 : -ENOMEM;
}

static int set_bool(bool *field, const char *k, const char *v, char *why, size_t n)
{
	int b;
	if (gb_conf_parse_bool(v, &b) < 0)
		return bad(why, n, "%s must be yes or no, not '%s'", k, v);
	*field = b;
	return 0;
}

static int set_number(double *field, const char *k, const char *v, char *why, size_t n)
{
	double d;
	if (gb_conf_parse_number(v, &d) < 0)
		return bad(why, n, "%s must be a non-negative number, not '%s'", k, v);
	*field = d;
	return 0;
}

static int set_branch(struct gb_profile *p, const char *v, char *why, size_t n)
{
	if (parse_branch_policy(v, p) < 0)
		return bad(why, n,
		           "branch must be lts, production, latest, a branch (R580) or a version (580.95.05), not '%s'",
		           v);
	if (p->policy == GB_POLICY_VERSION && !known_driver(v, why, n))
		return -EINVAL;
	if (p->policy == GB_POLICY_BRANCH && !known_branch(p->pinned_branch, why, n))
		return -EINVAL;
	return 0;
}

static int set_cuda_policy(struct gb_profile *p, const char *v, char *why, size_t n)
{
	if (parse_cuda_policy(v, p) < 0)
		return bad(why, n, "policy must be none, newest-compatible or a CUDA version (12.8), not '%s'", v);
	if (p->cuda == GB_CUDA_PINNED && !known_cuda(v, why, n))
		return -EINVAL;
	return 0;
}

static int set_components(struct gb_profile *p, const char *v, char *why, size_t n)
{
	const char *b;

	gb_strv_free(p->cuda_components);
	p->cuda_components = NULL;
	if (gb_conf_split_list(v, &p->cuda_components) < 0)
		return -ENOMEM;
	if ((b = bad_component(p->cuda_components)))
		return bad(why, n, "'%s' is not a CUDA component name (like cuda_cudart)", b);
	for (char **x = p->cuda_components; *x; x++) {
		if (!known_component(*x, why, n))
			return -EINVAL;
		for (char **y = p->cuda_components; y < x; y++)
			if (streq(*x, *y))
				return bad(why, n, "CUDA component '%s' is listed twice", *x);
	}
	return 0;
}

static int set_fabricmanager(struct gb_profile *p, const char *v, char *why, size_t n)
{
	int b;
	if (streq(v, "auto"))
		p->fabricmanager = GB_AUTO;
	else if (gb_conf_parse_bool(v, &b) == 0)
		p->fabricmanager = b ? GB_YES : GB_NO;
	else
		return bad(why, n, "fabricmanager must be auto, yes or no, not '%s'", v);
	return 0;
}

/* replace_installed = never | if-unsatisfied | always */
static int set_replace(enum gb_replace_policy *ret, const char *v, char *why, size_t n)
{
	if (streq(v, "never"))
		*ret = GB_REPLACE_NEVER;
	else if (streq(v, "if-unsatisfied"))
		*ret = GB_REPLACE_IF_UNSATISFIED;
	else if (streq(v, "always"))
		*ret = GB_REPLACE_ALWAYS;
	else
		return bad(why, n, "replace_installed must be never, if-unsatisfied or always, not '%s'", v);
	return 0;
}

/* One profile setting: 0, -ENOMEM, or -EINVAL with what is wrong in why.
 * Every key a profile may hold is here; anything else is a typo. */
static int profile_set(struct gb_profile *p, const struct gb_conf_entry *e, char *why, size_t n)
{
	const char *s = e->section, *k = e->key, *v = e->value;

#define IS(sec_, key_) (streq(s, sec_) && streq(k, key_))
	if (IS("profile", "description"))
		return set_str(&p->description, v);
	if (IS("driver", "branch"))
		return set_branch(p, v, why, n);
	if (IS("driver", "module_flavor"))
		return parse_flavor(v, p) < 0
		           ? bad(why, n, "module_flavor must be auto, open or proprietary, not '%s'", v)
		           : 0;
	if (IS("driver", "graphics"))
		return set_bool(&p->graphics, k, v, why, n);
	if (IS("driver", "allow_unknown_gpus"))
		return set_bool(&p->allow_unknown_gpus, k, v, why, n);
	if (IS("cuda", "policy"))
		return set_cuda_policy(p, v, why, n);
	if (IS("cuda", "components"))
		return set_components(p, v, why, n);
	if (IS("toolkit", "install")) {
		p->toolkit_always = streq(v, "always");
		return p->toolkit_always ? (p->toolkit = true, 0) : set_bool(&p->toolkit, k, v, why, n);
	}
	if (IS("install", "replace_installed"))
		return set_replace(&p->replace_installed, v, why, n);
	if (IS("daemons", "fabricmanager"))
		return set_fabricmanager(p, v, why, n);
	if (IS("daemons", "gpudirect"))
		return set_bool(&p->gpudirect, k, v, why, n);
	if (IS("verify", "tier")) {
		if (!streq(v, "passive") && !streq(v, "active") && !streq(v, "full"))
			return bad(why, n, "tier must be passive, active or full, not '%s'", v);
		gb_strscpy(p->tier, sizeof(p->tier), v);
		return 0;
	}
	if (IS("verify", "min_gpu_memory_gib"))
		return set_number(&p->min_gpu_memory_gib, k, v, why, n);
	if (IS("verify", "fp64_gate"))
		return set_bool(&p->fp64_gate, k, v, why, n);
	if (IS("verify", "ecc_required"))
		return set_bool(&p->ecc_required, k, v, why, n);
	if (IS("verify", "min_network_gbps"))
		return set_number(&p->min_network_gbps, k, v, why, n);
	if (IS("verify", "min_disk_write_mbps"))
		return set_number(&p->min_disk_write_mbps, k, v, why, n);
	if (IS("verify", "min_pattern_gib")) {
		p->min_pattern_set = true;
		return set_number(&p->min_pattern_gib, k, v, why, n);
	}
#undef IS
	return bad(why, n, "unknown setting '%s' in [%s]; see docs/profiles.md", k, s);
}

int gb_profile_parse(const char *name, const char *source, const char *text, size_t len, struct gb_profile *ret,
                     char *err, size_t errsz)
{
	struct gb_conf c;
	struct gb_profile p = {
		.policy = GB_POLICY_PRODUCTION,
		.flavor = GB_FLAVOR_AUTO,
		.cuda = GB_CUDA_NEWEST,
		.toolkit = true,
		.fabricmanager = GB_AUTO,
		.tier = "active",
	};
	char why[GB_CONF_WHY];
	int r;

	r = gb_conf_parse(source, text, len, &c, err, errsz);
	if (r < 0)
		return r;
	r = gb_conf_check_unique(&c, NULL, err, errsz);
	for (size_t i = 0; i < c.n && r >= 0; i++) {
		r = profile_set(&p, &c.entries[i], why, sizeof(why));
		if (r == -EINVAL)
			snprintf(err, errsz, "%s:%u: %s", source, c.entries[i].line, why);
	}
	gb_conf_done(&c);
	if (r >= 0 && p.cuda != GB_CUDA_NONE && !p.cuda_components) {
		snprintf(err, errsz, "%s: [cuda] needs components (or policy = none)", source);
		r = -EINVAL;
	}
	if (r >= 0) {
		p.name = strdup(name);
		p.source = strdup(source);
		if (!p.name || !p.source)
			r = -ENOMEM;
	}
	if (r < 0) {
		gb_profile_done(&p);
		return r;
	}
	*ret = p;
	return 0;
}

static bool name_ok(const char *n)
{
	if (!*n || strlen(n) > 64)
		return false;
	for (const char *q = n; *q; q++)
		if (!(islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '-' || *q == '_'))
			return false;
	return true;
}

int gb_profile_load(struct gb_ctx *ctx, const char *name_or_file, struct gb_profile *ret, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char path[512];
	const char *base;
	int r;

	if (strchr(name_or_file, '/') || strstr(name_or_file, ".profile")) {
		_cleanup_free_ char *nm = NULL;
		r = gb_read_file(name_or_file, GB_CONF_MAX_BYTES, &text, &len);
		if (r == -EFBIG)
			ERR("%s: larger than %u KiB", name_or_file, GB_CONF_MAX_BYTES / 1024);
		if (r < 0)
			ERR("%s: cannot read the profile: %s", name_or_file, strerror(-r));
		base = strrchr(name_or_file, '/');
		nm = strdup(base ? base + 1 : name_or_file);
		if (!nm)
			return -ENOMEM;
		if (strstr(nm, ".profile"))
			*strstr(nm, ".profile") = '\0';
		return gb_profile_parse(nm, name_or_file, text, len, ret, err, errsz);
	}
	if (!name_ok(name_or_file))
		ERR("--profile '%s': a profile name holds only a-z, 0-9, '-', '_' (or give a file path)", name_or_file);
	snprintf(path, sizeof(path), "etc/gpuboot/profiles/%s.profile", name_or_file);
	r = gb_root_read_file(ctx->root, path, GB_CONF_MAX_BYTES, &text, &len);
	if (r >= 0) {
		char src[600];
		snprintf(src, sizeof(src), "/%s", path);
		return gb_profile_parse(name_or_file, src, text, len, ret, err, errsz);
	}
	if (r != -ENOENT)
		ERR("/%s: cannot read the profile: %s", path, strerror(-r));
	for (size_t i = 0; i < gb_builtin_profiles_len; i++)
		if (streq(gb_builtin_profiles[i].name, name_or_file)) {
			char src[128];
			snprintf(src, sizeof(src), "built-in:%s.profile", name_or_file);
			return gb_profile_parse(name_or_file, src, gb_builtin_profiles[i].text,
			                        strlen(gb_builtin_profiles[i].text), ret, err, errsz);
		}
	{
		char names[256] = "";
		size_t o = 0;
		for (size_t i = 0; i < gb_builtin_profiles_len && o < sizeof(names); i++) {
			int n =
			    snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", gb_builtin_profiles[i].name);
			if (n < 0)
				break;
			o += (size_t)n;
		}
		ERR("no profile '%s' in /etc/gpuboot/profiles or built in (%s)", name_or_file, names);
	}
}

/* ---- site configuration ---- */

void gb_site_config_done(struct gb_site_config *c)
{
	free(c->source);
	free(c->mirror);
	free(c->proxy);
	free(c->ca_file);
	gb_strv_free(c->trusted_keys);
	gb_strv_free(c->skip_checks);
	free(c->signing_key);
	free(c->signing_cert);
	memset(c, 0, sizeof(*c));
}

static int append(char ***v, const char *s)
{
	size_t n = 0;
	char **nv;
	while (*v && (*v)[n])
		n++;
	nv = realloc(*v, (n + 2) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	nv[n] = strdup(s);
	nv[n + 1] = NULL;
	*v = nv;
	return nv[n] ? 0 : -ENOMEM;
}

static int set_path(char **field, const char *k, const char *v, char *why, size_t n)
{
	if (v[0] != '/')
		return bad(why, n, "%s must be an absolute path, not '%s'", k, v);
	return set_str(field, v);
}

static int set_version(char *field, size_t size, const char *k, const char *v, char *why, size_t n)
{
	if (!gb_version_valid(v) || strlen(v) >= size)
		return bad(why, n, "%s must be a version like 580.95.05 or 12.8, not '%s'", k, v);
	gb_strscpy(field, size, v);
	return 0;
}

/* [checks] skip: known check names or groups, each once. */
static int set_skip(struct gb_site_config *s, const char *v, char *why, size_t n)
{
	gb_strv_free(s->skip_checks);
	s->skip_checks = NULL;
	if (gb_conf_split_list(v, &s->skip_checks) < 0)
		return -ENOMEM;
	for (char **x = s->skip_checks; *x; x++)
		if (!known_check(*x, why, n))
			return -EINVAL;
	return 0;
}

/* [imex] nodes: IPv4 or IPv6 addresses separated by spaces or commas,
 * each once, at most GB_IMEX_NODES_MAX: the IMEX domain's nodes, written
 * one a line into nodes_config.cfg by the load. Nothing else is taken:
 * no names (IMEX matches its own addresses against the list). */
static int set_imex_nodes(struct gb_site_config *s, const char *v, char *why, size_t n)
{
	char buf[GB_IMEX_NODES_TEXT], *save = NULL;
	size_t o = 0;

	s->imex_nodes[0] = '\0';
	s->n_imex_nodes = 0;
	if (gb_strscpy(buf, sizeof(buf), v) < 0)
		return bad(why, n, "nodes is longer than %u bytes", GB_IMEX_NODES_TEXT - 1);
	for (char *t = strtok_r(buf, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
		unsigned char addr[16];
		size_t l = strlen(t);
		if (inet_pton(AF_INET, t, addr) != 1 && inet_pton(AF_INET6, t, addr) != 1)
			return bad(why, n, "nodes must be IPv4 or IPv6 addresses, not '%s'", t);
		for (const char *q = s->imex_nodes; *q;) {
			size_t ql = strcspn(q, " ");
			if (ql == l && !strncmp(q, t, l))
				return bad(why, n, "nodes names %s twice", t);
			q += ql + (q[ql] == ' ');
		}
		if (++s->n_imex_nodes > GB_IMEX_NODES_MAX)
			return bad(why, n, "nodes holds more than %u addresses", GB_IMEX_NODES_MAX);
		o += (size_t)snprintf(s->imex_nodes + o, sizeof(s->imex_nodes) - o, "%s%s", o ? " " : "", t);
	}
	if (!s->n_imex_nodes)
		return bad(why, n, "nodes is empty: leave it out for a single node");
	return 0;
}

/* One gpuboot.conf setting: 0, -ENOMEM, or -EINVAL with what is wrong in why. */
static int site_set(struct gb_site_config *s, const struct gb_conf_entry *e, char *why, size_t n)
{
	const char *k = e->key, *v = e->value;
	int r;

#define IS(sec_, key_) (streq(e->section, sec_) && streq(k, key_))
	if (IS("site", "mirror")) {
		if (!gb_startswith(v, "https://") && !gb_startswith(v, "file:///") && !gb_startswith(v, "http://"))
			return bad(why, n, "%s must be an https://, http:// or file:/// URL, not '%s'", k, v);
		return set_str(&s->mirror, v);
	}
	if (IS("site", "allow_http_mirror"))
		return set_bool(&s->allow_http_mirror, k, v, why, n);
	if (IS("site", "proxy"))
		return set_str(&s->proxy, v);
	if (IS("site", "ca_file"))
		return set_path(&s->ca_file, k, v, why, n);
	if (IS("trust", "key"))
		return v[0] != '/' ? bad(why, n, "%s must be an absolute path, not '%s'", k, v)
		                   : append(&s->trusted_keys, v);
	if (IS("trust", "min_mirror_version")) {
		uint64_t m;
		if (gb_safe_atou64(v, 10, &m) < 0 || m == 0)
			return bad(
			    why, n,
			    "min_mirror_version must be a mirror manifest version (a positive integer), not '%s'", v);
		s->min_mirror_version = m;
		return 0;
	}
	if (IS("trust", "min_catalog_version")) {
		uint64_t m;
		if (gb_safe_atou64(v, 10, &m) < 0 || m == 0)
			return bad(why, n,
			           "min_catalog_version must be a catalog update's version (YYYYMMDDNN), not '%s'", v);
		s->min_catalog_version = m;
		return 0;
	}
	if (IS("pins", "driver")) {
		r = set_version(s->pinned_driver, sizeof(s->pinned_driver), k, v, why, n);
		return r < 0 || known_driver(v, why, n) ? r : -EINVAL;
	}
	if (IS("pins", "cuda")) {
		r = set_version(s->pinned_cuda, sizeof(s->pinned_cuda), k, v, why, n);
		return r < 0 || known_cuda(v, why, n) ? r : -EINVAL;
	}
	if (IS("pins", "toolkit")) {
		r = set_version(s->pinned_toolkit, sizeof(s->pinned_toolkit), k, v, why, n);
		return r < 0 || known_toolkit(v, why, n) ? r : -EINVAL;
	}
	if (IS("checks", "skip"))
		return set_skip(s, v, why, n);
	if (IS("install", "method")) {
		if (!streq(v, "packages") && !streq(v, "distro") && !streq(v, "runfile"))
			return bad(why, n, "method must be packages, distro or runfile, not '%s'", v);
		gb_strscpy(s->method, sizeof(s->method), v);
		return 0;
	}
	if (IS("install", "prebuilt_modules")) {
		if (!streq(v, "prefer") && !streq(v, "require"))
			return bad(why, n, "prebuilt_modules must be prefer or require, not '%s'", v);
		s->prebuilt_required = streq(v, "require");
		return 0;
	}
	if (IS("install", "overlap")) {
		bool on = true;
		r = set_bool(&on, k, v, why, n);
		s->no_overlap = !on;
		return r;
	}
	if (IS("install", "replace_installed")) {
		s->replace_installed_set = true;
		return set_replace(&s->replace_installed, v, why, n);
	}
	if (IS("kernel", "minimum")) {
		char xy[sizeof(s->kernel_minimum)];
		if (!gb_version_valid(v) || strlen(v) >= sizeof(s->kernel_minimum) || !strchr(v, '.'))
			return bad(why, n, "minimum must be a kernel version like 6.12, not '%s'", v);
		gb_kernel_xy(v, xy, sizeof(xy));
		gb_strscpy(s->kernel_minimum, sizeof(s->kernel_minimum), xy);
		return 0;
	}
	if (IS("kernel", "build_timeout")) {
		uint32_t m;
		if (gb_safe_atou32(v, 10, &m) < 0 || m < 1 || m > GB_BUILD_TIMEOUT_MAX_MIN)
			return bad(why, n, "build_timeout must be minutes from 1 to %u, not '%s'",
			           GB_BUILD_TIMEOUT_MAX_MIN, v);
		s->build_timeout_min = m;
		return 0;
	}
	if (IS("imex", "nodes"))
		return set_imex_nodes(s, v, why, n);
	if (IS("secure_boot", "signing_key"))
		return set_path(&s->signing_key, k, v, why, n);
	if (IS("secure_boot", "signing_cert"))
		return set_path(&s->signing_cert, k, v, why, n);
#undef IS
	return bad(why, n, "unknown setting '%s' in [%s]; see docs/configuration.md", k, e->section);
}

int gb_site_config_parse(const char *source, const char *text, size_t len, struct gb_site_config *ret, char *err,
                         size_t errsz)
{
	static const struct gb_conf_key repeatable[] = { { "trust", "key" }, { NULL, NULL } };
	struct gb_conf c;
	struct gb_site_config s = { 0 };
	char why[GB_CONF_WHY];
	int r;

	r = gb_conf_parse(source, text, len, &c, err, errsz);
	if (r < 0)
		return r;
	r = gb_conf_check_unique(&c, repeatable, err, errsz);
	for (size_t i = 0; i < c.n && r >= 0; i++) {
		r = site_set(&s, &c.entries[i], why, sizeof(why));
		if (r == -EINVAL)
			snprintf(err, errsz, "%s:%u: %s", source, c.entries[i].line, why);
	}
	gb_conf_done(&c);
	if (r >= 0) {
		s.source = strdup(source);
		if (!s.source)
			r = -ENOMEM;
	}
	if (r < 0) {
		gb_site_config_done(&s);
		return r;
	}
	*ret = s;
	return 0;
}

int gb_site_config_load(struct gb_ctx *ctx, const char *explicit_path, struct gb_site_config *ret, char *err,
                        size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (explicit_path) {
		r = gb_read_file(explicit_path, GB_CONF_MAX_BYTES, &text, &len);
		if (r < 0)
			ERR("%s: cannot read the configuration: %s", explicit_path, strerror(-r));
		return gb_site_config_parse(explicit_path, text, len, ret, err, errsz);
	}
	r = gb_root_read_file(ctx->root, "etc/gpuboot/gpuboot.conf", GB_CONF_MAX_BYTES, &text, &len);
	if (r == -ENOENT) {
		memset(ret, 0, sizeof(*ret));
		return 0;
	}
	if (r < 0)
		ERR("/etc/gpuboot/gpuboot.conf: cannot read the configuration: %s", strerror(-r));
	return gb_site_config_parse("/etc/gpuboot/gpuboot.conf", text, len, ret, err, errsz);
}

/* ---- gpus.d ---- */

void gb_gpu_overrides_done(struct gb_gpu_overrides *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].name);
		free(o->v[i].source);
	}
	free(o->v);
	memset(o, 0, sizeof(*o));
}

const struct gb_gpu_override *gb_gpu_override_find(const struct gb_gpu_overrides *o, uint16_t device)
{
	for (size_t i = o->n; i > 0; i--)
		if (o->v[i - 1].device == device)
			return &o->v[i - 1];
	return NULL;
}

static int parse_branch_value(const char *v, unsigned *ret)
{
	uint32_t b;
	if (gb_safe_atou32(v[0] == 'R' ? v + 1 : v, 10, &b) < 0 || b < 300 || b > 2000)
		return -EINVAL;
	*ret = b;
	return 0;
}

int gb_gpu_overrides_parse(const char *source, const char *text, size_t len, struct gb_gpu_overrides *ret, char *err,
                           size_t errsz)
{
	struct gb_conf c;
	int r = gb_conf_parse(source, text, len, &c, err, errsz);
	if (r < 0)
		return r;
	if (gb_conf_check_unique(&c, NULL, err, errsz) < 0)
		goto fail;
	for (size_t i = 0; i < c.n; i++) {
		const struct gb_conf_entry *e = &c.entries[i];
		const char *id = gb_startswith(e->section, "gpu ");
		struct gb_gpu_override *g = NULL;
		uint32_t dev;
		char src[600];

		if (!id || gb_safe_atou32(id, 16, &dev) < 0 || dev > 0xffff || strlen(id) != 4) {
			snprintf(err, errsz, "%s:%u: sections are [gpu XXXX] with a 4-digit hex device ID, not [%s]",
			         source, e->line, e->section);
			goto fail;
		}
		for (size_t j = 0; j < ret->n; j++)
			if (ret->v[j].device == dev && strstr(ret->v[j].source, source) == ret->v[j].source)
				g = &ret->v[j];
		if (!g) {
			struct gb_gpu_override *nv = realloc(ret->v, (ret->n + 1) * sizeof(*nv));
			if (!nv)
				goto oom;
			ret->v = nv;
			g = &nv[ret->n++];
			memset(g, 0, sizeof(*g));
			g->device = (uint16_t)dev;
			g->open = GB_OPEN_LISTED;
			snprintf(src, sizeof(src), "%s:%u", source, e->line);
			g->source = strdup(src);
			if (!g->source)
				goto oom;
		}
		if (streq(e->key, "name")) {
			free(g->name);
			g->name = strdup(e->value);
		} else if (streq(e->key, "architecture")) {
			g->arch = gb_arch_from_string(e->value);
			if (g->arch == GB_ARCH_UNKNOWN) {
				snprintf(err, errsz, "%s:%u: architecture must be kepler ... blackwell, not '%s'",
				         source, e->line, e->value);
				goto fail;
			}
		} else if (streq(e->key, "compute_capability")) {
			if (!gb_version_valid(e->value) && !(strlen(e->value) < 6 && strchr(e->value, '.'))) {
				snprintf(err, errsz, "%s:%u: compute_capability is like 9.0, not '%s'", source, e->line,
				         e->value);
				goto fail;
			}
			gb_strscpy(g->cc, sizeof(g->cc), e->value);
		} else if (streq(e->key, "open_module")) {
			if (streq(e->value, "required")) {
				g->open = GB_OPEN_LISTED;
				g->open_required = true;
			} else if (streq(e->value, "supported")) {
				g->open = GB_OPEN_LISTED;
			} else if (streq(e->value, "unsupported")) {
				g->open = GB_OPEN_NO;
			} else {
				snprintf(err, errsz, "%s:%u: open_module must be required, supported or unsupported",
				         source, e->line);
				goto fail;
			}
		} else if (streq(e->key, "min_branch") || streq(e->key, "last_branch") || streq(e->key, "branch")) {
			unsigned b;
			if (parse_branch_value(e->value, &b) < 0) {
				snprintf(err, errsz, "%s:%u: %s must be a branch like R580, not '%s'", source, e->line,
				         e->key, e->value);
				goto fail;
			}
			if (streq(e->key, "min_branch"))
				g->min_branch = b;
			else if (streq(e->key, "last_branch"))
				g->last_branch = b;
			else
				g->pinned_branch = b;
		} else if (streq(e->key, "vgpu")) {
			int b;
			if (gb_conf_parse_bool(e->value, &b) < 0) {
				snprintf(err, errsz, "%s:%u: vgpu must be yes or no", source, e->line);
				goto fail;
			}
			g->vgpu = b;
		} else {
			snprintf(err, errsz, "%s:%u: unknown setting '%s'; see docs/configuration.md", source, e->line,
			         e->key);
			goto fail;
		}
	}
	gb_conf_done(&c);
	return 0;
oom:
	gb_conf_done(&c);
	return -ENOMEM;
fail:
	gb_conf_done(&c);
	return -EINVAL;
}

int gb_gpu_overrides_load(struct gb_ctx *ctx, struct gb_gpu_overrides *ret, char *err, size_t errsz)
{
	char **names = NULL;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = gb_root_list_dir(ctx->root, "etc/gpuboot/gpus.d", &names, NULL);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		ERR("/etc/gpuboot/gpus.d: cannot list: %s", strerror(-r));
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *text = NULL;
		char path[512];
		size_t len, l = strlen(*n);
		if (l < 6 || !streq(*n + l - 5, ".conf"))
			continue;
		snprintf(path, sizeof(path), "etc/gpuboot/gpus.d/%s", *n);
		r = gb_root_read_file(ctx->root, path, GB_CONF_MAX_BYTES, &text, &len);
		if (r >= 0) {
			char src[600];
			snprintf(src, sizeof(src), "/%s", path);
			r = gb_gpu_overrides_parse(src, text, len, ret, err, errsz);
		} else {
			snprintf(err, errsz, "/%s: cannot read: %s", path, strerror(-r));
			r = -EINVAL;
		}
		if (r < 0) {
			gb_strv_free(names);
			gb_gpu_overrides_done(ret);
			return r;
		}
	}
	gb_strv_free(names);
	return 0;
}
