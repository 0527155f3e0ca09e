/* SPDX-License-Identifier: MIT */
/* Test driver for the downloader: fetch-tool STATE CAFILE URL SHA256 SIZE [...]
 * Prints one line per artifact; exit 0 when all verified, 13 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "fetch/fetch.h"
#include "shared/log.h"
#include "shared/util.h"

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_fetch_opts o;
	struct gb_artifact a[8];
	size_t n = 0;

	if (argc < 6 || (argc - 3) % 3 != 0) {
		fprintf(stderr, "usage: fetch-tool STATE CAFILE URL SHA256 SIZE [URL SHA256 SIZE ...]\n");
		return 2;
	}
	gb_log_set_level(getenv("V") ? GB_LOG_DEBUG : GB_LOG_WARNING);
	gb_fetch_opts_default(&o, argv[1]);
	o.ca_file = argv[2];
	o.backoff_ms = 100;
	o.low_speed_s = 2;
	o.deadline_s = 60;
	memset(a, 0, sizeof(a));
	for (int i = 3; i + 2 < argc && n < 8; i += 3, n++) {
		uint64_t size = 0;
		snprintf(a[n].name, sizeof(a[n].name), "artifact%zu", n);
		gb_strscpy(a[n].url, sizeof(a[n].url), argv[i]);
		gb_strscpy(a[n].sha256, sizeof(a[n].sha256), argv[i + 1]);
		gb_safe_atou64(argv[i + 2], 10, &size);
		a[n].size = size;
	}
	int r = gb_fetch_all(&ctx, a, n, &o);
	for (size_t i = 0; i < n; i++)
		printf("%s attempts=%u %s\n", a[i].verified ? (a[i].from_cache ? "CACHED" : "OK") : "ERR",
		       a[i].attempts, a[i].verified ? a[i].cache_path : a[i].error);
	return r < 0 ? 13 : 0;
}
