/* SPDX-License-Identifier: MIT */
/* What ages, warned with what to do (docs/plan.md, Warnings): a driver
 * branch past its end of life or within 90 days of it, a catalog older than
 * 120 days, a Container Toolkit below the floor that the plan leaves; and
 * the lts policy, which replaces an ended branch only where the plan can
 * install a supported one, and otherwise keeps it with the warning (Debian
 * 12's own R535: never replaced without an explicit method). Each warning
 * has its absence checked too: a fresh branch, a fresh catalog. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/catalog.h"
#include "plan/plan.h"
#include "plan/profile.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "unit.h"

static const char *today = "2026-11-30"; /* the fixtures' fake clock */

static void profile(const char *text, struct gb_profile *ret)
{
	char err[256] = "";
	CHECK_INT(gb_profile_parse("t", "test", text, strlen(text), ret, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
}

#define LTS "[driver]\nbranch = lts\n[cuda]\npolicy = none\n[toolkit]\ninstall = no\n"
#define PRODUCTION "[driver]\nbranch = production\n[cuda]\npolicy = none\n[toolkit]\ninstall = no\n"

/* A live machine: os, one GPU (count 1), a kernel with headers. */
static struct gb_plan_input machine(const char *os, const char *ver, const char *pkgmgr, uint16_t gpu)
{
	struct gb_plan_input in = { .secure_boot = 0, .kernel_known = true, .headers = true };
	gb_strscpy(in.os_id, sizeof(in.os_id), os);
	gb_strscpy(in.os_version, sizeof(in.os_version), ver);
	gb_strscpy(in.pkgmgr, sizeof(in.pkgmgr), pkgmgr);
	gb_strscpy(in.libc, sizeof(in.libc), "glibc");
	gb_strscpy(in.arch, sizeof(in.arch), "x86_64");
	gb_strscpy(in.platform, sizeof(in.platform), "linux-x86_64");
	gb_strscpy(in.kernel_release, sizeof(in.kernel_release), "6.8.0-45-generic");
	gb_strscpy(in.kernel_flavour, sizeof(in.kernel_flavour), "generic");
	in.nouveau_blacklisted = true;
	in.n_devices = 1;
	in.devices[0].device = gpu;
	in.devices[0].count = 1;
	return in;
}

static void installed(struct gb_plan_input *in, const char *version, const char *flavor)
{
	gb_strscpy(in->installed.version, sizeof(in->installed.version), version);
	gb_strscpy(in->installed.flavor, sizeof(in->installed.flavor), flavor);
	gb_strscpy(in->installed.source, sizeof(in->installed.source), "loaded");
	in->installed.loaded = in->installed.module = true;
}

/* --method M */
static void ask_method(struct gb_plan_input *in, const char *m)
{
	gb_strscpy(in->method, sizeof(in->method), m);
	gb_strscpy(in->method_by, sizeof(in->method_by), "--method");
}

static const struct gb_plan_warning *warning(const struct gb_plan *p, const char *code)
{
	for (size_t i = 0; i < p->n_warnings; i++)
		if (streq(p->warnings[i].code, code))
			return &p->warnings[i];
	return NULL;
}

/* The plan of in under the profile text on a date; 0 refusals expected unless said. */
static void plan(const struct gb_plan_input *in, const char *prof_text, const struct gb_site_config *site,
                 const char *date, struct gb_plan *p)
{
	struct gb_profile prof;
	struct gb_gpu_overrides ov = { 0 };
	char err[256] = "";
	profile(prof_text, &prof);
	CHECK_INT(gb_plan_make(in, &prof, site, &ov, date, p, err, sizeof(err)), 0);
	gb_profile_done(&prof);
}

static bool has(const char *s, const char *want)
{
	if (strstr(s, want))
		return true;
	fprintf(stderr, "'%s' not in: %s\n", want, s);
	return false;
}

/* Debian 12's own R535 (ended 2026-06-30), installed and kept for a T4: no
 * method asked for, so it is not replaced; the warning says why and how. */
TEST(debian_own_branch_kept_and_warned)
{
	struct gb_plan_input in = machine("debian", "12", "apt", 0x1eb8);
	struct gb_plan p;
	const struct gb_plan_warning *w;

	installed(&in, "535.261.03", "open");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	CHECK_STREQ(p.driver.version, "535.261.03");
	w = warning(&p, "branch-eol");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "R535 (ltsb) reached its end of life on 2026-06-30, 153 days ago"));
		CHECK(has(w->text, "the plan keeps 535.261.03"));
		CHECK(has(w->text, "debian 12's own driver branch"));
		CHECK(has(w->fix, "--method packages or --method runfile"));
		CHECK(has(w->fix, "580.178.04 (R580, ltsb, supported to 2028-06-30)"));
	}
	CHECK(has(p.driver.action_reason, "R535 ended on 2026-06-30"));
	CHECK(warning(&p, "branch-eol-soon") == NULL);
	gb_plan_done(&p);

	/* asked for NVIDIA's repository: the plan can install a supported branch, so it does */
	ask_method(&in, "packages");
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_REPLACE);
	CHECK(has(p.driver.action_reason, "R535 reached its end of life on 2026-06-30"));
	CHECK(has(p.driver.action_reason, "replaced by 580.178.04"));
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);
}

/* --method distro on Debian 12 and 13: their own branches ended (R535, R550):
 * installed all the same (nothing newer is reachable that way), warned. */
TEST(distro_method_installs_ended_branch_with_warning)
{
	struct gb_plan_input in = machine("debian", "12", "apt", 0x1eb8);
	struct gb_plan p;
	const struct gb_plan_warning *w;

	ask_method(&in, "distro");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK(p.driver.action == GB_ACTION_INSTALL);
	CHECK_STREQ(p.driver.version, "535.309.01");
	w = warning(&p, "branch-eol");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "the plan installs 535.309.01: debian 12's own packages (--method distro) carry no "
		                   "newer branch"));
		CHECK(
		    has(w->fix, "--method packages or --method runfile installs R580 (ltsb, supported to 2028-06-30)"));
	}
	gb_plan_done(&p);

	in = machine("debian", "13", "apt", 0x27b8);
	ask_method(&in, "distro");
	plan(&in, LTS, NULL, today, &p);
	CHECK_STREQ(p.driver.version, "550.163.01");
	w = warning(&p, "branch-eol");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "R550 (production) reached its end of life on 2025-04-30"));
		/* debian13's repository key is not pinned: the runfile alone is offered */
		CHECK(has(w->fix, "--method runfile installs R580"));
		CHECK(strstr(w->fix, "--method packages") == NULL);
	}
	gb_plan_done(&p);
}

/* Where the plan can install a supported branch, lts replaces an ended one
 * (R570 on a GH200, R535 on an H100) naming its end; a fresh branch (R580)
 * is kept with no warning. */
TEST(lts_replaces_ended_branch_where_it_can)
{
	struct gb_plan_input in = machine("ubuntu", "24.04", "apt", 0x2330);
	struct gb_plan p;

	installed(&in, "535.183.01", "open");
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_REPLACE);
	CHECK(has(p.driver.action_reason, "535.183.01 open: R535 reached its end of life on 2026-06-30"));
	CHECK(has(p.driver.action_reason, "lts policy wants a supported branch; replaced by 580.178.04"));
	CHECK(warning(&p, "branch-eol") == NULL);
	gb_plan_done(&p);

	installed(&in, "580.159.04", "open");
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);
}

/* Where replacing it is not possible or not wanted, the ended branch is
 * kept, and the warning says what stands in the way: a method that brings
 * no fabric manager of the new version (NVSwitches), --offline, replace_installed = never, a
 * policy other than lts, --repair. */
TEST(ended_branch_kept_where_it_cannot_be_replaced)
{
	struct gb_plan_input in = machine("ubuntu", "22.04", "apt", 0x2330);
	struct gb_site_config never = { .replace_installed = GB_REPLACE_NEVER, .replace_installed_set = true };
	struct gb_plan p;
	const struct gb_plan_warning *w;

	installed(&in, "535.183.01", "proprietary");
	in.devices[0].count = 8;
	in.n_nvswitches = 4;
	/* the packages method brings the fabric manager of the new driver */
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK(p.driver.action == GB_ACTION_REPLACE);
	CHECK(p.driver.n_packages > 0 &&
	      streq(p.driver.packages[p.driver.n_packages - 1].name, "nvidia-fabricmanager"));
	gb_plan_done(&p);
	/* the runfile method brings none: the replacement would be refused */
	gb_strscpy(in.method, sizeof(in.method), "runfile");
	gb_strscpy(in.method_by, sizeof(in.method_by), "--method");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	w = warning(&p, "branch-eol");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "replacing it with 580.178.04 would be refused (exit 10: NVSwitches present"));
		CHECK(has(w->text, "the runfile method has no trusted source for it"));
		CHECK(has(w->fix, "then run gpuboot again"));
	}
	gb_plan_done(&p);
	/* with the fabric manager of that version there, it is replaced */
	gb_strscpy(in.fabricmanager_installed, sizeof(in.fabricmanager_installed), "580.178.04");
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_REPLACE);
	gb_plan_done(&p);

	in = machine("ubuntu", "22.04", "apt", 0x2330);
	installed(&in, "535.183.01", "open");
	in.offline = true;
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	w = warning(&p, "branch-eol");
	CHECK(w && has(w->text, "--offline: 580.178.04 cannot be downloaded"));
	gb_plan_done(&p);
	in.offline = false;

	plan(&in, LTS, &never, today, &p);
	CHECK_INT(p.refusal_code, 0); /* an ended branch is no refusal under never */
	CHECK(p.driver.action == GB_ACTION_KEEP);
	w = warning(&p, "branch-eol");
	CHECK(w && has(w->fix, "replace_installed = if-unsatisfied"));
	gb_plan_done(&p);

	plan(&in, PRODUCTION, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	w = warning(&p, "branch-eol");
	CHECK(w && has(w->text, "the profile's policy production keeps a working driver"));
	CHECK(w && has(w->fix, "[driver] branch = lts"));
	gb_plan_done(&p);

	in.repair = true;
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	w = warning(&p, "branch-eol");
	CHECK(w && has(w->text, "--repair rebuilds what is installed and never switches branches"));
	gb_plan_done(&p);
}

/* A pinned branch past its end of life: taken (a pin is a pin), never
 * called alive, and warned with the fix "raise the pin". */
TEST(pinned_ended_branch_warned)
{
	struct gb_plan_input in = machine("ubuntu", "24.04", "apt", 0x2330);
	struct gb_plan p;
	const struct gb_plan_warning *w;

	plan(&in, "[driver]\nbranch = R570\n[cuda]\npolicy = none\n[toolkit]\ninstall = no\n", NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK_INT(p.driver.branch, 570);
	CHECK(strstr(p.driver.reason, "alive") == NULL);
	CHECK(has(p.driver.reason, "pinned to branch R570 by the profile"));
	w = warning(&p, "branch-eol");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "R570 (production) reached its end of life on 2026-02-28"));
		CHECK(has(w->text, "the profile ([driver] branch) pins it"));
		CHECK(has(w->fix, "raise the pin to a supported branch: R580"));
	}
	gb_plan_done(&p);
}

/* R595 (production) ends 2027-03-31: within 90 days from 2027-01-01 on,
 * not on 2026-12-31 (90 days is the bound), not warned on today's date. */
TEST(branch_eol_soon)
{
	struct gb_plan_input in = machine("ubuntu", "24.04", "apt", 0x2330);
	struct gb_plan p;
	const struct gb_plan_warning *w;

	plan(&in, PRODUCTION, NULL, "2027-01-15", &p);
	CHECK_INT(p.driver.branch, 595);
	w = warning(&p, "branch-eol-soon");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "R595 (production) reaches its end of life on 2027-03-31, in 75 days"));
		CHECK(has(w->fix, "move to R580 (ltsb, supported to 2028-06-30) before 2027-03-31"));
	}
	CHECK(warning(&p, "branch-eol") == NULL);
	gb_plan_done(&p);

	plan(&in, PRODUCTION, NULL, "2027-01-01", &p);
	CHECK(warning(&p, "branch-eol-soon") != NULL); /* 89 days */
	gb_plan_done(&p);
	plan(&in, PRODUCTION, NULL, "2026-12-31", &p);
	CHECK(warning(&p, "branch-eol-soon") != NULL); /* 90 days */
	gb_plan_done(&p);
	plan(&in, PRODUCTION, NULL, "2026-12-30", &p);
	CHECK_INT(p.n_warnings, 0); /* 91 days: a fresh branch */
	gb_plan_done(&p);
	plan(&in, PRODUCTION, NULL, today, &p);
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);
}

/* Ubuntu with Secure Boot: no install method installs Ubuntu's signed
 * precompiled modules from its archive yet, so a plan that would install a
 * driver there is refused before any change, naming the two packages; a
 * driver already installed (Ubuntu's, loaded) is kept, not refused. */
TEST(ubuntu_secure_boot)
{
	struct gb_plan_input in = machine("ubuntu", "22.04", "apt", 0x20b5);
	struct gb_plan p;

	in.secure_boot = 1;
	gb_strscpy(in.kernel_flavour, sizeof(in.kernel_flavour), "azure");
	gb_strscpy(in.kernel_release, sizeof(in.kernel_release), "6.8.0-1015-azure");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 10);
	/* the running kernel's ABI package, not the flavour's metapackage
	 * (linux-modules-nvidia-580-server-open-azure pulls the archive's newest
	 * azure kernel and its modules) */
	CHECK(has(p.refusal,
	          "(linux-modules-nvidia-580-server-open-6.8.0-1015-azure with nvidia-driver-580-server-open "
	          "from Ubuntu's archive), which this gpuboot does not install yet"));
	CHECK(!strstr(p.refusal, "-open-azure "));
	gb_plan_done(&p);
	installed(&in, "580.159.03", "open");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK(p.driver.action == GB_ACTION_KEEP);
	CHECK(p.secure_boot.strategy == GB_SB_UBUNTU_SIGNED);
	CHECK_STREQ(p.secure_boot.package, "linux-modules-nvidia-580-server-open-6.8.0-1015-azure");
	gb_plan_done(&p);
}

/* The catalog's date is the script's (data/SOURCES.md); older than 120 days
 * by the plan's date is warned, refusals included; 120 days is not. */
TEST(catalog_stale)
{
	struct gb_plan_input in = machine("ubuntu", "24.04", "apt", 0x2330);
	struct gb_plan p;
	const struct gb_plan_warning *w;
	char d120[16], d121[16];
	int64_t c = 0;
	time_t t;
	struct tm tm;

	CHECK_STREQ(gb_catalog_date, "2026-12-04");
	CHECK_STREQ(gb_catalog_version, "2026.12.04");
	CHECK_INT(gb_date_days(gb_catalog_date, &c), 0);
	t = (time_t)((c + 120) * 86400);
	gmtime_r(&t, &tm);
	strftime(d120, sizeof(d120), "%Y-%m-%d", &tm);
	t += 86400;
	gmtime_r(&t, &tm);
	strftime(d121, sizeof(d121), "%Y-%m-%d", &tm);

	plan(&in, LTS, NULL, d120, &p);
	CHECK(warning(&p, "catalog-stale") == NULL);
	gb_plan_done(&p);
	plan(&in, LTS, NULL, d121, &p);
	w = warning(&p, "catalog-stale");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "catalog (version 2026.12.04) is of 2026-12-04, 121 days before"));
		CHECK(has(w->fix, "update gpuboot"));
	}
	gb_plan_done(&p);
	/* a refused plan still says how old its catalog is */
	in.n_devices = 0;
	plan(&in, LTS, NULL, d121, &p);
	CHECK(p.refusal_code != 0);
	CHECK(warning(&p, "catalog-stale") != NULL);
	CHECK_INT(p.n_warnings, 1);
	gb_plan_done(&p);
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);
}

/* A toolkit below the floor: a profile without the toolkit leaves it, and
 * warns; one with it replaces it (no warning: the action is the fix); one
 * at the floor is no warning. */
TEST(toolkit_below_floor)
{
	struct gb_plan_input in = machine("ubuntu", "24.04", "apt", 0x2330);
	struct gb_plan p;
	const struct gb_plan_warning *w;

	gb_strscpy(in.toolkit_installed, sizeof(in.toolkit_installed), "1.17.8-1");
	in.n_engines = 1;
	plan(&in, LTS, NULL, today, &p);
	CHECK(p.toolkit.action == GB_ACTION_NONE);
	w = warning(&p, "toolkit-below-floor");
	CHECK(w != NULL);
	if (w) {
		CHECK(has(w->text, "Container Toolkit 1.17.8-1 is installed, below the floor 1.19.1"));
		CHECK(has(w->text, "CVE-2026-24260"));
		CHECK(has(w->fix, "to 1.19.1 or newer"));
	}
	gb_plan_done(&p);

	gb_strscpy(in.toolkit_installed, sizeof(in.toolkit_installed), "unknown");
	plan(&in, LTS, NULL, today, &p);
	w = warning(&p, "toolkit-below-floor");
	CHECK(w && has(w->text, "cannot be shown to be at the floor 1.19.1"));
	gb_plan_done(&p);

	gb_strscpy(in.toolkit_installed, sizeof(in.toolkit_installed), "1.19.1-1");
	plan(&in, LTS, NULL, today, &p);
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);

	gb_strscpy(in.toolkit_installed, sizeof(in.toolkit_installed), "1.17.8-1");
	plan(&in, "[driver]\nbranch = lts\n[cuda]\npolicy = none\n", NULL, today, &p);
	CHECK(p.toolkit.action == GB_ACTION_REPLACE);
	CHECK_INT(p.n_warnings, 0);
	gb_plan_done(&p);
}

/* The open kernel modules begin with R515: a T4 pinned to R470 with the
 * open module asked is refused before any change (exit 10) where the plan
 * would install it; a kept R470 (--repair after a kernel update) keeps its
 * own proprietary module whatever the profile asks; R535 has the open one. */
TEST(open_module_floor)
{
	const char *r470 =
	    "[driver]\nbranch = R470\nmodule_flavor = open\n[cuda]\npolicy = none\n[toolkit]\ninstall = no\n";
	struct gb_plan_input in = machine("ubuntu", "22.04", "apt", 0x1eb8);
	struct gb_plan p;

	plan(&in, r470, NULL, today, &p);
	CHECK_INT(p.refusal_code, 10);
	CHECK(has(p.refusal, "the profile asks for the open module, which R470 does not have (NVIDIA's open kernel "
	                     "modules begin with R515)"));
	gb_plan_done(&p);

	installed(&in, "470.256.02", "proprietary");
	in.repair = true;
	plan(&in, r470, NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK_INT(p.driver.action, GB_ACTION_KEEP);
	CHECK_INT(p.driver.flavor, GB_DRIVER_PROPRIETARY);
	gb_plan_done(&p);

	in = machine("ubuntu", "22.04", "apt", 0x1eb8);
	plan(&in, "[driver]\nbranch = R535\nmodule_flavor = open\n[cuda]\npolicy = none\n[toolkit]\ninstall = no\n",
	     NULL, today, &p);
	CHECK_INT(p.refusal_code, 0);
	CHECK_INT(p.driver.flavor, GB_DRIVER_OPEN);
	gb_plan_done(&p);
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
