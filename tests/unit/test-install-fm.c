/* SPDX-License-Identifier: MIT */
/* The runfile method's fabric manager (src/install/install-fm.c): NVIDIA's
 * real redistrib_450.203.08.json parsed; generated archives in NVIDIA's
 * layout (test data: small stand-in files, the directory names and
 * members of data/nvswitch-facts-2026-12.md, "The redistributable
 * archives") verified, unpacked and placed through the journal; a rerun
 * with zero effects; the marker the load believes only with the binary it
 * hashed; the refusals: a manifest of another version, of another arch, a
 * tampered archive, a hostile path, a link where a file belongs, a
 * wrong top directory, each with nothing placed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "effect/journal.h"
#include "install/install-fm.h"
#include "shared/digest.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/ops.h"
#include "shared/root.h"
#include "unit.h"

#define VER "580.95.05"

static char base[] = "/tmp/gpuboot-test-install-fm.XXXXXX";
static char rootdir[4200];

static void sh(const char *fmt, const char *a)
{
	char cmd[16384];
	snprintf(cmd, sizeof(cmd), fmt, a, a, a, a, a, a);
	CHECK_INT(system(cmd), 0);
}

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 1u << 20, &t, &n) < 0 ? NULL : t;
}

static bool rooted(const char *rel)
{
	char p[4400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return lstat(p, &st) == 0;
}

static void hash(const char *file, char hex[65], unsigned long long *size)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_INT(gb_sha256_file(fd, hex, size), 0);
	close(fd);
}

/* NVIDIA's layout with stand-in bytes; variant: "" (right), "hostile"
 * (an entry ../escape), "link" (bin/nv-fabricmanager a symbolic link to
 * /etc/passwd), "top" (another top directory). */
static void make_archives(const char *variant)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd),
	         "set -e; cd '%s'; rm -rf t fm.tar.xz nscq.tar.xz; "
	         "F=t/fabricmanager-linux-x86_64-" VER "-archive; N=t/libnvidia_nscq-linux-x86_64-" VER "-archive; "
	         "mkdir -p $F/bin $F/systemd $F/etc $F/share/nvidia/nvswitch $F/lib $F/include $N/lib; "
	         "printf 'fm binary " VER "\\n' > $F/bin/nv-fabricmanager; printf 'audit\\n' > $F/bin/nvswitch-audit; "
	         "printf '[Service]\\nExecStart=/usr/bin/nv-fabricmanager -c "
	         "/usr/share/nvidia/nvswitch/fabricmanager.cfg\\n' > $F/systemd/nvidia-fabricmanager.service; "
	         "printf 'FABRIC_MODE=0\\n' > $F/etc/fabricmanager.cfg; "
	         "printf 'FABRIC_MODE=0\\n' > $F/etc/fabricmanager_multinode.cfg; "
	         "printf '#!/bin/sh\\n' > $F/bin/nvidia-fabricmanager-start.sh; "
	         "printf 'a,b\\n' > $F/share/nvidia/nvswitch/dgxgh200_hgxgh200_16gpus_trunk_connections.csv; "
	         "printf 'h100\\n' > $F/share/nvidia/nvswitch/dgxh100_hgxh100_topology; "
	         "printf 'a100\\n' > $F/share/nvidia/nvswitch/dgxa100_hgxa100_topology; "
	         "printf 'lib\\n' > $F/lib/libnvfm.so.1; printf 'h\\n' > $F/include/nv_fm_types.h; "
	         "printf 'license\\n' > $F/LICENSE; printf 'nscq\\n' > $N/lib/libnvidia-nscq.so." VER "; "
	         "printf 'license\\n' > $N/LICENSE; "
	         "case '%s' in link) rm $F/bin/nv-fabricmanager; ln -s /etc/passwd $F/bin/nv-fabricmanager;; "
	         "top) mv $F t/fabricmanager-linux-x86_64-" VER ";; esac; "
	         "cd t; if [ '%s' = hostile ]; then printf x > ../escape; "
	         "tar -cJf ../fm.tar.xz --absolute-names fabricmanager-linux-x86_64-" VER "-archive ../escape; "
	         "else tar -cJf ../fm.tar.xz fabricmanager-linux-x86_64-" VER "*; fi; "
	         "tar -cJf ../nscq.tar.xz libnvidia_nscq-linux-x86_64-" VER "-archive",
	         base, variant, variant);
	CHECK_INT(system(cmd), 0);
}

/* The manifest for the archives as they are now. */
static char *manifest(const char *version)
{
	char fm[4400], nq[4400], hf[65], hn[65], *t = NULL;
	unsigned long long sf = 0, sn = 0;

	snprintf(fm, sizeof(fm), "%s/fm.tar.xz", base);
	snprintf(nq, sizeof(nq), "%s/nscq.tar.xz", base);
	hash(fm, hf, &sf);
	hash(nq, hn, &sn);
	CHECK(
	    asprintf(&t,
	             "{\"release_date\":\"2025-10-01\",\"fabricmanager\":{\"name\":\"NVIDIA Fabric Manager\","
	             "\"version\":\"%s\",\"linux-x86_64\":{\"relative_path\":\"fabricmanager/linux-x86_64/"
	             "fabricmanager-linux-x86_64-%s-archive.tar.xz\",\"sha256\":\"%s\",\"size\":\"%llu\"}},"
	             "\"libnvidia_nscq\":{\"name\":\"NVIDIA NSCQ API\",\"version\":\"%s\",\"linux-x86_64\":{"
	             "\"relative_path\":\"libnvidia_nscq/linux-x86_64/libnvidia_nscq-linux-x86_64-%s-archive.tar.xz\","
	             "\"sha256\":\"%s\",\"size\":\"%llu\"}}}",
	             version, version, hf, sf, version, version, hn, sn) > 0);
	return t;
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_fm_result res;
	int r;
	unsigned effects;
};

static void install(struct run *x, const struct gb_fm_redist *rd)
{
	char state[4400], fm[4400], nq[4400], work[4400], err[512];
	json_object *plan = json_object_new_object();
	struct gb_fm_input in = { .redist = rd, .fm_archive = fm, .nscq_archive = nq, .work = work };

	memset(x, 0, sizeof(*x));
	snprintf(state, sizeof(state), "%s/state", base);
	snprintf(fm, sizeof(fm), "%s/fm.tar.xz", base);
	snprintf(nq, sizeof(nq), "%s/nscq.tar.xz", base);
	snprintf(work, sizeof(work), "%s/work", base);
	mkdir(work, 0755);
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = state;
	CHECK_INT(gb_ops_fake_new("", &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("fm"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install_fabricmanager(&x->ctx, &in, x->j, &x->res);
	x->effects = gb_journal_effects(x->j);
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 ? "failed" : "done", x->r < 0 ? 1 : 0), 0);
}

static void done(struct run *x)
{
	gb_journal_free(x->j);
	gb_ops_fake_free(x->ctx.ops);
	gb_root_free(x->ctx.root);
}

static void fresh_root(void)
{
	sh("rm -rf '%s/root' '%s/state' && mkdir -p '%s/root/usr/lib/x86_64-linux-gnu' && "
	   ": > '%s/root/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'",
	   base);
	{
		char p[4400];
		snprintf(p, sizeof(p), "%s/root", base);
		CHECK(realpath(p, rootdir) != NULL);
	}
}

static bool nothing_placed(void)
{
	return !rooted("usr/bin/nv-fabricmanager") && !rooted("usr/share/nvidia") && !rooted(GB_FM_MARKER) &&
	       !rooted("usr/lib/systemd") && !rooted("usr/lib/x86_64-linux-gnu/libnvidia-nscq.so." VER);
}

/* NVIDIA's real manifest (data/nvidia/driver-redist, 450.203.08). */
TEST(real_manifest)
{
	struct gb_fm_redist rd;
	char err[512] = "", *t = slurp("data/nvidia/driver-redist/redistrib_450.203.08.json");

	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), "450.203.08", "x86_64", &rd, err, sizeof(err)), 0);
	CHECK_STREQ(rd.fm.relative_path,
	            "fabricmanager/linux-x86_64/fabricmanager-linux-x86_64-450.203.08-archive.tar.xz");
	CHECK_STREQ(rd.fm.sha256, "7b495c09c0f678eebcdab30dfc34d29767f5157df6bb36bcb8ad81ae0dcdc085");
	CHECK_INT(rd.fm.size, 1110832);
	CHECK_STREQ(rd.nscq.sha256, "0419d5a4886b799d1deb06659266f8296ea9e79462a196048c5630ec598fde4e");
	CHECK_INT(rd.nscq.size, 268412);
	/* another driver version: refused, the version named */
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), "450.203.09", "x86_64", &rd, err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "\"fabricmanager\" is at version 450.203.08, not the driver's 450.203.09") != NULL);
	/* 450 had no server-Arm archive */
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), "450.203.08", "aarch64", &rd, err, sizeof(err)), -EBADMSG);
	CHECK(strstr(err, "no linux-sbsa archive") != NULL);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), "450.203.08", "ppc64le", &rd, err, sizeof(err)), -EBADMSG);
	free(t);
	/* the oldest layout (no hashes) is no trusted manifest */
	t = slurp("data/nvidia/driver-redist/redistrib_455.32.00.json");
	CHECK(t != NULL);
	if (t)
		CHECK_INT(gb_fm_redist_parse(t, strlen(t), "455.32.00", "x86_64", &rd, err, sizeof(err)), -EBADMSG);
	free(t);
}

TEST(manifest_garbled)
{
	static const char *const bad[] = {
		"[]",
		"{\"fabricmanager\":{\"version\":\"" VER "\",\"linux-x86_64\":{\"relative_path\":\"../../etc/shadow\","
		"\"sha256\":\""
		"0000000000000000000000000000000000000000000000000000000000000000"
		"\",\"size\":\"1\"}}}",
		"{\"fabricmanager\":{\"version\":\"" VER "\",\"linux-x86_64\":{\"relative_path\":\"fabricmanager/"
		"linux-x86_64/fabricmanager-linux-x86_64-" VER "-archive.tar.xz\",\"sha256\":\"zz\",\"size\":\"1\"}}}",
		"{\"fabricmanager\":{\"version\":\"" VER "\",\"linux-x86_64\":{\"relative_path\":\"fabricmanager/"
		"linux-x86_64/fabricmanager-linux-x86_64-" VER "-archive.tar.xz\",\"sha256\":\""
		"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":\"99999999999\"}}}",
		"{\"fabricmanager\":{\"version\":\"" VER "\",\"linux-x86_64\":{\"relative_path\":\"fabricmanager/"
		"linux-x86_64/fabricmanager-linux-x86_64-" VER "-archive.tar.xz\",\"sha256\":\""
		"0000000000000000000000000000000000000000000000000000000000000000\",\"size\":\"12\"}}}",
	};
	static const char *const why[] = { "not a JSON object", "relative_path is not", "sha256 is not",
		                           "out of bounds", "no \"libnvidia_nscq\"" };
	struct gb_fm_redist rd;
	char err[512];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		CHECK_INT(gb_fm_redist_parse(bad[i], strlen(bad[i]), VER, "x86_64", &rd, err, sizeof(err)), -EBADMSG);
		if (!strstr(err, why[i]))
			fprintf(stderr, "garbled %zu: '%s' lacks '%s'\n", i, err, why[i]);
		CHECK(strstr(err, why[i]) != NULL);
	}
}

/* Bare to placed, then a rerun with zero effects; the marker. */
TEST(place_and_rerun)
{
	struct gb_fm_redist rd;
	struct run x;
	char err[512] = "", *t, ver[40];

	fresh_root();
	make_archives("");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &rd, err, sizeof(err)), 0);
	free(t);
	install(&x, &rd);
	CHECK_INT(x.r, 0);
	if (x.r < 0)
		fprintf(stderr, "install: %s\n", x.res.error);
	CHECK(x.res.changed);
	CHECK_STREQ(x.res.libdir, "usr/lib/x86_64-linux-gnu");
	/* files: 7 members (R570's start script and multi-node config too),
	 * 2 topologies and a connection map, nscq, its link, the marker */
	CHECK_INT(x.effects, 13);
	CHECK(rooted("usr/bin/nvidia-fabricmanager-start.sh"));
	CHECK(rooted("usr/share/nvidia/nvswitch/fabricmanager_multinode.cfg"));
	CHECK(rooted("usr/share/nvidia/nvswitch/dgxgh200_hgxgh200_16gpus_trunk_connections.csv"));
	CHECK(rooted("usr/bin/nv-fabricmanager"));
	CHECK(rooted("usr/bin/nvswitch-audit"));
	CHECK(rooted("usr/lib/systemd/system/nvidia-fabricmanager.service"));
	CHECK(rooted("usr/share/nvidia/nvswitch/fabricmanager.cfg"));
	CHECK(rooted("usr/share/nvidia/nvswitch/dgxh100_hgxh100_topology"));
	CHECK(rooted("usr/share/nvidia/nvswitch/dgxa100_hgxa100_topology"));
	CHECK(rooted("usr/share/doc/nvidia-fabricmanager/LICENSE"));
	CHECK(rooted("usr/lib/x86_64-linux-gnu/libnvidia-nscq.so." VER));
	CHECK(rooted("usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2"));
	CHECK(!rooted("usr/lib/x86_64-linux-gnu/libnvfm.so.1")); /* the -devel package's, not placed */
	{
		char p[4400];
		struct stat st;
		snprintf(p, sizeof(p), "%s/usr/bin/nv-fabricmanager", rootdir);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0755);
		snprintf(p, sizeof(p), "%s/work/fabricmanager", base);
		CHECK(access(p, F_OK) != 0); /* the unpacked tree is gone */
	}
	CHECK_INT(gb_fm_marker_version(&x.ctx, ver, sizeof(ver)), 0);
	CHECK_STREQ(ver, VER);
	done(&x);

	/* the rerun: nothing changes */
	install(&x, &rd);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.effects, 0);
	CHECK(!x.res.changed);
	done(&x);

	/* the site's edited config stays (NVIDIA's %config(noreplace)) */
	sh("printf 'FABRIC_MODE=1\\n' > '%s/root/usr/share/nvidia/nvswitch/fabricmanager.cfg'", base);
	install(&x, &rd);
	CHECK_INT(x.effects, 0);
	done(&x);

	/* a binary changed after the install: the marker is not believed */
	sh("printf 'other\\n' > '%s/root/usr/bin/nv-fabricmanager'", base);
	install(&x, &rd); /* converges: the binary is put back, the marker rewritten only if needed */
	CHECK_INT(x.r, 0);
	CHECK_INT(x.effects, 1);
	CHECK_INT(gb_fm_marker_version(&x.ctx, ver, sizeof(ver)), 0);
	sh("printf 'other\\n' > '%s/root/usr/bin/nv-fabricmanager'", base);
	CHECK_INT(gb_fm_marker_version(&x.ctx, ver, sizeof(ver)), -ESTALE);
	done(&x);
}

/* A kill after some files: the next run places the rest and converges. */
TEST(partial_then_converges)
{
	struct gb_fm_redist rd;
	struct run x;
	char err[512] = "", *t;

	fresh_root();
	make_archives("");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &rd, err, sizeof(err)), 0);
	free(t);
	install(&x, &rd);
	CHECK_INT(x.r, 0);
	done(&x);
	/* as a killed run leaves it: some files there, the rest and the marker not */
	sh("rm -f '%s/root/usr/bin/nvswitch-audit' '%s/root/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2' "
	   "'%s/root/" GB_FM_MARKER "'",
	   base);
	sh("rm -rf '%s/state'", base);
	install(&x, &rd);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.effects, 3);
	CHECK(rooted("usr/bin/nvswitch-audit") && rooted(GB_FM_MARKER));
	done(&x);
}

/* The failure twins: nothing placed. */
TEST(refusals)
{
	struct gb_fm_redist rd, good;
	struct run x;
	char err[512] = "", *t;

	/* a tampered archive: one byte more than the manifest's */
	fresh_root();
	make_archives("");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &good, err, sizeof(err)), 0);
	free(t);
	sh("printf x >> '%s/fm.tar.xz'", base);
	install(&x, &good);
	CHECK_INT(x.r, -EKEYREJECTED);
	CHECK(strstr(x.res.error, "does not match the redistributable manifest") != NULL);
	CHECK(strstr(x.res.error, "nothing was unpacked or placed") != NULL);
	CHECK(nothing_placed());
	CHECK_INT(x.effects, 0);
	done(&x);

	/* a hostile path in a verified archive (a mirror's key signed it) */
	fresh_root();
	make_archives("hostile");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &rd, err, sizeof(err)), 0);
	free(t);
	install(&x, &rd);
	CHECK(x.r < 0);
	CHECK(strstr(x.res.error, "Failed to unpack") != NULL);
	CHECK(nothing_placed());
	{
		char p[4400];
		snprintf(p, sizeof(p), "%s/work/escape", base);
		CHECK(access(p, F_OK) != 0);
	}
	done(&x);

	/* the binary a link to /etc/passwd */
	fresh_root();
	make_archives("link");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &rd, err, sizeof(err)), 0);
	free(t);
	install(&x, &rd);
	CHECK(x.r < 0);
	CHECK(strstr(x.res.error, "bin/nv-fabricmanager is not a regular file") != NULL ||
	      strstr(x.res.error, "Failed to unpack") != NULL);
	CHECK(nothing_placed());
	done(&x);

	/* another top directory than NVIDIA's */
	fresh_root();
	make_archives("top");
	t = manifest(VER);
	CHECK_INT(gb_fm_redist_parse(t, strlen(t), VER, "x86_64", &rd, err, sizeof(err)), 0);
	free(t);
	install(&x, &rd);
	CHECK_INT(x.r, -EBADMSG);
	CHECK(strstr(x.res.error, "has no directory fabricmanager-linux-x86_64-" VER "-archive/") != NULL);
	CHECK(nothing_placed());
	done(&x);
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	unit_run_tests();
	{
		char p[4400];
		snprintf(p, sizeof(p), "rm -rf '%s'", base);
		if (system(p) != 0)
			fprintf(stderr, "cannot remove %s\n", base);
	}
	UNIT_DONE();
}
