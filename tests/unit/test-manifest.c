/* SPDX-License-Identifier: MIT */
/* NVIDIA's real redistrib manifests (data/), and the mirror manifest's
 * signature rules, with keys made here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/digest.h"
#include "fetch/manifest.h"
#include "unit-ed25519.h"
#include "unit.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static const struct gb_manifest_entry *by_name(const struct gb_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].name, name))
			return &m->v[i];
	return NULL;
}

TEST(redistrib)
{
	struct gb_manifest m;
	char err[256];
	size_t len;
	char *t = slurp("data/nvidia/cuda-redist/redistrib_13.0.0.json", &len);
	const struct gb_manifest_entry *e;

	CHECK(t != NULL);
	CHECK_INT(gb_redistrib_parse(t, len, "linux-x86_64", NULL, &m, err, sizeof(err)), 0);
	e = by_name(&m, "cuda_cudart");
	CHECK(e != NULL);
	if (e) {
		CHECK_STREQ(e->path, "cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-13.0.48-archive.tar.xz");
		CHECK_STREQ(e->sha256, "30ffafae23833dafc965cf4e4d034f8553805586959328c64e2c47b3ef3bcd55");
		CHECK_INT(e->size, 1487372);
		CHECK_STREQ(e->version, "13.0.48");
	}
	CHECK(m.n > 30);
	gb_manifest_done(&m);
	/* CUDA 13 has no linux-aarch64 builds (sbsa only). */
	CHECK_INT(gb_redistrib_parse(t, len, "linux-aarch64", NULL, &m, err, sizeof(err)), 0);
	CHECK(by_name(&m, "cuda_cudart") == NULL);
	gb_manifest_done(&m);
	free(t);

	t = slurp("data/nvidia/cuda-redist/cudnn-redistrib_9.4.0.json", &len);
	CHECK_INT(gb_redistrib_parse(t, len, "linux-x86_64", "cuda12", &m, err, sizeof(err)), 0);
	e = by_name(&m, "cudnn");
	CHECK(e && strstr(e->path, "_cuda12-archive.tar.xz"));
	gb_manifest_done(&m);
	free(t);

	/* The oldest driver-manifest layout has no hashes: nothing usable, no crash. */
	t = slurp("data/nvidia/driver-redist/redistrib_455.32.00.json", &len);
	CHECK_INT(gb_redistrib_parse(t, len, "linux-x86_64", NULL, &m, err, sizeof(err)), 0);
	CHECK_INT(m.n, 0);
	gb_manifest_done(&m);
	free(t);
	t = slurp("data/nvidia/driver-redist/redistrib_450.203.08.json", &len);
	CHECK_INT(gb_redistrib_parse(t, len, "linux-x86_64", NULL, &m, err, sizeof(err)), 0);
	CHECK(by_name(&m, "nvidia_driver") != NULL);
	gb_manifest_done(&m);
	free(t);
	/* The excerpt is not JSON. */
	t = slurp("data/nvidia/driver-redist/redistrib_535.288.01.json.excerpt", &len);
	CHECK_INT(gb_redistrib_parse(t, len, "linux-x86_64", NULL, &m, err, sizeof(err)), -EBADMSG);
	free(t);
	/* Hostile paths are refused. */
	{
		const char *bad =
		    "{\"x\":{\"version\":\"1\",\"linux-x86_64\":{\"relative_path\":\"../../etc/"
		    "passwd\",\"sha256\":\"30ffafae23833dafc965cf4e4d034f8553805586959328c64e2c47b3ef3bcd55\",\"size\":"
		    "\"10\"}}}";
		CHECK_INT(gb_redistrib_parse(bad, strlen(bad), "linux-x86_64", NULL, &m, err, sizeof(err)), -EBADMSG);
	}
}

TEST(mirror)
{
	char dir[] = "/tmp/gpuboot-test-manifest.XXXXXX", priv[128], pub[128], pub2[128], priv2[128];
	struct gb_manifest m = { 0 }, got;
	struct gb_manifest_entry e = { .size = 10 };
	char *text = NULL, *sig = NULL, err[256];
	char *keys[] = { pub, NULL }, *wrong[] = { pub2, NULL };

	CHECK(mkdtemp(dir) != NULL);
	snprintf(priv, sizeof(priv), "%s/k.pem", dir);
	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	snprintf(priv2, sizeof(priv2), "%s/k2.pem", dir);
	snprintf(pub2, sizeof(pub2), "%s/k2.pub", dir);
	unit_ed25519_key(priv, pub);
	unit_ed25519_key(priv2, pub2);
	snprintf(e.path, sizeof(e.path), "%s", "a/b.tar.xz");
	snprintf(e.sha256, sizeof(e.sha256), "%s", "30ffafae23833dafc965cf4e4d034f8553805586959328c64e2c47b3ef3bcd55");
	m.v = &e;
	m.n = 1;
	m.version = 5;
	snprintf(m.created, sizeof(m.created), "%s", "2026-11-30T00:00:00Z");
	snprintf(m.expires, sizeof(m.expires), "%s", "2027-01-01T00:00:00Z");
	CHECK_INT(gb_mirror_manifest_sign(&m, priv, &text, &sig, err, sizeof(err)), 0);
	/* 2026-12-01 */
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), sig, keys, 1796083200ull, 0, &got, err, sizeof(err)),
	          0);
	CHECK_INT(got.n, 1);
	CHECK_INT(got.version, 5);
	CHECK(gb_manifest_find(&got, "a/b.tar.xz") != NULL);
	gb_manifest_done(&got);
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), sig, wrong, 1796083200ull, 0, &got, err, sizeof(err)),
	          -EPERM);
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), sig, keys, 1830000000ull, 0, &got, err, sizeof(err)),
	          -ESTALE);
	CHECK(strstr(err, "expired") != NULL);
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), sig, keys, 1796083200ull, 6, &got, err, sizeof(err)),
	          -ESTALE);
	CHECK(strstr(err, "rollback") != NULL);
	text[20] ^= 1;
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), sig, keys, 1796083200ull, 0, &got, err, sizeof(err)),
	          -EPERM);
	CHECK_INT(gb_mirror_manifest_verify(text, strlen(text), "zz", keys, 1796083200ull, 0, &got, err, sizeof(err)),
	          -EBADMSG);
	free(text);
	free(sig);
	{
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
	}
}

/* The prebuilt modules: signed with the rest, read back whole; an entry
 * whose package is not one of the artifacts, or with a field missing or
 * holding a control character, is refused. */
TEST(mirror_modules)
{
	struct gb_manifest m = { 0 }, got;
	struct gb_manifest_entry e = { .size = 10 };
	struct gb_mirror_module mod = { 0 };
	char *text = NULL, *sig = NULL, err[256], dir[] = "/tmp/gpuboot-test-manifest.XXXXXX", priv[128], pub[128];
	static const char *const bad[][2] = {
		{ "\"path\": \"m/a.deb\"", "\"path\": \"m/other.deb\"" },
		{ "\"vermagic\": \"6.1.0-50-amd64 SMP \"", "\"vermagic\": \"6.1.0-50-amd64\\nSMP \"" },
		{ "\"flavor\": \"open\"", "\"flavor\": \"closed\"" },
		{ "\"kernel_package_version\": \"6.1.158-1\",", "" },
	};

	CHECK(mkdtemp(dir) != NULL);
	snprintf(priv, sizeof(priv), "%s/k.pem", dir);
	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	unit_ed25519_key(priv, pub);
	snprintf(e.path, sizeof(e.path), "%s", "m/a.deb");
	snprintf(e.sha256, sizeof(e.sha256), "%s", "30ffafae23833dafc965cf4e4d034f8553805586959328c64e2c47b3ef3bcd55");
	CHECK_INT(gb_manifest_put(&m, &e), 0);
	CHECK_INT(gb_manifest_put(&m, &e), 0); /* the same path: replaced */
	CHECK_INT(m.n, 1);
	snprintf(mod.path, sizeof(mod.path), "m/a.deb");
	snprintf(mod.distro, sizeof(mod.distro), "debian:12");
	snprintf(mod.arch, sizeof(mod.arch), "amd64");
	snprintf(mod.kernel, sizeof(mod.kernel), "6.1.0-50-amd64");
	snprintf(mod.kernel_package, sizeof(mod.kernel_package), "linux-image-6.1.0-50-amd64");
	snprintf(mod.kernel_package_version, sizeof(mod.kernel_package_version), "6.1.158-1");
	snprintf(mod.vermagic, sizeof(mod.vermagic), "6.1.0-50-amd64 SMP ");
	snprintf(mod.driver, sizeof(mod.driver), "535.309.01");
	snprintf(mod.flavor, sizeof(mod.flavor), "open");
	snprintf(mod.package, sizeof(mod.package), "gpuboot-nvidia-open-modules-6.1.0-50-amd64");
	snprintf(mod.package_version, sizeof(mod.package_version), "535.309.01-1+k6.1.158.1");
	CHECK_INT(gb_mirror_module_put(&m, &mod), 0);
	CHECK_INT(gb_mirror_module_put(&m, &mod), 0); /* same kernel, driver, flavour: replaced */
	CHECK_INT(m.n_mods, 1);
	m.version = 5;
	snprintf(m.created, sizeof(m.created), "%s", "2026-11-30T00:00:00Z");
	snprintf(m.expires, sizeof(m.expires), "%s", "2027-01-01T00:00:00Z");
	CHECK_INT(gb_mirror_manifest_sign(&m, priv, &text, &sig, err, sizeof(err)), 0);
	CHECK_INT(gb_mirror_manifest_parse(text, strlen(text), &got, err, sizeof(err)), 0);
	CHECK_INT(got.n_mods, 1);
	CHECK_STREQ(got.mods[0].vermagic, "6.1.0-50-amd64 SMP ");
	CHECK_STREQ(got.mods[0].kernel_package_version, "6.1.158-1");
	CHECK_STREQ(got.mods[0].signer, "");
	gb_manifest_done(&got);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *at = strstr(text, bad[i][0]), *t;
		size_t pre, n;
		CHECK(at != NULL);
		if (!at)
			continue;
		pre = (size_t)(at - text);
		n = strlen(text) - strlen(bad[i][0]) + strlen(bad[i][1]);
		t = malloc(n + 1);
		CHECK(t != NULL);
		if (!t)
			continue;
		snprintf(t, n + 1, "%.*s%s%s", (int)pre, text, bad[i][1], at + strlen(bad[i][0]));
		CHECK_INT(gb_mirror_manifest_parse(t, strlen(t), &got, err, sizeof(err)), -EBADMSG);
		CHECK(strstr(err, "module 0") != NULL);
		free(t);
	}
	free(text);
	free(sig);
	free(m.v);
	free(m.mods);
	{
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
	}
}

int main(void)
{
	unit_run_tests();
	UNIT_DONE();
}
