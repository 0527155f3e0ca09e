/* SPDX-License-Identifier: MIT */
/* The Container Toolkit's runtime configuration: which engines are here,
 * docker's daemon.json merged, CRI-O's drop-in, containerd's (built in
 * ctk-containerd.c), the restarts a live machine needs, and the result.
 * What each engine gets, file by file, and how to undo it:
 * docs/container-toolkit.md. */
#include <errno.h>
#include <json-c/printbuf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "context.h"
#include "ctk-internal.h"
#include "ctk.h"
#include "effect/journal.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/util.h"

#define QUERY_TIMEOUT_MS (60 * 1000)

/* The engines, the daemon that says one is here, its unit, and how a
 * changed configuration reaches it: docker reloads its runtimes on SIGHUP
 * (its unit's ExecReload), containerd and CRI-O are restarted (their
 * containers live on in their shims and conmon). podman has no daemon: it
 * reads the CDI specification. */
static const struct gb_ctk_engine {
	const char *name, *daemon, *unit, *restart;
} engines[GB_CTK_MAX_ENGINES] = {
	{ "docker", "dockerd", "docker.service", "try-reload-or-restart" },
	{ "containerd", "containerd", "containerd.service", "try-restart" },
	{ "cri-o", "crio", "crio.service", "try-restart" },
	{ "podman", "podman", NULL, NULL },
};
static const char *const bin_dirs[] = { "usr/bin", "usr/sbin", "usr/local/bin" };

bool gb_ctk_path_valid(const char *p)
{
	if (!p || p[0] != '/' || strlen(p) > 255 || strstr(p, "/../") || strstr(p, "/./"))
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '"' || *c == '\'' || *c == '\\' || *c == '%' ||
		    *c == '$' || *c == '`')
			return false;
	return true;
}

/* ---- docker ---- */

/* json-c keeps a number's text only for fractions and exponents; an
 * integer beyond 64 bits would be written back clamped. */
static bool has_huge_integer(const char *t, size_t len)
{
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			if (t[i] == '\\')
				i++;
			else if (t[i] == '"')
				in_str = false;
			continue;
		}
		if (t[i] == '"') {
			in_str = true;
			continue;
		}
		if (!(t[i] >= '0' && t[i] <= '9'))
			continue;
		size_t digits = 0;
		bool frac = false;
		for (; i < len && strchr("0123456789.eE+-", t[i]) && t[i]; i++) {
			digits += t[i] >= '0' && t[i] <= '9';
			frac |= t[i] == '.' || t[i] == 'e' || t[i] == 'E';
		}
		if (!frac && digits >= 19)
			return true;
		i--;
	}
	return false;
}

static int empty_array_text(json_object *o, struct printbuf *pb, int level, int flags)
{
	(void)o, (void)level, (void)flags;
	return printbuf_strappend(pb, "[]");
}

static json_object *docker_runtime(const char *runtime_path)
{
	json_object *rt = gb_json_new_object(), *args = gb_json_new_array();
	if (args) /* "[]", not json-c's pretty "[\n]" */
		json_object_set_serializer(args, empty_array_text, NULL, NULL);
	gb_json_add(rt, "path", gb_json_new_string(runtime_path));
	gb_json_add(rt, "args", args);
	return rt;
}

#define DFAIL(...) (snprintf(err, errsz, __VA_ARGS__), -EINVAL)

int gb_ctk_docker_merge(const char *text, size_t len, const char *runtime_path, bool set_default, char **ret,
                        size_t *ret_len, char *err, size_t errsz)
{
	json_object *root = NULL, *runtimes, *want = NULL;
	_cleanup_free_ char *out = NULL;
	char perr[256];
	size_t skip = 0;
	int r;

	*ret = NULL;
	err[0] = '\0';
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		skip = 3;
	while (skip < len && strchr(" \t\r\n", text[skip]) && text[skip])
		skip++;
	if (skip == len) {
		root = gb_json_new_object();
	} else {
		if (has_huge_integer(text + skip, len - skip))
			return DFAIL("an integer of 19 digits or more, which gpuboot cannot keep exactly");
		r = gb_json_parse_strict(text + skip, len - skip, 64, &root, perr, sizeof(perr));
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return DFAIL("not JSON: %s", perr);
	}
	if (!root)
		return -ENOMEM;
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return DFAIL("the top level is not a JSON object");
	}
	runtimes = gb_json_get(root, "runtimes");
	if (runtimes && !json_object_is_type(runtimes, json_type_object)) {
		json_object_put(root);
		return DFAIL("\"runtimes\" is not a JSON object");
	}
	want = docker_runtime(runtime_path);
	const char *dflt = gb_json_get_str(root, "default-runtime");
	if (runtimes && json_object_equal(gb_json_get(runtimes, "nvidia"), want) &&
	    (!set_default || (dflt && streq(dflt, "nvidia")))) {
		json_object_put(want);
		json_object_put(root);
		return gb_json_oom() ? -ENOMEM : 0; /* in place */
	}
	if (!runtimes) {
		runtimes = gb_json_new_object();
		if (gb_json_add(root, "runtimes", runtimes) < 0)
			runtimes = NULL; /* released, the flag set: the text below fails */
	}
	gb_json_add(runtimes, "nvidia", want); /* replaced where it was, added at the end where not */
	if (set_default)
		gb_json_add(root, "default-runtime", gb_json_new_string("nvidia"));
	r = gb_json_text(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	                 &out);
	json_object_put(root);
	if (r < 0)
		return r;
	size_t n = strlen(out);
	char *t = realloc(out, n + 2);
	if (!t)
		return -ENOMEM;
	out = NULL;
	t[n] = '\n';
	t[n + 1] = '\0';
	*ret = t;
	*ret_len = n + 1;
	return 0;
}

/* ---- CRI-O ---- */

char *gb_ctk_crio_dropin(const char *runtime_path, bool set_default)
{
	char *t = NULL;
	if (asprintf(&t,
	             "# Written by gpuboot: the NVIDIA Container Runtime as a CRI-O runtime handler (CRI-O\n"
	             "# reads every file of /etc/crio/crio.conf.d, in name order). To undo: remove this\n"
	             "# file, then systemctl restart crio (docs/container-toolkit.md).\n"
	             "%s"
	             "[crio.runtime.runtimes.nvidia]\n"
	             "runtime_path = \"%s\"\n"
	             "runtime_type = \"oci\"\n",
	             set_default ? "[crio.runtime]\ndefault_runtime = \"nvidia\"\n\n" : "", runtime_path) < 0)
		return NULL;
	return t;
}

/* ---- the stage ---- */

int gb_ctk_fail(struct gb_ctk *s, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->ret->error, sizeof(s->ret->error), fmt, ap);
	va_end(ap);
	return r;
}

/* A configuration that is a symbolic link: gpuboot replaces files, it
 * never writes through a link (it could lead anywhere, the host included). */
int gb_ctk_refuse_link(struct gb_ctk *s, const char *path)
{
	_cleanup_free_ char *target = NULL;
	char esc[300];
	if (gb_root_readlink(s->ctx->root, path, &target) < 0)
		return 0;
	gb_log_escape(esc, sizeof(esc), target);
	return gb_ctk_fail(s, -ELOOP,
	                   "'%s' in %s is a symbolic link (to '%s'): gpuboot writes no file through a link; make it a "
	                   "regular file, or configure the nvidia runtime by hand",
	                   path, s->ctx->root->path, esc);
}

int gb_ctk_write(struct gb_ctk *s, const char *path, const char *text, size_t len, mode_t mode)
{
	int r = gb_ctk_refuse_link(s, path);
	if (r < 0)
		return r;
	r = gb_journal_write_file(s->j, GB_CTK_STAGE, path, text, len, mode);
	if (r < 0)
		return gb_ctk_fail(s, r, "Failed to write '%s' in %s: %s", path, s->ctx->root->path, strerror(-r));
	return 0;
}

bool gb_ctk_file_changed(struct gb_ctk *s, const char *path)
{
	char id[200];
	snprintf(id, sizeof(id), "file:%s", path);
	return gb_journal_step_changed(s->j, id);
}

/* Read a configuration that may be absent (*ret NULL). */
static int read_config(struct gb_ctk *s, const char *path, char **ret, size_t *ret_len, mode_t *ret_mode)
{
	char hex[65];
	int r = gb_ctk_refuse_link(s, path);
	*ret = NULL;
	*ret_len = 0;
	*ret_mode = 0644;
	if (r < 0)
		return r;
	r = gb_root_read_file(s->ctx->root, path, GB_CTK_CONFIG_MAX, ret, ret_len);
	if (r == -ENOENT)
		return 0;
	if (r == -EFBIG)
		return gb_ctk_fail(s, r,
		                   "'%s' in %s is larger than %u bytes: gpuboot does not read it; configure the "
		                   "nvidia runtime by hand",
		                   path, s->ctx->root->path, GB_CTK_CONFIG_MAX);
	if (r < 0)
		return gb_ctk_fail(s, r, "Failed to read '%s' in %s: %s", path, s->ctx->root->path, strerror(-r));
	if (gb_root_sha256(s->ctx->root, path, hex, ret_mode) >= 0)
		*ret_mode &= 07777;
	return 0;
}

static int configure_docker(struct gb_ctk *s, struct gb_ctk_engine_result *e)
{
	_cleanup_free_ char *text = NULL, *out = NULL;
	size_t len, out_len = 0;
	mode_t mode;
	char err[400];
	int r = read_config(s, GB_CTK_DOCKER_CONFIG, &text, &len, &mode);

	if (r < 0)
		return r;
	r = gb_ctk_docker_merge(text ? text : "", len, s->runtime_path, s->in->set_default, &out, &out_len, err,
	                        sizeof(err));
	if (r == -EINVAL)
		return gb_ctk_fail(s, r, "'%s' in %s: %s; gpuboot never overwrites what it cannot read: fix the file",
		                   GB_CTK_DOCKER_CONFIG, s->ctx->root->path, err);
	if (r < 0)
		return gb_ctk_fail(s, r, "Failed to merge '%s': %s", GB_CTK_DOCKER_CONFIG, strerror(-r));
	gb_strscpy(e->config, sizeof(e->config), GB_CTK_DOCKER_CONFIG);
	if (out && (r = gb_ctk_write(s, GB_CTK_DOCKER_CONFIG, out, out_len, mode)) < 0)
		return r;
	e->changed = gb_ctk_file_changed(s, GB_CTK_DOCKER_CONFIG);
	return 0;
}

/* containerd's major version from `containerd --version` (chrooted for an
 * image): a read-only query, not an effect. 0 when it cannot be told. */
static int containerd_major(struct gb_ctk *s, const char *daemon)
{
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	char bin[64];
	const char *argv[] = { bin, "--version", NULL };
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = s->chroot_dir, .timeout_ms = QUERY_TIMEOUT_MS };

	int r;

	if (!res)
		return 0;
	snprintf(bin, sizeof(bin), "/%s", daemon);
	r = s->ctx->ops->run_command(s->ctx->ops, &spec, res);
	if (r < 0 || !WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0)
		return 0;
	return gb_ctk_containerd_major(res->output);
}

static int configure_containerd(struct gb_ctk *s, struct gb_ctk_engine_result *e)
{
	_cleanup_free_ char *text = NULL;
	struct gb_ctk_containerd c;
	size_t len;
	mode_t mode;
	char err[600];
	int r = read_config(s, GB_CTK_CONTAINERD_CONFIG, &text, &len, &mode);

	if (r < 0)
		return r;
	r = gb_ctk_containerd_build(text, len, 0, s->runtime_path, s->in->set_default, &c, err, sizeof(err));
	if (r >= 0 && streq(c.version_from, "default")) {
		/* the main file names no version: ask the binary which major it is */
		int major = containerd_major(s, e->binary);
		if (major > 0) {
			gb_ctk_containerd_done(&c);
			r = gb_ctk_containerd_build(text, len, major, s->runtime_path, s->in->set_default, &c, err,
			                            sizeof(err));
		}
	}
	if (r == -EINVAL || r == -EOPNOTSUPP)
		return gb_ctk_fail(s, r, "%s (in %s)", err, s->ctx->root->path);
	if (r < 0)
		return gb_ctk_fail(s, r, "Failed to build the containerd drop-in: %s", strerror(-r));
	e->config_version = c.version;
	e->version_from = c.version_from;
	if (c.cri_disabled) {
		e->note = "its CRI plugin is disabled in " GB_CTK_CONTAINERD_CONFIG
		          " (docker's containerd.io ships it so): nothing reads a runtime declared to it";
		return 0;
	}
	gb_strscpy(e->config, sizeof(e->config), GB_CTK_CONTAINERD_DROPIN);
	/* the drop-in first: the imports entry never names a file that is not there */
	r = gb_ctk_write(s, GB_CTK_CONTAINERD_DROPIN, c.dropin, c.dropin_len, 0644);
	if (r >= 0 && c.main)
		r = gb_ctk_write(s, GB_CTK_CONTAINERD_CONFIG, c.main, c.main_len, mode);
	gb_ctk_containerd_done(&c);
	if (r < 0)
		return r;
	if (gb_ctk_file_changed(s, GB_CTK_CONTAINERD_CONFIG))
		gb_strscpy(e->main_config, sizeof(e->main_config), GB_CTK_CONTAINERD_CONFIG);
	e->changed = gb_ctk_file_changed(s, GB_CTK_CONTAINERD_DROPIN) || e->main_config[0];
	return 0;
}

static int configure_crio(struct gb_ctk *s, struct gb_ctk_engine_result *e)
{
	_cleanup_free_ char *text = gb_ctk_crio_dropin(s->runtime_path, s->in->set_default);
	int r;
	if (!text)
		return gb_ctk_fail(s, -ENOMEM, "Out of memory");
	gb_strscpy(e->config, sizeof(e->config), GB_CTK_CRIO_DROPIN);
	r = gb_ctk_write(s, GB_CTK_CRIO_DROPIN, text, strlen(text), 0644);
	if (r < 0)
		return r;
	e->changed = gb_ctk_file_changed(s, GB_CTK_CRIO_DROPIN);
	return 0;
}

int gb_ctk_systemctl(struct gb_ctk *s, const char *verb, const char *unit)
{
	char id[160];
	json_object *d = gb_json_new_object();
	int r;

	snprintf(id, sizeof(id), "systemctl:%s:%s", verb, unit);
	gb_json_add(d, "verb", gb_json_new_string(verb));
	gb_json_add(d, "unit", gb_json_new_string(unit));
	r = gb_journal_begin(s->j, GB_CTK_STAGE, id, "command", d);
	if (r != 0)
		return r < 0 ? gb_ctk_fail(s, r, "Failed to journal systemctl %s %s: %s", verb, unit, strerror(-r)) : 0;
	r = s->ctx->ops->systemctl(s->ctx->ops, verb, unit);
	if (r == 0)
		gb_journal_count_effect(s->j);
	if (gb_journal_end(s->j, id, r, NULL) < 0 && r == 0)
		r = -EIO;
	return r < 0 ? gb_ctk_fail(s, r, "systemctl %s %s failed: %s; 'journalctl -u %s' says why", verb, unit,
	                           strerror(-r), unit)
	             : 0;
}

int gb_ctk_init(struct gb_ctk *s, struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in,
                struct gb_ctk_result *ret)
{
	*s = (struct gb_ctk){ .ctx = ctx, .j = j, .in = in, .ret = ret };
	if (!ctx || !ctx->root || !ctx->ops || !j || !in || !ret)
		return -EINVAL;
	ret->error[0] = '\0';
	s->runtime_path = in->runtime_path ? in->runtime_path : GB_CTK_RUNTIME_PATH;
	if (!gb_ctk_path_valid(s->runtime_path))
		return gb_ctk_fail(s, -EINVAL,
		                   "The runtime path '%.200s' is not an absolute path of plain characters (no "
		                   "whitespace, quotes, backslash, %%, $ or `)",
		                   s->runtime_path);
	/* A root other than / with the real operations is an image, whatever
	 * the caller said: the host's engines are never restarted for it. */
	ret->image = in->image || (!ctx->root->is_host && ctx->ops == &gb_ops_real);
	if (!ctx->root->is_host) {
		if (!realpath(ctx->opt.root ? ctx->opt.root : ctx->root->path, s->chroot_buf))
			return gb_ctk_fail(s, negative_errno(), "Failed to resolve the root '%s'", ctx->root->path);
		s->chroot_dir = s->chroot_buf;
	}
	return 0;
}

static void find_engines(struct gb_ctk *s)
{
	char p[96];
	s->ret->n_engines = GB_CTK_MAX_ENGINES;
	for (size_t i = 0; i < GB_CTK_MAX_ENGINES; i++) {
		struct gb_ctk_engine_result *e = &s->ret->engines[i];
		e->name = engines[i].name;
		e->restart_verb = engines[i].restart;
		for (size_t k = 0; k < ARRAY_SIZE(bin_dirs) && !e->present; k++) {
			snprintf(p, sizeof(p), "%s/%s", bin_dirs[k], engines[i].daemon);
			if (gb_root_exists(s->ctx->root, p)) {
				e->present = true;
				gb_strscpy(e->binary, sizeof(e->binary), p);
			}
		}
	}
}

int gb_ctk_configure(struct gb_ctx *ctx, struct gb_journal *j, const struct gb_ctk_input *in, struct gb_ctk_result *ret)
{
	struct gb_ctk s;
	int r = gb_ctk_init(&s, ctx, j, in, ret);

	if (r < 0)
		return r;
	find_engines(&s);
	for (size_t i = 0; i < ret->n_engines; i++) {
		struct gb_ctk_engine_result *e = &ret->engines[i];
		if (!e->present)
			continue;
		if (streq(e->name, "docker"))
			r = configure_docker(&s, e);
		else if (streq(e->name, "containerd"))
			r = configure_containerd(&s, e);
		else if (streq(e->name, "cri-o"))
			r = configure_crio(&s, e);
		if (r < 0)
			return r;
	}
	/* Live: every engine whose configuration changed reads it now; an
	 * image's engines read it at their first start. */
	for (size_t i = 0; i < ret->n_engines && !ret->image; i++) {
		struct gb_ctk_engine_result *e = &ret->engines[i];
		if (!e->present || !e->changed || !engines[i].unit)
			continue;
		r = gb_ctk_systemctl(&s, engines[i].restart, engines[i].unit);
		if (r < 0)
			return gb_ctk_fail(
			    &s, r,
			    "%s did not take its new configuration: systemctl %s %s failed; 'journalctl -u "
			    "%s' says why (the nvidia runtime is in %s; remove it to undo)",
			    e->name, engines[i].restart, engines[i].unit, engines[i].unit, e->config);
		e->restarted = true;
	}
	return 0;
}

static json_object *str_or_null(const char *s)
{
	return s && s[0] ? gb_json_new_string(s) : NULL;
}

json_object *gb_ctk_result_to_json(const struct gb_ctk_result *r)
{
	json_object *o = gb_json_new_object(), *engs = gb_json_new_array(), *cdi = gb_json_new_object();

	gb_json_add(o, "image", gb_json_new_boolean(r->image));
	for (size_t i = 0; i < r->n_engines; i++) {
		const struct gb_ctk_engine_result *e = &r->engines[i];
		json_object *x = gb_json_new_object();
		gb_json_add(x, "name", str_or_null(e->name));
		gb_json_add(x, "present", gb_json_new_boolean(e->present));
		gb_json_add(x, "binary", str_or_null(e->binary));
		gb_json_add(x, "config", str_or_null(e->config));
		gb_json_add(x, "main_config", str_or_null(e->main_config));
		gb_json_add(x, "config_version", e->config_version ? gb_json_new_int(e->config_version) : NULL);
		gb_json_add(x, "version_from", str_or_null(e->version_from));
		gb_json_add(x, "changed", gb_json_new_boolean(e->changed));
		gb_json_add(x, "restarted", gb_json_new_boolean(e->restarted));
		gb_json_add(x, "restart", e->restarted ? str_or_null(e->restart_verb) : NULL);
		gb_json_add(x, "note", str_or_null(e->note));
		gb_json_append(engs, x);
	}
	gb_json_add(o, "engines", engs);
	gb_json_add(cdi, "refresh_units", gb_json_new_boolean(r->cdi_refresh));
	gb_json_add(cdi, "spec", str_or_null(r->cdi_spec));
	gb_json_add(cdi, "unit", str_or_null(r->cdi_unit));
	gb_json_add(cdi, "generated", gb_json_new_boolean(r->cdi_generated));
	gb_json_add(cdi, "changed", gb_json_new_boolean(r->cdi_changed));
	gb_json_add(o, "cdi", cdi);
	gb_json_add(o, "error", str_or_null(r->error));
	return o;
}
