/* SPDX-License-Identifier: MIT */
/* The signed catalog update (docs/catalog.md): its signature, format,
 * expiry and rollback rules (fetch/catalog-file.c), and the catalog's
 * checks and merge of its rows (catalog/catalog-update.c), with keys made
 * here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "fetch/catalog-file.h"
#include "fetch/sig.h"
#include "unit-ed25519.h"
#include "unit.h"

static char dir[] = "/tmp/gpuboot-test-catalog.XXXXXX", priv[128], pub[128], pub2[128];
static char *keys[2], *keys2[2];

#define NOW 1796040000ull /* 2026-11-30T12:00:00Z */
#define RUNFILE                                                                                                \
	"{ \"version\": \"580.199.01\", \"arch\": \"x86_64\", \"category\": \"TESLA\", \"sha256\": "           \
	"\"5f0d8c4a3e2b1a09f8e7d6c5b4a3928170f6e5d4c3b2a19080f7e6d5c4b3a291\", \"size\": 412345678, \"url\": " \
	"\"https://us.download.nvidia.com/tesla/580.199.01/NVIDIA-Linux-x86_64-580.199.01.run\" }"

/* A document: version, date, expiry and the rows' text. */
static void doc(char *buf, size_t n, unsigned long long version, const char *date, const char *expires,
                const char *rows)
{
	snprintf(buf, n,
	         "{ \"format\": \"gpuboot-catalog\", \"format_version\": 1, \"version\": %llu, \"date\": \"%s\", "
	         "\"expires\": \"%s\", \"sources\": [ \"a test\" ]%s%s }",
	         version, date, expires, rows[0] ? ", " : "", rows);
}

static int verify(const char *text, const char *key_file, char *const *trust, uint64_t floor, struct gb_catalog_file *f,
                  char *err, char *fix)
{
	char sig[GB_SIG_HEX_LEN], kid[GB_KEY_ID_LEN];
	if (key_file && gb_sig_sign(key_file, text, strlen(text), sig, kid, err, 256) < 0)
		return -99;
	return gb_catalog_file_verify("t.json", text, strlen(text), key_file ? sig : NULL, trust, NOW, floor, f, err,
	                              256, fix, 256);
}

TEST(setup)
{
	CHECK(mkdtemp(dir) != NULL);
	snprintf(priv, sizeof(priv), "%s/k.pem", dir);
	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	snprintf(pub2, sizeof(pub2), "%s/k2.pub", dir);
	unit_ed25519_key(priv, pub);
	{
		char p2[160];
		snprintf(p2, sizeof(p2), "%s/k2.pem", dir);
		unit_ed25519_key(p2, pub2);
	}
	keys[0] = pub;
	keys2[0] = pub2;
	CHECK_INT(gb_catalog_builtin_number(), 2026120400);
}

TEST(newer_in_force)
{
	struct gb_catalog_file f = { 0 };
	char text[2048], err[256] = "", fix[256] = "";
	size_t n;

	doc(text, sizeof(text), 2026121501, "2026-12-15", "2027-03-01T00:00:00Z",
	    "\"branches\": [ { \"branch\": 580, \"type\": \"ltsb\", \"end_of_life\": \"2028-12-31\" }, { \"branch\": "
	    "630, \"type\": \"new-feature\", \"min_kernel\": \"5.4\" } ], \"runfiles\": [ " RUNFILE " ], "
	    "\"container_toolkit_min\": \"1.19.2\", \"container_toolkit_min_cve\": \"CVE-2026-1\", "
	    "\"container_toolkit_min_why\": \"CVE-2026-1, a test's, fixed in 1.19.2\"");
	CHECK_INT(verify(text, priv, keys, 0, &f, err, fix), 0);
	CHECK_INT(f.u.version, 2026121501);
	CHECK_INT(gb_catalog_apply_update(&f.u, err, sizeof(err)), 0);
	gb_catalog_file_done(&f);
	/* copied: in force after the file is gone */
	CHECK_STREQ(gb_catalog_in_force()->origin, "t.json");
	CHECK_STREQ(gb_catalog_newest_runfile(580, "x86_64")->version, "580.199.01");
	CHECK_STREQ(gb_catalog_branch(580)->eol, "2028-12-31");
	CHECK_STREQ(gb_catalog_branch(580)->min_kernel, "4.15"); /* the built-in row's */
	CHECK_STREQ(gb_catalog_branch(630)->min_kernel, "5.4");
	CHECK(gb_catalog_branches(&n)[n - 1].branch == 630); /* ascending: the plan walks from the newest */
	CHECK_INT(n, gb_branches_len + 1);
	CHECK_STREQ(gb_catalog_ctk_min(), "1.19.2");
	CHECK_STREQ(gb_catalog_ctk_min_cve(), "CVE-2026-1");
	gb_catalog_reset();
	CHECK(gb_catalog_in_force()->origin == NULL);
	CHECK_STREQ(gb_catalog_newest_runfile(580, "x86_64")->version, "580.178.04");
	CHECK_STREQ(gb_catalog_ctk_min(), "1.19.1");
}

TEST(refusals)
{
	struct gb_catalog_file f = { 0 };
	char text[2048], bad[2048], err[256] = "", fix[256] = "";

	doc(text, sizeof(text), 2026121501, "2026-12-15", "2027-03-01T00:00:00Z", "\"runfiles\": [ " RUNFILE " ]");
	/* unsigned, no key trusted, another key, an altered byte */
	CHECK_INT(verify(text, NULL, keys, 0, &f, err, fix), -ENOKEY);
	CHECK(strstr(err, "unsigned") != NULL);
	CHECK(strstr(fix, "t.json.sig") != NULL);
	CHECK_INT(verify(text, priv, NULL, 0, &f, err, fix), -EPERM);
	CHECK(strstr(err, "no trusted key") != NULL);
	CHECK_INT(verify(text, priv, keys2, 0, &f, err, fix), -EPERM);
	CHECK(strstr(err, "does not verify") != NULL);
	{
		char sig[GB_SIG_HEX_LEN], kid[GB_KEY_ID_LEN];
		CHECK_INT(gb_sig_sign(priv, text, strlen(text), sig, kid, err, sizeof(err)), 0);
		memcpy(bad, text, strlen(text) + 1);
		bad[strlen(bad) - 3] ^= 1;
		CHECK_INT(gb_catalog_file_verify("t.json", bad, strlen(bad), sig, keys, NOW, 0, &f, err, sizeof(err),
		                                 fix, sizeof(fix)),
		          -EPERM);
	}
	/* expired; rollback below the floor */
	doc(bad, sizeof(bad), 2026121501, "2026-12-15", "2026-11-30T12:00:00Z", "");
	CHECK_INT(verify(bad, priv, keys, 0, &f, err, fix), -ETIME);
	CHECK(strstr(err, "expired at 2026-11-30T12:00:00Z") != NULL);
	CHECK_INT(verify(text, priv, keys, 2026121502, &f, err, fix), -ESTALE);
	CHECK(strstr(err, "rollback refused") != NULL);
	/* not a catalog; not JSON */
	CHECK_INT(verify("{ \"format\": \"gpuboot-mirror\" }", priv, keys, 0, &f, err, fix), -EBADMSG);
	CHECK_INT(verify("[1", priv, keys, 0, &f, err, fix), -EBADMSG);
	CHECK(f.root == NULL);
}

/* Signed and well formed, refused by the catalog's own rules. */
static void apply_refused(unsigned long long version, const char *date, const char *rows, const char *want)
{
	struct gb_catalog_file f = { 0 };
	char text[2048], err[256] = "", fix[256] = "";

	doc(text, sizeof(text), version, date, "2027-03-01T00:00:00Z", rows);
	CHECK_INT(verify(text, priv, keys, 0, &f, err, fix), 0);
	CHECK(gb_catalog_apply_update(&f.u, err, sizeof(err)) < 0);
	if (!strstr(err, want)) {
		fprintf(stderr, "expected '%s' in '%s'\n", want, err);
		unit_failures++;
	}
	CHECK(gb_catalog_in_force()->origin == NULL);
	gb_catalog_file_done(&f);
}

TEST(rows)
{
	apply_refused(2026120400, "2026-12-04", "", "is not newer than this gpuboot's built-in catalog");
	apply_refused(2026121501, "2026-12-16", "", "does not begin with its date");
	apply_refused(2026121501, "2026-12-15", "\"runfiles\": [ { \"version\": \"580\" } ]", "not a driver version");
	apply_refused(2026121501, "2026-12-15",
	              "\"branches\": [ { \"branch\": 640, \"type\": \"ltsb\", \"end_of_life\": \"2031-02-30\" } ]",
	              "not a YYYY-MM-DD date");
	apply_refused(2026121501, "2026-12-15", "\"branches\": [ { \"branch\": 640, \"type\": \"ltsb\" } ]",
	              "needs its min_kernel");
	apply_refused(2026121501, "2026-12-15", "\"container_toolkit_min\": \"1.17.0\"", "an update only raises it");
	apply_refused(2026121501, "2026-12-15", "\"container_toolkit_min\": \"1.20.0\"",
	              "needs container_toolkit_min_cve");
}

TEST(version_file)
{
	char path[160], err[256] = "";
	uint64_t v = 1;
	FILE *f;

	CHECK_INT(gb_catalog_version_load(dir, &v, err, sizeof(err)), 0);
	CHECK_INT(v, 0);
	snprintf(path, sizeof(path), "%s/catalog-version", dir);
	f = fopen(path, "w");
	fputs("2026121502\n", f);
	fclose(f);
	CHECK_INT(gb_catalog_version_load(dir, &v, err, sizeof(err)), 0);
	CHECK_INT(v, 2026121502);
	f = fopen(path, "w");
	fputs("garbled", f);
	fclose(f);
	CHECK(gb_catalog_version_load(dir, &v, err, sizeof(err)) < 0);
	CHECK(strstr(err, "garbled") != NULL);
	unlink(path);
	unlink(priv);
	unlink(pub);
	unlink(pub2);
	snprintf(path, sizeof(path), "%s/k2.pem", dir);
	unlink(path);
	CHECK_INT(rmdir(dir), 0);
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
