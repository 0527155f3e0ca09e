/* SPDX-License-Identifier: MIT */
/* The certificates the kernel trusts for modules, from /proc/keys.
 *
 * The kernel prints one key per line (security/keys/proc.c):
 *   serial flags usage expiry perm uid gid type(%-9.9s) description
 * and an asymmetric key's description (crypto/asymmetric_keys) as
 *   "<subject>: <key id hex>: X509.rsa <8 hex> [...]"
 * Root sees the system keyrings' keys: .builtin_trusted_keys,
 * .secondary_trusted_keys, .platform (the firmware's db) and .machine (MOK).
 * Which keyring holds a key is not on the line; gpuboot uses the list to
 * refuse early a site certificate the kernel has never heard of, and the
 * kernel's own answer at load time stays the last word. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/macro.h"
#include "shared/root.h"

#define PROC_KEYS "proc/keys"
#define PROC_KEYS_MAX (1u << 20)

void gb_kernel_keys_free(struct gb_kernel_key *k, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(k[i].name);
		free(k[i].key_id);
	}
	free(k);
}

/* The description of an asymmetric key: "<subject>: <hex>: ..." or
 * "<subject>: <hex>" (no subtype). Returns 0 and fills k, -EBADMSG. */
static int parse_description(const char *d, size_t len, struct gb_kernel_key *k)
{
	for (size_t i = 0; i + 2 < len; i++) {
		size_t h = 0;
		if (d[i] != ':' || d[i + 1] != ' ')
			continue;
		while (i + 2 + h < len && isxdigit((unsigned char)d[i + 2 + h]))
			h++;
		if (h < 2 || h > 128 || h % 2 || (i + 2 + h < len && d[i + 2 + h] != ':') || i == 0)
			continue;
		k->name = strndup(d, i);
		k->key_id = strndup(d + i + 2, h);
		if (!k->name || !k->key_id) {
			free(k->name);
			free(k->key_id);
			return -ENOMEM;
		}
		for (char *p = k->key_id; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return 0;
	}
	return -EBADMSG;
}

/* One line: is it an asymmetric key (1, k filled), another type (0), or malformed? */
static int parse_line(const char *line, size_t len, struct gb_kernel_key *k)
{
	size_t pos = 0;
	/* eight columns separated by spaces, then the description */
	for (int col = 0; col < 7; col++) {
		while (pos < len && line[pos] == ' ')
			pos++;
		if (pos == len)
			return -EBADMSG;
		while (pos < len && line[pos] != ' ')
			pos++;
	}
	while (pos < len && line[pos] == ' ')
		pos++;
	if (len - pos < 10 || memcmp(line + pos, "asymmetri ", 10) != 0)
		return 0;
	pos += 10;
	return parse_description(line + pos, len - pos, k) < 0 ? -EBADMSG : 1;
}

int gb_proc_keys_parse(const char *text, size_t len, struct gb_kernel_key **ret, size_t *ret_n)
{
	struct gb_kernel_key *v = NULL;
	size_t n = 0;
	const char *p = text, *end = text + len;
	int r = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct gb_kernel_key k = { 0 };
		if (memchr(p, '\0', l)) {
			r = -EBADMSG;
			break;
		}
		r = l ? parse_line(p, l, &k) : 0;
		if (r < 0)
			break;
		if (r == 1) {
			struct gb_kernel_key *nv;
			if (n == GB_KERNEL_KEYS_MAX) {
				free(k.name);
				free(k.key_id);
				r = -E2BIG;
				break;
			}
			nv = realloc(v, (n + 1) * sizeof(*v));
			if (!nv) {
				free(k.name);
				free(k.key_id);
				r = -ENOMEM;
				break;
			}
			v = nv;
			v[n++] = k;
		}
		r = 0;
		p += l + 1;
	}
	if (r < 0) {
		gb_kernel_keys_free(v, n);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int gb_detect_kernel_keys(struct gb_ctx *ctx, struct gb_facts *f)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = gb_root_read_file(ctx->root, PROC_KEYS, PROC_KEYS_MAX, &text, &len);

	if (r == -ENOENT)
		return 0; /* no keys support, or not a live root: unknown */
	if (r >= 0)
		r = gb_proc_keys_parse(text, len, &f->secure_boot_state.keys, &f->secure_boot_state.n_keys);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		gb_log_warning_errno(r, "Failed to read the kernel's keys from '%s': %m, ignoring", PROC_KEYS);
		f->warnings++;
		return 0;
	}
	f->secure_boot_state.keys_known = true;
	return 0;
}
