/* SPDX-License-Identifier: MIT */
/* modsign-tool: src/load/modsign.c from the command line, for
 * tests/integration/t-modsign.sh.
 *   modsign-tool sign KEY CERT IN OUT   IN signed (old signature replaced) into OUT
 *   modsign-tool check CERT IN          exit 0 signed by CERT and verifying, 1 not, 2 malformed
 *   modsign-tool certid CERT            "<subject>: <key id>" as /proc/keys names it */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/modsign.h"
#include "shared/fileio.h"

int main(int argc, char **argv)
{
	char err[512] = "", subj[256], kid[160];
	char *mod = NULL;
	unsigned char *out = NULL;
	size_t len = 0, olen = 0;
	int r;

	if (argc == 3 && strcmp(argv[1], "certid") == 0) {
		r = gb_modsign_cert_id(argv[2], subj, sizeof(subj), kid, sizeof(kid), err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		printf("%s: %s\n", subj, kid);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "check") == 0) {
		if (gb_read_file(argv[3], 512u << 20, &mod, &len) < 0)
			return 3;
		r = gb_modsign_check((unsigned char *)mod, len, argv[2]);
		free(mod);
		return r == 1 ? 0 : r == 0 ? 1 : 2;
	}
	if (argc == 6 && strcmp(argv[1], "sign") == 0) {
		if (gb_read_file(argv[4], 512u << 20, &mod, &len) < 0)
			return 3;
		r = gb_modsign_sign((unsigned char *)mod, len, argv[2], argv[3], &out, &olen, err, sizeof(err));
		free(mod);
		if (r < 0) {
			fprintf(stderr, "%s (%s)\n", err, strerror(-r));
			return 1;
		}
		r = gb_write_file_atomic(argv[5], out, olen, 0644);
		free(out);
		if (r < 0)
			fprintf(stderr, "writing %s: %s (give an absolute path)\n", argv[5], strerror(-r));
		return r < 0 ? 1 : 0;
	}
	fprintf(stderr, "usage: modsign-tool sign KEY CERT IN OUT | check CERT IN | certid CERT\n");
	return 2;
}
