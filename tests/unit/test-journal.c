/* SPDX-License-Identifier: MIT */
/* Writes under the root and the write-ahead journal: a write stays inside
 * the root whatever links the tree holds, a kernel without openat2 is a
 * refusal for an image root, every effect is recorded before and after,
 * and a rerun of the same plan skips what is done and changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/json-util.h"
#include "effect/root-write.h"
#include "unit.h"

static char base[] = "/tmp/gpuboot-test-journal.XXXXXX";

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 1u << 20, &t, &n) < 0 ? NULL : t;
}

TEST(root_write)
{
	struct gb_root *root = NULL;
	char p[4200], outside[4200];
	char *t;

	snprintf(p, sizeof(p), "%s/root", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK_INT(gb_root_open(p, &root), 0);
	if (!root)
		return;
	CHECK_INT(gb_root_write_file(root, "etc/modprobe.d/gpuboot.conf", "blacklist nouveau\n", 18, 0644), 0);
	snprintf(p, sizeof(p), "%s/root/etc/modprobe.d/gpuboot.conf", base);
	t = slurp(p);
	CHECK_STREQ(t, "blacklist nouveau\n");
	free(t);
	/* A temp copy a killed writer left is removed by the next write of that
	 * file; a name that only looks alike is not ours and stays. */
	snprintf(p, sizeof(p), "%s/root/etc/modprobe.d/.#gpuboot.conf.0000abcd", base);
	CHECK_INT(gb_write_file_atomic(p, "half", 4, 0644), 0);
	snprintf(outside, sizeof(outside), "%s/root/etc/modprobe.d/.#gpuboot.conf.keep", base);
	CHECK_INT(gb_write_file_atomic(outside, "x", 1, 0644), 0);
	CHECK_INT(gb_root_write_file(root, "etc/modprobe.d/gpuboot.conf", "blacklist nouveau\n", 18, 0644), 0);
	CHECK(access(p, F_OK) < 0);
	CHECK(access(outside, F_OK) == 0);

	/* A link out of the tree resolves inside it: the host is never written. */
	snprintf(outside, sizeof(outside), "%s/outside", base);
	CHECK_INT(gb_mkdir_p(outside, 0755), 0);
	snprintf(p, sizeof(p), "%s/root/etc/evil", base);
	CHECK(symlink(outside, p) == 0);
	CHECK(gb_root_write_file(root, "etc/evil/x.conf", "x", 1, 0644) < 0);
	snprintf(p, sizeof(p), "%s/x.conf", outside);
	CHECK(access(p, F_OK) < 0);
	snprintf(p, sizeof(p), "%s/root%s", base, outside);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK_INT(gb_root_write_file(root, "etc/evil/x.conf", "x", 1, 0644), 0);
	snprintf(p, sizeof(p), "%s/root%s/x.conf", base, outside);
	CHECK(access(p, F_OK) == 0);
	snprintf(p, sizeof(p), "%s/x.conf", outside);
	CHECK(access(p, F_OK) < 0);
	/* A final component that is a link is replaced, not followed. */
	snprintf(p, sizeof(p), "%s/root/etc/link.conf", base);
	CHECK(symlink("/etc/passwd", p) == 0);
	CHECK_INT(gb_root_write_file(root, "etc/link.conf", "y", 1, 0600), 0);
	t = slurp(p);
	CHECK_STREQ(t, "y");
	free(t);
	CHECK_INT(gb_root_unlink(root, "etc/link.conf"), 0);
	CHECK_INT(gb_root_unlink(root, "etc/link.conf"), 0);

	/* No openat2 and not the host's root: refused, never resolved outside. */
	root->have_openat2 = false;
	CHECK_INT(gb_root_write_file(root, "etc/other.conf", "z", 1, 0644), -EOPNOTSUPP);
	gb_root_free(root);
}

TEST(journal)
{
	struct gb_ctx ctx = { .ops = &gb_ops_real };
	struct gb_journal *j = NULL;
	json_object *plan = json_tokener_parse("{\"driver\": {\"version\": \"535.261.03\", \"reason\": \"r\"}, "
	                                       "\"date\": \"2026-12-01\"}");
	json_object *other = json_tokener_parse("{\"driver\": {\"version\": \"550.163.01\"}}");
	char root_path[4200], state[4200], err[512] = "", h1[65], h2[65];
	char *t;

	snprintf(root_path, sizeof(root_path), "%s/root", base);
	snprintf(state, sizeof(state), "%s/state", base);
	ctx.opt.state_dir = state;
	CHECK_INT(gb_root_open(root_path, &ctx.root), 0);

	/* Dates and reasons are not decisions: the same plan on another day. */
	CHECK_INT(gb_plan_hash(plan, h1), 0);
	json_object_object_add(plan, "date", json_object_new_string("2027-01-01"));
	CHECK_INT(gb_plan_hash(plan, h2), 0);
	CHECK_STREQ(h1, h2);
	/* nor are warnings: they age by the day (a catalog turns stale, a branch
	 * nears its end) while the decisions stand */
	json_object_object_add(plan, "warnings",
	                       json_tokener_parse("[{\"code\": \"catalog-stale\", \"text\": \"t\", \"fix\": \"f\"}]"));
	CHECK_INT(gb_plan_hash(plan, h2), 0);
	CHECK_STREQ(h1, h2);
	CHECK_INT(gb_plan_hash(other, h2), 0);
	CHECK(strcmp(h1, h2) != 0);
	/* What the machine is now is not the plan: a rerun after part of the work
	 * (install done, nouveau gone, a new kernel) finds the same plan. */
	{
		json_object *a = json_tokener_parse(
		    "{\"driver\": {\"version\": \"535.309.01\", \"module_flavor\": \"proprietary\", \"action\": "
		    "\"install\", "
		    "\"method\": \"distro\", \"packages\": [\"nvidia-kernel-dkms\"], \"installed\": null}, "
		    "\"target\": {\"os\": \"debian\", \"kernel\": \"6.1.0-50-amd64\"}, "
		    "\"nouveau\": {\"action\": \"unload\"}, \"kernel\": {\"action\": \"install-headers\"}}");
		json_object *b =
		    json_tokener_parse("{\"driver\": {\"version\": \"535.309.01\", \"module_flavor\": \"proprietary\", "
		                       "\"action\": \"keep\", "
		                       "\"method\": \"none\", \"installed\": {\"version\": \"535.309.01\"}}, "
		                       "\"target\": {\"os\": \"debian\", \"kernel\": \"6.12.95+bpo-amd64\"}, "
		                       "\"nouveau\": {\"action\": \"none\"}, \"kernel\": {\"action\": \"none\"}}");
		json_object *c = json_tokener_parse(
		    "{\"driver\": {\"version\": \"535.309.01\", \"module_flavor\": \"open\", \"action\": \"keep\"}, "
		    "\"target\": {\"os\": \"debian\"}}");
		char ha[65], hb[65], hc[65];
		CHECK_INT(gb_plan_hash(a, ha), 0);
		CHECK_INT(gb_plan_hash(b, hb), 0);
		CHECK_INT(gb_plan_hash(c, hc), 0);
		CHECK_STREQ(ha, hb);
		CHECK(strcmp(ha, hc) != 0); /* another flavour is another plan */
		json_object_put(a);
		json_object_put(b);
		json_object_put(c);
	}

	CHECK_INT(gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err)), 0);
	if (!j)
		return;
	CHECK(!j->resumed);
	CHECK_INT(gb_journal_write_file(j, "prepare", "etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n",
	                                18, 0644),
	          0);
	CHECK_INT(j->n_effects, 1);
	CHECK_INT(gb_journal_begin(j, "install", "package:nvidia-driver", "package", NULL), 0);
	/* killed here: the journal on disk has the package started */
	gb_journal_free(j);
	j = NULL;

	snprintf(err, sizeof(err), "%s/journal.json", state);
	t = slurp(err);
	CHECK(t && strstr(t, "\"sha256_after\"") && strstr(t, "\"package:nvidia-driver\""));
	free(t);

	/* Another plan is refused while this one changed the machine. */
	CHECK_INT(gb_journal_open(&ctx, other, "run", &j, err, sizeof(err)), -EBUSY);
	CHECK(strstr(err, "--force") != NULL);

	/* The same plan resumes: the file is done (skipped), the package redone. */
	CHECK_INT(gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err)), 0);
	if (!j)
		return;
	CHECK(j->resumed);
	CHECK_INT(gb_journal_write_file(j, "prepare", "etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n",
	                                18, 0644),
	          1);
	CHECK_INT(gb_journal_begin(j, "install", "package:nvidia-driver", "package", NULL), 0);
	CHECK_INT(gb_journal_end(j, "package:nvidia-driver", 0, NULL), 0);
	/* killed after an insert, before its end record: this run finds it loaded */
	CHECK_INT(gb_journal_begin(j, "load", "module:nvidia", "module", NULL), 0);
	gb_journal_free(j);
	CHECK_INT(gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err)), 0);
	if (!j)
		return;
	CHECK_INT(gb_journal_finish(j, "done", 0), 0);
	CHECK_INT(j->n_effects, 0);
	{
		/* the run ended done: the step it found in effect is done, and says so */
		json_object *s = json_object_array_get_idx(j->steps, 2);
		CHECK_STREQ(gb_json_get_str(s, "id"), "module:nvidia");
		CHECK_STREQ(gb_json_get_str(s, "state"), "done");
		CHECK(gb_json_get_bool(s, "found_in_effect", false));
	}
	gb_journal_free(j);

	/* A finished journal: a new run starts afresh; the same file is unchanged, no effect. */
	CHECK_INT(gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err)), 0);
	if (!j)
		return;
	CHECK(!j->resumed);
	CHECK_INT(gb_journal_write_file(j, "prepare", "etc/modprobe.d/blacklist-nouveau.conf", "blacklist nouveau\n",
	                                18, 0644),
	          0);
	CHECK_INT(j->n_effects, 0);
	{
		json_object *s = json_object_array_get_idx(j->steps, 0);
		CHECK(gb_json_get_bool(s, "unchanged", false));
	}
	/* A command's argv, exit status and output are recorded. */
	{
		struct gb_cmd_result res;
		const char *argv[] = { "sh", "-c", "echo apt says no; exit 100", NULL };
		CHECK_INT(gb_journal_run(j, "install", "command:apt",
		                         &(struct gb_cmd_spec){ .argv = argv, .timeout_ms = 5000 }, &res),
		          -EIO);
		t = (char *)json_object_to_json_string(j->doc);
		CHECK(strstr(t, "\"exit_status\":100") || strstr(t, "\"exit_status\": 100"));
		CHECK(strstr(t, "apt says no") != NULL);
	}
	gb_journal_free(j);

	/* A garbled journal is kept aside, not trusted, and a new one starts. */
	snprintf(err, sizeof(err), "%s/journal.json", state);
	CHECK_INT(gb_write_file_atomic(err, "{ torn", 6, 0600), 0);
	CHECK_INT(gb_journal_open(&ctx, other, "run", &j, err, sizeof(err)), 0);
	gb_journal_free(j);
	snprintf(err, sizeof(err), "%s/journal.json.prev", state);
	t = slurp(err);
	CHECK_STREQ(t, "{ torn");
	free(t);

	/* A repair never resumes an unfinished repair of the same plan: its
	 * steps (a dkms install done for a kernel) run again; the old one is
	 * kept aside. */
	CHECK_INT(gb_journal_open(&ctx, plan, "repair", &j, err, sizeof(err)), 0);
	CHECK(!j->resumed);
	CHECK_INT(gb_journal_begin(j, "repair", "dkms:install:nvidia/1:k", "command", NULL), 0);
	CHECK_INT(gb_journal_end(j, "dkms:install:nvidia/1:k", 0, NULL), 0);
	CHECK_INT(gb_journal_finish(j, "failed", 11), 0);
	gb_journal_free(j);
	CHECK_INT(gb_journal_open(&ctx, plan, "repair", &j, err, sizeof(err)), 0);
	CHECK(!j->resumed);
	CHECK_INT(gb_journal_begin(j, "repair", "dkms:install:nvidia/1:k", "command", NULL), 0); /* not 1: runs */
	gb_journal_free(j);
	snprintf(err, sizeof(err), "%s/repair-journal.json.prev", state);
	t = slurp(err);
	CHECK(t && strstr(t, "dkms:install:nvidia/1:k") != NULL);
	free(t);

	json_object_put(plan);
	json_object_put(other);
	gb_root_free(ctx.root);
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
