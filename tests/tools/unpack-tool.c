/* SPDX-License-Identifier: MIT */
/* Test driver for the unpacker: unpack-tool FILE DEST [--makeself] [--max-bytes N] [--allow-setid]
 * Prints OK, or "ERR <message> (errno N: <strerror>)" and exits 1. */
#include <stdio.h>
#include <string.h>

#include "install/unpack.h"
#include "shared/util.h"

int main(int argc, char **argv)
{
	struct gb_unpack_opts o;
	char err[512] = "";
	int r;

	if (argc < 3) {
		fprintf(stderr, "usage: unpack-tool FILE DEST [--makeself] [--max-bytes N] [--allow-setid]\n");
		return 2;
	}
	gb_unpack_opts_default(&o);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--makeself")) {
			r = gb_makeself_offset(argv[1], &o.offset, err, sizeof(err));
			if (r < 0) {
				printf("ERR %s\n", err);
				return 1;
			}
		} else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
			uint64_t v;
			gb_safe_atou64(argv[++i], 10, &v);
			o.max_bytes = v;
		} else if (!strcmp(argv[i], "--allow-setid")) {
			o.allow_setid = true;
		}
	}
	r = gb_unpack(argv[1], argv[2], &o, err, sizeof(err));
	if (r < 0) {
		printf("ERR %s (errno %d: %s)\n", err, -r, strerror(-r));
		return 1;
	}
	printf("OK\n");
	return 0;
}
