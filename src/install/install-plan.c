/* SPDX-License-Identifier: MIT */
/* The plan's driver as the install stage's input: the distribution's own
 * packages (the distro method), or NVIDIA's repository (the packages
 * method on apt, dnf or zypper), its address and key pin from the catalog
 * and the plan, the packages as the plan typed them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "context.h"
#include "install-fm.h"
#include "install.h"
#include "plan/plan.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/macro.h"
#include "shared/util.h"

int gb_repo_url(const char *mirror, const char *host, const char *path, char *out, size_t outsz)
{
	int n;
	if (mirror && (gb_startswith(mirror, "https://") || gb_startswith(mirror, "http://")))
		n = snprintf(out, outsz, "%s%s%s", mirror, mirror[strlen(mirror) - 1] == '/' ? "" : "/", path);
	else
		n = snprintf(out, outsz, "%s%s", host, path);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

/* NVIDIA's repository of the plan: cuda-<repo>-<arch>, below the mirror
 * or NVIDIA's host, its key beside it as the catalog's pin names it. */
static int plan_repo(const struct gb_plan *p, const struct gb_install_source *src, struct gb_apt_repo *repo,
                     char id[80], char uri[600], char key[700], char *err, size_t errsz)
{
	const struct gb_repo_key *pin = gb_repo_key_find(p->driver.repo_key);
	char path[160];

	/* the plan chose packages only where a key is pinned */
	if (!pin) {
		snprintf(err, errsz, "no key is pinned for NVIDIA's %s repository", p->driver.repo);
		return -ENOKEY;
	}
	snprintf(id, 80, "cuda-%s-%s", p->driver.repo, p->driver.repo_arch);
	snprintf(path, sizeof(path), GB_NVIDIA_CUDA_REPOS "%s/%s/", p->driver.repo, p->driver.repo_arch);
	if (gb_repo_url(src->mirror, GB_NVIDIA_CUDA_HOST, path, uri, 600) < 0 ||
	    snprintf(key, 700, "%s%s", uri, pin->file) >= 700) {
		snprintf(err, errsz, "the mirror's address is too long: %s", src->mirror);
		return -ENAMETOOLONG;
	}
	*repo =
	    (struct gb_apt_repo){ .id = id, .uri = uri, .key_url = key, .key_pin = pin->name, .ca_file = src->ca_file };
	return 0;
}

/* The runfile method's fabric manager, before the driver: NVIDIA's
 * redistributable manifest (verified by the fetch stage against the
 * mirror's signature) parsed for the driver's version and the arch, both
 * archives checked against it; nothing is installed unless they are. */
struct fm_job {
	struct gb_fm_redist rd;
	struct gb_fm_input in;
	struct gb_fm_unpacked u;
	bool unpacked;
	char work[4200];
};

static int fm_prepare(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_install_source *src,
                      struct fm_job *fm, struct gb_fm_result *fmr, char *err, size_t errsz)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int k;

	if (!src->fm_redist || !src->fm_archive || !src->nscq_archive) {
		snprintf(
		    err, errsz,
		    "the fabric manager's redistributable manifest or archives (%s) are not in the cache: the fetch "
		    "stage did not verify them; nothing was installed",
		    p->driver.fm_redist.path);
		return -ENOENT;
	}
	k = gb_read_file(src->fm_redist, 1u << 20, &text, &len);
	if (k < 0) {
		snprintf(err, errsz, "Failed to read %s: %s", src->fm_redist, strerror(-k));
		return k;
	}
	k = gb_fm_redist_parse(text, len, p->driver.version, p->in.arch, &fm->rd, err, errsz);
	if (k == -EBADMSG) {
		char why[512];
		gb_strscpy(why, sizeof(why), err);
		snprintf(err, errsz, "%s is not the driver's redistributable manifest: %s; nothing was installed",
		         p->driver.fm_redist.path, why);
		return -EKEYREJECTED;
	}
	if (k < 0)
		return k;
	fm->in = (struct gb_fm_input){
		.redist = &fm->rd, .fm_archive = src->fm_archive, .nscq_archive = src->nscq_archive, .work = fm->work
	};
	snprintf(fm->work, sizeof(fm->work), "%s/fabricmanager-unpack", ctx->opt.state_dir);
	k = gb_mkdir_p(fm->work, 0700);
	if (k < 0) {
		snprintf(err, errsz, "Failed to create %s: %s", fm->work, strerror(-k));
		return k;
	}
	k = gb_fm_unpack(&fm->in, &fm->u, fmr);
	if (k < 0) {
		gb_strscpy(err, errsz, fmr->error);
		/* an archive the trusted manifests name, whose contents are refused: nothing is installed from it */
		return k == -ENOMEM || k == -ENOSPC ? k : -EKEYREJECTED;
	}
	fm->unpacked = true;
	return 0;
}

/* Unpacked and placed after the driver, beside its libraries. */
static int fm_place(struct gb_ctx *ctx, struct fm_job *fm, struct gb_journal *j, json_object *out, char *err,
                    size_t errsz)
{
	struct gb_fm_result fmr;
	json_object *o;
	int k;

	k = gb_fm_place(ctx, &fm->in, &fm->u, j, &fmr);
	o = gb_json_new_object();
	gb_json_add(o, "version", gb_json_new_string(fm->rd.version));
	gb_json_add(o, "source", gb_json_new_string("redist"));
	gb_json_add(o, "libdir", gb_json_new_string(fmr.libdir));
	gb_json_add(o, "changed", gb_json_new_boolean(fmr.changed));
	gb_json_add(o, "error", fmr.error[0] ? gb_json_new_string(fmr.error) : NULL);
	gb_json_add(out, "fabricmanager", o);
	if (k < 0)
		gb_strscpy(err, errsz, fmr.error[0] ? fmr.error : strerror(-k));
	return k;
}

/* NVIDIA's .run, verified by the fetch stage, unpacked by gpuboot: for the
 * plan's running kernel, or every kernel of an image. */
static int install_runfile(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_install_source *src,
                           struct gb_journal *j, json_object **ret_json, char *err, size_t errsz)
{
	struct gb_runfile_input in = { .runfile = src->runfile,
		                       .version = p->driver.version,
		                       .flavor = gb_driver_flavor_name(p->driver.flavor),
		                       .dkms = GB_RUNFILE_DKMS_AUTO };
	struct gb_runfile_result *res;
	const char *kernels[1];
	struct fm_job fm;
	struct gb_fm_result fmr;
	int k;

	memset(&fm, 0, sizeof(fm));

	if (!src->runfile) {
		snprintf(err, errsz, "driver runfile %s is not in the cache: the fetch stage did not verify it",
		         p->driver.version);
		return -ENOENT;
	}
	if (p->in.kernel_known && !src->image) {
		kernels[0] = p->in.kernel_release;
		in.kernels = kernels;
		in.n_kernels = 1;
	}
	if (p->driver.fm_redist.path[0]) {
		k = fm_prepare(ctx, p, src, &fm, &fmr, err, errsz);
		if (k < 0)
			return k;
	}
	res = calloc(1, sizeof(*res));
	if (!res) {
		if (fm.unpacked)
			gb_fm_unpacked_done(&fm.in, &fm.u);
		return -ENOMEM;
	}
	k = gb_install_runfile(ctx, &in, j, res);
	*ret_json = gb_runfile_result_to_json(res);
	if (k < 0)
		gb_strscpy(err, errsz, res->error[0] ? res->error : strerror(-k));
	free(res);
	if (k >= 0 && fm.unpacked)
		k = fm_place(ctx, &fm, j, *ret_json, err, errsz);
	if (fm.unpacked)
		gb_fm_unpacked_done(&fm.in, &fm.u);
	return k;
}

/* The kept driver's fabric manager alone (the plan's fm_only): NVIDIA's
 * repository, userspace only (no headers, no module, no blacklist), held
 * and pinned at the driver's version by a pin of its own that names the
 * fabric manager alone, so nothing of the driver is touched. */
static int install_fm_only(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_install_source *src,
                           struct gb_journal *j, json_object **ret_json, char *err, size_t errsz)
{
	struct gb_install_input in = { .method = GB_INSTALL_PACKAGES,
		                       .flavor = gb_driver_flavor_name(p->driver.flavor),
		                       .driver_version = p->driver.version,
		                       .packages = p->driver.packages,
		                       .n_packages = p->driver.n_packages,
		                       .userspace_only = true,
		                       .pin_name = "nvidia-fabricmanager",
		                       .pin_packages = p->fm_package,
		                       .pin_version = p->driver.version };
	struct gb_apt_repo repo;
	char id[80], uri[600], key[700];
	int k = plan_repo(p, src, &repo, id, uri, key, err, errsz);

	if (k < 0)
		return k;
	in.repo = &repo;
	return gb_install_report(ctx, &in, j, ret_json, err, errsz);
}

int gb_install_plan(struct gb_ctx *ctx, const struct gb_plan *p, const struct gb_install_source *src,
                    struct gb_journal *j, json_object **ret_json, char *err, size_t errsz)
{
	struct gb_install_input in = { .method = GB_INSTALL_DISTRO,
		                       .flavor = gb_driver_flavor_name(p->driver.flavor),
		                       .driver_version = p->driver.version };
	struct gb_install_prebuilt prebuilt[GB_INSTALL_MAX_PREBUILT];
	struct gb_apt_repo repo;
	char id[80], uri[600], key[700];
	int k;

	_Static_assert(GB_INSTALL_MAX_PREBUILT == GB_PLAN_MAX_PREBUILT, "one prebuilt package per kernel, both sides");
	*ret_json = NULL;
	switch (p->driver.method) {
	case GB_METHOD_RUNFILE: return install_runfile(ctx, p, src, j, ret_json, err, errsz);
	case GB_METHOD_PACKAGES:
		k = plan_repo(p, src, &repo, id, uri, key, err, errsz);
		if (k < 0)
			return k;
		in.method = GB_INSTALL_PACKAGES;
		in.repo = &repo;
		in.packages = p->driver.packages;
		in.n_packages = p->driver.n_packages;
		break;
	case GB_METHOD_DISTRO:
		for (size_t i = 0; i < p->driver.n_prebuilt; i++) {
			const struct gb_plan_prebuilt *b = &p->driver.prebuilt[i];
			if (!src->prebuilt[i]) {
				snprintf(err, errsz,
				         "the prebuilt module package for %s (%s) is not in the cache: the fetch stage "
				         "did not "
				         "verify it",
				         b->kernel, b->path);
				return -ENOENT;
			}
			prebuilt[i] = (struct gb_install_prebuilt){ .kernel = b->kernel,
				                                    .package = b->package,
				                                    .version = b->version,
				                                    .file = src->prebuilt[i] };
		}
		in.prebuilt = p->driver.n_prebuilt ? prebuilt : NULL;
		in.n_prebuilt = p->driver.n_prebuilt;
		break;
	case GB_METHOD_NONE:
		if (p->driver.fm_only)
			return install_fm_only(ctx, p, src, j, ret_json, err, errsz);
		/* fall through */
	default:
		snprintf(err, errsz, "the plan installs no driver (method %s)",
		         gb_driver_method_name(p->driver.method) ? gb_driver_method_name(p->driver.method) : "unset");
		return -EINVAL;
	}
	return gb_install_report(ctx, &in, j, ret_json, err, errsz);
}
