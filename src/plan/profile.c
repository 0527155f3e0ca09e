/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <ctype.h>
#include <errno.h>
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

/* Every key a profile may hold; anything else is a typo and an error. */
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
	int r;

	r = gb_conf_parse(source, text, len, &c, err, errsz);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c.n; i++) {
		const struct gb_conf_entry *e = &c.entries[i];
		const char *s = e->section, *k = e->key, *v = e->value;
		int b;
		double d;

#define BAD(...)                                                             \
	do {                                                                 \
		int _o = snprintf(err, errsz, "%s:%u: ", source, e->line);   \
		if (_o > 0 && (size_t)_o < errsz)                            \
			snprintf(err + _o, errsz - (size_t)_o, __VA_ARGS__); \
		gb_conf_done(&c);                                            \
		gb_profile_done(&p);                                         \
		return -EINVAL;                                              \
	} while (0)
#define IS(sec_, key_) (streq(s, sec_) && streq(k, key_))
#define BOOL(field)                                                  \
	do {                                                         \
		if (gb_conf_parse_bool(v, &b) < 0)                   \
			BAD("%s must be yes or no, not '%s'", k, v); \
		field = b;                                           \
	} while (0)
#define NUM(field)                                                               \
	do {                                                                     \
		if (gb_conf_parse_number(v, &d) < 0)                             \
			BAD("%s must be a non-negative number, not '%s'", k, v); \
		field = d;                                                       \
	} while (0)

		if (IS("profile", "description")) {
			free(p.description);
			p.description = strdup(v);
		} else if (IS("driver", "branch")) {
			if (parse_branch_policy(v, &p) < 0)
				BAD("branch must be lts, production, latest, a branch (R580) or a version (580.95.05), "
				    "not '%s'",
				    v);
		} else if (IS("driver", "module_flavor")) {
			if (parse_flavor(v, &p) < 0)
				BAD("module_flavor must be auto, open or proprietary, not '%s'", v);
		} else if (IS("driver", "graphics")) {
			BOOL(p.graphics);
		} else if (IS("driver", "allow_unknown_gpus")) {
			BOOL(p.allow_unknown_gpus);
		} else if (IS("cuda", "policy")) {
			if (parse_cuda_policy(v, &p) < 0)
				BAD("policy must be none, newest-compatible or a CUDA version (12.8), not '%s'", v);
		} else if (IS("cuda", "components")) {
			const char *bad = NULL;
			gb_strv_free(p.cuda_components);
			p.cuda_components = NULL;
			if (gb_conf_split_list(v, &p.cuda_components) < 0)
				BAD("out of memory");
			if ((bad = bad_component(p.cuda_components)))
				BAD("'%s' is not a CUDA component name (like cuda_cudart)", bad);
		} else if (IS("toolkit", "install")) {
			BOOL(p.toolkit);
		} else if (IS("daemons", "fabricmanager")) {
			if (streq(v, "auto"))
				p.fabricmanager = GB_AUTO;
			else if (gb_conf_parse_bool(v, &b) == 0)
				p.fabricmanager = b ? GB_YES : GB_NO;
			else
				BAD("fabricmanager must be auto, yes or no, not '%s'", v);
		} else if (IS("daemons", "gpudirect")) {
			BOOL(p.gpudirect);
		} else if (IS("verify", "tier")) {
			if (!streq(v, "passive") && !streq(v, "active") && !streq(v, "full"))
				BAD("tier must be passive, active or full, not '%s'", v);
			gb_strscpy(p.tier, sizeof(p.tier), v);
		} else if (IS("verify", "min_gpu_memory_gib")) {
			NUM(p.min_gpu_memory_gib);
		} else if (IS("verify", "fp64_gate")) {
			BOOL(p.fp64_gate);
		} else if (IS("verify", "ecc_required")) {
			BOOL(p.ecc_required);
		} else if (IS("verify", "min_network_gbps")) {
			NUM(p.min_network_gbps);
		} else if (IS("verify", "min_disk_write_mbps")) {
			NUM(p.min_disk_write_mbps);
		} else {
			BAD("unknown setting '%s' in [%s]; see docs/profiles.md", k, s);
		}
#undef BAD
#undef IS
#undef BOOL
#undef NUM
	}
	gb_conf_done(&c);
	if (p.cuda != GB_CUDA_NONE && !p.cuda_components) {
		snprintf(err, errsz, "%s: [cuda] needs components (or policy = none)", source);
		gb_profile_done(&p);
		return -EINVAL;
	}
	p.name = strdup(name);
	p.source = strdup(source);
	if (!p.name || !p.source) {
		gb_profile_done(&p);
		return -ENOMEM;
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

static int set_str(char **field, const char *v)
{
	free(*field);
	*field = strdup(v);
	return *field ? 0 : -ENOMEM;
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

int gb_site_config_parse(const char *source, const char *text, size_t len, struct gb_site_config *ret, char *err,
                         size_t errsz)
{
	struct gb_conf c;
	struct gb_site_config s = { 0 };
	int r;

	r = gb_conf_parse(source, text, len, &c, err, errsz);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c.n && r >= 0; i++) {
		const struct gb_conf_entry *e = &c.entries[i];
		const char *v = e->value;
#define IS(sec_, key_) (streq(e->section, sec_) && streq(e->key, key_))
		if (IS("site", "mirror")) {
			if (!gb_startswith(v, "https://") && !gb_startswith(v, "file:///") &&
			    !gb_startswith(v, "http://"))
				goto bad_url;
			r = set_str(&s.mirror, v);
		} else if (IS("site", "allow_http_mirror")) {
			int b;
			if (gb_conf_parse_bool(v, &b) < 0) {
				snprintf(err, errsz, "%s:%u: allow_http_mirror must be yes or no, not '%s'", source,
				         e->line, v);
				goto fail;
			}
			s.allow_http_mirror = b;
		} else if (IS("site", "proxy")) {
			r = set_str(&s.proxy, v);
		} else if (IS("site", "ca_file")) {
			if (v[0] != '/')
				goto bad_path;
			r = set_str(&s.ca_file, v);
		} else if (IS("trust", "key")) {
			if (v[0] != '/')
				goto bad_path;
			r = append(&s.trusted_keys, v);
		} else if (IS("pins", "driver")) {
			if (!gb_version_valid(v))
				goto bad_version;
			gb_strscpy(s.pinned_driver, sizeof(s.pinned_driver), v);
		} else if (IS("pins", "cuda")) {
			if (!gb_version_valid(v) || strlen(v) >= sizeof(s.pinned_cuda))
				goto bad_version;
			gb_strscpy(s.pinned_cuda, sizeof(s.pinned_cuda), v);
		} else if (IS("pins", "toolkit")) {
			if (!gb_version_valid(v) || strlen(v) >= sizeof(s.pinned_toolkit))
				goto bad_version;
			gb_strscpy(s.pinned_toolkit, sizeof(s.pinned_toolkit), v);
		} else if (IS("checks", "skip")) {
			gb_strv_free(s.skip_checks);
			s.skip_checks = NULL;
			r = gb_conf_split_list(v, &s.skip_checks);
		} else if (IS("secure_boot", "signing_key")) {
			if (v[0] != '/')
				goto bad_path;
			r = set_str(&s.signing_key, v);
		} else if (IS("secure_boot", "signing_cert")) {
			if (v[0] != '/')
				goto bad_path;
			r = set_str(&s.signing_cert, v);
		} else {
			snprintf(err, errsz, "%s:%u: unknown setting '%s' in [%s]; see docs/configuration.md", source,
			         e->line, e->key, e->section);
			goto fail;
		}
#undef IS
		continue;
	bad_url:
		snprintf(err, errsz, "%s:%u: %s must be an https://, http:// or file:/// URL, not '%s'", source,
		         e->line, e->key, v);
		goto fail;
	bad_path:
		snprintf(err, errsz, "%s:%u: %s must be an absolute path, not '%s'", source, e->line, e->key, v);
		goto fail;
	bad_version:
		snprintf(err, errsz, "%s:%u: %s must be a version like 580.95.05 or 12.8, not '%s'", source, e->line,
		         e->key, v);
		goto fail;
	}
	gb_conf_done(&c);
	if (r < 0) {
		gb_site_config_done(&s);
		return r;
	}
	s.source = strdup(source);
	*ret = s;
	return 0;
fail:
	gb_conf_done(&c);
	gb_site_config_done(&s);
	return -EINVAL;
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
