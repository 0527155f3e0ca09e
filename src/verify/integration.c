/* SPDX-License-Identifier: MIT */
/* Integration checks (tier full): a container sees the GPU, local disk
 * write bandwidth, network and InfiniBand links. */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "verify.h"

int gb_verify_integration(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o,
                          struct gb_verify_result *r);

static void container_check(struct gb_ctx *ctx, const struct gb_facts *f, struct gb_verify_result *r)
{
	struct gb_check *c = gb_verify_add(r, "container.gpu_visible", "system");
	const char *argv[] = { "nvidia-container-cli", "info", NULL };
	struct gb_cmd_spec spec = { .argv = argv, .timeout_ms = 30000 };
	struct gb_cmd_result res;
	int status = 0, rc;

	if (!c)
		return;
	gb_strscpy(c->source, sizeof(c->source), "nvidia-container-cli info (the toolkit's own view of the GPUs)");
	if (!f->nvidia.container_toolkit || f->nvidia.n_engines == 0) {
		c->state = GB_CHECK_SKIP;
		snprintf(c->text, sizeof(c->text), "%s",
		         !f->nvidia.container_toolkit ? "no NVIDIA Container Toolkit installed"
		                                      : "no container engine installed");
		return;
	}
	rc = ctx->ops->run_command(ctx->ops, &spec, &res);
	status = res.status;
	if (rc < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		c->state = GB_CHECK_FAIL;
		snprintf(c->text, sizeof(c->text), "nvidia-container-cli info %s", rc < 0 ? strerror(-rc) : "failed");
		snprintf(c->hint, sizeof(c->hint),
		         "containers will not see the GPU: run nvidia-ctk runtime configure and restart the engine");
		return;
	}
	c->state = GB_CHECK_PASS;
	snprintf(c->text, sizeof(c->text), "the toolkit sees the GPUs");
}

/* The largest local, writable filesystem (by size), from /proc/self/mounts. */
static int largest_fs(char *ret, size_t n)
{
	static const char *const local[] = { "ext4", "xfs", "btrfs", "ext3", "f2fs", "zfs" };
	FILE *m = setmntent("/proc/self/mounts", "re");
	struct mntent *e;
	unsigned long long best = 0;

	if (!m)
		return negative_errno();
	while ((e = getmntent(m))) {
		struct statvfs sv;
		bool ok = false;
		for (size_t i = 0; i < ARRAY_SIZE(local); i++)
			ok |= streq(e->mnt_type, local[i]);
		if (!ok || hasmntopt(e, "ro") || statvfs(e->mnt_dir, &sv) < 0)
			continue;
		if ((unsigned long long)sv.f_blocks * sv.f_frsize > best && access(e->mnt_dir, W_OK) == 0) {
			best = (unsigned long long)sv.f_blocks * sv.f_frsize;
			gb_strscpy(ret, n, e->mnt_dir);
		}
	}
	endmntent(m);
	return best ? 0 : -ENOENT;
}

/* Direct I/O write of a bounded file, fdatasync'd, then removed. */
static void disk_check(struct gb_ctx *ctx, const struct gb_verify_opts *o, struct gb_verify_result *r)
{
	const size_t block = 4u << 20, total = 256u << 20;
	struct gb_check *c = gb_verify_add(r, "disk.write_bandwidth", "system");
	char dir[512] = "", path[600];
	void *buf = NULL;
	int fd = -1;
	uint64_t t0, t1;
	size_t done = 0;

	if (!c)
		return;
	if (o->disk_path)
		gb_strscpy(dir, sizeof(dir), o->disk_path);
	else if (largest_fs(dir, sizeof(dir)) < 0) {
		c->state = GB_CHECK_SKIP;
		snprintf(c->text, sizeof(c->text), "no local writable filesystem found");
		return;
	}
	snprintf(path, sizeof(path), "%s/.gpuboot-disk-check.%ld", dir, (long)getpid());
	if (posix_memalign(&buf, 4096, block) != 0) {
		c->state = GB_CHECK_SKIP;
		return;
	}
	memset(buf, 0xa5, block);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EINVAL)
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); /* tmpfs and friends: no O_DIRECT */
	if (fd < 0) {
		c->state = GB_CHECK_SKIP;
		snprintf(c->text, sizeof(c->text), "cannot write in %.100s: %.40s", dir, strerror(errno));
		free(buf);
		return;
	}
	t0 = ctx->ops->now_monotonic_ns(ctx->ops);
	while (done < total) {
		ssize_t w = write(fd, buf, block);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	fdatasync(fd);
	t1 = ctx->ops->now_monotonic_ns(ctx->ops);
	close(fd);
	unlink(path);
	free(buf);
	c->has_value = true;
	c->value = (double)done / 1e6 / ((double)(t1 - t0) / 1e9);
	snprintf(c->unit, sizeof(c->unit), "MB/s");
	snprintf(c->text, sizeof(c->text), "%zu MiB direct writes to %.100s", done >> 20, dir);
	if (o->min_disk_write_mbps > 0) {
		c->has_threshold = true;
		c->threshold = o->min_disk_write_mbps;
		snprintf(c->op, sizeof(c->op), ">=");
		snprintf(c->source, sizeof(c->source), "profile: min_disk_write_mbps (the seed's dd check: > 1 GB/s)");
		c->state = c->value >= c->threshold ? GB_CHECK_PASS : GB_CHECK_FAIL;
		if (c->state == GB_CHECK_FAIL)
			snprintf(c->hint, sizeof(c->hint),
			         "local disk writes at %.0f MB/s: data loading will starve the GPU; use local NVMe",
			         c->value);
	} else {
		c->state = GB_CHECK_INFO;
	}
}

static void network_check(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o,
                          struct gb_verify_result *r)
{
	char **names = NULL;
	double best = 0;
	char best_name[64] = "";
	struct gb_check *c;

	if (gb_root_list_dir(ctx->root, "sys/class/net", &names, NULL) >= 0) {
		for (char **n = names; *n; n++) {
			char p[256];
			_cleanup_free_ char *state = NULL, *speed = NULL;
			uint32_t mbps;
			snprintf(p, sizeof(p), "sys/class/net/%s/device", *n);
			if (!gb_root_lexists(ctx->root, p))
				continue; /* virtual: lo, bridges, veth */
			snprintf(p, sizeof(p), "sys/class/net/%s/operstate", *n);
			if (gb_root_read_attr(ctx->root, p, &state) < 0 || !streq(state, "up"))
				continue;
			snprintf(p, sizeof(p), "sys/class/net/%s/speed", *n);
			if (gb_root_read_attr(ctx->root, p, &speed) < 0 || gb_safe_atou32(speed, 10, &mbps) < 0)
				continue;
			if (mbps / 1000.0 > best) {
				best = mbps / 1000.0;
				gb_strscpy(best_name, sizeof(best_name), *n);
			}
		}
		gb_strv_free(names);
	}
	for (size_t i = 0; i < f->network.n_ib; i++) {
		const struct gb_ib_port *p = &f->network.ib[i];
		uint32_t g = 0;
		char b[16];
		if (!p->state || !streq(p->state, "ACTIVE") || !p->rate)
			continue;
		gb_strscpy(b, sizeof(b), p->rate);
		b[strcspn(b, " ")] = '\0';
		if (gb_safe_atou32(b, 10, &g) == 0 && g > best) {
			best = g;
			snprintf(best_name, sizeof(best_name), "%s port %u", p->device, p->port);
		}
	}
	c = gb_verify_add(r, "network.link_rate", "system");
	if (!c)
		return;
	c->has_value = true;
	c->value = best;
	snprintf(c->unit, sizeof(c->unit), "Gb/s");
	snprintf(c->text, sizeof(c->text), "fastest link up: %s", best_name[0] ? best_name : "none with a known speed");
	if (o->min_network_gbps > 0) {
		c->has_threshold = true;
		c->threshold = o->min_network_gbps;
		snprintf(c->op, sizeof(c->op), ">=");
		snprintf(c->source, sizeof(c->source), "profile: min_network_gbps (multi-node training)");
		c->state = best >= o->min_network_gbps ? GB_CHECK_PASS : GB_CHECK_FAIL;
		if (c->state == GB_CHECK_FAIL)
			snprintf(c->hint, sizeof(c->hint),
			         "the fastest link is %.0f Gb/s: multi-node training needs InfiniBand/RoCE at %.0f "
			         "Gb/s or more",
			         best, o->min_network_gbps);
	} else {
		c->state = GB_CHECK_INFO;
	}
}

/* The installed CUDA is the plan's release (major.minor). */
static void cuda_check(const struct gb_facts *f, const struct gb_verify_opts *o, struct gb_verify_result *r)
{
	struct gb_check *c = gb_verify_add(r, "cuda.installed", "system");
	char want[16], found[160] = "";
	size_t off = 0;
	bool match = false;

	if (!c)
		return;
	gb_strscpy(c->source, sizeof(c->source),
	           "the plan's CUDA release against usr/local/cuda*/ (version.json, version.txt or cuda.h)");
	if (!o->expected_cuda) {
		c->state = GB_CHECK_SKIP;
		snprintf(c->text, sizeof(c->text), "the plan installs no CUDA");
		return;
	}
	gb_strscpy(want, sizeof(want), o->expected_cuda);
	if (strchr(want, '.') && strchr(strchr(want, '.') + 1, '.'))
		*strchr(strchr(want, '.') + 1, '.') = '\0';
	for (size_t i = 0; i < f->nvidia.n_cuda; i++) {
		const char *v = f->nvidia.cuda[i].version;
		size_t l = strlen(want);
		if (v && strncmp(v, want, l) == 0 && (v[l] == '\0' || v[l] == '.'))
			match = true;
		if (off < sizeof(found))
			off += (size_t)snprintf(found + off, sizeof(found) - off, "%s%s %s", off ? ", " : "",
			                        f->nvidia.cuda[i].path, v ? v : "(version unknown)");
	}
	c->state = match ? GB_CHECK_PASS : GB_CHECK_FAIL;
	snprintf(c->text, sizeof(c->text), "plan: CUDA %s; installed: %s", want, off ? found : "none");
	if (!match)
		snprintf(c->hint, sizeof(c->hint),
		         "CUDA %s is not installed (%s): gpuboot run installs the plan's CUDA", want,
		         off ? found : "no CUDA under /usr/local");
}

int gb_verify_integration(struct gb_ctx *ctx, const struct gb_facts *f, const struct gb_verify_opts *o,
                          struct gb_verify_result *r)
{
	cuda_check(f, o, r);
	container_check(ctx, f, r);
	disk_check(ctx, o, r);
	network_check(ctx, f, o, r);
	return 0;
}
