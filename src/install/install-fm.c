/* SPDX-License-Identifier: MIT */
/* The fabric manager from NVIDIA's redistributable archives, for the
 * runfile method (install-fm.h). The archives' layout and where NVIDIA's
 * packages put each file: data/nvswitch-facts-2026-12.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "context.h"
#include "effect/journal.h"
#include "effect/root-write.h"
#include "install-fm.h"
#include "shared/digest.h"
#include "shared/json-util.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/swap.h"
#include "shared/util.h"
#include "unpack.h"

#define STAGE "install"
#define MAX_MANIFEST (1u << 20) /* NVIDIA's are a few kB */
#define MAX_MEMBER (64u << 20) /* nv-fabricmanager is a few MB */
#define MAX_TOPOLOGY 64
#define FAIL(ret, r, ...) (snprintf((ret)->error, sizeof((ret)->error), __VA_ARGS__), (r))

static const char *platform_of(const char *arch)
{
	if (streq(arch, "x86_64"))
		return "x86_64";
	if (streq(arch, "aarch64"))
		return "sbsa"; /* NVIDIA's name for server Arm in every redist manifest */
	return NULL;
}

static int entry_parse(json_object *doc, const char *key, const char *version, const char *platform,
                       struct gb_fm_redist_entry *e, char *err, size_t errsz)
{
	json_object *c = gb_json_get(doc, key), *p;
	const char *v, *path, *sha, *size;
	char want[200];
	unsigned long long n = 0;

	if (!c || !json_object_is_type(c, json_type_object)) {
		snprintf(err, errsz, "no \"%s\" component in it", key);
		return -EBADMSG;
	}
	v = gb_json_get_str(c, "version");
	if (!v || !streq(v, version)) {
		snprintf(err, errsz, "\"%s\" is at version %.40s, not the driver's %s", key, v ? v : "(none)", version);
		return -EBADMSG;
	}
	snprintf(want, sizeof(want), "linux-%s", platform);
	p = gb_json_get(c, want);
	if (!p || !json_object_is_type(p, json_type_object)) {
		snprintf(err, errsz, "\"%s\" has no %s archive", key, want);
		return -EBADMSG;
	}
	path = gb_json_get_str(p, "relative_path");
	sha = gb_json_get_str(p, "sha256");
	size = gb_json_get_str(p, "size");
	snprintf(want, sizeof(want), "%s/linux-%s/%s-linux-%s-%s-archive.tar.xz", key, platform, key, platform,
	         version);
	if (!path || !streq(path, want)) {
		snprintf(err, errsz, "\"%s\" linux-%s relative_path is not %s", key, platform, want);
		return -EBADMSG;
	}
	if (!sha || !gb_sha256_valid(sha)) {
		snprintf(err, errsz, "\"%s\" linux-%s sha256 is not 64 hex digits", key, platform);
		return -EBADMSG;
	}
	if (!size || !size[0] || strlen(size) > 12 || strspn(size, "0123456789") != strlen(size)) {
		snprintf(err, errsz, "\"%s\" linux-%s size is not a decimal string", key, platform);
		return -EBADMSG;
	}
	for (const char *s = size; *s; s++)
		n = n * 10 + (unsigned long long)(*s - '0');
	if (n == 0 || n > GB_FM_MAX_ARCHIVE) {
		snprintf(err, errsz, "\"%s\" linux-%s size %llu is out of bounds (1 to %llu bytes)", key, platform, n,
		         GB_FM_MAX_ARCHIVE);
		return -EBADMSG;
	}
	gb_strscpy(e->relative_path, sizeof(e->relative_path), path);
	gb_strscpy(e->sha256, sizeof(e->sha256), sha);
	for (char *h = e->sha256; *h; h++)
		if (*h >= 'A' && *h <= 'F')
			*h = (char)(*h - 'A' + 'a');
	e->size = n;
	return 0;
}

int gb_fm_redist_parse(const char *text, size_t len, const char *version, const char *arch, struct gb_fm_redist *ret,
                       char *err, size_t errsz)
{
	struct gb_fm_redist out = { 0 };
	const char *platform = arch ? platform_of(arch) : NULL;
	json_object *doc = NULL;
	int r;

	if (!version || !gb_version_valid(version) || gb_strscpy(out.version, sizeof(out.version), version) < 0) {
		snprintf(err, errsz, "the driver version '%.40s' is not a version", version ? version : "");
		return -EBADMSG;
	}
	if (!platform) {
		snprintf(err, errsz, "NVIDIA publishes no fabric manager archive for the CPU architecture %.20s",
		         arch ? arch : "(none)");
		return -EBADMSG;
	}
	gb_strscpy(out.platform, sizeof(out.platform), platform);
	if (len > MAX_MANIFEST) {
		snprintf(err, errsz, "it is %zu bytes, more than %u", len, MAX_MANIFEST);
		return -EBADMSG;
	}
	r = gb_json_parse(text, len, 8, &doc);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || !json_object_is_type(doc, json_type_object)) {
		json_object_put(doc);
		snprintf(err, errsz, "it is not a JSON object");
		return -EBADMSG;
	}
	r = entry_parse(doc, "fabricmanager", version, platform, &out.fm, err, errsz);
	if (r >= 0)
		r = entry_parse(doc, "libnvidia_nscq", version, platform, &out.nscq, err, errsz);
	json_object_put(doc);
	if (r < 0)
		return r;
	*ret = out;
	return 0;
}

/* The archive's size and sha256 against the manifest's, before it is unpacked. */
static int verify_archive(const char *file, const struct gb_fm_redist_entry *e, struct gb_fm_result *ret)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	unsigned long long size = 0;
	char hex[65];
	int r;

	if (fd < 0)
		return FAIL(ret, negative_errno(), "Failed to open %s: %s", file, strerror(errno));
	r = gb_sha256_file(fd, hex, &size);
	if (r < 0)
		return FAIL(ret, r, "Failed to read %s: %s", file, strerror(-r));
	if (size != e->size || !streq(hex, e->sha256))
		return FAIL(ret, -EKEYREJECTED,
		            "%s (%s) does not match the redistributable manifest: %llu bytes, sha256 %s; the "
		            "manifest says %llu bytes, sha256 %s; nothing was unpacked or placed",
		            e->relative_path, file, size, hex, e->size, e->sha256);
	return 0;
}

/* Open a directory path below dirfd one name at a time, never following a link. */
static int open_dir_nofollow(int dirfd, const char *path)
{
	char buf[256], *save = NULL;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || gb_strscpy(buf, sizeof(buf), path) < 0) {
		if (fd >= 0)
			close(fd);
		return fd < 0 ? negative_errno() : -ENAMETOOLONG;
	}
	for (char *name = strtok_r(buf, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (sub < 0)
			return -e;
		fd = sub;
	}
	return fd;
}

/* A member of an unpacked tree: a regular file (a link is refused: ELOOP), capped. */
static int read_member(int top, const char *rel, char **data, size_t *len)
{
	_cleanup_free_ char *dir = strdup(rel);
	_cleanup_close_ int dfd = -1, fd = -1;
	_cleanup_free_ char *buf = NULL;
	char *slash;
	struct stat st;
	size_t got = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		dfd = open_dir_nofollow(top, dir);
	} else {
		dfd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0)
		return dfd == -1 ? negative_errno() : dfd;
	fd = openat(dfd, slash ? rel + (slash - dir) + 1 : rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	if (st.st_size > (off_t)MAX_MEMBER)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? negative_errno() : -EIO;
		got += (size_t)k;
	}
	*data = TAKE_PTR(buf);
	*len = got;
	return 0;
}

/* Unpack one archive into work/<name> and open its one top directory,
 * which must be <component>-linux-<platform>-<version>-archive. */
static int unpack_one(const char *work, const char *component, const char *archive, const struct gb_fm_redist *rd,
                      int *ret_top, struct gb_fm_result *ret)
{
	struct gb_unpack_opts o;
	char dest[4200], top[160], err[1024] = "";
	int r, dfd, tfd;

	gb_unpack_opts_default(&o);
	o.max_bytes = 1ull << 30; /* the fabric manager unpacks to some 10 MB */
	o.max_entries = 10000;
	snprintf(dest, sizeof(dest), "%s/%s", work, component);
	snprintf(top, sizeof(top), "%s-linux-%s-%s-archive", component, rd->platform, rd->version);
	r = gb_unpack(archive, dest, &o, err, sizeof(err));
	if (r < 0)
		return FAIL(ret, r, "Failed to unpack %s: %s; nothing was placed", archive, err);
	dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return FAIL(ret, negative_errno(), "Failed to open %s: %s", dest, strerror(errno));
	tfd = openat(dfd, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (tfd < 0)
		return FAIL(ret, -EBADMSG, "%s has no directory %s/ (NVIDIA's layout); nothing was placed", archive,
		            top);
	*ret_top = tfd;
	return 0;
}

/* What is placed: the archive's member, where NVIDIA's packages put it
 * below the root, its mode. fabricmanager.cfg is the site's to edit
 * (%config(noreplace) in NVIDIA's package): written only where absent.
 * Optional: members of later releases only (R570's start script and
 * multi-node config; R515's archive has neither). */
struct member {
	const char *from, *to;
	mode_t mode;
	bool keep_existing, optional;
};

static const struct member fm_members[] = {
	{ "bin/nv-fabricmanager", "usr/bin/nv-fabricmanager", 0755, false, false },
	{ "bin/nvswitch-audit", "usr/bin/nvswitch-audit", 0755, false, false },
	{ "bin/nvidia-fabricmanager-start.sh", "usr/bin/nvidia-fabricmanager-start.sh", 0755, false, true },
	{ "systemd/nvidia-fabricmanager.service", "usr/lib/systemd/system/nvidia-fabricmanager.service", 0644, false,
	  false },
	{ "etc/fabricmanager.cfg", "usr/share/nvidia/nvswitch/fabricmanager.cfg", 0644, true, false },
	{ "etc/fabricmanager_multinode.cfg", "usr/share/nvidia/nvswitch/fabricmanager_multinode.cfg", 0644, true,
	  true },
	{ "LICENSE", "usr/share/doc/nvidia-fabricmanager/LICENSE", 0644, false, false },
};

static int place(struct gb_ctx *ctx, struct gb_journal *j, int top, const char *archive, const char *from,
                 const char *to, mode_t mode, bool keep_existing, bool optional, struct gb_fm_result *ret)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r;

	if (keep_existing && gb_root_lexists(ctx->root, to))
		return 0;
	r = read_member(top, from, &data, &len);
	if (r == -ENOENT && optional)
		return 0;
	if (r < 0)
		return FAIL(ret, r == -ELOOP || r == -EBADMSG ? -EBADMSG : r,
		            "%s: %s is %s (NVIDIA's layout has it as a regular file); nothing more was placed", archive,
		            from, r == -ELOOP || r == -EBADMSG ? "not a regular file" : strerror(-r));
	r = gb_journal_write_file(j, STAGE, to, data, len, mode);
	return r < 0 ? FAIL(ret, r, "Failed to write %s: %s", to, strerror(-r)) : 0;
}

/* The topology files: every regular *_topology (and R570's GH200
 * multi-node *.csv connection maps) in share/nvidia/nvswitch. */
static int place_topologies(struct gb_ctx *ctx, struct gb_journal *j, int top, const char *archive,
                            struct gb_fm_result *ret)
{
	char names[MAX_TOPOLOGY][128];
	size_t n = 0;
	int dfd = open_dir_nofollow(top, "share/nvidia/nvswitch"), r = 0;
	DIR *d;
	struct dirent *e;

	if (dfd < 0)
		return FAIL(ret, -EBADMSG,
		            "%s has no share/nvidia/nvswitch/ (NVIDIA's layout); nothing more was placed", archive);
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	while ((e = readdir(d)) && r == 0) {
		size_t l = strlen(e->d_name);
		if (!(l >= sizeof("_topology") && streq(e->d_name + l - strlen("_topology"), "_topology")) &&
		    !(l > 4 && streq(e->d_name + l - 4, ".csv")))
			continue;
		if (n == MAX_TOPOLOGY || l >= sizeof(names[0]) ||
		    strspn(e->d_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != l)
			r = FAIL(ret, -EBADMSG,
			         "%s: share/nvidia/nvswitch/%.60s is not a topology file name, or too many", archive,
			         e->d_name);
		else
			gb_strscpy(names[n++], sizeof(names[0]), e->d_name);
	}
	closedir(d);
	if (r < 0)
		return r;
	if (n == 0)
		return FAIL(ret, -EBADMSG, "%s has no topology file in share/nvidia/nvswitch/; nothing more was placed",
		            archive);
	qsort(names, n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; i < n && r == 0; i++) {
		char from[192], to[192];
		snprintf(from, sizeof(from), "share/nvidia/nvswitch/%s", names[i]);
		snprintf(to, sizeof(to), "usr/share/nvidia/nvswitch/%s", names[i]);
		r = place(ctx, j, top, archive, from, to, 0644, false, false, ret);
	}
	return r;
}

/* Beside the driver's own libraries: the first library directory that
 * holds libnvidia-ml.so.1 (the runfile just put it there), else the
 * multiarch one, else lib64, else usr/lib. */
static void nscq_libdir(struct gb_ctx *ctx, const char *platform, char *buf, size_t n)
{
	const char *multi = streq(platform, "sbsa") ? "usr/lib/aarch64-linux-gnu" : "usr/lib/x86_64-linux-gnu";
	char p[160];

	for (size_t i = 0; gb_nvidia_lib_dirs[i]; i++) {
		snprintf(p, sizeof(p), "%s/libnvidia-ml.so.1", gb_nvidia_lib_dirs[i]);
		if (!strstr(gb_nvidia_lib_dirs[i], "/nvidia/") && gb_root_lexists(ctx->root, p)) {
			gb_strscpy(buf, n, gb_nvidia_lib_dirs[i]);
			return;
		}
	}
	gb_strscpy(buf, n,
	           gb_root_lexists(ctx->root, multi)         ? multi
	           : gb_root_lexists(ctx->root, "usr/lib64") ? "usr/lib64"
	                                                     : "usr/lib");
}

/* The soname link libnvidia-nscq.so.2 -> libnvidia-nscq.so.VERSION, journaled. */
static int link_nscq(struct gb_ctx *ctx, struct gb_journal *j, const char *libdir, const char *version,
                     struct gb_fm_result *ret)
{
	_cleanup_free_ char *have = NULL;
	char path[160], target[64], id[192];
	int r, k;

	snprintf(path, sizeof(path), "%s/libnvidia-nscq.so.2", libdir);
	snprintf(target, sizeof(target), "libnvidia-nscq.so.%s", version);
	if (gb_root_readlink(ctx->root, path, &have) == 0 && streq(have, target))
		return 0;
	snprintf(id, sizeof(id), "link:%s", path);
	r = gb_journal_begin(j, STAGE, id, "file", NULL);
	if (r < 0)
		return FAIL(ret, r, "Failed to journal %s: %s", path, strerror(-r));
	r = gb_root_symlink(ctx->root, path, target);
	if (r == 0)
		gb_journal_count_effect(j);
	k = gb_journal_end(j, id, r, NULL);
	if (r < 0)
		return FAIL(ret, r, "Failed to link %s to %s: %s", path, target, strerror(-r));
	return k < 0 ? FAIL(ret, -EIO, "Failed to journal %s", path) : 0;
}

static int place_all(struct gb_ctx *ctx, const struct gb_fm_input *in, struct gb_journal *j, int fm_top, int nscq_top,
                     struct gb_fm_result *ret)
{
	const struct gb_fm_redist *rd = in->redist;
	char from[96], to[160], marker[160], hex[65];
	int r = 0;

	for (size_t i = 0; i < ARRAY_SIZE(fm_members) && r == 0; i++)
		r = place(ctx, j, fm_top, in->fm_archive, fm_members[i].from, fm_members[i].to, fm_members[i].mode,
		          fm_members[i].keep_existing, fm_members[i].optional, ret);
	if (r == 0)
		r = place_topologies(ctx, j, fm_top, in->fm_archive, ret);
	if (r < 0)
		return r;
	nscq_libdir(ctx, rd->platform, ret->libdir, sizeof(ret->libdir));
	snprintf(from, sizeof(from), "lib/libnvidia-nscq.so.%s", rd->version);
	snprintf(to, sizeof(to), "%s/libnvidia-nscq.so.%s", ret->libdir, rd->version);
	r = place(ctx, j, nscq_top, in->nscq_archive, from, to, 0755, false, false, ret);
	if (r == 0)
		r = link_nscq(ctx, j, ret->libdir, rd->version, ret);
	if (r < 0)
		return r;
	/* last: the load believes the version only with the binary it hashed */
	r = gb_root_sha256(ctx->root, "usr/bin/nv-fabricmanager", hex, NULL);
	if (r < 0)
		return FAIL(ret, r, "Failed to read usr/bin/nv-fabricmanager back: %s", strerror(-r));
	snprintf(marker, sizeof(marker), "%s %s\n", rd->version, hex);
	r = gb_journal_write_file(j, STAGE, GB_FM_MARKER, marker, strlen(marker), 0644);
	return r < 0 ? FAIL(ret, r, "Failed to write %s: %s", GB_FM_MARKER, strerror(-r)) : 0;
}

int gb_fm_verify(const struct gb_fm_input *in, struct gb_fm_result *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!in->redist || !in->fm_archive || !in->nscq_archive)
		return FAIL(ret, -EINVAL, "The fabric manager's install needs its manifest and both archives");
	r = verify_archive(in->fm_archive, &in->redist->fm, ret);
	return r < 0 ? r : verify_archive(in->nscq_archive, &in->redist->nscq, ret);
}

int gb_fm_unpack(const struct gb_fm_input *in, struct gb_fm_unpacked *u, struct gb_fm_result *ret)
{
	int r = gb_fm_verify(in, ret);

	u->fm_top = u->nscq_top = -1;
	if (!in->work)
		return FAIL(ret, -EINVAL, "The fabric manager's install needs a work directory");
	if (r == 0)
		r = unpack_one(in->work, "fabricmanager", in->fm_archive, in->redist, &u->fm_top, ret);
	if (r == 0)
		r = unpack_one(in->work, "libnvidia_nscq", in->nscq_archive, in->redist, &u->nscq_top, ret);
	if (r < 0)
		gb_fm_unpacked_done(in, u);
	return r;
}

int gb_fm_place(struct gb_ctx *ctx, const struct gb_fm_input *in, const struct gb_fm_unpacked *u, struct gb_journal *j,
                struct gb_fm_result *ret)
{
	unsigned effects = gb_journal_effects(j);
	int r = place_all(ctx, in, j, u->fm_top, u->nscq_top, ret);

	ret->placed = gb_journal_effects(j) - effects;
	ret->changed = ret->placed > 0;
	return r;
}

void gb_fm_unpacked_done(const struct gb_fm_input *in, struct gb_fm_unpacked *u)
{
	int wfd;

	if (u->fm_top >= 0)
		close(u->fm_top);
	if (u->nscq_top >= 0)
		close(u->nscq_top);
	u->fm_top = u->nscq_top = -1;
	wfd = in->work ? open(in->work, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (wfd >= 0) {
		if (gb_remove_tree_at(wfd, "fabricmanager") < 0 || gb_remove_tree_at(wfd, "libnvidia_nscq") < 0)
			gb_log_warning("Failed to remove the unpacked fabric manager in %s, ignoring", in->work);
		close(wfd);
	}
}

int gb_install_fabricmanager(struct gb_ctx *ctx, const struct gb_fm_input *in, struct gb_journal *j,
                             struct gb_fm_result *ret)
{
	struct gb_fm_unpacked u;
	int r = gb_fm_unpack(in, &u, ret);

	if (r < 0)
		return r;
	r = gb_fm_place(ctx, in, &u, j, ret);
	gb_fm_unpacked_done(in, &u);
	return r;
}
