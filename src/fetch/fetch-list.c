/* SPDX-License-Identifier: MIT */
/* The artifact list a dry run prints: what would be fetched, from where,
 * checked against what. */
#include <stdio.h>

#include "fetch.h"

void gb_fetch_print_list(const struct gb_artifact *a, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%-44s %12llu  %s  %s  %s\n", a[i].name, a[i].size, a[i].sha256, a[i].url,
		        a[i].in_cache ? "cached" : "to-fetch");
}
