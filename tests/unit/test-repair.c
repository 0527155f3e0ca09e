/* SPDX-License-Identifier: MIT */
/* Repair after a kernel upgrade: the decision (gb_repair_check) on copies
 * of the Debian 12 disk fixture (a real DKMS-built module for
 * 6.1.0-50-cloud-amd64 and its headers) with variants made here: a second
 * kernel 6.1.0-57 with headers and no module (build), without headers
 * (cannot, naming linux-headers-6.1.0-57-cloud-amd64), a custom kernel, no
 * DKMS source, no driver at all, the module fake-loaded at the installed
 * version (ok) or another (load); the action (gb_repair) against the fake
 * operations table: dkms that "succeeds" but builds nothing (the failure
 * path), dkms that fails, a dkms that makes the module (success, the
 * marker removed, a rerun running nothing), chrooted under an image root;
 * the hooks and the unit: their files, modes, the enable, and the hook
 * scripts run with sh against a stand-in gpuboot that fails (exit 0 and
 * the marker) and one that succeeds (the marker removed). Run from the
 * repository root. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "repair/repair-internal.h"
#include "repair/repair.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "unit.h"

#define FIXTURE "tests/fixtures/debian12-nvidia535-disk"
#define K50 "6.1.0-50-cloud-amd64"
#define K57 "6.1.0-57-cloud-amd64"
#define KO50 "lib/modules/" K50 "/updates/dkms/nvidia-current-open.ko"
#define KO57 "lib/modules/" K57 "/updates/dkms/nvidia-current-open.ko"

static char base[] = "/tmp/gpuboot-test-repair.XXXXXX";

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n = 0;
	return gb_read_file(path, 4u << 20, &t, &n) < 0 ? NULL : t;
}

static void sh(const char *fmt, ...) _printf_(1, 2);
static void sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0) {
		fprintf(stderr, "command failed: %s\n", cmd);
		unit_failures++;
	}
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	return n;
}

struct world {
	char dir[4200], root[4200], state[4200], record[4200];
	struct gb_ops wrapped;
	const struct gb_ops *fake;
	bool dkms_makes_module; /* the wrapped run_command puts the module in place */
	struct gb_ctx ctx;
	struct gb_journal *j;
	json_object *plan;
};

static struct world *world_of(const struct gb_ops *ops)
{
	return (struct world *)((char *)ops - offsetof(struct world, wrapped));
}

/* A dkms that builds: the module appears before the fake answers. */
static int dkms_command(const struct gb_ops *ops, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret)
{
	struct world *w = world_of(ops);
	if (w->dkms_makes_module && streq(spec->argv[0], "dkms") && streq(spec->argv[1], "install"))
		sh("mkdir -p %s/lib/modules/%s/updates/dkms && cp %s/" KO50 " %s/lib/modules/%s/updates/dkms/", w->root,
		   spec->argv[4], w->root, w->root, spec->argv[4]);
	return w->fake->run_command(w->fake, spec, ret);
}

/* A copy of the fixture, with the variant's commands run in it. */
static int world_open(struct world *w, const char *name, const char *rules, const char *setup)
{
	char spec[8192], err[512];

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s/%s", base, name);
	snprintf(w->root, sizeof(w->root), "%s/root", w->dir);
	snprintf(w->state, sizeof(w->state), "%s/state", w->dir);
	snprintf(w->record, sizeof(w->record), "%s/record", w->dir);
	sh("mkdir -p %s && cp -a " FIXTURE " %s", w->dir, w->root);
	if (setup)
		sh("cd %s && %s", w->root, setup);
	if (gb_root_open(w->root, &w->ctx.root) < 0)
		return -1;
	snprintf(spec, sizeof(spec), "record=%s,root=%s%s%s", w->record, w->root, rules ? "," : "", rules ? rules : "");
	if (gb_ops_fake_new(spec, &w->fake) < 0)
		return -1;
	w->wrapped = *w->fake;
	w->wrapped.run_command = dkms_command;
	w->ctx.ops = &w->wrapped;
	w->ctx.opt.root = w->root;
	w->ctx.opt.state_dir = w->state;
	w->plan = json_tokener_parse("{\"repair\": true}");
	return gb_journal_open(&w->ctx, w->plan, "repair", &w->j, err, sizeof(err));
}

static int world_rerun(struct world *w)
{
	char err[512];
	CHECK_INT(gb_journal_finish(w->j, "done", 0), 0);
	gb_journal_free(w->j);
	w->j = NULL;
	return gb_journal_open(&w->ctx, w->plan, "repair", &w->j, err, sizeof(err));
}

static void world_close(struct world *w)
{
	gb_journal_free(w->j);
	if (w->fake)
		gb_ops_fake_free(w->fake);
	gb_root_free(w->ctx.root);
	json_object_put(w->plan);
}

/* The variants' shell, run inside the copied root. */
#define RUNNING_50 "mkdir -p proc/sys/kernel && echo " K50 " > proc/sys/kernel/osrelease"
#define LOADED(v) "mkdir -p sys/module/nvidia && echo " v " > sys/module/nvidia/version"
#define DKMS_SRC \
	"mkdir -p usr/src/nvidia-current-open-535.261.03 && touch usr/src/nvidia-current-open-535.261.03/dkms.conf"
#define DKMS_ADDED                                                 \
	"mkdir -p var/lib/dkms/nvidia-current-open/535.261.03 && " \
	"ln -s /usr/src/nvidia-current-open-535.261.03 var/lib/dkms/nvidia-current-open/535.261.03/source"
#define K57_IMAGE                                                                                          \
	"touch boot/vmlinuz-" K57 " && mkdir -p lib/modules/" K57 " && "                                   \
	"printf '\\nPackage: linux-image-" K57 "\\nStatus: install ok installed\\nVersion: 6.1.183-1\\n' " \
	">> var/lib/dpkg/status"
#define K57_HEADERS                                                                                  \
	"mkdir -p usr/src/linux-headers-" K57 " && touch usr/src/linux-headers-" K57 "/Makefile && " \
	"ln -s /usr/src/linux-headers-" K57 " lib/modules/" K57 "/build"

TEST(check)
{
	struct world w;
	struct gb_repair_state s;

	/* running 6.1.0-50, the module there, nothing loaded: load */
	CHECK_INT(world_open(&w, "load", NULL, RUNNING_50), 0);
	CHECK_INT(gb_repair_check(&w.ctx, NULL, &s), 0);
	CHECK_STREQ(s.kver, K50);
	CHECK(s.running && !s.loaded && s.module_present);
	CHECK_INT(s.verdict, GB_REPAIR_LOAD);
	CHECK_STREQ(s.module_path, KO50);
	CHECK_STREQ(s.module_version, "535.261.03");
	CHECK_STREQ(s.installed_version, "535.261.03");
	CHECK_STREQ(s.installed_from, "libnvidia-ml");
	CHECK(strstr(s.hint, "load stage") != NULL);
	/* the same kernel named, and a kernel that is no release */
	CHECK_INT(gb_repair_check(&w.ctx, K50, &s), 0);
	CHECK(s.running);
	CHECK_INT(s.verdict, GB_REPAIR_LOAD);
	CHECK_INT(gb_repair_check(&w.ctx, "../../etc", &s), -EINVAL);
	CHECK_INT(gb_repair_check(&w.ctx, "6.1 x", &s), -EINVAL);
	CHECK_INT(gb_repair_check(&w.ctx, "", &s), -EINVAL);
	world_close(&w);

	/* loaded at the installed version: ok, from the fast path (the module file is not even looked for) */
	CHECK_INT(world_open(&w, "ok", NULL, RUNNING_50 " && " LOADED("535.261.03")), 0);
	CHECK_INT(gb_repair_check(&w.ctx, NULL, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_OK);
	CHECK(s.loaded && !s.module_checked && !s.marker);
	CHECK_STREQ(s.loaded_version, "535.261.03");
	CHECK_STREQ(gb_repair_verdict_name(s.verdict), "ok");
	world_close(&w);

	/* another version loaded (the driver was upgraded under it): load, unload first */
	CHECK_INT(world_open(&w, "other", NULL, RUNNING_50 " && " LOADED("535.247.01")), 0);
	CHECK_INT(gb_repair_check(&w.ctx, NULL, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_LOAD);
	CHECK(strstr(s.hint, "unload") != NULL);
	world_close(&w);

	/* an image root (no proc): the newest kernel, 57 over 50 (strverscmp), not running */
	CHECK_INT(world_open(&w, "newest", NULL, K57_IMAGE " && " K57_HEADERS " && " DKMS_SRC), 0);
	CHECK_INT(gb_repair_check(&w.ctx, NULL, &s), 0);
	CHECK_STREQ(s.kver, K57);
	CHECK(!s.running && !s.module_present && s.headers && s.dkms_source && !s.dkms_added);
	CHECK_INT(s.verdict, GB_REPAIR_BUILD);
	CHECK_STREQ(s.dkms_name, "nvidia-current-open");
	CHECK_STREQ(s.dkms_version, "535.261.03");
	/* 50 will come up with the GPU: ok without being the running kernel */
	CHECK_INT(gb_repair_check(&w.ctx, K50, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_OK);
	CHECK(!s.running && s.module_present);
	world_close(&w);
}

TEST(check_cannot)
{
	struct world w;
	struct gb_repair_state s;

	/* 57 without headers: the package to install */
	CHECK_INT(world_open(&w, "noheaders", NULL, K57_IMAGE " && " DKMS_SRC " && " DKMS_ADDED), 0);
	CHECK_INT(gb_repair_check(&w.ctx, K57, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_CANNOT);
	CHECK(!s.headers && s.dkms_source && s.dkms_added && !s.custom_kernel);
	CHECK_STREQ(s.headers_package, "linux-headers-" K57);
	CHECK(strstr(s.hint, "install linux-headers-" K57) != NULL);
	/* a kernel no package owns: supply its headers */
	sh("mkdir -p %s/lib/modules/6.1.99-custom", w.root);
	CHECK_INT(gb_repair_check(&w.ctx, "6.1.99-custom", &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_CANNOT);
	CHECK(s.custom_kernel);
	CHECK(strstr(s.hint, "supply the headers") != NULL);
	world_close(&w);

	/* SLES: its headers package is kernel-default-devel (the catalog's
	 * row), not Debian's name (repair once named linux-headers-KVER there) */
	CHECK_INT(world_open(&w, "sles", NULL,
	                     K57_IMAGE
	                     " && " DKMS_SRC " && rm -f etc/os-release && "
	                     "printf 'ID=\"sles\"\\nID_LIKE=\"suse\"\\nVERSION_ID=\"15.5\"\\n' > etc/os-release"),
	          0);
	CHECK_INT(gb_repair_check(&w.ctx, K57, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_CANNOT);
	CHECK_STREQ(s.headers_package, "kernel-default-devel");
	world_close(&w);

	/* headers, but no DKMS source: not installed with DKMS */
	CHECK_INT(world_open(&w, "nosource", NULL, K57_IMAGE " && " K57_HEADERS), 0);
	CHECK_INT(gb_repair_check(&w.ctx, K57, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_CANNOT);
	CHECK(strstr(s.reason, "no DKMS source") != NULL);
	world_close(&w);

	/* DKMS has another version's source: building it would not match the userspace */
	CHECK_INT(world_open(&w, "oldsource", NULL,
	                     K57_IMAGE " && " K57_HEADERS " && mkdir -p usr/src/nvidia-current-535.247.01 && "
	                               "touch usr/src/nvidia-current-535.247.01/dkms.conf"),
	          0);
	CHECK_INT(gb_repair_check(&w.ctx, K57, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_CANNOT);
	CHECK(strstr(s.reason, "535.247.01") != NULL);
	world_close(&w);

	/* no driver at all: nothing to repair */
	CHECK_INT(world_open(&w, "nodriver", NULL,
	                     "rm -rf usr/lib/x86_64-linux-gnu/nvidia lib/modules/" K50 "/updates var/lib/dpkg/status"),
	          0);
	CHECK_INT(gb_repair_check(&w.ctx, K50, &s), 0);
	CHECK_INT(s.verdict, GB_REPAIR_OK);
	CHECK(s.no_driver);
	world_close(&w);
}

TEST(repair_fake_dkms)
{
	struct world w;
	struct gb_repair_result *r = calloc(1, sizeof(*r));
	char *rec = NULL;

	/* dkms exits 0 but nothing appears: the re-check catches it */
	CHECK_INT(world_open(&w, "noappear", "command:dkms:0", K57_IMAGE " && " K57_HEADERS " && " DKMS_SRC), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -EIO);
	CHECK(!r->built);
	CHECK(strstr(r->error, "exited 0, but no NVIDIA module") != NULL);
	CHECK(strstr(r->hint, "make.log") != NULL);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "dkms add nvidia-current-open/535.261.03"), 1); /* not registered yet */
	CHECK_INT(count(rec, "dkms install nvidia-current-open/535.261.03 -k " K57), 1);
	CHECK_INT(count(rec, "run chroot="), 2); /* an image root: chrooted */
	CHECK_INT(count(rec, "mount_bind /proc"), 1);
	free(rec);
	world_close(&w);

	/* dkms fails: its output kept, the make.log named */
	CHECK_INT(world_open(&w, "dkmsfails", "command:dkms install:10:" FIXTURE "/etc/modprobe.d/dkms.conf",
	                     K57_IMAGE " && " K57_HEADERS " && " DKMS_SRC " && " DKMS_ADDED),
	          0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -EIO);
	CHECK(strstr(r->error, "'dkms install nvidia-current-open/535.261.03' failed") != NULL);
	CHECK(strstr(r->dkms_output, "modprobe information used for DKMS") != NULL);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "dkms add"), 0); /* registered already */
	free(rec);
	CHECK_INT(r->build_timeout_min, 30); /* no [kernel] build_timeout: the default */
	world_close(&w);

	/* dkms outlives the site's build_timeout: stopped, the setting named */
	CHECK_INT(world_open(&w, "dkmsslow", "command:dkms install:999",
	                     K57_IMAGE " && " K57_HEADERS " && " DKMS_SRC " && " DKMS_ADDED),
	          0);
	CHECK_INT(gb_repair(&w.ctx, K57, 90, w.j, r), -ETIMEDOUT);
	CHECK(strstr(r->error, "'dkms install nvidia-current-open/535.261.03' was stopped after 90 minutes") != NULL);
	CHECK(strstr(r->hint, "raise [kernel] build_timeout") != NULL);
	{
		json_object *js = gb_repair_result_to_json(r);
		CHECK_INT(json_object_get_int(json_object_object_get(js, "build_timeout_min")), 90);
		json_object_put(js);
	}
	world_close(&w);

	/* cannot: nothing runs, the package named, exit 14 */
	CHECK_INT(world_open(&w, "cannot", NULL, K57_IMAGE " && " DKMS_SRC), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK_INT(r->exit_code, 14);
	CHECK(strstr(r->hint, "linux-headers-" K57) != NULL);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "run "), 0);
	free(rec);
	world_close(&w);
	free(r);
}

TEST(repair_builds)
{
	struct world w;
	struct gb_repair_result *r = calloc(1, sizeof(*r));
	char *rec = NULL, p[4400];
	json_object *js;

	CHECK_INT(world_open(&w, "builds", NULL,
	                     K57_IMAGE " && " K57_HEADERS " && " DKMS_SRC " && " DKMS_ADDED
	                               " && mkdir -p var/lib/gpuboot && touch var/lib/gpuboot/repair-needed-" K57),
	          0);
	w.dkms_makes_module = true;
	w.ctx.root->is_host = true; /* the live machine: no chroot */
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), 0);
	CHECK(r->built && r->marker_removed);
	CHECK_INT(r->before.verdict, GB_REPAIR_BUILD);
	CHECK_INT(r->after.verdict, GB_REPAIR_OK);
	CHECK_STREQ(r->after.module_path, KO57);
	CHECK_STREQ(r->after.module_version, "535.261.03");
	CHECK_INT(r->exit_code, 0);
	snprintf(p, sizeof(p), "%s/var/lib/gpuboot/repair-needed-" K57, w.root);
	CHECK(access(p, F_OK) < 0);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "run dkms install nvidia-current-open/535.261.03 -k " K57), 1);
	CHECK_INT(count(rec, "chroot="), 0);
	free(rec);
	js = gb_repair_result_to_json(r);
	CHECK_STREQ(json_object_get_string(json_object_object_get(json_object_object_get(js, "after"), "verdict")),
	            "ok");
	json_object_put(js);
	/* the rerun: nothing runs, nothing changes */
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), 0);
	CHECK(!r->built && !r->marker_removed);
	CHECK_INT(w.j->n_effects, 0);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "dkms install"), 1);
	free(rec);
	w.ctx.root->is_host = false;
	world_close(&w);
	free(r);
}

/* The kernel update gate: Debian 12's grub-mkconfig output (tests/prepare/)
 * with its kernels renamed to the fixture's, and a stand-in update-grub
 * (the fake operations record it, never run it). */
#define GRUB_DEBIAN                                                      \
	"mkdir -p boot/grub usr/sbin && touch usr/sbin/update-grub && "  \
	"sed 's/6\\.1\\.0-21-amd64/" K57 "/g; s/6\\.1\\.0-18-amd64/" K50 \
	"/g' %s/tests/prepare/debian12/boot/grub/grub.cfg"               \
	" > boot/grub/grub.cfg"
#define UUID "6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10"
#define HOLD_CFG "etc/default/grub.d/99-gpuboot-hold.cfg"

static char *root_file(const struct world *w, const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", w->root, rel);
	return slurp(p);
}

TEST(boot_hold)
{
	struct world w;
	struct gb_repair_result *r = calloc(1, sizeof(*r));
	char setup[2048], cwd[1024], *rec = NULL, *cfg = NULL;

	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(setup, sizeof(setup), RUNNING_50 " && " K57_IMAGE " && " DKMS_SRC " && " DKMS_ADDED " && " GRUB_DEBIAN,
	         cwd);
	/* 57 has no headers: no module, so GRUB's default stays on 50 */
	CHECK_INT(world_open(&w, "hold", NULL, setup), 0);
	w.ctx.root->is_host = true;
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK_INT(r->exit_code, 14);
	CHECK(r->hold.checked && r->hold.held && r->hold.changed);
	CHECK_STREQ(r->hold.keep, K50);
	CHECK_STREQ(r->hold.entry, "gnulinux-advanced-" UUID ">gnulinux-" K50 "-advanced-" UUID);
	CHECK(strstr(r->hold.reason, K57 " has no NVIDIA module: the default boot entry stays on " K50) != NULL);
	cfg = root_file(&w, HOLD_CFG);
	CHECK(cfg && strstr(cfg, "\nGRUB_DEFAULT='gnulinux-advanced-" UUID ">gnulinux-" K50 "-advanced-" UUID "'\n"));
	free(cfg);
	cfg = root_file(&w, "var/lib/gpuboot/boot-hold-" K57);
	CHECK(cfg && streq(cfg, "kernel=" K57 "\nkeep=" K50 "\n"));
	free(cfg);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "run update-grub"), 1);
	free(rec);
	{
		json_object *js = gb_repair_result_to_json(r), *b = json_object_object_get(js, "boot_default");
		CHECK(json_object_get_boolean(json_object_object_get(b, "held")));
		CHECK_STREQ(json_object_get_string(json_object_object_get(b, "keep")), K50);
		json_object_put(js);
	}
	/* the hook again (apt's header postinst, say): held already, nothing runs */
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK(r->hold.held && !r->hold.changed);
	CHECK_INT(w.j->n_effects, 0);
	rec = slurp(w.record);
	CHECK_INT(count(rec, "run update-grub"), 1);
	free(rec);
	/* the running kernel's repair (the boot unit) says the hold is in force */
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair(&w.ctx, NULL, 0, w.j, r), 0);
	CHECK(r->hold.checked && r->hold.held && !r->hold.changed);
	CHECK(strstr(r->hold.reason, "held on " K50 ": " K57 " has no NVIDIA module") != NULL);
	{
		char keep[GB_KVER_MAX], line[700];
		CHECK_INT(gb_repair_holds(&w.ctx, keep, sizeof(keep), line, sizeof(line)), 1);
		CHECK_STREQ(keep, K50);
	}
	/* the headers come and DKMS builds: the hold is lifted, update-grub again */
	sh("cd %s && " K57_HEADERS, w.root);
	w.dkms_makes_module = true;
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), 0);
	CHECK(r->built && r->hold.checked && !r->hold.held && r->hold.changed);
	CHECK(strstr(r->hold.reason, "lifted") != NULL);
	CHECK(!gb_root_lexists(w.ctx.root, HOLD_CFG));
	CHECK(!gb_root_lexists(w.ctx.root, "var/lib/gpuboot/boot-hold-" K57));
	rec = slurp(w.record);
	CHECK_INT(count(rec, "run update-grub"), 2);
	free(rec);
	/* the running kernel, no hold left: nothing to say */
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair(&w.ctx, NULL, 0, w.j, r), 0);
	CHECK(!r->hold.checked);
	w.ctx.root->is_host = false;
	world_close(&w);

	/* an image root (no running kernel): nothing better to keep, nothing written */
	snprintf(setup, sizeof(setup), K57_IMAGE " && " DKMS_SRC " && " GRUB_DEBIAN, cwd);
	CHECK_INT(world_open(&w, "hold-image", NULL, setup), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK(r->hold.checked && !r->hold.held);
	CHECK(strstr(r->hold.reason, "no better kernel") != NULL);
	CHECK(!gb_root_lexists(w.ctx.root, HOLD_CFG));
	world_close(&w);

	/* no update-grub (not Debian's GRUB): left as it is, said so */
	snprintf(setup, sizeof(setup),
	         RUNNING_50 " && " K57_IMAGE " && " DKMS_SRC " && " GRUB_DEBIAN " && rm usr/sbin/update-grub", cwd);
	CHECK_INT(world_open(&w, "hold-nogrub", NULL, setup), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK(!r->hold.held && strstr(r->hold.reason, "not GRUB with update-grub") != NULL);
	CHECK(!gb_root_lexists(w.ctx.root, HOLD_CFG));
	world_close(&w);

	/* an entry id a shell would expand: never written into GRUB_DEFAULT */
	snprintf(setup, sizeof(setup),
	         RUNNING_50 " && " K57_IMAGE " && " DKMS_SRC " && " GRUB_DEBIAN " && sed -i \"s/'gnulinux-" K50
	                    "-advanced-/'gnulinux-" K50 "-\\$(reboot)-/\" boot/grub/grub.cfg",
	         cwd);
	CHECK_INT(world_open(&w, "hold-hostile", NULL, setup), 0);
	CHECK_INT(gb_repair(&w.ctx, K57, 0, w.j, r), -ENOPKG);
	CHECK(!r->hold.held && strstr(r->hold.reason, "no menu entry named for " K50) != NULL);
	CHECK(!gb_root_lexists(w.ctx.root, HOLD_CFG));
	world_close(&w);
	free(r);
}

static void check_mode(const char *root, const char *rel, mode_t want)
{
	char p[4400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_mode & 07777, want);
}

TEST(hooks_install)
{
	struct world w;
	char p[4400], *t = NULL, *rec = NULL;
	_cleanup_free_ char *link = NULL;

	CHECK_INT(world_open(&w, "hooks", NULL, NULL), 0);
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, NULL), 0); /* debian, from os-release */
	check_mode(w.root, GB_REPAIR_HOOK_DEB_POSTINST, 0755);
	check_mode(w.root, GB_REPAIR_HOOK_DEB_HEADERS, 0755);
	check_mode(w.root, GB_REPAIR_UNIT_PATH, 0644);
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_REPAIR_HOOK_DEB_HEADERS);
	t = slurp(p);
	CHECK_STREQ(t, gb_repair_hook_runparts_text());
	free(t);
	CHECK(!gb_root_exists(w.ctx.root, GB_REPAIR_HOOK_KERNEL_INSTALL));
	CHECK_INT(gb_root_readlink(w.ctx.root, GB_REPAIR_UNIT_WANTS, &link), 0);
	CHECK_STREQ(link, "/etc/systemd/system/gpuboot-repair.service");
	/* the rerun changes nothing */
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "debian"), 0);
	CHECK_INT(w.j->n_effects, 0);
	/* the RHEL family: a kernel-install plugin; Oracle Linux ("ol") is
	 * one (repair's own table once lacked it: no plugin there) */
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "ol"), 0);
	check_mode(w.root, GB_REPAIR_HOOK_KERNEL_INSTALL, 0755);
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "amzn"), 0);
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "arch"), -EOPNOTSUPP);
	/* Amazon Linux 2023's os-release ID is "amzn": no distribution is "al2023" */
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "al2023"), -EOPNOTSUPP);
	/* the live machine: systemctl enable through the operations table */
	sh("rm -f %s/%s", w.root, GB_REPAIR_UNIT_WANTS);
	w.ctx.root->is_host = true;
	CHECK_INT(gb_repair_install_hooks(&w.ctx, w.j, "rhel"), 0);
	w.ctx.root->is_host = false;
	rec = slurp(w.record);
	CHECK_INT(count(rec, "systemctl enable gpuboot-repair.service"), 1);
	free(rec);
	world_close(&w);
}

TEST(texts)
{
	const char *rp = gb_repair_hook_runparts_text(), *ki = gb_repair_hook_kernel_install_text();
	const char *u = gb_repair_unit_text();
	const char *const texts[] = { rp, ki };
	const char *names[] = { strrchr(GB_REPAIR_HOOK_DEB_POSTINST, '/') + 1,
		                strrchr(GB_REPAIR_HOOK_DEB_HEADERS, '/') + 1 };

	/* run-parts runs only names of [A-Za-z0-9_-] (no dots) */
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		CHECK(strspn(names[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
		      strlen(names[i]));
	/* kernel-install runs only *.install */
	CHECK(gb_startswith(strrchr(GB_REPAIR_HOOK_KERNEL_INSTALL, '.'), ".install") != NULL);
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		const char *t = texts[i];
		CHECK(gb_startswith(t, "#!/bin/sh\n") != NULL);
		CHECK(strstr(t, "--repair --kernel \"$kver\" --from-hook") != NULL);
		CHECK(strstr(t, "timeout 1200 ") != NULL);
		CHECK(strstr(t, "exit 1") == NULL && strstr(t, "set -e") == NULL);
		CHECK(streq(t + strlen(t) - strlen("exit 0\n"), "exit 0\n"));
		/* never the package manager */
		CHECK(!strstr(t, "apt") && !strstr(t, "dnf") && !strstr(t, "yum") && !strstr(t, "dpkg ") &&
		      !strstr(t, "rpm "));
	}
	CHECK(strstr(u, "Type=oneshot\n") != NULL);
	CHECK(strstr(u, "ExecStart=/usr/local/bin/gpuboot --repair --if-needed\n") != NULL);
	CHECK(strstr(u, "WantedBy=multi-user.target\n") != NULL);
	CHECK(strstr(u, "Before=nvidia-persistenced.service") != NULL);
	CHECK(strstr(u, "kubelet.service") != NULL);
}

/* The hooks, run by sh as run-parts and kernel-install would, against a
 * stand-in gpuboot: a failure still exits 0 and leaves the marker. */
TEST(hooks_run)
{
	char d[4200], hook[4400], plugin[4400], marker[4400], *t;

	snprintf(d, sizeof(d), "%s/hookrun", base);
	snprintf(hook, sizeof(hook), "%s/gpuboot-hook", d);
	snprintf(plugin, sizeof(plugin), "%s/45-gpuboot.install", d);
	snprintf(marker, sizeof(marker), "%s/state/repair-needed-" K57, d);
	sh("mkdir -p %s/state && printf '#!/bin/sh\\necho \"$@\" >> %s/args\\nexit ${GB_STANDIN_RC:-5}\\n' > "
	   "%s/gpuboot "
	   "&& chmod 755 %s/gpuboot",
	   d, d, d, d);
	CHECK_INT(
	    gb_write_file_atomic(hook, gb_repair_hook_runparts_text(), strlen(gb_repair_hook_runparts_text()), 0755),
	    0);
	CHECK_INT(gb_write_file_atomic(plugin, gb_repair_hook_kernel_install_text(),
	                               strlen(gb_repair_hook_kernel_install_text()), 0755),
	          0);
	sh("sed -i 's|/usr/local/bin/gpuboot|%s/gpuboot|; s|/var/lib/gpuboot/|%s/state/|' %s %s", d, d, hook, plugin);
	/* the stand-in fails: exit 0, the marker names the exit */
	sh("sh %s " K57 " /boot/vmlinuz-" K57 " 2>/dev/null", hook);
	t = slurp(marker);
	CHECK(t && strstr(t, "exit=5") && strstr(t, "kernel=" K57));
	free(t);
	/* the stand-in succeeds: the marker goes */
	sh("GB_STANDIN_RC=0 sh %s " K57, hook);
	CHECK(access(marker, F_OK) < 0);
	/* kernel-install: add runs it (fails: marker), remove does not */
	sh("sh %s remove " K57 " /boot/x 2>/dev/null", plugin);
	CHECK(access(marker, F_OK) < 0);
	sh("sh %s add " K57 " /boot/efi/x /boot/vmlinuz-" K57 " 2>/dev/null", plugin);
	CHECK(access(marker, F_OK) == 0);
	/* a release that could leave the directory is not passed on */
	sh("sh %s ../../etc 2>/dev/null", hook);
	snprintf(hook, sizeof(hook), "%s/args", d);
	t = slurp(hook);
	CHECK_INT(count(t, "--repair --kernel " K57 " --from-hook"), 3);
	CHECK_INT(count(t, "etc"), 0);
	free(t);
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	unit_run_tests();
	if (!unit_failures)
		sh("rm -rf %s", base);
	UNIT_DONE();
}
