/* SPDX-License-Identifier: MIT */
/* Finding a GPU by what a user typed for --target-gpu. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "shared/util.h"

const struct gb_gpu_traits *gb_catalog_traits(uint16_t device)
{
	for (size_t i = 0; i < gb_gpu_traits_len; i++)
		if (gb_gpu_traits[i].device == device)
			return &gb_gpu_traits[i];
	return NULL;
}

static bool alias_matches(const char *aliases, const char *q)
{
	size_t n = strlen(q);
	for (const char *p = aliases; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && strncasecmp(p, q, n) == 0)
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

/* Does every word of q (split on spaces and '-') appear as a whole word in name? */
static bool words_match(const char *name, const char *q)
{
	char buf[96];
	char *save = NULL;
	if (gb_strscpy(buf, sizeof(buf), q) < 0)
		return false;
	for (char *w = strtok_r(buf, " -", &save); w; w = strtok_r(NULL, " -", &save)) {
		size_t n = strlen(w);
		bool found = false;
		for (const char *p = name; *p && !found; p++) {
			if (strncasecmp(p, w, n) != 0)
				continue;
			found = (p == name || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]);
		}
		if (!found)
			return false;
	}
	return true;
}

static void add_suggestion(char *s, size_t n, unsigned *count, const char *name)
{
	size_t o = strlen(s);
	if (*count < 3 && o < n)
		snprintf(s + o, n - o, "%s'%s'", *count ? ", " : "", name);
	(*count)++;
}

int gb_catalog_gpu_find(const char *q, uint16_t *ret, char *suggest, size_t n)
{
	const struct gb_pci_name *hit = NULL;
	unsigned count = 0;

	suggest[0] = '\0';
	for (size_t i = 0; i < gb_gpu_traits_len; i++)
		if (alias_matches(gb_gpu_traits[i].aliases, q)) {
			*ret = gb_gpu_traits[i].device;
			return 0;
		}
	for (size_t i = 0; i < gb_pci_names_len; i++)
		if (gb_pci_names[i].chip && strcasecmp(gb_pci_names[i].name, q) == 0) {
			*ret = gb_pci_names[i].device;
			return 0;
		}
	for (size_t i = 0; i < gb_pci_names_len; i++) {
		if (!gb_pci_names[i].chip || !words_match(gb_pci_names[i].name, q))
			continue;
		hit = &gb_pci_names[i];
		add_suggestion(suggest, n, &count, hit->name);
	}
	if (count == 1) {
		*ret = hit->device;
		return 0;
	}
	return count ? -ENOTUNIQ : -ENOENT;
}
