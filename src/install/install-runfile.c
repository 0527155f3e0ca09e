/* SPDX-License-Identifier: MIT */
/* The "runfile" method: NVIDIA's .run, already verified by sha256 in the
 * fetch cache, unpacked by gpuboot's own unpacker (the makeself shell
 * header is read, never run), then its nvidia-installer run
 * non-interactively with the flags the plan's version, flavour, DKMS and
 * kernels call for. What it does to a machine and how to undo it:
 * docs/install.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "context.h"
#include "install-internal.h"
#include "install.h"
#include "effect/journal.h"
#include "shared/fileio.h"
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
#define MARKER_PATH "var/lib/gpuboot/runfile-driver"
#define IMAGE_WORK "var/lib/gpuboot" /* below an image root, where the chroot sees it */
#define DEFAULT_TIMEOUT_MS (30 * 60 * 1000)
#define WRAPPER "cd -- \"$1\" && shift && exec ./nvidia-installer \"$@\""

/* The installer's options by the release that brought them
 * (NVIDIA/nvidia-installer, option_table.h): --kernel-module-type in
 * 555.42.02 (before: --kernel-module-build-directory=kernel-open, the open
 * modules from the catalog's gb_open_module_from), --skip-module-load in
 * 550.40.07. */
#define V_MODULE_TYPE 555
#define V_SKIP_LOAD 550

int gb_runfile_argv(const char *dir, const char *version, const char *flavor, bool dkms, const char *kver, bool first,
                    const char *log, const char **argv, char (*buf)[4400])
{
	char major_s[8];
	uint32_t major;
	size_t n = 0, b = 0, k = strspn(version ? version : "", "0123456789");
	bool open;

	if (!version || k == 0 || k >= sizeof(major_s) || (version[k] && version[k] != '.'))
		return -EINVAL;
	memcpy(major_s, version, k);
	major_s[k] = '\0';
	if (gb_safe_atou32(major_s, 10, &major) < 0 || !flavor ||
	    (!streq(flavor, "open") && !streq(flavor, "proprietary")))
		return -EINVAL;
	open = streq(flavor, "open");
	if (open && major < gb_open_module_from)
		return -EINVAL;
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = WRAPPER;
	argv[n++] = "nvidia-installer";
	argv[n++] = dir;
	argv[n++] = "--silent";
	argv[n++] = "--no-questions";
	argv[n++] = "--ui=none";
	argv[n++] = "--accept-license"; /* ignored by newer installers, needed by older ones */
	argv[n++] = "--no-nouveau-check"; /* gpuboot blacklists nouveau itself */
	if (major >= V_SKIP_LOAD)
		argv[n++] = "--skip-module-load"; /* gpuboot loads the modules (libkmod) */
	if (major >= V_MODULE_TYPE) {
		snprintf(buf[b], sizeof(buf[b]), "--kernel-module-type=%s", flavor);
		argv[n++] = buf[b++];
	} else if (open) {
		argv[n++] = "--kernel-module-build-directory=kernel-open";
	}
	argv[n++] = dkms ? "--dkms" : "--no-dkms";
	if (kver) {
		snprintf(buf[b], sizeof(buf[b]), "--kernel-name=%s", kver);
		argv[n++] = buf[b++];
	}
	if (!first)
		argv[n++] = "--kernel-module-only";
	snprintf(buf[b], sizeof(buf[b]), "--log-file-name=%s", log);
	argv[n++] = buf[b++];
	argv[n] = NULL;
	return 0;
}

struct rf {
	struct gb_ctx *ctx;
	struct gb_journal *j;
	const struct gb_runfile_input *in;
	struct gb_runfile_result *ret;
	const char *chroot_dir; /* NULL on the live machine */
	char chroot_buf[PATH_MAX];
	bool running_kernel; /* live, no kernel given: no --kernel-name */
	char work[PATH_MAX]; /* the staging directory here */
	char inside[PATH_MAX]; /* the same directory as the installer sees it */
	char tree[PATH_MAX]; /* the unpacked tree, as the installer sees it */
	char log_inside[PATH_MAX];
	char marker[2048];
	struct gb_cmd_result *res;
};

#define FAIL(s, r, ...) (snprintf((s)->ret->error, sizeof((s)->ret->error), __VA_ARGS__), (r))

static bool kver_ok(const char *k)
{
	size_t n = k ? strlen(k) : 0;
	return n > 0 && n < GB_INSTALL_KVER && k[0] != '.' && k[0] != '-' &&
	       strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+~") == n;
}

static int add_kernel(struct rf *s, const char *k)
{
	if (!kver_ok(k))
		return FAIL(s, -EINVAL, "'%s' is not a kernel release", k ? k : "");
	if (s->ret->n_kernels >= GB_INSTALL_MAX_KERNELS)
		return FAIL(s, -E2BIG, "More than %d kernels", GB_INSTALL_MAX_KERNELS);
	gb_strscpy(s->ret->kernels[s->ret->n_kernels++], GB_INSTALL_KVER, k);
	return 0;
}

/* As given; live: the running kernel; image: every lib/modules/<kver>
 * with its boot/vmlinuz-<kver>. */
static int find_kernels(struct rf *s)
{
	char **names = NULL, path[GB_INSTALL_KVER + 32];
	struct utsname u;
	size_t n = 0;
	int r = 0;

	for (size_t i = 0; s->in->kernels && i < s->in->n_kernels && r >= 0; i++)
		r = add_kernel(s, s->in->kernels[i]);
	if (r < 0 || s->in->kernels)
		goto out;
	if (!s->chroot_dir) {
		s->running_kernel = true;
		r = s->ctx->ops->uname(s->ctx->ops, &u);
		return r < 0 ? FAIL(s, r, "uname: %s", strerror(-r)) : add_kernel(s, u.release);
	}
	r = gb_root_list_dir(s->ctx->root, "lib/modules", &names, &n);
	if (r < 0)
		return FAIL(s, r, "Failed to list lib/modules in %s: %s", s->ctx->root->path, strerror(-r));
	for (size_t i = 0; i < n && r >= 0; i++) {
		snprintf(path, sizeof(path), "boot/vmlinuz-%s", names[i]);
		if (kver_ok(names[i]) && gb_root_exists(s->ctx->root, path))
			r = add_kernel(s, names[i]);
	}
	gb_strv_free(names);
out:
	if (r >= 0 && s->ret->n_kernels == 0)
		return FAIL(s, -ENOENT, "No kernel in %s (lib/modules/<release> with boot/vmlinuz-<release>)",
		            s->ctx->root->path);
	return r;
}

/* nvidia.ko for kver where the installer (kernel/drivers/video, video) or
 * DKMS (updates/dkms, extra) puts it: gb_module_dirs, any of the kernel's
 * module suffixes. */
static void find_module(struct rf *s, const char *kver, char *out, size_t outsz)
{
	out[0] = '\0';
	for (const char *const *d = gb_module_dirs(GB_MODULES_RUNFILE); *d && !out[0]; d++)
		for (size_t e = 0; gb_kmod_suffixes[e] && !out[0]; e++) {
			snprintf(out, outsz, "lib/modules/%s/%s/nvidia%s", kver, *d, gb_kmod_suffixes[e]);
			if (!gb_root_exists(s->ctx->root, out))
				out[0] = '\0';
		}
}

static bool dkms_present(struct rf *s)
{
	static const char *const paths[] = { "usr/sbin/dkms", "usr/bin/dkms", "sbin/dkms" };
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		if (gb_root_exists(s->ctx->root, paths[i]))
			return true;
	return false;
}

/* gpuboot's record of what the installer put there. */
static void build_marker(struct rf *s)
{
	const char *base = strrchr(s->in->runfile, '/') ? strrchr(s->in->runfile, '/') + 1 : s->in->runfile;
	size_t o = (size_t)snprintf(s->marker, sizeof(s->marker),
	                            "# Written by gpuboot: the NVIDIA driver installed from its runfile.\n"
	                            "version %s\nflavor %s\nrunfile %.64s\ndkms %s\n",
	                            s->ret->version, s->ret->flavor, base, s->ret->dkms ? "yes" : "no");
	for (size_t i = 0; i < s->ret->n_kernels && o < sizeof(s->marker); i++)
		o += (size_t)snprintf(s->marker + o, sizeof(s->marker) - o, "kernel %s\n", s->ret->kernels[i]);
}

static bool in_place(struct rf *s)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	bool all = true;
	for (size_t i = 0; i < s->ret->n_kernels; i++) {
		find_module(s, s->ret->kernels[i], s->ret->modules[i], sizeof(s->ret->modules[i]));
		all = all && s->ret->modules[i][0];
	}
	return all && gb_root_read_file(s->ctx->root, MARKER_PATH, sizeof(s->marker), &text, &len) == 0 &&
	       streq(text, s->marker) && gb_root_exists(s->ctx->root, "usr/bin/nvidia-smi");
}

/* The staging directory: the state directory on the live machine;
 * var/lib/gpuboot below an image root (resolved inside it), where the
 * chroot sees it. */
static int prepare_work(struct rf *s, int *ret_fd)
{
	int r;
	if (!s->chroot_dir) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/runfile", s->ctx->opt.state_dir);
		r = gb_mkdir_p(dir, 0700);
		if (r < 0 || !realpath(dir, s->work))
			return FAIL(s, r < 0 ? r : negative_errno(), "Failed to create %s: %s", dir,
			            strerror(r < 0 ? -r : errno));
		gb_strscpy(s->inside, sizeof(s->inside), s->work);
		snprintf(s->log_inside, sizeof(s->log_inside), "%s/nvidia-installer.log", s->ctx->opt.state_dir);
		gb_strscpy(s->ret->log, sizeof(s->ret->log), s->log_inside);
		*ret_fd = -1;
		return 0;
	}
	r = gb_root_mkdir_p(s->ctx->root, IMAGE_WORK "/runfile", 0700);
	if (r >= 0)
		r = gb_root_openat_strict(s->ctx->root, IMAGE_WORK "/runfile", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r < 0)
		return FAIL(s, r, "Failed to create %s/" IMAGE_WORK "/runfile: %s", s->ctx->root->path, strerror(-r));
	*ret_fd = r;
	snprintf(s->work, sizeof(s->work), "/proc/self/fd/%d", r); /* no symlink of the image is followed */
	gb_strscpy(s->inside, sizeof(s->inside), "/" IMAGE_WORK "/runfile");
	gb_strscpy(s->log_inside, sizeof(s->log_inside), "/" IMAGE_WORK "/nvidia-installer.log");
	snprintf(s->ret->log, sizeof(s->ret->log), "%s/" IMAGE_WORK "/nvidia-installer.log", s->chroot_dir);
	return 0;
}

/* Where nvidia-installer is in the unpacked tree: at its top (makeself's
 * own payloads, "./nvidia-installer") or in its one NVIDIA-Linux-*
 * directory (a tree archived with its directory). */
static int locate_installer(struct rf *s, int dfd, const char *name)
{
	struct stat st;
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	char found[NAME_MAX + 1] = "";

	if (sub < 0)
		return FAIL(s, negative_errno(), "Failed to open the unpacked runfile: %s", strerror(errno));
	if (fstatat(sub, "nvidia-installer", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		close(sub);
		snprintf(s->tree, sizeof(s->tree), "%s/%s", s->inside, name);
		return 0;
	}
	d = fdopendir(sub);
	if (!d) {
		close(sub);
		return -ENOMEM;
	}
	while ((e = readdir(d)))
		if (gb_startswith(e->d_name, "NVIDIA-Linux-") && !found[0])
			gb_strscpy(found, sizeof(found), e->d_name);
	if (found[0]) {
		char p[NAME_MAX + 32];
		snprintf(p, sizeof(p), "%s/nvidia-installer", found);
		if (fstatat(dirfd(d), p, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			found[0] = '\0';
	}
	closedir(d);
	if (!found[0])
		return FAIL(s, -EBADMSG, "%s: no nvidia-installer in the runfile's payload", s->in->runfile);
	snprintf(s->tree, sizeof(s->tree), "%s/%s/%s", s->inside, name, found);
	return 0;
}

static int unpack_runfile(struct rf *s, int work_fd)
{
	struct gb_unpack_opts o;
	char dest[PATH_MAX], name[64], err[1024] = "";
	unsigned long long off = 0;
	int r, dfd;

	gb_unpack_opts_default(&o);
	o.max_bytes = 4ull << 30; /* a driver runfile unpacks to well under 1 GiB */
	r = gb_makeself_offset(s->in->runfile, &off, err, sizeof(err));
	if (r < 0)
		return FAIL(s, r, "%s", err);
	o.offset = off;
	snprintf(name, sizeof(name), "driver-%s", s->ret->version);
	snprintf(dest, sizeof(dest), "%s/%s", s->work, name);
	r = gb_unpack(s->in->runfile, dest, &o, err, sizeof(err));
	if (r < 0)
		return FAIL(s, r, "Failed to unpack the runfile into %s%s: %s", s->chroot_dir ? s->chroot_dir : s->work,
		            s->chroot_dir ? "/" IMAGE_WORK "/runfile" : "", err);
	dfd = work_fd >= 0 ? openat(work_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
	                   : open(s->work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return FAIL(s, negative_errno(), "Failed to open %s: %s", s->work, strerror(errno));
	r = locate_installer(s, dfd, name);
	close(dfd);
	return r;
}

/* One journaled run of the installer (or of dkms for a further kernel). */
static int run_one(struct rf *s, const char *id, const char *const *argv)
{
	struct gb_cmd_spec spec = { .argv = argv,
		                    .chroot_dir = s->chroot_dir,
		                    .timeout_ms = (int)(s->in->timeout_ms ? s->in->timeout_ms : DEFAULT_TIMEOUT_MS) };
	int r = gb_journal_run(s->j, STAGE, id, &spec, s->res);
	char esc[700];

	s->ret->changed = true;
	if (r >= 0)
		return 0;
	gb_log_escape(esc, sizeof(esc),
	              s->res->output_len > 300 ? s->res->output + s->res->output_len - 300 : s->res->output);
	return FAIL(s, r, "nvidia-installer %s failed%s (its log: %s): %s", s->ret->version,
	            s->res->timed_out ? " (timed out)" : "", s->ret->log, esc[0] ? esc : strerror(-r));
}

static int run_installers(struct rf *s)
{
	const char *argv[GB_RUNFILE_ARGV_MAX];
	static _Thread_local char buf[4][4400];
	char id[GB_INSTALL_KVER + 32];
	int r = 0;

	for (size_t i = 0; i < s->ret->n_kernels && r >= 0; i++) {
		const char *k = s->running_kernel ? NULL : s->ret->kernels[i];
		if (i > 0 && s->ret->dkms) {
			/* DKMS holds the sources the first run registered: it builds for the others. */
			const char *dk[] = { "dkms", "install", "-m", "nvidia", "-v", s->ret->version, "-k", k, NULL };
			snprintf(id, sizeof(id), "dkms-install:%s", k);
			r = run_one(s, id, dk);
			continue;
		}
		r = gb_runfile_argv(s->tree, s->ret->version, s->ret->flavor, s->ret->dkms, k, i == 0, s->log_inside,
		                    argv, buf);
		if (r < 0)
			return FAIL(s, r, "No nvidia-installer flags for %s %s", s->ret->version, s->ret->flavor);
		snprintf(id, sizeof(id), "nvidia-installer:%s", s->ret->kernels[i]);
		r = run_one(s, id, argv);
	}
	return r;
}

/* An image: the installer needs /proc, /sys and /dev inside the chroot
 * (the distro method's binds, undone on every path) and no daemon
 * started (policy-rc.d). */
static int run_in_root(struct rf *s)
{
	struct gb_chroot c;
	int r, k;
	if (!s->chroot_dir)
		return run_installers(s);
	r = gb_chroot_enter(s->ctx, s->j, &c, s->ret->error, sizeof(s->ret->error));
	if (r < 0)
		return r;
	r = run_installers(s);
	k = gb_chroot_leave(s->ctx, s->j, &c, s->ret->error, sizeof(s->ret->error));
	return r < 0 ? r : k;
}

static int check_after(struct rf *s)
{
	int r;
	for (size_t i = 0; i < s->ret->n_kernels; i++) {
		find_module(s, s->ret->kernels[i], s->ret->modules[i], sizeof(s->ret->modules[i]));
		if (!s->ret->modules[i][0])
			return FAIL(s, -ENOENT,
			            "nvidia-installer built no nvidia.ko for the kernel %s in %s (its log: %s)",
			            s->ret->kernels[i], s->ctx->root->path, s->ret->log);
	}
	r = gb_journal_write_file(s->j, STAGE, MARKER_PATH, s->marker, strlen(s->marker), 0644);
	return r < 0 ? FAIL(s, r, "Failed to write %s: %s", MARKER_PATH, strerror(-r)) : 0;
}

static int check_input(struct rf *s)
{
	const char *argv[GB_RUNFILE_ARGV_MAX];
	static _Thread_local char buf[4][4400];

	if (!s->in->runfile || !s->in->version || !s->in->flavor ||
	    gb_strscpy(s->ret->version, sizeof(s->ret->version), s->in->version) < 0 ||
	    gb_strscpy(s->ret->flavor, sizeof(s->ret->flavor), s->in->flavor) < 0 ||
	    strspn(s->in->version, "0123456789.") != strlen(s->in->version))
		return FAIL(s, -EINVAL, "The runfile method needs a runfile, a driver version and a flavour");
	if (gb_runfile_argv("/", s->in->version, s->in->flavor, false, NULL, true, "/", argv, buf) < 0)
		return FAIL(s, -EINVAL,
		            "The runfile of %s cannot install the %s kernel modules (open ones from 515 on; "
		            "open or proprietary)",
		            s->in->version, s->in->flavor);
	return 0;
}

/* The unpacked runfile below the work directory (work_fd, else s->work). */
static void remove_unpacked(struct rf *s, int work_fd)
{
	char name[64];
	int dfd = work_fd >= 0 ? work_fd : open(s->work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(name, sizeof(name), "driver-%s", s->ret->version);
	if (dfd >= 0 && gb_remove_tree_at(dfd, name) < 0)
		gb_log_warning("Failed to remove the unpacked runfile in %s, ignoring", s->work);
	if (dfd >= 0 && dfd != work_fd)
		close(dfd);
}

int gb_install_runfile(struct gb_ctx *ctx, const struct gb_runfile_input *in, struct gb_journal *j,
                       struct gb_runfile_result *ret)
{
	_cleanup_free_ struct rf *s = NULL;
	_cleanup_free_ struct gb_cmd_result *res = NULL;
	int r, work_fd = -1;

	memset(ret, 0, sizeof(*ret));
	if (!ctx || !ctx->root || !ctx->ops || !in || !j)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	res = calloc(1, sizeof(*res));
	if (!s || !res)
		return -ENOMEM;
	*s = (struct rf){ .ctx = ctx, .j = j, .in = in, .ret = ret, .res = res };
	ret->image = !ctx->root->is_host;
	if ((r = check_input(s)) < 0)
		return r;
	if (ret->image) {
		if (!realpath(ctx->opt.root ? ctx->opt.root : ctx->root->path, s->chroot_buf))
			return FAIL(s, negative_errno(), "Failed to resolve the root '%s'", ctx->root->path);
		s->chroot_dir = s->chroot_buf;
	}
	if ((r = find_kernels(s)) < 0)
		return r;
	ret->dkms = in->dkms == GB_RUNFILE_DKMS_YES || (in->dkms == GB_RUNFILE_DKMS_AUTO && dkms_present(s));
	build_marker(s);
	if (in_place(s)) {
		/* a run killed after the install, before this cleanup, left the tree */
		if (s->chroot_dir)
			work_fd =
			    gb_root_openat_strict(ctx->root, IMAGE_WORK "/runfile", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else
			snprintf(s->work, sizeof(s->work), "%s/runfile", ctx->opt.state_dir);
		if (!s->chroot_dir || work_fd >= 0)
			remove_unpacked(s, work_fd);
		if (work_fd >= 0)
			close(work_fd);
		return 0;
	}
	r = prepare_work(s, &work_fd);
	if (r >= 0)
		r = unpack_runfile(s, work_fd);
	if (r >= 0)
		r = run_in_root(s);
	if (r >= 0)
		r = check_after(s);
	if (r >= 0) /* the unpacked tree has served; on a failure it stays for a look */
		remove_unpacked(s, work_fd);
	if (work_fd >= 0)
		close(work_fd);
	return r;
}

json_object *gb_runfile_result_to_json(const struct gb_runfile_result *r)
{
	json_object *o = gb_json_new_object(), *k = gb_json_new_array();
	gb_json_add(o, "method", gb_json_new_string("runfile"));
	gb_json_add(o, "image", gb_json_new_boolean(r->image));
	gb_json_add(o, "version", gb_json_new_string(r->version));
	gb_json_add(o, "flavor", gb_json_new_string(r->flavor));
	gb_json_add(o, "dkms", gb_json_new_boolean(r->dkms));
	gb_json_add(o, "changed", gb_json_new_boolean(r->changed));
	for (size_t i = 0; i < r->n_kernels; i++) {
		json_object *x = gb_json_new_object();
		gb_json_add(x, "kernel", gb_json_new_string(r->kernels[i]));
		gb_json_add(x, "path", r->modules[i][0] ? gb_json_new_string(r->modules[i]) : NULL);
		gb_json_append(k, x);
	}
	gb_json_add(o, "modules", k);
	gb_json_add(o, "log", r->log[0] ? gb_json_new_string(r->log) : NULL);
	gb_json_add(o, "error", r->error[0] ? gb_json_new_string(r->error) : NULL);
	return o;
}
