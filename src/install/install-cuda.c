/* SPDX-License-Identifier: MIT */
/* CUDA from NVIDIA's redistributable components: the plan's components,
 * each a verified archive in the fetch cache, unpacked in parallel into a
 * staging tree under usr/local, renamed into place as usr/local/cuda-X.Y
 * in one step, then the usr/local/cuda link, the loader's and the shell's
 * configuration, and ldconfig. What it does to a machine and how to undo
 * it: docs/install.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "context.h"
#include "install.h"
#include "effect/journal.h"
#include "shared/killpoint.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "effect/root-write.h"
#include "shared/root.h"
#include "shared/swap.h"
#include "shared/util.h"
#include "tree.h"
#include "unpack.h"
#include "shared/json-util.h"

#define STAGE "install"
#define MARKER ".gpuboot-cuda"
#define LINK_TMP ".cuda.link-"
#define LDCONF_PATH "etc/ld.so.conf.d/gpuboot-cuda.conf"
#define PROFILE_PATH "etc/profile.d/gpuboot-cuda.sh"
#define LDCONFIG_TIMEOUT_MS (5 * 60 * 1000)

struct cuda {
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const struct gb_cuda_input *in;
	struct gb_cuda_result *ret;
	char xy[16]; /* "13.0" */
	char name[32]; /* "cuda-13.0" */
	char target[32]; /* "x86_64-linux" */
	char local[4200]; /* usr/local on the machine, for messages */
	int local_fd;
	struct gb_cuda_part parts[GB_CUDA_MAX_COMPONENTS];
	char marker[GB_CUDA_MAX_COMPONENTS * 192 + 256];
	size_t marker_len;
};

#define FAIL(s, r, ...) (snprintf((s)->ret->error, sizeof((s)->ret->error), __VA_ARGS__), (r))

static bool chars_ok(const char *s, const char *allowed, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= max && strspn(s, allowed) == n;
}

#define DIGITS "0123456789"
#define LOWER "abcdefghijklmnopqrstuvwxyz"

/* "13.0.0" -> "13.0"; component names and versions as NVIDIA spells them. */
static int check_input(struct cuda *s)
{
	const char *v = s->in->version, *arch = s->in->arch ? s->in->arch : gb_cpu_arch_target(NULL)->cuda_repo;
	const struct gb_cpu_arch *cpu = gb_cpu_arch_by_cuda_repo(arch);
	size_t a, b;
	size_t o;

	if (!chars_ok(v, DIGITS ".", 15) || (a = strspn(v, DIGITS)) == 0 || v[a] != '.' ||
	    (b = strspn(v + a + 1, DIGITS)) == 0 || (v[a + 1 + b] && v[a + 1 + b] != '.'))
		return FAIL(s, -EINVAL, "'%s' is not a CUDA version (X.Y or X.Y.Z)", v ? v : "");
	snprintf(s->xy, sizeof(s->xy), "%.*s", (int)(a + 1 + b), v);
	snprintf(s->name, sizeof(s->name), "cuda-%s", s->xy);
	if (!cpu || !cpu->supported)
		return FAIL(s, -EINVAL, "'%s' is not a CUDA redistributable architecture (x86_64, sbsa)", arch);
	snprintf(s->target, sizeof(s->target), "%s-linux", arch);
	if (s->in->n_components == 0 || s->in->n_components > GB_CUDA_MAX_COMPONENTS || !s->in->components)
		return FAIL(s, -EINVAL, "%zu CUDA components (1 to %d)", s->in->n_components, GB_CUDA_MAX_COMPONENTS);
	o = (size_t)snprintf(s->marker, sizeof(s->marker),
	                     "# gpuboot: CUDA %s from NVIDIA's redistributable components\nversion %s\n", v, v);
	for (size_t i = 0; i < s->in->n_components; i++) {
		const struct gb_cuda_component_in *c = &s->in->components[i];
		const char *sha = c->sha256;
		if (!sha && c->archive)
			sha = strrchr(c->archive, '/') ? strrchr(c->archive, '/') + 1 : c->archive;
		if (!chars_ok(c->name, LOWER DIGITS "_-", 64) || !chars_ok(c->version, DIGITS ".", 31) || !c->archive ||
		    !chars_ok(sha, DIGITS "abcdef", 64) || strlen(sha) != 64)
			return FAIL(s, -EINVAL,
			            "CUDA component %zu ('%s' '%s', %s) is not a name, a version and a "
			            "verified archive named by its sha256",
			            i, c->name ? c->name : "", c->version ? c->version : "",
			            c->archive ? c->archive : "no archive");
		s->parts[i] = (struct gb_cuda_part){ .name = c->name, .version = c->version, .archive = c->archive };
		o += (size_t)snprintf(s->marker + o, sizeof(s->marker) - o, "component %s %s %s\n", c->name, c->version,
		                      sha);
	}
	s->marker_len = o;
	return 0;
}

/* The tree in place holds exactly these components (its marker says so). */
static bool tree_in_place(struct cuda *s)
{
	_cleanup_free_ char *text = NULL;
	char path[96];
	size_t len;
	snprintf(path, sizeof(path), "usr/local/%s/" MARKER, s->name);
	return gb_root_read_file(s->ctx->root, path, sizeof(s->marker), &text, &len) == 0 && len == s->marker_len &&
	       memcmp(text, s->marker, len) == 0;
}

static void random_hex(struct cuda *s, char out[13])
{
	unsigned char b[6];
	if (s->ctx->ops->random(s->ctx->ops, b, sizeof(b)) < 0)
		memset(b, 0, sizeof(b));
	gb_hex_encode(b, sizeof(b), out, 13);
}

/* What a run killed half-way left: staging and old trees of this version,
 * a temp link never renamed over usr/local/cuda. */
static void remove_stale(struct cuda *s)
{
	char staging[48], old[48];
	int fd = openat(s->local_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	snprintf(staging, sizeof(staging), ".%s.staging-", s->name);
	snprintf(old, sizeof(old), ".%s.old-", s->name);
	while ((e = readdir(d)))
		if (gb_startswith(e->d_name, staging) || gb_startswith(e->d_name, old))
			(void)gb_remove_tree_at(s->local_fd, e->d_name);
		else if (gb_startswith(e->d_name, LINK_TMP))
			(void)unlinkat(s->local_fd, e->d_name, 0);
	closedir(d);
}

/* staging -> cuda-X.Y in one step (shared/swap.h: an existing tree is
 * exchanged with it atomically and then removed; where the filesystem
 * cannot exchange, it is renamed aside first and put back on failure).
 * Either way cuda-X.Y is the old tree or the new one. */
static int swap_in(struct cuda *s, const char *staging)
{
	char old[64], hex[13];
	int r;

	random_hex(s, hex);
	snprintf(old, sizeof(old), ".%s.old-%s", s->name, hex);
	r = gb_swap_into_place(s->local_fd, staging, s->name, old, &s->ret->replaced);
	if (r < 0)
		return FAIL(s, r, "Failed to move %s/%s into place as %s/%s: %s", s->local, staging, s->local, s->name,
		            strerror(-r));
	return fsync(s->local_fd) < 0 ? FAIL(s, negative_errno(), "Failed to sync %s", s->local) : 0;
}

/* NVIDIA's toolkit layout: lib64 and include are links into
 * targets/<arch>-linux, and gpuboot's record of what the tree holds. */
static int finish_tree(struct cuda *s, int st_fd, const char *staging)
{
	static const char *const links[] = { "lib64", "lib", "include", "include" };
	char to[64];
	int fd, r = 0;

	for (size_t i = 0; i < ARRAY_SIZE(links); i += 2) {
		struct stat st;
		snprintf(to, sizeof(to), "targets/%s/%s", s->target, links[i + 1]);
		if (fstatat(st_fd, to, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		    symlinkat(to, st_fd, links[i]) < 0 && errno != EEXIST)
			r = negative_errno();
	}
	fd = openat(st_fd, MARKER, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (r >= 0 && fd < 0)
		r = negative_errno();
	if (r >= 0 && (size_t)write(fd, s->marker, s->marker_len) != s->marker_len)
		r = errno ? negative_errno() : -EIO;
	if (fd >= 0 && close(fd) < 0 && r >= 0)
		r = negative_errno();
	/* Everything on disk before the rename makes it visible. */
	if (r >= 0 && syncfs(st_fd) < 0)
		r = negative_errno();
	return r < 0 ? FAIL(s, r, "Failed to finish %s/%s: %s", s->local, staging, strerror(-r)) : 0;
}

/* On ENOSPC (EFBIG under a file size limit, EDQUOT): what the tree needs
 * and what the filesystem had. */
static void space_message(struct cuda *s, int r, const char *what)
{
	struct statvfs vfs;
	unsigned long long need = 0;
	if (gb_cuda_parts_size(s->parts, s->in->n_components, &need) == 0)
		s->ret->needed = need;
	if (fstatvfs(s->local_fd, &vfs) == 0)
		s->ret->free_bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	(void)FAIL(s, r,
	           "%s; CUDA %s's %zu components need about %llu MiB in %s, %llu MiB were free there; nothing was "
	           "changed (free the space and run again)",
	           what, s->xy, s->in->n_components, (s->ret->needed + (1u << 20) - 1) >> 20, s->local,
	           s->ret->free_bytes >> 20);
}

static json_object *tree_detail(struct cuda *s, const char *staging)
{
	json_object *d = gb_json_new_object(), *c = gb_json_new_array();
	char path[64];
	snprintf(path, sizeof(path), "usr/local/%s", s->name);
	gb_json_add(d, "path", gb_json_new_string(path));
	gb_json_add(d, "staging", gb_json_new_string(staging));
	for (size_t i = 0; i < s->in->n_components; i++) {
		char x[128];
		snprintf(x, sizeof(x), "%s %s", s->parts[i].name, s->parts[i].version);
		gb_json_append(c, gb_json_new_string(x));
	}
	gb_json_add(d, "components", c);
	return d;
}

static unsigned pick_threads(const struct cuda *s)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned t = s->in->threads;
	if (t == 0) {
		t = cpus > 0 ? (unsigned)cpus : 1;
		if (t > 8)
			t = 8;
	}
	if (t > s->in->n_components)
		t = (unsigned)s->in->n_components;
	return t ? t : 1;
}

/* Unpack into a fresh staging tree, finish it, swap it into place. */
static int unpack_tree(struct cuda *s)
{
	struct gb_unpack_opts o;
	char staging[64], hex[13], label[4300], id[96];
	const struct gb_ops *ops = s->ctx->ops;
	uint64_t t0;
	int st_fd, r;

	random_hex(s, hex);
	snprintf(staging, sizeof(staging), ".%s.staging-%s", s->name, hex);
	snprintf(label, sizeof(label), "%s/%s", s->local, staging);
	snprintf(id, sizeof(id), "tree:usr/local/%s", s->name);
	r = gb_journal_begin(s->j, STAGE, id, "tree", tree_detail(s, staging));
	if (r != 0)
		return r < 0 ? FAIL(s, r, "Failed to write the journal: %s", strerror(-r)) : 0;
	if (mkdirat(s->local_fd, staging, 0755) < 0 ||
	    (st_fd = openat(s->local_fd, staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		r = negative_errno();
		if (r == -ENOSPC || r == -EDQUOT)
			space_message(s, r, "Failed to create the staging directory");
		else
			(void)FAIL(s, r, "Failed to create %s: %s", label, strerror(-r));
		(void)gb_journal_end(s->j, id, r, NULL);
		return r;
	}
	gb_unpack_opts_default(&o);
	s->ret->threads = pick_threads(s);
	t0 = ops->now_monotonic_ns(ops);
	r = gb_cuda_unpack_parts(st_fd, label, s->target, s->parts, s->in->n_components, s->ret->threads, &o,
	                         s->ret->error, sizeof(s->ret->error));
	s->ret->unpack_s = (double)(ops->now_monotonic_ns(ops) - t0) / 1e9;
	for (size_t i = 0; i < s->in->n_components; i++) {
		s->ret->bytes += s->parts[i].bytes;
		s->ret->files += s->parts[i].files;
	}
	if (r == -ENOSPC || r == -EFBIG || r == -EDQUOT) {
		char what[800];
		gb_strscpy(what, sizeof(what), s->ret->error);
		space_message(s, r, what);
	}
	if (r >= 0)
		r = finish_tree(s, st_fd, staging);
	close(st_fd);
	if (r >= 0)
		r = swap_in(s, staging);
	if (r < 0)
		(void)gb_remove_tree_at(s->local_fd, staging); /* the old tree stays as it was */
	else {
		s->ret->tree_changed = true;
		gb_journal_count_effect(s->j);
	}
	{
		json_object *d = gb_json_new_object();
		gb_json_add(d, "bytes", gb_json_new_int64((int64_t)s->ret->bytes));
		gb_json_add(d, "files", gb_json_new_int64((int64_t)s->ret->files));
		gb_json_add(d, "replaced", gb_json_new_boolean(s->ret->replaced));
		return gb_journal_end(s->j, id, r, d) < 0 && r >= 0 ? -EIO : r;
	}
}

/* usr/local/cuda -> cuda-X.Y: a link made under a temp name and renamed
 * over the old one, so it always points somewhere whole. */
static int point_link(struct cuda *s)
{
	char old[64] = "", tmp[48], hex[13];
	struct stat st;
	ssize_t n = readlinkat(s->local_fd, "cuda", old, sizeof(old) - 1);
	json_object *d;
	int r;

	if (n >= 0) {
		old[n] = '\0';
		if (streq(old, s->name))
			return 0;
	} else if (fstatat(s->local_fd, "cuda", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		return FAIL(s, -EEXIST, "%s/cuda is not a link (a toolkit installed otherwise?): left alone", s->local);
	}
	d = gb_json_new_object();
	gb_json_add(d, "path", gb_json_new_string("usr/local/cuda"));
	gb_json_add(d, "target", gb_json_new_string(s->name));
	gb_json_add(d, "target_before", old[0] ? gb_json_new_string(old) : NULL);
	r = gb_journal_begin(s->j, STAGE, "link:usr/local/cuda", "symlink", d);
	if (r != 0)
		return r < 0 ? r : 0;
	random_hex(s, hex);
	snprintf(tmp, sizeof(tmp), LINK_TMP "%s", hex);
	r = symlinkat(s->name, s->local_fd, tmp) < 0 ? negative_errno() : 0;
	gb_kill_point("link");
	if (r >= 0 && renameat(s->local_fd, tmp, s->local_fd, "cuda") < 0) {
		r = negative_errno();
		unlinkat(s->local_fd, tmp, 0);
	}
	if (r >= 0 && fsync(s->local_fd) < 0)
		r = negative_errno();
	if (r >= 0) {
		s->ret->link_changed = true;
		gb_journal_count_effect(s->j);
	} else
		(void)FAIL(s, r, "Failed to point %s/cuda at %s: %s", s->local, s->name, strerror(-r));
	return gb_journal_end(s->j, "link:usr/local/cuda", r, NULL) < 0 && r >= 0 ? -EIO : r;
}

static int write_config(struct cuda *s)
{
	char ld[256], sh[768];
	unsigned before = gb_journal_effects(s->j);
	int r;

	snprintf(ld, sizeof(ld),
	         "# Written by gpuboot: the libraries of CUDA %s (docs/install.md says how to undo it).\n"
	         "/usr/local/%s/targets/%s/lib\n",
	         s->xy, s->name, s->target);
	snprintf(sh, sizeof(sh),
	         "# Written by gpuboot: CUDA %s's tools on PATH. Its libraries are found through\n"
	         "# /etc/ld.so.conf.d/gpuboot-cuda.conf, not LD_LIBRARY_PATH.\n"
	         "case \":${PATH}:\" in\n"
	         "*:/usr/local/%s/bin:*) ;;\n"
	         "*) PATH=\"/usr/local/%s/bin${PATH:+:$PATH}\"; export PATH ;;\n"
	         "esac\n",
	         s->xy, s->name, s->name);
	r = gb_journal_write_file(s->j, STAGE, LDCONF_PATH, ld, strlen(ld), 0644);
	if (r < 0)
		return FAIL(s, r, "Failed to write %s in %s: %s", LDCONF_PATH, s->ctx->root->path, strerror(-r));
	r = gb_journal_write_file(s->j, STAGE, PROFILE_PATH, sh, strlen(sh), 0644);
	if (r < 0)
		return FAIL(s, r, "Failed to write %s in %s: %s", PROFILE_PATH, s->ctx->root->path, strerror(-r));
	s->ret->config_changed = gb_journal_effects(s->j) != before;
	return 0;
}

/* A killed run that changed the tree, the link or the loader's
 * configuration and did not finish its ldconfig: this run, finding them
 * in place, still owes the loader's cache its update. */
static bool ldconfig_owed(struct cuda *s)
{
	char tree[96];

	if (!s->j->resumed || gb_journal_step_changed(s->j, "ldconfig:cuda"))
		return false;
	snprintf(tree, sizeof(tree), "tree:usr/local/%s", s->name);
	return gb_journal_step_changed(s->j, tree) || gb_journal_step_changed(s->j, "link:usr/local/cuda") ||
	       gb_journal_step_changed(s->j, "file:" LDCONF_PATH) ||
	       gb_journal_step_changed(s->j, "file:" PROFILE_PATH);
}

static int run_ldconfig(struct cuda *s, const char *chroot_dir)
{
	static const char *const argv[] = { "ldconfig", NULL };
	struct gb_cmd_spec spec = { .argv = argv, .chroot_dir = chroot_dir, .timeout_ms = LDCONFIG_TIMEOUT_MS };
	_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
	int r;

	if (!res)
		return -ENOMEM;
	r = gb_journal_run(s->j, STAGE, "ldconfig:cuda", &spec, res);
	if (r < 0) {
		char esc[600];
		gb_log_escape(esc, sizeof(esc),
		              res->output_len > 256 ? res->output + res->output_len - 256 : res->output);
		return FAIL(s, r, "ldconfig%s%s failed: %s", chroot_dir ? " in " : "", chroot_dir ? chroot_dir : "",
		            esc[0] ? esc : strerror(-r));
	}
	s->ret->ldconfig_ran = r == 0;
	return 0;
}

int gb_install_cuda(struct gb_ctx *ctx, const struct gb_cuda_input *in, struct gb_journal *j,
                    struct gb_cuda_result *ret)
{
	_cleanup_free_ struct cuda *s = NULL;
	char dir[4096];
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!ctx || !ctx->root || !ctx->ops || !in || !j)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct cuda){ .ctx = ctx, .j = j, .in = in, .ret = ret, .local_fd = -1 };
	ret->image = !ctx->root->is_host;
	if ((r = check_input(s)) < 0)
		return r;
	snprintf(ret->dir, sizeof(ret->dir), "usr/local/%s", s->name);
	snprintf(s->local, sizeof(s->local), "%s/usr/local", ctx->root->is_host ? "" : ctx->root->path);
	if (ret->image && !realpath(ctx->opt.root ? ctx->opt.root : ctx->root->path, dir))
		return FAIL(s, negative_errno(), "Failed to resolve the root '%s'", ctx->root->path);
	r = gb_root_mkdir_p(ctx->root, "usr/local", 0755);
	if (r >= 0 &&
	    (s->local_fd = gb_root_openat_strict(ctx->root, "usr/local", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = s->local_fd;
	if (r < 0)
		return FAIL(s, r, "Failed to open %s: %s", s->local, strerror(-r));
	remove_stale(s);
	if (!tree_in_place(s))
		r = unpack_tree(s);
	if (r >= 0)
		r = point_link(s);
	if (r >= 0)
		r = write_config(s);
	if (r >= 0 && (ret->tree_changed || ret->link_changed || ret->config_changed || ldconfig_owed(s)))
		r = run_ldconfig(s, ret->image ? dir : NULL);
	close(s->local_fd);
	return r;
}

json_object *gb_cuda_result_to_json(const struct gb_cuda_result *r)
{
	json_object *o = gb_json_new_object();
	gb_json_add(o, "dir", gb_json_new_string(r->dir));
	gb_json_add(o, "image", gb_json_new_boolean(r->image));
	gb_json_add(o, "tree_changed", gb_json_new_boolean(r->tree_changed));
	gb_json_add(o, "replaced", gb_json_new_boolean(r->replaced));
	gb_json_add(o, "link_changed", gb_json_new_boolean(r->link_changed));
	gb_json_add(o, "config_changed", gb_json_new_boolean(r->config_changed));
	gb_json_add(o, "ldconfig_ran", gb_json_new_boolean(r->ldconfig_ran));
	gb_json_add(o, "threads", gb_json_new_int((int)r->threads));
	gb_json_add(o, "bytes", gb_json_new_int64((int64_t)r->bytes));
	gb_json_add(o, "files", gb_json_new_int64((int64_t)r->files));
	gb_json_add(o, "unpack_seconds", gb_json_new_double(r->unpack_s));
	gb_json_add(o, "needed_bytes", r->needed ? gb_json_new_int64((int64_t)r->needed) : NULL);
	gb_json_add(o, "free_bytes", r->needed ? gb_json_new_int64((int64_t)r->free_bytes) : NULL);
	gb_json_add(o, "error", r->error[0] ? gb_json_new_string(r->error) : NULL);
	return o;
}
