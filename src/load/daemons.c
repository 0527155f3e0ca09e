/* SPDX-License-Identifier: MIT */
/* The plan's daemons, once the modules are live: nvidia-persistenced where
 * its unit is installed, and the fabric manager (the plan lists it only
 * with NVSwitches) only at the driver's exact version: a fabric manager of
 * another version refuses to start, and CUDA fails with error 802 (system
 * not yet initialized) on every GPU behind the switches. */
#include "daemons.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "context.h"
#include "detect/detect.h"
#include "effect/journal.h"
#include "install/install-fm.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "shared/util.h"
#include "shared/json-util.h"

#define STAGE "load"
#define DPKG_STATUS_MAX (64u << 20)
#define FM "nvidia-fabricmanager"

static const char *const unit_dirs[] = { "etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system" };

/* 1 installed, 0 not, -ESHUTDOWN masked (etc/systemd/system/NAME.service
 * is a link to /dev/null: the site turned it off; left alone). */
static int unit_installed(struct gb_ctx *ctx, const char *name)
{
	char p[160];
	for (size_t i = 0; i < ARRAY_SIZE(unit_dirs); i++) {
		_cleanup_free_ char *target = NULL;
		snprintf(p, sizeof(p), "%s/%s.service", unit_dirs[i], name);
		if (i == 0 && gb_root_readlink(ctx->root, p, &target) == 0 && streq(target, "/dev/null"))
			return -ESHUTDOWN;
		if (gb_root_exists(ctx->root, p))
			return 1;
	}
	return 0;
}

/* nvidia-fabricmanager-580, nvidia-fabricmanager (NVIDIA's and Ubuntu's
 * packages; not the -dev/-devel ones). */
static bool is_fm_package(const char *name)
{
	const char *rest = gb_startswith(name, FM);
	if (!rest)
		return false;
	if (!*rest)
		return true;
	if (*rest++ != '-' || !*rest)
		return false;
	for (; *rest; rest++)
		if (*rest < '0' || *rest > '9')
			return false;
	return true;
}

/* The version of the first installed package of dpkg's database that
 * filter accepts (its upstream part when upstream: "580.95.05-1" is
 * 580.95.05): 0 found, 1 not installed, -ENOENT no dpkg database. */
static int dpkg_version(struct gb_ctx *ctx, bool (*filter)(const char *), bool upstream, char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;
	struct gb_package *p = NULL;
	size_t len, np = 0;
	unsigned bad = 0;
	int r = gb_root_read_file(ctx->root, "var/lib/dpkg/status", DPKG_STATUS_MAX, &text, &len);

	if (r < 0)
		return r;
	r = gb_dpkg_status_parse(text, len, filter, &p, &np, &bad);
	if (r >= 0)
		r = 1;
	if (r >= 0 && np > 0) {
		_cleanup_free_ char *v = upstream ? gb_package_driver_version(&p[0]) : strdup(p[0].version);
		r = v ? (gb_strscpy(buf, n, v) < 0 ? -EINVAL : 0) : (upstream ? -EINVAL : -ENOMEM);
	}
	gb_packages_free(p, np);
	return r;
}

/* The installed fabric manager's version ("580.95.05"), from dpkg's
 * database, else rpm's answer, else the runfile method's marker (the
 * archives it placed, believed only while usr/bin/nv-fabricmanager has
 * the sha256 it recorded): -ENOENT when none is installed, -ESTALE when
 * the marker's binary was changed since. */
static int fm_version_pkg(struct gb_ctx *ctx, char *buf, size_t n);
static int fm_version(struct gb_ctx *ctx, char *buf, size_t n)
{
	int r = fm_version_pkg(ctx, buf, n);
	return r == -ENOENT ? gb_fm_marker_version(ctx, buf, n) : r;
}

static int fm_version_pkg(struct gb_ctx *ctx, char *buf, size_t n)
{
	int r = dpkg_version(ctx, is_fm_package, true, buf, n);

	if (r >= 0)
		return r == 1 ? -ENOENT : 0;
	if (r != -ENOENT)
		return r;
	{
		/* by the binary: NVIDIA's RPMs are nvidia-fabric-manager or nvidia-fabricmanager-BRANCH */
		const char *argv[] = { "rpm", "-qf", "--qf", "%{VERSION}\\n", "/usr/bin/nv-fabricmanager", NULL };
		struct gb_cmd_spec spec = { .argv = argv, .timeout_ms = 60 * 1000 };
		_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
		char *nl;

		if (!res)
			return -ENOMEM;
		r = ctx->ops->run_command(ctx->ops, &spec, res);
		if (r < 0)
			return r == -ENOENT ? -ENOENT : r;
		if (!WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0)
			return -ENOENT; /* "file /usr/bin/nv-fabricmanager is not owned by any package" */
		/* the first line that is a version (a warning of rpm's may come before) */
		for (char *line = res->output; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (gb_version_valid(line))
				return gb_strscpy(buf, n, line) < 0 ? -EINVAL : 0;
		}
		return -EINVAL;
	}
}

/* systemctl enable --now, journaled: enable (the unit starts at every
 * boot) and start (now); restart instead of start when its configuration
 * was just changed. */
static int enable_now_as(struct gb_ctx *ctx, struct gb_journal *j, const char *unit, bool restart)
{
	const char *const verbs[] = { "enable", restart ? "restart" : "start" };
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
		char id[120];
		int r, k;

		snprintf(id, sizeof(id), "systemctl:%s:%s", verbs[i], unit);
		r = gb_journal_begin(j, STAGE, id, "command", NULL);
		if (r < 0)
			return r;
		if (r == 1 && i == 0)
			continue; /* enabled in the run this one resumes; start again, a reboot may have passed */
		r = ctx->ops->systemctl(ctx->ops, verbs[i], unit);
		if (r == 0)
			gb_journal_count_effect(j);
		k = gb_journal_end(j, id, r, NULL);
		if (r < 0)
			return r;
		if (k < 0)
			return -EIO;
	}
	return 0;
}

static int enable_now(struct gb_ctx *ctx, struct gb_journal *j, const char *unit)
{
	return enable_now_as(ctx, j, unit, false);
}

static struct gb_daemon_result *slot(struct gb_daemons_result *ret, const char *name)
{
	struct gb_daemon_result *d = &ret->d[ret->n++];
	gb_strscpy(d->name, sizeof(d->name), name);
	return d;
}

static int persistenced(struct gb_ctx *ctx, struct gb_journal *j, struct gb_daemons_result *ret)
{
	struct gb_daemon_result *d = slot(ret, "nvidia-persistenced");
	int r = unit_installed(ctx, d->name);

	if (r <= 0) {
		d->state = r < 0 ? "masked" : "not-installed";
		return 0; /* the verifier reports persistence mode off */
	}
	r = enable_now(ctx, j, "nvidia-persistenced.service");
	d->state = r < 0 ? "failed" : "started";
	if (r < 0)
		snprintf(ret->error, sizeof(ret->error),
		         "systemctl enable --now nvidia-persistenced.service failed: %s", strerror(-r));
	return r;
}

static int fabricmanager(struct gb_ctx *ctx, struct gb_journal *j, const char *driver_version,
                         struct gb_daemons_result *ret)
{
	struct gb_daemon_result *d = slot(ret, FM);
	int r = fm_version(ctx, d->version, sizeof(d->version)), u = unit_installed(ctx, FM);

	if (r == 0 && u < 0) {
		d->state = "masked";
		snprintf(ret->error, sizeof(ret->error),
		         "nvidia-fabricmanager.service is masked, and the plan needs it: CUDA fails with error 802 on "
		         "GPUs behind NVSwitches");
		snprintf(ret->hint, sizeof(ret->hint), "systemctl unmask nvidia-fabricmanager.service");
		return -ESHUTDOWN;
	}
	if (r == -ENOENT || (r == 0 && u == 0)) {
		d->state = "not-installed";
		snprintf(ret->error, sizeof(ret->error),
		         "the plan needs the fabric manager (NVSwitches, or the profile) and none is installed: CUDA "
		         "fails with error 802 on GPUs behind NVSwitches");
		snprintf(ret->hint, sizeof(ret->hint), "install nvidia-fabricmanager at the driver's version %s",
		         driver_version);
		return -ENOPKG;
	}
	if (r == -ESTALE) {
		d->state = "refused";
		snprintf(ret->error, sizeof(ret->error),
		         "usr/bin/nv-fabricmanager is not the one gpuboot placed from NVIDIA's archive (" GB_FM_MARKER
		         " records another sha256): its version is unknown, so it is not started");
		snprintf(ret->hint, sizeof(ret->hint),
		         "run gpuboot again to place the fabric manager %s, or install nvidia-fabricmanager at that "
		         "version",
		         driver_version ? driver_version : "of the driver's version");
		return -EPROTO;
	}
	if (r < 0) {
		d->state = "failed";
		snprintf(ret->error, sizeof(ret->error), "Failed to read the fabric manager's version: %s",
		         strerror(-r));
		return r;
	}
	if (!driver_version || !streq(d->version, driver_version)) {
		d->state = "refused";
		snprintf(ret->error, sizeof(ret->error),
		         "the fabric manager is %s, the driver %s: it would refuse to start (they must be the same "
		         "version)",
		         d->version, driver_version ? driver_version : "unknown");
		snprintf(ret->hint, sizeof(ret->hint), "install nvidia-fabricmanager %s (or the driver %s)",
		         driver_version ? driver_version : "at the driver's version", d->version);
		return -EPROTO;
	}
	r = enable_now(ctx, j, FM ".service");
	d->state = r < 0 ? "failed" : "started";
	if (r < 0)
		snprintf(ret->error, sizeof(ret->error), "systemctl enable --now " FM ".service failed: %s",
		         strerror(-r));
	return r;
}

static bool is_nvlsm_package(const char *name)
{
	return streq(name, "nvlsm");
}

/* NVLSM is no service of its own: the fabric manager's unit starts it on
 * a board whose NVLink5 switches sit behind the ConnectX bridge (B200,
 * B300), and without it the fabric manager fails. Checked first: dpkg's
 * database, else rpm -q. */
static int nvlsm(struct gb_ctx *ctx, struct gb_daemons_result *ret)
{
	struct gb_daemon_result *d = slot(ret, "nvlsm");
	int r = dpkg_version(ctx, is_nvlsm_package, false, d->version, sizeof(d->version));

	if (r >= 0) {
		r = r == 1 ? -ENOENT : 0;
	} else if (r == -ENOENT) {
		const char *argv[] = { "rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}\n", "nvlsm", NULL };
		struct gb_cmd_spec spec = { .argv = argv, .timeout_ms = 60 * 1000 };
		_cleanup_free_ struct gb_cmd_result *res = calloc(1, sizeof(*res));
		if (!res)
			return -ENOMEM;
		r = ctx->ops->run_command(ctx->ops, &spec, res);
		if (r >= 0 && WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0) {
			res->output[strcspn(res->output, "\n")] = '\0';
			gb_strscpy(d->version, sizeof(d->version), res->output);
			r = 0;
		} else if (r >= 0 || r == -ENOENT) {
			r = -ENOENT; /* "package nvlsm is not installed", or no rpm */
		}
	}
	if (r == -ENOENT) {
		d->state = "not-installed";
		snprintf(ret->error, sizeof(ret->error),
		         "the GPUs' NVLink5 switches sit behind the ConnectX bridge and NVLSM is not installed: the "
		         "fabric manager cannot bring the fabric up without NVIDIA's NVLink Subnet Manager");
		snprintf(ret->hint, sizeof(ret->hint), "install nvlsm and infiniband-diags from NVIDIA's repository");
		return -ENOPKG;
	}
	if (r < 0) {
		d->state = "failed";
		snprintf(ret->error, sizeof(ret->error), "Failed to read whether NVLSM is installed: %s", strerror(-r));
		return r;
	}
	d->state = "installed";
	return 0;
}

#define IMEX_NODES_FILE "etc/nvidia-imex/nodes_config.cfg"

/* IMEX on a GB200/GB300 compute tray, after the modules and the fabric
 * manager: its nodes file from the site's list (one address a line, as
 * NVIDIA's IMEX guide has the administrator fill IMEX_NODE_CONFIG_FILE),
 * then the unit. No list: nothing written or started. */
static int imex(struct gb_ctx *ctx, struct gb_journal *j, const char *nodes, struct gb_daemons_result *ret)
{
	struct gb_daemon_result *d = slot(ret, "nvidia-imex");
	char text[1400];
	size_t o = 0;
	int r, w;

	if (!nodes || !nodes[0]) {
		d->state = "not-configured";
		return 0;
	}
	r = unit_installed(ctx, d->name);
	if (r <= 0) {
		d->state = r < 0 ? "masked" : "not-installed";
		snprintf(ret->error, sizeof(ret->error),
		         r < 0 ? "nvidia-imex.service is masked, and the site names an IMEX domain ([imex] nodes)"
		               : "the site names an IMEX domain ([imex] nodes) and nvidia-imex is not installed");
		snprintf(ret->hint, sizeof(ret->hint), "%s",
		         r < 0 ? "systemctl unmask nvidia-imex.service"
		               : "install nvidia-imex at the driver's version from NVIDIA's repository");
		return r < 0 ? r : -ENOPKG;
	}
	for (const char *q = nodes; *q && o < sizeof(text) - 1;) {
		size_t l = strcspn(q, " ");
		if (l >= sizeof(text) - 1 - o)
			return -E2BIG;
		memcpy(text + o, q, l);
		o += l;
		text[o++] = '\n';
		q += l + (q[l] == ' ');
	}
	w = gb_journal_write_file(j, STAGE, IMEX_NODES_FILE, text, o, 0644);
	if (w < 0) {
		d->state = "failed";
		snprintf(ret->error, sizeof(ret->error), "Failed to write /%s: %s", IMEX_NODES_FILE, strerror(-w));
		return w;
	}
	/* written now (0): the running service reads it only at its start */
	r = enable_now_as(ctx, j, "nvidia-imex.service", gb_journal_step_changed(j, "file:" IMEX_NODES_FILE));
	d->state = r < 0 ? "failed" : "started";
	if (r < 0)
		snprintf(ret->error, sizeof(ret->error), "systemctl enable --now nvidia-imex.service failed: %s",
		         strerror(-r));
	return r;
}

int gb_load_daemons(struct gb_ctx *ctx, struct gb_journal *j, const char *const *names, size_t n,
                    const char *driver_version, const char *imex_nodes, struct gb_daemons_result *ret)
{
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < n && r >= 0 && ret->n < ARRAY_SIZE(ret->d); i++) {
		if (streq(names[i], "nvidia-persistenced"))
			r = persistenced(ctx, j, ret);
		else if (streq(names[i], FM))
			r = fabricmanager(ctx, j, driver_version, ret);
		else if (streq(names[i], "nvlsm"))
			r = nvlsm(ctx, ret);
		else if (streq(names[i], "nvidia-imex"))
			r = imex(ctx, j, imex_nodes, ret);
	}
	return r;
}

json_object *gb_daemons_result_to_json(const struct gb_daemons_result *r)
{
	json_object *a = gb_json_new_array();
	for (size_t i = 0; i < r->n; i++) {
		json_object *o = gb_json_new_object();
		gb_json_add(o, "name", gb_json_new_string(r->d[i].name));
		gb_json_add(o, "state", gb_json_new_string(r->d[i].state ? r->d[i].state : "unknown"));
		if (r->d[i].version[0])
			gb_json_add(o, "version", gb_json_new_string(r->d[i].version));
		gb_json_append(a, o);
	}
	return a;
}
