/* SPDX-License-Identifier: MIT */
/* The Container Toolkit's runtime configuration with the fake operations
 * and temporary roots: docker's daemon.json merged keeping every other key
 * byte for byte, a second pass that writes nothing, bad or hostile
 * daemon.json refused and left as it was; containerd's drop-in for
 * configuration versions 1, 2 and 3 with and without an imports entry
 * (the main file changed by that one entry only); CRI-O's drop-in; no
 * engine, nothing written; an image (no restart, units enabled by their
 * links) and a live machine (a restart only when something changed); the
 * CDI command and NVIDIA's refresh units. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "toolkit/ctk.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "shared/macro.h"
#include "shared/util.h"
#include "unit.h"

#define RT GB_CTK_RUNTIME_PATH

static char base[] = "/tmp/gpuboot-test-ctk.XXXXXX";
static const char *runtime_override; /* the next runs' in.runtime_path */
static char rootdir[4200];

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 4u << 20, &t, &n) < 0 ? NULL : t;
}

static char *slurp_root(const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return slurp(p);
}

static void put(const char *rel, const char *text)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	CHECK_INT(gb_write_file_atomic(p, text, strlen(text), 0644), 0);
}

static bool exists_root(const char *rel)
{
	char p[4400];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", rootdir, rel);
	return lstat(p, &st) == 0;
}

/* An empty root with the daemons named ("dockerd containerd crio podman"). */
static void make_root(const char *daemons)
{
	char p[4400], names[200];
	snprintf(p, sizeof(p), "rm -rf '%s/root' '%s/state' '%s/record'", base, base, base);
	CHECK_INT(system(p), 0);
	put("root/usr/bin/nvidia-ctk", "");
	gb_strscpy(names, sizeof(names), daemons);
	for (char *save = NULL, *n = strtok_r(names, " ", &save); n; n = strtok_r(NULL, " ", &save)) {
		snprintf(p, sizeof(p), "root/usr/bin/%s", n);
		put(p, "");
	}
	snprintf(p, sizeof(p), "%s/root", base);
	CHECK(realpath(p, rootdir) != NULL);
}

struct run {
	struct gb_ctx ctx;
	struct gb_journal *j;
	struct gb_ctk_result res;
	char state[4400];
	int r, r_cdi;
	char *record;
	unsigned effects;
};

/* configure, then (when cdi) the CDI step, as the install stage runs them. */
static void run_ctk(struct run *x, const char *extra_spec, bool image, bool set_default, bool cdi)
{
	struct gb_ctk_input in = { .image = image, .set_default = set_default, .runtime_path = runtime_override };
	json_object *plan = json_object_new_object();
	char err[512], p[4400], spec[4400];

	memset(x, 0, sizeof(*x));
	snprintf(x->state, sizeof(x->state), "%s/state", base);
	snprintf(spec, sizeof(spec), "record=%s/record,clock:1000000000%s%s", base, extra_spec ? "," : "",
	         extra_spec ? extra_spec : "");
	x->ctx.opt.root = rootdir;
	x->ctx.opt.state_dir = x->state;
	CHECK_INT(gb_ops_fake_new(spec, &x->ctx.ops), 0);
	CHECK_INT(gb_root_open(rootdir, &x->ctx.root), 0);
	json_object_object_add(plan, "test", json_object_new_string("ctk"));
	CHECK_INT(gb_journal_open(&x->ctx, plan, "run", &x->j, err, sizeof(err)), 0);
	json_object_put(plan);
	x->r = gb_ctk_configure(&x->ctx, x->j, &in, &x->res);
	if (x->r >= 0 && cdi)
		x->r_cdi = gb_ctk_cdi(&x->ctx, x->j, &in, &x->res);
	x->effects = x->j->n_effects;
	CHECK_INT(gb_journal_finish(x->j, x->r < 0 || x->r_cdi < 0 ? "failed" : "done", 0), 0);
	snprintf(p, sizeof(p), "%s/record", base);
	x->record = slurp(p);
	if (!x->record)
		x->record = strdup("");
	/* a fresh record for the next run */
	unlink(p);
}

static void run_done(struct run *x)
{
	gb_journal_free(x->j);
	gb_root_free(x->ctx.root);
	gb_ops_fake_free(x->ctx.ops);
	free(x->record);
}

static const struct gb_ctk_engine_result *engine(const struct run *x, const char *name)
{
	for (size_t i = 0; i < x->res.n_engines; i++)
		if (streq(x->res.engines[i].name, name))
			return &x->res.engines[i];
	return NULL;
}

/* ---- docker ---- */

/* Written as json-c writes it, so the merge's output is this text with the
 * runtime added at the end, and nothing else moved by a byte. */
static const char daemon_json[] = "{\n"
                                  "  \"log-driver\": \"json-file\",\n"
                                  "  \"log-opts\": {\n"
                                  "    \"max-size\": \"100m\",\n"
                                  "    \"max-file\": \"3\"\n"
                                  "  },\n"
                                  "  \"registry-mirrors\": [\n"
                                  "    \"https://mirror.gcr.io\",\n"
                                  "    \"https://registry.example.com:5000/v2/\"\n"
                                  "  ],\n"
                                  "  \"exec-opts\": [\n"
                                  "    \"native.cgroupdriver=systemd\"\n"
                                  "  ],\n"
                                  "  \"storage-driver\": \"overlay2\",\n"
                                  "  \"default-shm-size\": \"1G\",\n"
                                  "  \"max-concurrent-downloads\": 10,\n"
                                  "  \"shutdown-timeout\": 1.50,\n"
                                  "  \"labels\": [\n"
                                  "    \"zone=eu \\\"quoted\\\" caf\xc3\xa9\"\n"
                                  "  ],\n"
                                  "  \"features\": {\n"
                                  "    \"buildkit\": true\n"
                                  "  }\n"
                                  "}\n";

TEST(docker_merge)
{
	char *out = NULL, *again = NULL, err[300], expect[4096];
	size_t len = 0, len2 = 0;
	const char *tail = ",\n"
	                   "  \"runtimes\": {\n"
	                   "    \"nvidia\": {\n"
	                   "      \"path\": \"" RT "\",\n"
	                   "      \"args\": []\n"
	                   "    }\n"
	                   "  }\n"
	                   "}\n";

	CHECK_INT(gb_ctk_docker_merge(daemon_json, strlen(daemon_json), RT, false, &out, &len, err, sizeof(err)), 0);
	/* byte for byte: the input less its closing "\n}\n", then the runtime */
	snprintf(expect, sizeof(expect), "%.*s%s", (int)(strlen(daemon_json) - 3), daemon_json, tail);
	CHECK_STREQ(out, expect);
	CHECK(out && len == strlen(out));
	/* every key and value of the input, as JSON */
	json_object *a = NULL, *b = NULL;
	CHECK_INT(gb_json_parse(daemon_json, strlen(daemon_json), 32, &a), 0);
	CHECK_INT(gb_json_parse(out ? out : "", out ? len : 0, 32, &b), 0);
	json_object_object_foreach(a, k, v) CHECK(json_object_equal(v, gb_json_get(b, k)));
	CHECK_STREQ(gb_json_get_str(gb_json_get(gb_json_get(b, "runtimes"), "nvidia"), "path"), RT);
	CHECK(gb_json_get(b, "default-runtime") == NULL);
	json_object_put(a);
	json_object_put(b);
	/* a second pass: nothing to write */
	CHECK_INT(gb_ctk_docker_merge(out, len, RT, false, &again, &len2, err, sizeof(err)), 0);
	CHECK(again == NULL);
	free(out);
	out = NULL;

	/* what nvidia-ctk writes (other order, four spaces) is in place too */
	const char *ctk = "{\n    \"runtimes\": {\n        \"nvidia\": {\n            \"args\": [],\n"
	                  "            \"path\": \"/usr/bin/nvidia-container-runtime\"\n        }\n    }\n}\n";
	CHECK_INT(gb_ctk_docker_merge(ctk, strlen(ctk), RT, false, &out, &len, err, sizeof(err)), 0);
	CHECK(out == NULL);
	/* set_default adds default-runtime; another runtime and its place stay */
	const char *other = "{\"runtimes\":{\"runsc\":{\"path\":\"/usr/bin/runsc\"},\"nvidia\":{\"path\":\"/old\"}},"
	                    "\"debug\":false}";
	CHECK_INT(gb_ctk_docker_merge(other, strlen(other), RT, true, &out, &len, err, sizeof(err)), 0);
	CHECK_STREQ(out, "{\n"
	                 "  \"runtimes\": {\n"
	                 "    \"runsc\": {\n"
	                 "      \"path\": \"/usr/bin/runsc\"\n"
	                 "    },\n"
	                 "    \"nvidia\": {\n"
	                 "      \"path\": \"" RT "\",\n"
	                 "      \"args\": []\n"
	                 "    }\n"
	                 "  },\n"
	                 "  \"debug\": false,\n"
	                 "  \"default-runtime\": \"nvidia\"\n"
	                 "}\n");
	free(out);
	out = NULL;
	/* empty: {} */
	CHECK_INT(gb_ctk_docker_merge(" \n", 2, RT, false, &out, &len, err, sizeof(err)), 0);
	CHECK(out && strstr(out, "\"nvidia\"") != NULL);
	free(out);
	out = NULL;

	/* refused, each with its reason */
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "{\"log-driver\": \"json-file\",\n \"debug\": tru }", "line 2 column" },
		{ "{\"a\": 1,}", "not JSON" },
		{ "{\"a\": 1} {\"b\": 2}", "not JSON" },
		{ "{/* comment */ \"a\": 1}", "not JSON" },
		{ "{\"a\": 1", "ends inside" },
		{ "[1, 2]", "top level is not a JSON object" },
		{ "\"runtimes\"", "top level is not a JSON object" },
		{ "{\"runtimes\": [\"nvidia\"]}", "\"runtimes\" is not a JSON object" },
		{ "{\"max-concurrent-uploads\": 123456789012345678901}", "19 digits" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		CHECK_INT(
		    gb_ctk_docker_merge(bad[i].text, strlen(bad[i].text), RT, false, &out, &len, err, sizeof(err)),
		    -EINVAL);
		CHECK(out == NULL);
		CHECK(strstr(err, bad[i].why) != NULL);
		if (!strstr(err, bad[i].why))
			fprintf(stderr, "  %zu: %s\n", i, err);
	}
}

TEST(docker_stage)
{
	struct run x;
	char *t;
	char p[4400];
	struct stat st;

	/* merged, mode kept, docker reloaded once; the rerun changes nothing */
	make_root("dockerd");
	put("root/etc/docker/daemon.json", daemon_json);
	snprintf(p, sizeof(p), "%s/etc/docker/daemon.json", rootdir);
	CHECK_INT(chmod(p, 0600), 0);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK(engine(&x, "docker")->present && engine(&x, "docker")->changed && engine(&x, "docker")->restarted);
	CHECK(!engine(&x, "containerd")->present && !engine(&x, "cri-o")->present);
	CHECK(strstr(x.record, "systemctl try-reload-or-restart docker.service\n") != NULL);
	CHECK_INT(x.effects, 2);
	t = slurp_root("etc/docker/daemon.json");
	CHECK(t && strstr(t, "\"log-driver\": \"json-file\"") && strstr(t, "\"nvidia\""));
	free(t);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	run_done(&x);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK(!engine(&x, "docker")->changed && !engine(&x, "docker")->restarted);
	CHECK(strstr(x.record, "systemctl") == NULL);
	CHECK_INT(x.effects, 0);
	run_done(&x);

	/* bad JSON: refused, named, the file as it was, no restart */
	static const char broken[] = "{\n  \"log-driver\": \"json-file\",\n  \"debug\": true,\n}\n";
	make_root("dockerd containerd");
	put("root/etc/docker/daemon.json", broken);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, -EINVAL);
	CHECK(strstr(x.res.error, "etc/docker/daemon.json") && strstr(x.res.error, "line 4 column 1"));
	CHECK(strstr(x.res.error, "never overwrites") != NULL);
	t = slurp_root("etc/docker/daemon.json");
	CHECK_STREQ(t, broken);
	free(t);
	CHECK(strstr(x.record, "systemctl") == NULL);
	CHECK_INT(x.effects, 0);
	run_done(&x);

	/* more than 1 MiB: refused unread */
	make_root("dockerd");
	{
		size_t n = GB_CTK_CONFIG_MAX + 10;
		char *big = malloc(n + 1);
		CHECK(big != NULL);
		if (big) {
			memset(big, ' ', n);
			big[0] = '{', big[n - 1] = '}', big[n] = '\0';
			put("root/etc/docker/daemon.json", big);
			free(big);
		}
	}
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, -EFBIG);
	CHECK(strstr(x.res.error, "larger than") != NULL);
	run_done(&x);

	/* a link (here to the host's /etc/passwd): refused, never followed */
	make_root("dockerd");
	snprintf(p, sizeof(p), "%s/etc/docker", rootdir);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc/docker/daemon.json", rootdir);
	CHECK_INT(symlink("/etc/passwd", p), 0);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, -ELOOP);
	CHECK(strstr(x.res.error, "symbolic link") && strstr(x.res.error, "/etc/passwd"));
	CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
	run_done(&x);
}

/* ---- containerd ---- */

static const char ctd_v2[] = "version = 2\n"
                             "root = \"/var/lib/containerd\"\n"
                             "state = \"/run/containerd\"\n"
                             "\n"
                             "[grpc]\n"
                             "  address = \"/run/containerd/containerd.sock\"\n"
                             "\n"
                             "[plugins]\n"
                             "\n"
                             "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
                             "    sandbox_image = \"registry.k8s.io/pause:3.9\" # the kubelet's\n"
                             "    enable_cdi = false\n"
                             "\n"
                             "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                             "      default_runtime_name = \"runc\"\n"
                             "      snapshotter = \"overlayfs\"\n"
                             "\n"
                             "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
                             "\n"
                             "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
                             "          runtime_type = \"io.containerd.runc.v2\"\n"
                             "          privileged_without_host_devices = false\n"
                             "          pod_annotations = [\n"
                             "            \"a\", # first\n"
                             "            \"b\",\n"
                             "          ]\n"
                             "\n"
                             "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
                             "            BinaryName = \"\"\n"
                             "            SystemdCgroup = true\n"
                             "\n"
                             "    [plugins.\"io.containerd.grpc.v1.cri\".registry]\n"
                             "      config_path = \"/etc/containerd/certs.d\"\n"
                             "\n"
                             "  [plugins.\"io.containerd.internal.v1.opt\"]\n"
                             "    path = \"/opt/containerd\"\n";

#define HEAD_COMMENT                                                                         \
	"# Written by gpuboot: the NVIDIA Container Runtime for containerd's CRI plugin,\n"  \
	"# read through the imports entry of /etc/containerd/config.toml. To undo: remove\n" \
	"# this file, then systemctl restart containerd (docs/container-toolkit.md).\n"
#define COPY_COMMENT                                                                        \
	"# containerd 1.x replaces a plugin's whole section with an imported file's, so\n"  \
	"# the CRI plugin's tables of config.toml are copied here: change them there and\n" \
	"# run gpuboot again, which copies them anew.\n"

static const char ctd_v2_dropin[] =
    HEAD_COMMENT COPY_COMMENT "version = 2\n"
                              "\n"
                              "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
                              "    sandbox_image = \"registry.k8s.io/pause:3.9\" # the kubelet's\n"
                              "    enable_cdi = false\n"
                              "\n"
                              "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                              "      default_runtime_name = \"runc\"\n"
                              "      snapshotter = \"overlayfs\"\n"
                              "\n"
                              "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
                              "\n"
                              "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
                              "          runtime_type = \"io.containerd.runc.v2\"\n"
                              "          privileged_without_host_devices = false\n"
                              "          pod_annotations = [\n"
                              "            \"a\", # first\n"
                              "            \"b\",\n"
                              "          ]\n"
                              "\n"
                              "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
                              "            BinaryName = \"\"\n"
                              "            SystemdCgroup = true\n"
                              "\n"
                              "    [plugins.\"io.containerd.grpc.v1.cri\".registry]\n"
                              "      config_path = \"/etc/containerd/certs.d\"\n"
                              "\n"
                              "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                              "  runtime_type = \"io.containerd.runc.v2\"\n"
                              "  privileged_without_host_devices = false\n"
                              "  pod_annotations = [\n"
                              "            \"a\", # first\n"
                              "            \"b\",\n"
                              "          ]\n"
                              "\n"
                              "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                              "  BinaryName = \"" RT "\"\n"
                              "  SystemdCgroup = true\n";

static const char ctd_v3[] = "version = 3\n"
                             "root = '/var/lib/containerd'\n"
                             "\n"
                             "[plugins]\n"
                             "  [plugins.'io.containerd.cri.v1.images']\n"
                             "    snapshotter = 'overlayfs'\n"
                             "\n"
                             "  [plugins.'io.containerd.cri.v1.runtime']\n"
                             "    enable_cdi = true\n"
                             "\n"
                             "    [plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
                             "      default_runtime_name = 'crun'\n"
                             "\n"
                             "      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]\n"
                             "        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
                             "          runtime_type = 'io.containerd.runc.v2'\n"
                             "          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
                             "            SystemdCgroup = false\n"
                             "        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun]\n"
                             "          runtime_type = 'io.containerd.runc.v2'\n"
                             "          sandboxer = 'podsandbox'\n"
                             "          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun.options]\n"
                             "            BinaryName = '/usr/bin/crun'\n"
                             "            SystemdCgroup = true\n";

static const char ctd_v3_dropin[] = HEAD_COMMENT "version = 3\n"
                                                 "\n"
                                                 "[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
                                                 "  default_runtime_name = \"nvidia\"\n"
                                                 "\n"
                                                 "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes."
                                                 "nvidia]\n"
                                                 "  runtime_type = 'io.containerd.runc.v2'\n"
                                                 "  sandboxer = 'podsandbox'\n"
                                                 "\n"
                                                 "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes."
                                                 "nvidia.options]\n"
                                                 "  BinaryName = \"" RT "\"\n"
                                                 "  SystemdCgroup = true\n";

#define IMPORT_LINE "imports = [\"/etc/containerd/conf.d/*.toml\"]\n"

TEST(containerd_build)
{
	struct gb_ctk_containerd c;
	char err[600], *main = NULL;

	/* version 2 (containerd 1.x): the CRI tables copied, the runtime
	 * takes runc's settings, the main file gets the one imports line */
	CHECK_INT(gb_ctk_containerd_build(ctd_v2, strlen(ctd_v2), 0, RT, false, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 2);
	CHECK_STREQ(c.version_from, "config");
	CHECK_STREQ(c.dropin, ctd_v2_dropin);
	if (asprintf(&main, IMPORT_LINE "%s", ctd_v2) > 0)
		CHECK_STREQ(c.main, main);
	free(main);
	gb_ctk_containerd_done(&c);

	/* the same, nvidia the default: runc's default_runtime_name gives way */
	CHECK_INT(gb_ctk_containerd_build(ctd_v2, strlen(ctd_v2), 0, RT, true, &c, err, sizeof(err)), 0);
	CHECK(c.dropin &&
	      strstr(c.dropin, "containerd]\n  default_runtime_name = \"nvidia\"\n      snapshotter") != NULL);
	CHECK(c.dropin && !strstr(c.dropin, "\"runc\"\n"));
	gb_ctk_containerd_done(&c);

	/* configured before by nvidia-ctk in config.toml itself: its nvidia
	 * tables (and a dotted key into them) are not copied twice */
	{
		const char *reg = "    [plugins.\"io.containerd.grpc.v1.cri\".registry]";
		const char *old =
		    "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
		    "          runtime_type = \"io.containerd.runc.v2\"\n"
		    "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
		    "            BinaryName = \"/usr/bin/nvidia-container-runtime\"\n\n";
		const char *at = strstr(ctd_v2, reg), *rts = strstr(ctd_v2, "containerd.runtimes]\n");
		char *t = NULL, *u = NULL;
		CHECK(at && rts);
		CHECK(asprintf(&t, "%.*s%s%s", (int)(at - ctd_v2), ctd_v2, old, at) > 0);
		size_t cut = (size_t)(rts - ctd_v2) + strlen("containerd.runtimes]\n");
		CHECK(asprintf(&u, "%.*s  nvidia.privileged_without_host_devices = true\n%s", (int)cut, t, t + cut) >
		      0);
		CHECK_INT(gb_ctk_containerd_build(u, strlen(u), 0, RT, false, &c, err, sizeof(err)), 0);
		CHECK_STREQ(c.dropin, ctd_v2_dropin);
		gb_ctk_containerd_done(&c);
		free(t);
		free(u);
	}

	/* imports already covering the drop-in (relative, and as a glob): the main file stays */
	static const char *const covering[] = { "imports = [\"/etc/containerd/conf.d/*.toml\"]\n",
		                                "imports = ['conf.d/*.toml']\n",
		                                "imports = [\"/etc/containerd/conf.d/99-nvidia.toml\"]\n" };
	for (size_t i = 0; i < ARRAY_SIZE(covering); i++) {
		char *t = NULL;
		CHECK(asprintf(&t, "%s%s", covering[i], ctd_v2) > 0);
		CHECK_INT(gb_ctk_containerd_build(t, strlen(t), 0, RT, false, &c, err, sizeof(err)), 0);
		CHECK(c.main == NULL && c.dropin != NULL);
		gb_ctk_containerd_done(&c);
		free(t);
	}
	/* imports of other files: the entry appended in the array, nothing else moved */
	static const char *const other[][2] = {
		{ "version = 3\nimports = ['/etc/containerd/other/*.toml'] # site\n",
		  "version = 3\nimports = ['/etc/containerd/other/*.toml', \"/etc/containerd/conf.d/*.toml\"] # "
		  "site\n" },
		{ "version = 3\nimports = [\n  \"/a.toml\",\n]\n",
		  "version = 3\nimports = [\n  \"/a.toml\", \"/etc/containerd/conf.d/*.toml\",\n]\n" },
		{ "version = 3\nimports = []\n", "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(other); i++) {
		CHECK_INT(gb_ctk_containerd_build(other[i][0], strlen(other[i][0]), 0, RT, false, &c, err, sizeof(err)),
		          0);
		CHECK_STREQ(c.main, other[i][1]);
		gb_ctk_containerd_done(&c);
	}

	/* version 3 (containerd 2.x): the runtime alone, from the default (crun) */
	CHECK_INT(gb_ctk_containerd_build(ctd_v3, strlen(ctd_v3), 0, RT, true, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 3);
	CHECK_STREQ(c.dropin, ctd_v3_dropin);
	if (asprintf(&main, IMPORT_LINE "%s", ctd_v3) > 0)
		CHECK_STREQ(c.main, main);
	free(main);
	gb_ctk_containerd_done(&c);

	/* no main file: a minimal one, the version from the binary */
	CHECK_INT(gb_ctk_containerd_build(NULL, 0, 2, RT, false, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 3);
	CHECK_STREQ(c.version_from, "binary");
	CHECK(c.main && strstr(c.main, "\nversion = 3\n" IMPORT_LINE) != NULL);
	CHECK(c.dropin && strstr(c.dropin, "version = 3\n") &&
	      strstr(c.dropin,
	             "cri.v1.runtime\".containerd.runtimes.nvidia]\n  runtime_type = \"io.containerd.runc.v2\"\n"));
	gb_ctk_containerd_done(&c);
	CHECK_INT(gb_ctk_containerd_build(NULL, 0, 0, RT, false, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 2);
	CHECK_STREQ(c.version_from, "default");
	CHECK(c.dropin && strstr(c.dropin, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"));
	gb_ctk_containerd_done(&c);
	CHECK_INT(gb_ctk_containerd_build("# only a comment\n", 17, 1, RT, false, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 2);
	CHECK_STREQ(c.main, IMPORT_LINE "# only a comment\n");
	gb_ctk_containerd_done(&c);

	/* docker's containerd.io: CRI disabled (and no version line): nothing to declare */
	static const char dockers[] = "#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = [\"cri\"]\n\n"
	                              "#root = \"/var/lib/containerd\"\n";
	CHECK_INT(gb_ctk_containerd_build(dockers, strlen(dockers), 2, RT, false, &c, err, sizeof(err)), 0);
	CHECK(c.cri_disabled && c.main == NULL && c.dropin == NULL);
	gb_ctk_containerd_done(&c);
	/* version 1 (no version line): the old plugin name, no version in the drop-in */
	static const char v1[] = "root = \"/var/lib/containerd\"\n[plugins.cri]\n  sandbox_image = \"p:1\"\n";
	CHECK_INT(gb_ctk_containerd_build(v1, strlen(v1), 2, RT, false, &c, err, sizeof(err)), 0);
	CHECK_INT(c.version, 1);
	CHECK(c.dropin && !strstr(c.dropin, "version =") &&
	      strstr(c.dropin, "[plugins.cri]\n  sandbox_image = \"p:1\"\n") &&
	      strstr(c.dropin, "[plugins.cri.containerd.runtimes.nvidia]\n"));
	if (asprintf(&main, IMPORT_LINE "%s", v1) > 0)
		CHECK_STREQ(c.main, main);
	free(main);
	gb_ctk_containerd_done(&c);

	/* refused: not TOML (with its line), a version from the future, a
	 * CRI setting the copy cannot carry, imports that are not strings */
	static const struct {
		const char *text;
		int r;
		const char *why;
	} bad[] = {
		{ "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"\n", -EINVAL, "line 2" },
		{ "version = 2\nroot = \"/var/lib\n", -EINVAL, "line 2: a string is not closed" },
		{ "version = 2\nx = [1, 2\n", -EINVAL, "line 3" },
		{ "version = 9\n", -EOPNOTSUPP, "version 9" },
		{ "version = \"2\"\n", -EINVAL, "not a configuration version" },
		{ "version = 2\n[plugins]\n\"io.containerd.grpc.v1.cri\".sandbox_image = \"p\"\n", -EOPNOTSUPP,
		  "line 3: the CRI plugin is set by a dotted key" },
		{ "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = {}\n", -EOPNOTSUPP,
		  "given as a value" },
		{ "version = 2\nimports = [1]\n", -EINVAL, "not an array of strings" },
		{ "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\noptions = { a = 1 "
		  "}\n",
		  -EOPNOTSUPP, "inline table" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		CHECK_INT(gb_ctk_containerd_build(bad[i].text, strlen(bad[i].text), 0, RT, false, &c, err, sizeof(err)),
		          bad[i].r);
		CHECK(c.main == NULL && c.dropin == NULL);
		CHECK(strstr(err, bad[i].why) != NULL);
		if (!strstr(err, bad[i].why))
			fprintf(stderr, "  %zu: %s\n", i, err);
	}
	/* TOML the reader must take: strings of every kind, dates, inline tables */
	static const char odd[] = "version = 3\n"
	                          "a = \"\"\"multi\n\"line\" \\\"\"\"\" \n"
	                          "b = '''lit\n'''\n"
	                          "c = 1979-05-27 07:32:00Z\n"
	                          "d = { x = 1, y = [ { z = 'q' } ] }\n"
	                          "\"e.f\" = \"\\u00e9\\U0001F600\"\n"
	                          "[t . \"u\" . v]\n"
	                          "w = +1_000\n"
	                          "[[arr]]\n"
	                          "n = -0.5e3\n";
	CHECK_INT(gb_ctk_containerd_build(odd, strlen(odd), 0, RT, false, &c, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "  odd: %s\n", err);
	gb_ctk_containerd_done(&c);

	CHECK_INT(gb_ctk_containerd_major("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n"),
	          1);
	CHECK_INT(gb_ctk_containerd_major("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7\n"), 2);
	CHECK_INT(gb_ctk_containerd_major("containerd github.com/containerd/containerd 1.6.12-0ubuntu1\n"), 1);
	CHECK_INT(gb_ctk_containerd_major("bash: containerd: not found\n"), 0);
}

TEST(containerd_stage)
{
	struct run x;
	char *t, spec[4400];

	/* version 2, no imports: the drop-in, the one line, a restart; the rerun nothing */
	make_root("containerd");
	put("root/etc/containerd/config.toml", ctd_v2);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK(engine(&x, "containerd")->changed && engine(&x, "containerd")->restarted);
	CHECK_STREQ(engine(&x, "containerd")->main_config, GB_CTK_CONTAINERD_CONFIG);
	CHECK(strstr(x.record, "systemctl try-restart containerd.service\n") != NULL);
	CHECK(strstr(x.record, "--version") == NULL); /* the main file names its version */
	t = slurp_root(GB_CTK_CONTAINERD_DROPIN);
	CHECK_STREQ(t, ctd_v2_dropin);
	free(t);
	t = slurp_root(GB_CTK_CONTAINERD_CONFIG);
	CHECK(t && strneq(t, IMPORT_LINE, strlen(IMPORT_LINE)) && streq(t + strlen(IMPORT_LINE), ctd_v2));
	free(t);
	CHECK_INT(x.effects, 3);
	run_done(&x);
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK(!engine(&x, "containerd")->changed && !engine(&x, "containerd")->restarted);
	CHECK(strstr(x.record, "systemctl") == NULL);
	CHECK_INT(x.effects, 0);
	run_done(&x);

	/* docker with containerd.io (CRI disabled): daemon.json only, containerd left alone */
	make_root("dockerd containerd");
	put("root/etc/containerd/config.toml", "disabled_plugins = [\"cri\"]\n");
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK(engine(&x, "docker")->changed && !engine(&x, "containerd")->changed);
	CHECK(engine(&x, "containerd")->note && strstr(engine(&x, "containerd")->note, "CRI plugin is disabled"));
	CHECK(!exists_root(GB_CTK_CONTAINERD_DROPIN));
	t = slurp_root(GB_CTK_CONTAINERD_CONFIG);
	CHECK_STREQ(t, "disabled_plugins = [\"cri\"]\n");
	free(t);
	CHECK(strstr(x.record, "containerd.service") == NULL);
	run_done(&x);

	/* no main file, containerd 2.x: a minimal version 3 one */
	make_root("containerd");
	put("out/version", "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7\n");
	snprintf(spec, sizeof(spec), "command:/usr/bin/containerd --version:0:%s/out/version", base);
	run_ctk(&x, spec, true, false, false);
	CHECK_INT(x.r, 0);
	CHECK_INT(engine(&x, "containerd")->config_version, 3);
	CHECK_STREQ(engine(&x, "containerd")->version_from, "binary");
	CHECK(strstr(x.record, "/usr/bin/containerd --version") != NULL);
	t = slurp_root(GB_CTK_CONTAINERD_CONFIG);
	CHECK(t && strstr(t, "\nversion = 3\n" IMPORT_LINE));
	free(t);
	CHECK(strstr(x.record, "systemctl") == NULL); /* an image */
	run_done(&x);
}

/* ---- CRI-O, no engine, the whole stage ---- */

TEST(crio)
{
	char *t = gb_ctk_crio_dropin(RT, false), *u = gb_ctk_crio_dropin(RT, true);
	CHECK(t &&
	      strstr(t, "\n[crio.runtime.runtimes.nvidia]\n"
	                "runtime_path = \"" RT "\"\n"
	                "runtime_type = \"oci\"\n") &&
	      !strstr(t, "default_runtime"));
	CHECK(u && strstr(u, "[crio.runtime]\ndefault_runtime = \"nvidia\"\n\n[crio.runtime.runtimes.nvidia]\n"));
	free(t);
	free(u);
}

TEST(no_engine)
{
	struct run x;
	make_root("");
	run_ctk(&x, NULL, false, false, false);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.effects, 0);
	CHECK(!exists_root("etc"));
	CHECK(strstr(x.record, "systemctl") == NULL && strstr(x.record, "run ") == NULL);
	CHECK_INT(x.res.n_engines, 4);
	for (size_t i = 0; i < x.res.n_engines; i++)
		CHECK(!x.res.engines[i].present && !x.res.engines[i].changed);
	run_done(&x);
}

TEST(image)
{
	struct run x;
	char *t;
	make_root("dockerd containerd crio podman");
	put("root/etc/containerd/config.toml", ctd_v3);
	run_ctk(&x, NULL, true, false, true);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.r_cdi, 0);
	CHECK(x.res.image);
	for (size_t i = 0; i < 3; i++)
		CHECK(x.res.engines[i].present && x.res.engines[i].changed && !x.res.engines[i].restarted);
	CHECK(engine(&x, "podman")->present && !engine(&x, "podman")->changed && !engine(&x, "podman")->config[0]);
	CHECK(strstr(x.record, "systemctl") == NULL);
	CHECK(strstr(x.record, "nvidia-ctk") == NULL); /* nothing is generated in an image */
	t = slurp_root(GB_CTK_CRIO_DROPIN);
	CHECK(t && strstr(t, "runtime_path = \"" RT "\""));
	free(t);
	/* gpuboot-cdi.service, enabled by its link */
	t = slurp_root(GB_CTK_CDI_UNIT_PATH);
	CHECK_STREQ(t, gb_ctk_cdi_unit_text());
	free(t);
	CHECK(strstr(gb_ctk_cdi_unit_text(),
	             "ExecStart=/usr/bin/nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\n"));
	{
		char p[4400], target[256] = "";
		snprintf(p, sizeof(p), "%s/etc/systemd/system/multi-user.target.wants/gpuboot-cdi.service", rootdir);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		CHECK(n > 0);
		if (n > 0)
			target[n] = '\0';
		CHECK_STREQ(target, "/etc/systemd/system/gpuboot-cdi.service");
	}
	CHECK_STREQ(x.res.cdi_unit, "gpuboot-cdi.service");
	CHECK_STREQ(x.res.cdi_spec, "/etc/cdi/nvidia.yaml");
	CHECK(x.res.cdi_changed && !x.res.cdi_generated && !x.res.cdi_refresh);
	/* the status document's view */
	json_object *o = gb_ctk_result_to_json(&x.res);
	char *text = NULL;
	CHECK_INT(gb_json_text(o, 0, &text), 0);
	CHECK(text && strstr(text, "\"name\":\"containerd\"") && strstr(text, "\"config_version\":3") &&
	      strstr(text, "\"unit\":\"gpuboot-cdi.service\""));
	free(text);
	json_object_put(o);
	run_done(&x);

	/* the rerun: no effect */
	run_ctk(&x, NULL, true, false, true);
	CHECK_INT(x.r, 0);
	CHECK_INT(x.r_cdi, 0);
	CHECK_INT(x.effects, 0);
	CHECK(!x.res.cdi_changed);
	run_done(&x);
}

TEST(cdi_live)
{
	struct run x;
	char spec[200];

	/* live, no refresh units: the spec generated now, gpuboot-cdi.service for the boots after */
	make_root("podman");
	run_ctk(&x, NULL, false, false, true);
	CHECK_INT(x.r_cdi, 0);
	CHECK(strstr(x.record, "run nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\n") != NULL);
	CHECK(x.res.cdi_generated);
	run_done(&x);
	/* generated and naming the loaded driver: nothing to do */
	put("root/sys/module/nvidia/version", "580.95.05\n");
	put("root/etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n"
	                                "  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05\n");
	run_ctk(&x, NULL, false, false, true);
	CHECK_INT(x.r_cdi, 0);
	CHECK(strstr(x.record, "nvidia-ctk") == NULL);
	CHECK_INT(x.effects, 0);
	run_done(&x);
	/* a new driver: generated again */
	put("root/sys/module/nvidia/version", "580.105.08\n");
	run_ctk(&x, NULL, false, false, true);
	CHECK(strstr(x.record, "run nvidia-ctk cdi generate") != NULL);
	run_done(&x);
	/* nvidia-ctk fails: the stage fails with its output */
	put("out/gen", "nvidia-ctk: failed to initialize NVML: Driver Not Loaded\n");
	snprintf(spec, sizeof(spec), "command:nvidia-ctk cdi generate:1:%s/out/gen", base);
	run_ctk(&x, spec, false, false, true);
	CHECK_INT(x.r_cdi, -EIO);
	CHECK(strstr(x.res.error, "Driver Not Loaded") != NULL);
	run_done(&x);

	/* NVIDIA's refresh units (1.18 put them in /etc/systemd/system, later in
	 * /lib): both enabled, the spec where the service writes it (here as
	 * its environment file changes it), no gpuboot unit */
	make_root("");
	put("root/lib/systemd/system/nvidia-cdi-refresh.service",
	    "[Unit]\nDescription=x\n[Service]\nType=oneshot\n[Install]\nWantedBy=multi-user.target\n");
	put("root/etc/systemd/system/nvidia-cdi-refresh.path", "[Path]\nPathChanged=/usr/bin/nvidia-ctk\n"
	                                                       "[Install]\nWantedBy=multi-user.target  "
	                                                       "paths.target\n");
	put("root/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env",
	    "# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/nope\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=\"/run/cdi/nvidia-gpus.yaml\"\n");
	run_ctk(&x, NULL, false, false, true);
	CHECK_INT(x.r_cdi, 0);
	CHECK(x.res.cdi_refresh);
	CHECK_STREQ(x.res.cdi_spec, "/run/cdi/nvidia-gpus.yaml");
	CHECK(!exists_root(GB_CTK_CDI_UNIT_PATH));
	CHECK(exists_root("etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.service"));
	CHECK(exists_root("etc/systemd/system/multi-user.target.wants/nvidia-cdi-refresh.path"));
	CHECK(exists_root("etc/systemd/system/paths.target.wants/nvidia-cdi-refresh.path"));
	CHECK(strstr(x.record, "systemctl start nvidia-cdi-refresh.path\n") != NULL);
	CHECK(strstr(x.record, "run nvidia-ctk cdi generate --output=/run/cdi/nvidia-gpus.yaml\n") != NULL);
	run_done(&x);

	/* no nvidia-ctk: named */
	make_root("");
	{
		char p[4400];
		snprintf(p, sizeof(p), "%s/usr/bin/nvidia-ctk", rootdir);
		unlink(p);
	}
	run_ctk(&x, NULL, false, false, true);
	CHECK_INT(x.r_cdi, -ENOENT);
	CHECK(strstr(x.res.error, "nvidia-container-toolkit-base") != NULL);
	run_done(&x);
}

TEST(live_restart_once)
{
	struct run x;
	/* every engine changed: each restarted (docker reloaded) once */
	make_root("dockerd containerd crio");
	run_ctk(&x, NULL, false, true, false);
	CHECK_INT(x.r, 0);
	CHECK(strstr(x.record, "systemctl try-reload-or-restart docker.service\n") != NULL);
	CHECK(strstr(x.record, "systemctl try-restart containerd.service\n") != NULL);
	CHECK(strstr(x.record, "systemctl try-restart crio.service\n") != NULL);
	run_done(&x);
	/* CRI-O's drop-in changed by hand: only CRI-O again */
	put("root/" GB_CTK_CRIO_DROPIN, "# edited\n");
	run_ctk(&x, NULL, false, true, false);
	CHECK_INT(x.r, 0);
	CHECK_STREQ(x.record, "systemctl try-restart crio.service\n");
	run_done(&x);
	/* a restart that fails: the stage fails, naming the engine and the file */
	put("root/" GB_CTK_CRIO_DROPIN, "# edited again\n");
	run_ctk(&x, "systemctl:try-restart:5", false, true, false);
	CHECK_INT(x.r, -EIO);
	CHECK(strstr(x.res.error, "cri-o") && strstr(x.res.error, GB_CTK_CRIO_DROPIN));
	run_done(&x);
	/* a bad runtime path is refused before anything is written */
	CHECK(!gb_ctk_path_valid("relative/path") && !gb_ctk_path_valid("/a/../b") && !gb_ctk_path_valid("/a\"b") &&
	      !gb_ctk_path_valid("/a b") && !gb_ctk_path_valid(NULL));
	CHECK(gb_ctk_path_valid(RT) && gb_ctk_path_valid("/opt/nvidia/bin/nvidia-container-runtime.cdi"));
	make_root("dockerd containerd crio");
	runtime_override = "/usr/bin/nvidia container runtime";
	run_ctk(&x, NULL, false, false, true);
	runtime_override = NULL;
	CHECK_INT(x.r, -EINVAL);
	CHECK(strstr(x.res.error, "runtime path") != NULL);
	CHECK_INT(x.effects, 0);
	CHECK(!exists_root("etc"));
	run_done(&x);
	/* another runtime path: in every file */
	runtime_override = "/opt/nvidia/bin/nvidia-container-runtime";
	run_ctk(&x, NULL, true, false, false);
	runtime_override = NULL;
	CHECK_INT(x.r, 0);
	for (size_t i = 0; i < 3; i++) {
		_cleanup_free_ char *t = slurp_root(x.res.engines[i].config);
		CHECK(t && strstr(t, "/opt/nvidia/bin/nvidia-container-runtime\""));
	}
	run_done(&x);
}

int main(void)
{
	char cmd[200];
	if (!mkdtemp(base))
		return 1;
	unit_run_tests();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		return 1;
	UNIT_DONE();
}
