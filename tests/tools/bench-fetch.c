/* SPDX-License-Identifier: MIT */
/* bench/fetch.sh's gpuboot side: fetch (parallel, hashed as the bytes
 * arrive) then unpack every artifact, several at once.
 * usage: bench-fetch STATE CAFILE DESTDIR JOBS URL SHA256 SIZE [...] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "fetch/fetch.h"
#include "install/unpack.h"
#include "shared/util.h"

static struct gb_artifact arts[32];
static size_t n, next;
static const char *destdir;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		size_t i;
		struct gb_unpack_opts o;
		char dest[1200], err[512];
		pthread_mutex_lock(&mu);
		i = next++;
		pthread_mutex_unlock(&mu);
		if (i >= n)
			return NULL;
		gb_unpack_opts_default(&o);
		snprintf(dest, sizeof(dest), "%s/%zu", destdir, i);
		if (gb_unpack(arts[i].cache_path, dest, &o, err, sizeof(err)) < 0) {
			fprintf(stderr, "unpack: %s\n", err);
			pthread_mutex_lock(&mu);
			failures++;
			pthread_mutex_unlock(&mu);
		}
	}
}

int main(int argc, char **argv)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_fetch_opts o;
	pthread_t th[16];
	unsigned jobs;
	double t0, t1, t2;

	if (argc < 8) {
		fprintf(stderr, "usage: bench-fetch STATE CAFILE DESTDIR JOBS URL SHA256 SIZE [...]\n");
		return 2;
	}
	gb_fetch_opts_default(&o, argv[1]);
	o.ca_file = argv[2];
	destdir = argv[3];
	{
		uint32_t j = 0;
		if (gb_safe_atou32(argv[4], 10, &j) < 0)
			j = 0;
		jobs = j;
	}
	if (jobs < 1 || jobs > 16)
		jobs = 2;
	for (int i = 5; i + 2 < argc && n < 32; i += 3, n++) {
		uint64_t s = 0;
		snprintf(arts[n].name, sizeof(arts[n].name), "artifact%zu", n);
		gb_strscpy(arts[n].url, sizeof(arts[n].url), argv[i]);
		gb_strscpy(arts[n].sha256, sizeof(arts[n].sha256), argv[i + 1]);
		gb_safe_atou64(argv[i + 2], 10, &s);
		arts[n].size = s;
	}
	t0 = now();
	if (gb_fetch_all(&ctx, arts, n, &o) < 0) {
		for (size_t i = 0; i < n; i++)
			if (arts[i].result)
				fprintf(stderr, "fetch: %s\n", arts[i].error);
		return 13;
	}
	t1 = now();
	for (unsigned j = 0; j < jobs; j++)
		pthread_create(&th[j], NULL, worker, NULL);
	for (unsigned j = 0; j < jobs; j++)
		pthread_join(th[j], NULL);
	t2 = now();
	printf("fetch+hash %.3f s, unpack %.3f s (%u at once), total %.3f s\n", t1 - t0, t2 - t1, jobs, t2 - t0);
	return failures ? 1 : 0;
}
