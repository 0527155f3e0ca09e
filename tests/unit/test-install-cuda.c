/* SPDX-License-Identifier: MIT */
/* CUDA from the redistributable components, with generated component
 * archives in NVIDIA's layout (<name>-linux-x86_64-<ver>-archive/ with
 * lib/, include/, bin/, LICENSE) in a cache named by sha256: the merged
 * tree (targets/x86_64-linux, lib64 and include links), the link, the
 * loader and shell configuration, ldconfig chrooted, all journaled; a
 * rerun with zero effects; other components replace the tree whole; one
 * thread gives the same tree; two components carrying one file, an entry
 * outside the top directory, a climbing name each refused with the old
 * tree intact; a file size limit in the middle (EFBIG) leaves the old
 * tree and names the path and the space needed, and a rerun succeeds. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "install/install.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "unit.h"

static char base[] = "/tmp/gpuboot-test-install-cuda.XXXXXX";
static char rootdir[4200];

/* gen SET NAME:VERSION[:KIND]...: archives in base/cache/<sha256>, their
 * list in base/SET.list ("name version path" lines). KIND: ok, big (1 MiB
 * library), dup (carries cuda_cudart's header), outside, climb. */
static const char gen_py[] =
    "import hashlib, io, os, sys, tarfile\n"
    "base, lst = sys.argv[1], sys.argv[2]\n"
    "os.makedirs(base + '/cache', exist_ok=True)\n"
    "out = open(base + '/' + lst + '.list', 'w')\n"
    "for spec in sys.argv[3:]:\n"
    "    name, ver, kind = (spec.split(':') + ['ok'])[:3]\n"
    "    top = f'{name}-linux-x86_64-{ver}-archive'\n"
    "    buf = io.BytesIO()\n"
    "    with tarfile.open(fileobj=buf, mode='w:xz') as t:\n"
    "        def add(path, data=None, link=None, d=False):\n"
    "            i = tarfile.TarInfo(path); i.mtime = 1700000000\n"
    "            if d: i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i); return\n"
    "            if link: i.type = tarfile.SYMTYPE; i.linkname = link; t.addfile(i); return\n"
    "            i.size = len(data); i.mode = 0o644; t.addfile(i, io.BytesIO(data))\n"
    "        add(top, d=True)\n"
    "        add(f'{top}/LICENSE', b'license of ' + name.encode())\n"
    "        add(f'{top}/lib', d=True)\n"
    "        size = (1 << 20) if kind == 'big' else 3000\n"
    "        add(f'{top}/lib/lib{name}.so.{ver}', (name + ver).encode() * (size // len(name + ver)))\n"
    "        add(f'{top}/lib/lib{name}.so', link=f'lib{name}.so.{ver}')\n"
    "        add(f'{top}/include/{name}.h', f'/* {name} {ver} */'.encode())\n"
    "        if name == 'cuda_nvcc': add(f'{top}/bin/nvcc', b'#!/bin/sh\\n')\n"
    "        if kind == 'dup': add(f'{top}/include/cuda_cudart.h', b'other')\n"
    "        if kind == 'outside': add('elsewhere/x', b'x')\n"
    "        if kind == 'climb': add(f'{top}/../../x', b'x')\n"
    "    blob = buf.getvalue(); h = hashlib.sha256(blob).hexdigest()\n"
    "    open(f'{base}/cache/{h}', 'wb').write(blob)\n"
    "    out.write(f'{name} {ver} {base}/cache/{h}\\n')\n";

static void gen(const char *set, const char *specs)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "python3 - '%s' '%s' %s <<'PY'\n%sPY\n", base, set, specs, gen_py);
	CHECK_INT(system(cmd), 0);
}

struct comps {
	struct gb_cuda_component_in c[8];
	char name[8][64], ver[8][32], path[8][4400];
	size_t n;
};

static void load(const char *set, struct comps *cs)
{
	char p[4400], *text, *save = NULL;
	size_t n;
	memset(cs, 0, sizeof(*cs));
	snprintf(p, sizeof(p), "%s/%s.list", base, set);
	CHECK_INT(gb_read_file(p, 1 << 16, &text, &n), 0);
	for (char *l = strtok_r(text, "\n", &save); l && cs->n < 8; l = strtok_r(NULL, "\n", &save)) {
		CHECK_INT(sscanf(l, "%63s %31s %4399s", cs->name[cs->n], cs->ver[cs->n], cs->path[cs->n]), 3);
		cs->c[cs->n] = (struct gb_cuda_component_in){ cs->name[cs->n], cs->ver[cs->n], cs->path[cs->n], NULL };
		cs->n++;
	}
	free(text);
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_cuda_result res;
	int r;
	unsigned effects;
	char *record;
};

static void run_cuda(struct run *x, const char *set, unsigned threads)
{
	struct comps cs;
	struct gb_cuda_input in = { .version = "13.0.0", .threads = threads };
	json_object *plan = json_object_new_object();
	char err[512], state[4400], spec[4400], p[4400];

	load(set, &cs);
	in.components = cs.c;
	in.n_components = cs.n;
	memset(x, 0, sizeof(*x));
	snprintf(state, sizeof(state), "%s/state", base);
	snprintf(p, sizeof(p), "%s/record", base);
	unlink(p);
	snprintf(spec, sizeof(spec), "record=%s", p);
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = state;
	CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("cuda"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_install_cuda(&x->ctx, &in, x->j, &x->res);
	x->effects = x->j->n_effects;
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 ? "failed" : "done", x->r < 0 ? 1 : 0), 0);
	gb_journal_free(x->j);
	gb_root_free(x->ctx.root);
	gb_ops_fake_free(x->ctx.ops);
	x->record = NULL;
	(void)gb_read_file(p, 1 << 20, &x->record, &(size_t){ 0 });
}

static bool exists(const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return access(p, F_OK) == 0;
}

static char *root_text(const char *rel)
{
	char p[4400], *t = NULL;
	size_t n;
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return gb_read_file(p, 1 << 20, &t, &n) < 0 ? NULL : t;
}

static bool tree_clean(void)
{
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "ls -A '%s/usr/local' | grep -q -e staging -e '\\.old-' -e '\\.cuda\\.link'",
	         rootdir);
	return system(cmd) != 0;
}

TEST(install)
{
	struct run x;
	char *t, want[4400];

	gen("a", "cuda_cudart:13.0.48 cuda_nvcc:13.0.48 libcublas:13.0.0.19");
	run_cuda(&x, "a", 0);
	CHECK_INT(x.r, 0);
	if (x.r < 0)
		fprintf(stderr, "cuda: %s\n", x.res.error);
	CHECK(x.res.tree_changed && x.res.link_changed && x.res.config_changed && x.res.ldconfig_ran);
	CHECK(!x.res.replaced);
	CHECK_STREQ(x.res.dir, "usr/local/cuda-13.0");
	CHECK_INT(x.res.files, 3 * 3 + 1);
	CHECK(exists("usr/local/cuda-13.0/targets/x86_64-linux/lib/libcuda_cudart.so.13.0.48"));
	CHECK(exists("usr/local/cuda-13.0/targets/x86_64-linux/include/libcublas.h"));
	CHECK(exists("usr/local/cuda-13.0/lib64/libcuda_cudart.so")); /* through the lib64 link and the .so link */
	CHECK(exists("usr/local/cuda-13.0/include/cuda_nvcc.h"));
	CHECK(exists("usr/local/cuda-13.0/bin/nvcc"));
	CHECK(exists("usr/local/cuda-13.0/share/doc/cuda_nvcc/LICENSE"));
	CHECK(exists("usr/local/cuda/bin/nvcc"));
	t = root_text("usr/local/cuda-13.0/.gpuboot-cuda");
	CHECK(t && strstr(t, "component cuda_cudart 13.0.48 ") != NULL);
	free(t);
	t = root_text("etc/ld.so.conf.d/gpuboot-cuda.conf");
	CHECK(t && strstr(t, "\n/usr/local/cuda-13.0/targets/x86_64-linux/lib\n") != NULL);
	free(t);
	t = root_text("etc/profile.d/gpuboot-cuda.sh");
	CHECK(t && strstr(t, "PATH=\"/usr/local/cuda-13.0/bin${PATH:+:$PATH}\"") != NULL &&
	      !strstr(t, "LD_LIBRARY_PATH=") && strstr(t, "not LD_LIBRARY_PATH") != NULL);
	free(t);
	snprintf(want, sizeof(want), "run chroot=%s ldconfig\n", rootdir);
	CHECK(x.record && strstr(x.record, want) != NULL);
	CHECK(tree_clean());
	free(x.record);

	/* again: zero effects, no ldconfig */
	run_cuda(&x, "a", 0);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.effects, 0);
	CHECK(!x.res.tree_changed && !x.res.link_changed && !x.res.config_changed && !x.res.ldconfig_ran);
	CHECK(!x.record || !strstr(x.record, "ldconfig"));
	free(x.record);

	/* other components: the tree is replaced whole */
	gen("b", "cuda_cudart:13.0.96 cuda_nvrtc:13.0.88");
	run_cuda(&x, "b", 1);
	CHECK_INT(x.r, 0);
	CHECK(x.res.tree_changed && x.res.replaced && !x.res.link_changed);
	CHECK_INT(x.res.threads, 1);
	CHECK(exists("usr/local/cuda-13.0/lib64/libcuda_nvrtc.so.13.0.88"));
	CHECK(!exists("usr/local/cuda-13.0/lib64/libcuda_cudart.so.13.0.48"));
	CHECK(!exists("usr/local/cuda-13.0/bin/nvcc"));
	CHECK(tree_clean());
	free(x.record);
}

/* Refusals leave the tree that was there. */
TEST(refused)
{
	struct run x;
	const char *sets[][2] = {
		{ "dup", "cuda_cudart:13.0.48 cuda_cccl:13.0.50:dup" },
		{ "out", "cuda_cudart:13.0.48 cuda_cccl:13.0.50:outside" },
		{ "climb", "cuda_cccl:13.0.50:climb" },
	};
	const int want[] = { -EEXIST, -EBADMSG, -EPERM };

	for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
		gen(sets[i][0], sets[i][1]);
		run_cuda(&x, sets[i][0], 0);
		CHECK_INT(x.r, want[i]);
		CHECK(exists("usr/local/cuda-13.0/lib64/libcuda_nvrtc.so.13.0.88"));
		CHECK(tree_clean());
		CHECK(!exists("tmp-nothing-written-outside") && !exists("usr/local/x"));
		free(x.record);
	}
}

/* A file size limit in the middle of the unpack: EFBIG, the path and the
 * space needed named, the old tree in place; then a rerun succeeds. */
TEST(space)
{
	struct run x;
	pid_t pid;
	int status;

	gen("big", "cuda_cudart:13.0.48 libcublas:13.0.0.19:big");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 256 * 1024, 256 * 1024 };
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		run_cuda(&x, "big", 0);
		CHECK_INT(x.r, -EFBIG);
		CHECK(strstr(x.res.error, "Failed to write ") != NULL);
		CHECK(strstr(x.res.error, "usr/local/.cuda-13.0.staging-") != NULL);
		CHECK(strstr(x.res.error, "libcublas") != NULL);
		CHECK(strstr(x.res.error, "need about 1 MiB") != NULL ||
		      strstr(x.res.error, "need about 2 MiB") != NULL);
		if (x.r != -EFBIG || !strstr(x.res.error, "need about"))
			fprintf(stderr, "space: %d %s\n", x.r, x.res.error);
		CHECK(x.res.needed > (1u << 20));
		free(x.record);
		_exit(unit_failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(exists("usr/local/cuda-13.0/lib64/libcuda_nvrtc.so.13.0.88"));
	CHECK(tree_clean());
	run_cuda(&x, "big", 0);
	CHECK_INT(x.r, 0);
	CHECK(exists("usr/local/cuda-13.0/lib64/liblibcublas.so.13.0.0.19"));
	CHECK(!exists("usr/local/cuda-13.0/lib64/libcuda_nvrtc.so.13.0.88"));
	free(x.record);
}

int main(void)
{
	char p[4400];
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(p, sizeof(p), "%s/root", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK(realpath(p, rootdir) != NULL);
	unit_run_tests();
	snprintf(p, sizeof(p), "rm -rf '%s'", base);
	if (system(p) != 0)
		fprintf(stderr, "cannot remove %s\n", base);
	UNIT_DONE();
}
