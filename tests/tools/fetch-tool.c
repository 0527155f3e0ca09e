/* SPDX-License-Identifier: MIT */
/* Test driver for the downloader.
 *
 *   fetch-tool [--dry-run] STATE CAFILE URL SHA256 SIZE [URL SHA256 SIZE ...]
 *       gb_fetch_all on the artifacts given; one line per artifact, exit 0
 *       when all are verified, 13 otherwise.
 *   fetch-tool --plan STATE CAFILE [--dry-run] [--offline] [--upstream URL]
 *              [--mirror URL --trust-key KEY] [--runfile URL SHA256 SIZE VERSION]
 *              [--cuda MANIFEST SHA256 SIZE COMPONENT...]
 *       gb_fetch_for_plan on a plan holding that runfile and CUDA release
 *       ("cuda_cudart 13.0.48" per component), then gb_fetch_all, or with
 *       --dry-run gb_fetch_print_list; exit 13 on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "fetch/fetch-plan.h"
#include "fetch/fetch.h"
#include "plan/plan.h"
#include "shared/log.h"
#include "shared/util.h"

static void tool_opts(struct gb_fetch_opts *o, const char *state, const char *ca)
{
	gb_fetch_opts_default(o, state);
	o->ca_file = ca;
	o->backoff_ms = 100;
	o->low_speed_s = 2;
	o->deadline_s = 60;
}

static void print_results(const struct gb_artifact *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s attempts=%u %s\n", a[i].verified ? (a[i].from_cache ? "CACHED" : "OK") : "ERR",
		       a[i].attempts, a[i].verified ? a[i].cache_path : a[i].error);
}

static unsigned long long num(const char *s)
{
	uint64_t v = 0;
	if (gb_safe_atou64(s, 10, &v) < 0) {
		fprintf(stderr, "fetch-tool: '%s' is not a number\n", s);
		exit(2);
	}
	return v;
}

static int plan_mode(struct gb_ctx *ctx, int argc, char **argv)
{
	static struct gb_plan p;
	struct gb_runfile rf = { 0 };
	struct gb_cuda_release cr = { .version = "13.0" };
	struct gb_fetch_source src = { 0 };
	struct gb_fetch_opts o;
	struct gb_artifact *a = NULL;
	char *keys[2] = { NULL, NULL }, *comps[16] = { NULL }, err[1024] = "";
	size_t n = 0, nc = 0;
	int i, r;

	tool_opts(&o, argv[0], argv[1]);
	src.ca_file = argv[1];
	src.trust_keys = keys;
	gb_strscpy(p.in.platform, sizeof(p.in.platform), "linux-x86_64");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--dry-run"))
			o.dry_run = true;
		else if (!strcmp(argv[i], "--offline"))
			o.offline = true;
		else if (!strcmp(argv[i], "--upstream") && i + 1 < argc)
			src.upstream = argv[++i];
		else if (!strcmp(argv[i], "--mirror") && i + 1 < argc)
			src.mirror = argv[++i];
		else if (!strcmp(argv[i], "--trust-key") && i + 1 < argc)
			keys[0] = argv[++i];
		else if (!strcmp(argv[i], "--runfile") && i + 4 < argc) {
			rf.url = argv[++i];
			rf.sha256 = argv[++i];
			rf.size = num(argv[++i]);
			rf.version = argv[++i];
			p.driver.runfile = &rf;
		} else if (!strcmp(argv[i], "--cuda") && i + 3 < argc) {
			cr.manifest = argv[++i];
			cr.manifest_sha256 = argv[++i];
			cr.manifest_size = num(argv[++i]);
			p.cuda.release = &cr;
			while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 && nc < 15)
				comps[nc++] = argv[++i];
			p.cuda.components = comps;
		} else {
			fprintf(stderr, "fetch-tool --plan: unknown or incomplete option '%s'\n", argv[i]);
			return 2;
		}
	}
	r = gb_fetch_for_plan(ctx, &p, &src, &o, &a, &n, err, sizeof(err));
	if (r < 0) {
		printf("ERR %s\n", err);
		return 13;
	}
	if (o.dry_run) {
		gb_fetch_print_list(a, n, stdout);
		free(a);
		if (r == 1) { /* what needs the network is not listed: said, as gpuboot fetch says it */
			printf("ERR not listed: %s\n", err);
			return 13;
		}
		return 0;
	}
	r = gb_fetch_all(ctx, a, n, &o);
	print_results(a, n);
	free(a);
	return r < 0 ? 13 : 0;
}

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_fetch_opts o;
	struct gb_artifact a[8];
	bool dry_run = false;
	size_t n = 0;

	gb_log_set_level(getenv("V") ? GB_LOG_DEBUG : GB_LOG_WARNING);
	if (argc >= 4 && !strcmp(argv[1], "--plan"))
		return plan_mode(&ctx, argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--dry-run")) {
		dry_run = true;
		argc--;
		argv++;
	}
	if (argc < 6 || (argc - 3) % 3 != 0) {
		fprintf(stderr, "usage: fetch-tool [--dry-run] STATE CAFILE URL SHA256 SIZE [URL SHA256 SIZE ...]\n"
		                "       fetch-tool --plan STATE CAFILE [options] (see the source)\n");
		return 2;
	}
	tool_opts(&o, argv[1], argv[2]);
	o.dry_run = dry_run;
	memset(a, 0, sizeof(a));
	for (int i = 3; i + 2 < argc && n < 8; i += 3, n++) {
		snprintf(a[n].name, sizeof(a[n].name), "artifact%zu", n);
		gb_strscpy(a[n].url, sizeof(a[n].url), argv[i]);
		gb_strscpy(a[n].sha256, sizeof(a[n].sha256), argv[i + 1]);
		a[n].size = num(argv[i + 2]);
	}
	int r = gb_fetch_all(&ctx, a, n, &o);
	print_results(a, n);
	return r < 0 ? 13 : 0;
}
