/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "exit-codes.h"
#include "run.h"
#include "catalog/catalog.h"
#include "fetch/catalog-file.h"
#include "fetch/fetch-plan.h"
#include "fetch/manifest.h"
#include "fetch-stage.h"
#include "shared/root.h"
#include "shared/fileio.h"
#include "shared/log.h"
#include "shared/test-knob.h"
#include "shared/tls.h"
#include "load/modsign.h"
#include "shared/macro.h"
#include "shared/util.h"

/* [secure_boot] signing_key and signing_cert: both (the node signs), the
 * certificate alone (the modules come signed from the site mirror: no key on
 * the node), or neither; the certificate's name and key id as the kernel
 * shows them. */
static int site_signing_load(struct gb_site_config *s, char *err, size_t errsz)
{
	const char *missing = "?";
	char e[400] = "";
	int r;
	if (!s->signing_key && !s->signing_cert)
		return 0;
	if (!s->signing_cert) {
		snprintf(err, errsz,
		         "[secure_boot] signing_key needs its signing_cert (the key's X.509 certificate) beside it");
		return -EINVAL;
	}
	/* read with OpenSSL: initialised and checked first (plan, verify) */
	r = gb_tls_init(true, &missing);
	if (r == -ENOPKG) {
		snprintf(err, errsz, "OpenSSL has no %s: the site certificate cannot be read", missing);
		return -EIO;
	}
	if (r < 0)
		return r;
	r = s->signing_key ? gb_modsign_pair_check(s->signing_key, s->signing_cert, e, sizeof(e)) : 0;
	if (r >= 0)
		r = gb_modsign_cert_id(s->signing_cert, s->signing_cert_subject, sizeof(s->signing_cert_subject),
		                       s->signing_cert_key_id, sizeof(s->signing_cert_key_id), e, sizeof(e));
	if (r < 0)
		snprintf(err, errsz, "[secure_boot]: %s", e);
	return r;
}

int gb_inputs_catalog(struct gb_ctx *ctx, const struct gb_site_config *site)
{
	static bool loaded;
	char *keys[GB_MAX_TRUST_KEYS + 32];
	size_t nk = 0;
	struct gb_catalog_sources s = {
		.file = ctx->opt.catalog,
		.mirror = ctx->opt.mirror         ? ctx->opt.mirror
		          : ctx->opt.catalog_keep ? site->mirror
		                                  : NULL,
		.ca_file = ctx->opt.ca_file ? ctx->opt.ca_file : site->ca_file,
		.offline = ctx->opt.offline,
		.state_dir =
		    ctx->root->is_host || ctx->opt.state_dir_given || ctx->opt.catalog_keep ? ctx->opt.state_dir : NULL,
		.site_floor = site->min_catalog_version,
		.store = ctx->opt.catalog_keep && !ctx->opt.dry_run,
		.keys = keys,
		.now_s = ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull,
	};

	if (loaded)
		return 0;
	loaded = true;
	for (size_t i = 0; i < ctx->opt.n_trust_keys; i++)
		keys[nk++] = (char *)ctx->opt.trust_keys[i];
	for (char **k = site->trusted_keys; k && *k && nk < ARRAY_SIZE(keys) - 1; k++)
		keys[nk++] = *k;
	keys[nk] = NULL;
	s.allow_http = s.mirror && gb_startswith(s.mirror, "http://") && site->allow_http_mirror;
	return gb_catalog_load(&s);
}

int gb_inputs_load(struct gb_ctx *ctx, struct gb_inputs *in)
{
	char err[1024] = "";
	int r;

	r = gb_profile_load(ctx, ctx->opt.profile ? ctx->opt.profile : "training", &in->profile, err, sizeof(err));
	if (r >= 0)
		r = gb_site_config_load(ctx, ctx->opt.config_given ? ctx->opt.config : NULL, &in->site, err,
		                        sizeof(err));
	if (r == -ENOMEM) {
		gb_log_error("out of memory while loading the profile and the configuration");
		return GB_EXIT_FAILED;
	}
	if (r >= 0)
		r = site_signing_load(&in->site, err, sizeof(err));
	if (r >= 0 && gb_inputs_catalog(ctx, &in->site) == -ENOMEM)
		r = -ENOMEM;
	if (r == -ENOMEM) {
		gb_log_error("out of memory while loading the profile and the configuration");
		return GB_EXIT_FAILED;
	}
	if (r < 0) {
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	return 0;
}

int gb_inputs_detect(struct gb_ctx *ctx, struct gb_inputs *in)
{
	int r;
	in->facts = (struct gb_facts){ .secure_boot = -1 };
	r = gb_detect(ctx, &in->facts);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to detect the machine under '%s': %m", ctx->root->path);
		return GB_EXIT_FAILED;
	}
	in->have_facts = true;
	return 0;
}

static bool want_kernel_image(const char *name)
{
	return gb_startswith(name, "linux-image-") != NULL;
}

/* The node's kernels: each image package's version and its vermagic. */
static int node_kernels(struct gb_ctx *ctx, struct gb_inputs *in)
{
	_cleanup_free_ char *text = NULL;
	struct gb_package *pk = NULL;
	struct gb_kmod *kmod = NULL;
	size_t len = 0, npk = 0;
	unsigned bad = 0;
	int r;

	r = gb_root_read_file(ctx->root, "var/lib/dpkg/status", 64u << 20, &text, &len);
	if (r >= 0)
		r = gb_dpkg_status_parse(text, len, want_kernel_image, &pk, &npk, &bad);
	if (r == -ENOMEM)
		return r;
	for (size_t i = 0; i < in->facts.kernel.n_installed && in->n_node_kernels < GB_PLAN_MAX_PREBUILT; i++) {
		struct gb_plan_node_kernel *k = &in->node_kernels[in->n_node_kernels++];
		const char *rel = in->facts.kernel.installed[i].release;
		char name[128];
		gb_strscpy(k->release, sizeof(k->release), rel);
		snprintf(name, sizeof(name), "linux-image-%s", rel);
		for (size_t j = 0; j < npk; j++)
			if (streq(pk[j].name, name))
				gb_strscpy(k->package_version, sizeof(k->package_version), pk[j].version);
		if (gb_kernel_vermagic(ctx, &kmod, rel, k->vermagic, sizeof(k->vermagic)) == -ENOMEM)
			r = -ENOMEM;
	}
	gb_kmod_free(kmod);
	gb_packages_free(pk, npk);
	return r == -ENOMEM ? r : 0;
}

/* The mirror's module entries as the plan reads them. */
static int offers_from(struct gb_inputs *in, const struct gb_manifest *m)
{
	in->offers = calloc(m->n_mods ? m->n_mods : 1, sizeof(*in->offers));
	if (!in->offers)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_mods; i++) {
		const struct gb_mirror_module *e = &m->mods[i];
		const struct gb_manifest_entry *a = gb_manifest_find(m, e->path);
		struct gb_plan_module_offer *o = &in->offers[in->n_offers++];
		gb_strscpy(o->distro, sizeof(o->distro), e->distro);
		gb_strscpy(o->arch, sizeof(o->arch), e->arch);
		gb_strscpy(o->kernel, sizeof(o->kernel), e->kernel);
		gb_strscpy(o->kernel_package_version, sizeof(o->kernel_package_version), e->kernel_package_version);
		gb_strscpy(o->vermagic, sizeof(o->vermagic), e->vermagic);
		gb_strscpy(o->driver, sizeof(o->driver), e->driver);
		gb_strscpy(o->flavor, sizeof(o->flavor), e->flavor);
		gb_strscpy(o->package, sizeof(o->package), e->package);
		gb_strscpy(o->package_version, sizeof(o->package_version), e->package_version);
		gb_strscpy(o->signer, sizeof(o->signer), e->signer);
		gb_strscpy(o->path, sizeof(o->path), e->path);
		gb_strscpy(o->sha256, sizeof(o->sha256), a ? a->sha256 : "");
		o->size = a ? a->size : 0;
	}
	return 0;
}

#define REDIST_DIR "compute/nvidia-driver/redist/redistrib_"

/* The driver redistributable manifests a mirror's signed manifest lists
 * (their fabric manager archives for the runfile method). */
static void redist_from(struct gb_inputs *in, const struct gb_manifest *m)
{
	for (size_t i = 0; i < m->n && in->n_redist < ARRAY_SIZE(in->redist); i++) {
		const struct gb_manifest_entry *e = &m->v[i];
		size_t l = strlen(e->path), pre = strlen(REDIST_DIR);
		struct gb_plan_redist_offer *o = &in->redist[in->n_redist];
		char ver[40];

		if (l <= pre + 5 || !gb_startswith(e->path, REDIST_DIR) || !streq(e->path + l - 5, ".json") ||
		    l - pre - 5 >= sizeof(ver))
			continue;
		memcpy(ver, e->path + pre, l - pre - 5);
		ver[l - pre - 5] = '\0';
		if (!gb_version_valid(ver) || gb_strscpy(o->path, sizeof(o->path), e->path) < 0)
			continue;
		gb_strscpy(o->version, sizeof(o->version), ver);
		gb_strscpy(o->sha256, sizeof(o->sha256), e->sha256);
		o->size = e->size;
		in->n_redist++;
	}
}

/* The site mirror's signed manifest for the plan, read as the fetch stage
 * will read it (dry run: the version it accepts is recorded there). 1: read
 * into *m; 0: not read, note says why (no mirror; not accepted, warned as
 * WHAT's); -ENOMEM. */
static int mirror_read(struct gb_ctx *ctx, struct gb_inputs *in, const char *what, const char *no_mirror, char *note,
                       size_t notesz, struct gb_manifest *m)
{
	struct gb_fetch_job j;
	char err[600] = "";
	int r;

	memset(&j, 0, sizeof(j));
	if (gb_fetch_job_setup(ctx, &in->site, false, &j) != 0 || !j.src.mirror) {
		snprintf(note, notesz, "%s", no_mirror);
		return 0;
	}
	j.fo.dry_run = true;
	r = gb_fetch_mirror_manifest(ctx, &j.src, &j.fo, m, err, sizeof(err));
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		gb_log_warning("%s: the mirror's manifest was not accepted: %s", what, err);
		snprintf(note, notesz, "the mirror's manifest was not accepted (%.150s)", err);
		return 0;
	}
	return 1;
}

/* An NVSwitch machine whose driver may come from the runfile: the
 * mirror's redistributable manifests, for its fabric manager. */
static int inputs_redist(struct gb_ctx *ctx, struct gb_inputs *in, const char *method)
{
	struct gb_manifest m = { 0 };
	int r;

	if (in->redist_loaded || !in->want_offers || ctx->opt.target_os || in->facts.n_nvswitches == 0 ||
	    streq(method, "packages") || streq(method, "distro"))
		return 0;
	in->redist_loaded = true;
	r = mirror_read(ctx, in, "The fabric manager", "no mirror is set ([site] mirror, --mirror)", in->redist_note,
	                sizeof(in->redist_note), &m);
	if (r > 0) {
		redist_from(in, &m);
		if (!in->n_redist)
			snprintf(in->redist_note, sizeof(in->redist_note),
			         "the mirror's signed manifest lists no driver redistributable manifest");
	}
	gb_manifest_done(&m);
	return r < 0 ? r : 0;
}

int gb_inputs_offers(struct gb_ctx *ctx, struct gb_inputs *in)
{
	const char *method = ctx->opt.method ? ctx->opt.method : in->site.method;
	struct gb_manifest m = { 0 };
	int r;

	r = inputs_redist(ctx, in, method);
	if (r < 0)
		return r;
	if (in->offers_loaded || !in->want_offers || !streq(method, "distro") || ctx->opt.target_os ||
	    !in->facts.os.package_manager || !streq(in->facts.os.package_manager, "apt"))
		return 0;
	in->offers_loaded = true;
	r = node_kernels(ctx, in);
	if (r < 0)
		return r;
	r = mirror_read(ctx, in, "Prebuilt modules",
	                "no mirror is set ([site] mirror, --mirror) to take a prebuilt module from", in->offers_note,
	                sizeof(in->offers_note), &m);
	if (r > 0 && !m.n_mods)
		snprintf(in->offers_note, sizeof(in->offers_note), "the mirror's manifest lists no prebuilt modules");
	else if (r > 0)
		r = offers_from(in, &m);
	gb_manifest_done(&m);
	return r == -ENOMEM ? r : 0;
}

void gb_inputs_done(struct gb_inputs *in)
{
	free(in->offers);
	in->offers = NULL;
	in->n_offers = 0;
	in->n_node_kernels = 0;
	in->offers_loaded = false;
	in->n_redist = 0;
	in->redist_loaded = false;
	if (in->have_facts)
		gb_facts_done(&in->facts);
	in->have_facts = false;
	gb_profile_done(&in->profile);
	gb_site_config_done(&in->site);
}

/* Today's date (UTC) from the operations table's clock: EOL dates are compared with it. */
static void today(struct gb_ctx *ctx, char *buf, size_t n)
{
	time_t t = (time_t)(ctx->ops->now_realtime_ns(ctx->ops) / 1000000000ull);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%d", &tm) == 0)
		gb_strscpy(buf, n, "1970-01-01");
}

int gb_plan_from_inputs(struct gb_ctx *ctx, const struct gb_inputs *in, struct gb_plan *plan)
{
	struct gb_plan_input pin;
	struct gb_gpu_overrides ov = { 0 };
	char err[1024] = "", date[16];
	int r;

	if (gb_plan_input_from_facts(&in->facts, &pin) < 0) {
		gb_log_error("out of memory while planning");
		return GB_EXIT_FAILED;
	}
	pin.repair = ctx->opt.repair;
	pin.offline = ctx->opt.offline;
	if (in->redo_driver) {
		memset(&pin.installed, 0, sizeof(pin.installed));
		/* the fabric manager the killed run placed with that driver (the
		 * runfile method's marker) is planned as that run planned it too */
		if (in->facts.nvidia.fabricmanager_runfile[0] &&
		    streq(pin.fabricmanager_installed, in->facts.nvidia.fabricmanager_runfile))
			pin.fabricmanager_installed[0] = '\0';
	}
	if (in->redo_cuda)
		pin.n_cuda_installed = 0;
	if (in->redo_toolkit)
		pin.toolkit_installed[0] = '\0';
	if (ctx->opt.method) {
		gb_strscpy(pin.method, sizeof(pin.method), ctx->opt.method);
		gb_strscpy(pin.method_by, sizeof(pin.method_by), "--method");
	} else if (in->site.method[0]) {
		gb_strscpy(pin.method, sizeof(pin.method), in->site.method);
		gb_strscpy(pin.method_by, sizeof(pin.method_by), "gpuboot.conf [install] method");
	}
	pin.offers = in->offers;
	pin.n_offers = in->n_offers;
	gb_strscpy(pin.offers_note, sizeof(pin.offers_note),
	           in->offers_loaded ? in->offers_note
	                             : "this command does not read the mirror's prebuilt modules (run and fetch do: "
	                               "gpuboot run --dry-run shows their choice)");
	pin.offers_unread = !in->offers_loaded;
	memcpy(pin.redist, in->redist, sizeof(pin.redist));
	pin.n_redist = in->n_redist;
	gb_strscpy(pin.redist_note, sizeof(pin.redist_note),
	           in->redist_loaded
	               ? in->redist_note
	               : "this command does not read the mirror (gpuboot run --dry-run shows its choice)");
	memcpy(pin.node_kernels, in->node_kernels, sizeof(pin.node_kernels));
	pin.n_node_kernels = in->n_node_kernels;
	if (gb_cpu_arch_target(pin.arch) && gb_cpu_arch_target(pin.arch)->deb)
		gb_strscpy(pin.deb_arch, sizeof(pin.deb_arch), gb_cpu_arch_target(pin.arch)->deb);
	if ((ctx->opt.target_os && gb_plan_input_target_os(ctx->opt.target_os, &pin, err, sizeof(err)) < 0) ||
	    (ctx->opt.target_gpu && gb_plan_input_target_gpu(ctx->opt.target_gpu, &pin, err, sizeof(err)) < 0)) {
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	r = gb_gpu_overrides_load(ctx, &ov, err, sizeof(err));
	if (r >= 0) {
		today(ctx, date, sizeof(date));
		r = gb_plan_make(&pin, &in->profile, &in->site, &ov, date, plan, err, sizeof(err));
	}
	gb_gpu_overrides_done(&ov);
	if (r == -ENOMEM) {
		gb_log_error("out of memory while planning");
		return GB_EXIT_FAILED;
	}
	if (r < 0) {
		gb_log_error("%s", err);
		return GB_EXIT_USAGE;
	}
	return 0;
}

int gb_inputs_plan(struct gb_ctx *ctx, struct gb_inputs *in, struct gb_plan *plan)
{
	int code = gb_inputs_load(ctx, in);
	if (!code)
		code = gb_inputs_detect(ctx, in);
	if (!code && gb_inputs_offers(ctx, in) < 0) {
		gb_log_error("out of memory while reading the mirror's prebuilt modules");
		code = GB_EXIT_FAILED;
	}
	if (!code)
		code = gb_plan_from_inputs(ctx, in, plan);
	return code;
}

int gb_lock_take(struct gb_ctx *ctx, int *ret_fd)
{
	char path[4200], holder[64] = "";
	int fd, r;

	r = gb_mkdir_p(ctx->opt.state_dir, 0755);
	if (r < 0) {
		gb_log_error_errno(r, "Failed to create the state directory '%s': %m", ctx->opt.state_dir);
		return GB_EXIT_FAILED;
	}
	snprintf(path, sizeof(path), "%s/lock", ctx->opt.state_dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		gb_log_error_errno(negative_errno(), "Failed to open '%s': %m", path);
		return GB_EXIT_FAILED;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno;
		if (r == EWOULDBLOCK) {
			/* The holder writes its pid just after it took the lock: a
			 * moment's wait, bounded, rather than "pid unknown". */
			ssize_t n = 0;
			for (int i = 0; i < 20 && n <= 0; i++) {
				if (i)
					ctx->ops->sleep_ms(ctx->ops, 5);
				n = pread(fd, holder, sizeof(holder) - 1, 0);
			}
			holder[n > 0 ? n : 0] = '\0';
			holder[strcspn(holder, "\n")] = '\0';
			close(fd);
			gb_log_error(
			    "Another gpuboot holds '%s' (pid %s; cloud-init and a manual run at once?); wait for it",
			    path, holder[0] ? holder : "unknown");
			return GB_EXIT_LOCKED;
		}
		close(fd);
		gb_log_error_errno(-r, "Failed to lock '%s': %m", path);
		return GB_EXIT_FAILED;
	}
	/* The holder's pid, for the message another run prints. */
	snprintf(holder, sizeof(holder), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, holder, strlen(holder), 0) < 0)
		gb_log_debug("could not record the lock holder in '%s'", path);
#ifdef GB_TEST_HOOKS
	{
		/* The concurrency tests: hold the lock a while, so runs overlap. */
		uint32_t ms;
		if (gb_test_knob_u32("GPUBOOT_TEST_HOLD_LOCK_MS", &ms) == 0)
			ctx->ops->sleep_ms(ctx->ops, ms);
	}
#endif
	*ret_fd = fd;
	return 0;
}
