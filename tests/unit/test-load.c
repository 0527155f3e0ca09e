/* SPDX-License-Identifier: MIT */
/* The load stage: every classification row from its kernel lines (the real
 * Debian 12 captures of tests/load/debian12-*.kmsg included, and the outer
 * EINVAL of an install rule losing to the kernel's line), the kmsg record
 * parser fed garbage, the kmsg mark (only lines after it count), the
 * proc/devices parser, and gb_load against the fake operations table:
 * order, stop at the first failure, the classified cause of each scripted
 * failure, the modprobe.d file written and journaled, a rerun that loads
 * nothing, a resumed journal after a reboot. Run from the repository root. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "load/classify.h"
#include "load/daemons.h"
#include "load/devnodes.h"
#include "load/kmsg.h"
#include "load/load.h"
#include "load/nodes.h"
#include "effect/journal.h"
#include "install/install-fm.h"
#include "effect/root-write.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "unit.h"

static char base[] = "/tmp/gpuboot-test-load.XXXXXX";

static char *slurp(const char *path)
{
	char *t = NULL;
	size_t n;
	return gb_read_file(path, 1u << 20, &t, &n) < 0 ? NULL : t;
}

static void write_text(const char *path, const char *text)
{
	CHECK_INT(gb_write_file_atomic(path, text, strlen(text), 0644), 0);
}

/* The relevant lines of a tests/load file, parsed as /dev/kmsg records
 * (lenient for a build log). */
static void load_lines(const char *file, const char *module, struct gb_kmsg_lines *ret)
{
	char p[256];
	char *t;
	memset(ret, 0, sizeof(*ret));
	snprintf(p, sizeof(p), "tests/load/%s", file);
	t = slurp(p);
	CHECK(t != NULL);
	if (!t) {
		fprintf(stderr, "cannot read %s: run from the repository root\n", p);
		return;
	}
	gb_kmsg_parse_buffer(t, strlen(t), module, strstr(file, ".log") != NULL, ret);
	free(t);
}

struct row {
	const char *file; /* under tests/load, or NULL: no kernel line */
	const char *module;
	int err; /* what the insert returned */
	const char *id;
	int kernel_err; /* what the cause stands for */
	int exit_code;
};

static const struct row rows[] = {
	/* real: Debian 12, Secure Boot, unsigned module; insmod and modprobe (install rule: outer EINVAL) */
	{ "debian12-secureboot-unsigned.kmsg", "nvidia", -EKEYREJECTED, "secure-boot-unsigned", -EKEYREJECTED, 14 },
	{ "debian12-secureboot-unsigned.kmsg", "nvidia", -EINVAL, "secure-boot-unsigned", -EKEYREJECTED, 14 },
	/* real: signed by a key the kernel does not trust */
	{ "debian12-untrusted-key.kmsg", "nvidia", -EKEYREJECTED, "secure-boot-untrusted-key", -EKEYREJECTED, 14 },
	{ NULL, "nvidia", -EKEYREJECTED, "secure-boot-rejected", -EKEYREJECTED, 14 },
	{ "lockdown.kmsg", "nvidia", -EPERM, "secure-boot-lockdown", -EPERM, 14 },
	/* real: no GPU, insmod (ENODEV) and modprobe through the install rule (EINVAL); signed by a db key */
	{ "debian12-no-gpu.kmsg", "nvidia", -ENODEV, "no-gpu", -ENODEV, 11 },
	{ "debian12-no-gpu.kmsg", "nvidia", -EINVAL, "no-gpu", -ENODEV, 11 },
	{ "debian12-db-signed-no-gpu.kmsg", "nvidia", -ENODEV, "no-gpu", -ENODEV, 11 },
	{ NULL, "nvidia", -ENODEV, "no-gpu", -ENODEV, 11 },
	/* built for another kernel: real unknown symbol, version magic, symbol versions, bare ENOEXEC */
	{ "debian12-insmod-unknown-symbol.kmsg", "nvidia", -ENOENT, "kernel-mismatch", -ENOENT, 14 },
	{ "version-magic.kmsg", "nvidia", -ENOEXEC, "kernel-mismatch", -ENOEXEC, 14 },
	{ "disagrees-symbol-version.kmsg", "nvidia", -EINVAL, "kernel-mismatch", -EINVAL, 14 },
	{ "uvm-unknown-symbol.kmsg", "nvidia_uvm", -ENOENT, "kernel-mismatch", -ENOENT, 14 },
	{ NULL, "nvidia", -ENOEXEC, "kernel-mismatch", -ENOEXEC, 14 },
	{ NULL, "nvidia", -ENOENT, "module-missing", -ENOENT, 14 },
	{ "unsupported-by-branch.kmsg", "nvidia", -ENODEV, "gpu-unsupported-by-branch", -ENODEV, 12 },
	{ "unsupported-by-open-module.kmsg", "nvidia", -ENODEV, "gpu-needs-proprietary", -ENODEV, 12 },
	{ "gsp-firmware-missing.kmsg", "nvidia", -EIO, "gsp-firmware", -EIO, 14 },
	{ "gsp-timeout.kmsg", "nvidia", -EIO, "gsp-firmware", -EIO, 14 },
	{ "modpost-gpl-only.log", "nvidia", -ENOENT, "kernel-too-new", -ENOENT, 14 },
	{ NULL, "nvidia", -EEXIST, "other-version-loaded", -EEXIST, 14 },
	{ NULL, "nvidia", -EBUSY, "unknown", -EBUSY, 14 },
};

TEST(classify_rows)
{
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		struct gb_kmsg_lines *k = calloc(1, sizeof(*k));
		const char *lines[GB_KMSG_MAX_LINES];
		struct gb_load_class c;

		if (!k)
			return;
		if (rows[i].file)
			load_lines(rows[i].file, rows[i].module, k);
		for (size_t l = 0; l < k->n; l++)
			lines[l] = k->line[l].text;
		gb_load_classify(rows[i].err, lines, k->n, &c);
		if (!c.info || !streq(c.info->id, rows[i].id))
			fprintf(stderr, "row %zu (%s, %d)\n", i, rows[i].file ? rows[i].file : "-", rows[i].err);
		CHECK_STREQ(c.info->id, rows[i].id);
		CHECK_INT(c.err, rows[i].kernel_err);
		CHECK_INT(c.info->exit_code, rows[i].exit_code);
		CHECK(c.info->hint[0] && c.info->summary[0]);
		if (rows[i].file)
			CHECK(c.detail[0] != '\0'); /* the deciding line is quoted */
		free(k);
	}
}

TEST(classify_details)
{
	struct gb_kmsg_lines *k = calloc(1, sizeof(*k));
	struct gb_load_class c;
	const char *odd[] = { "nvidia: loading out-of-tree module taints kernel.", "nvidia: something odd (0x1)" };
	char eb[16];

	if (!k)
		return;
	/* The scenario of the issue: the status says this, and exit 11. */
	CHECK_STREQ(gb_load_cause_by_id("no-gpu")->summary, "no NVIDIA GPU the driver can drive");
	CHECK(gb_load_cause_by_id("no-such-cause") == NULL);
	CHECK_STREQ(gb_load_cause_info(_GB_CAUSE_MAX)->id, "unknown");
	for (int c1 = 0; c1 < _GB_CAUSE_MAX; c1++) {
		CHECK_INT(gb_load_cause_info(c1)->cause, c1);
		CHECK(strlen(gb_load_cause_info(c1)->hint) < 300);
		for (int c2 = 0; c2 < c1; c2++)
			CHECK(!streq(gb_load_cause_info(c1)->id, gb_load_cause_info(c2)->id));
	}
	/* Unknown: the errno's name and the first telling line, never "modprobe failed". */
	gb_load_classify(-EBUSY, odd, 2, &c);
	CHECK_STREQ(c.info->id, "unknown");
	CHECK_STREQ(c.detail, "EBUSY; the kernel said: nvidia: something odd (0x1)");
	gb_load_classify(-E2BIG, NULL, 0, &c);
	CHECK_STREQ(c.detail, "E7; the kernel logged nothing");
	CHECK_STREQ(gb_load_errno_name(-EKEYREJECTED, eb, sizeof(eb)), "EKEYREJECTED");
	/* The real capture's noise (an ACPI line from loading drm) is not kept. */
	load_lines("debian12-secureboot-unsigned.kmsg", "nvidia", k);
	CHECK_INT(k->n, 1);
	CHECK_STREQ(k->line[0].text, "Loading of unsigned module is rejected");
	CHECK_INT(k->line[0].ts_usec, 9346415);
	CHECK_INT(k->line[0].prio, 5);
	/* NVIDIA's multi-line message reads as one sentence. */
	load_lines("unsupported-by-branch.kmsg", "nvidia", k);
	CHECK_INT(k->n, 3);
	CHECK(strstr(k->line[0].text, "(PCI ID: 10de:102d) installed in this system is not supported by the NVIDIA "
	                              "535.261.03 driver release. Please see") != NULL);
	/* A record's dictionary lines are not records. */
	load_lines("gsp-firmware-missing.kmsg", "nvidia", k);
	CHECK_INT(k->n, 2);
	CHECK_INT(k->skipped, 0);
	free(k);
}

TEST(kmsg_parser)
{
	static const char *const bad[] = { "",
		                           ";",
		                           "abc;def",
		                           "6,1;x",
		                           "x,1,2,-;m",
		                           "6,1,2,-",
		                           "6,,1,-;x",
		                           "6,18446744073709551616,1,-;overflow",
		                           "-1,1,2,-;neg",
		                           "6,1,2,toolong;x" };
	static const char esc[] = "14,7,99,-;a\\x0ab\\x5cc\\x00d\\xZZ\\x", ctl[] = "6,1,2,c;\xff\x01tab\there";
	struct gb_kmsg_line l;
	struct gb_kmsg_lines *k = calloc(1, sizeof(*k));
	char *big = malloc(20000), *noise = malloc(65536);
	uint32_t x = 12345;

	if (!k || !big || !noise)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(gb_kmsg_parse_record(bad[i], strlen(bad[i]), &l), -EINVAL);
	/* A header that never ends within its bound. */
	memset(big, '1', 20000);
	CHECK_INT(gb_kmsg_parse_record(big, 20000, &l), -EINVAL);
	/* The facility is above the level; escapes undone; garbage escapes kept or replaced. */
	CHECK_INT(gb_kmsg_parse_record(esc, strlen(esc), &l), 0);
	CHECK_INT(l.prio, 6);
	CHECK_INT(l.seq, 7);
	CHECK_STREQ(l.text, "a b\\c?d\\xZZ\\x");
	CHECK_INT(gb_kmsg_parse_record(ctl, strlen(ctl), &l), 0);
	CHECK_STREQ(l.text, "??tab?here");
	/* A message longer than we keep is cut and says so. */
	memcpy(big, "6,1,2,-;", 8);
	memset(big + 8, 'x', 20000 - 8);
	CHECK_INT(gb_kmsg_parse_record(big, 20000, &l), 0);
	CHECK(l.truncated);
	CHECK_INT(strlen(l.text), GB_KMSG_TEXT_MAX - 1);
	/* Relevance: the NVIDIA modules and the loader's lines, '-' and '_' alike. */
	CHECK(gb_kmsg_line_relevant("nvidia-nvlink: Nvlink Core is being initialized", "nvidia"));
	CHECK(gb_kmsg_line_relevant("nvidia_uvm: Unknown symbol x (err -2)", "nvidia-uvm"));
	CHECK(gb_kmsg_line_relevant("Lockdown: modprobe: unsigned module loading is restricted", "nvidia"));
	CHECK(gb_kmsg_line_relevant("mlx5_core: x", "mlx5-core"));
	CHECK(!gb_kmsg_line_relevant("usb 1-1: new high-speed USB device", "nvidia"));
	/* Random bytes: no crash, bounds kept, more relevant lines than kept are counted. */
	for (size_t i = 0; i < 65536; i++) {
		x = x * 1103515245u + 12345u;
		noise[i] = (char)(x >> 16);
	}
	gb_kmsg_parse_buffer(noise, 65536, "nvidia", false, k);
	gb_kmsg_parse_buffer(noise, 65536, "nvidia", true, k);
	CHECK(k->n <= GB_KMSG_MAX_LINES);
	memset(k, 0, sizeof(*k));
	for (size_t i = 0; i < 40; i++)
		gb_kmsg_parse_buffer("4,1,2,-;NVRM: again\n", 20, "nvidia", false, k);
	CHECK_INT(k->n, GB_KMSG_MAX_LINES);
	CHECK_INT(k->dropped, 40 - GB_KMSG_MAX_LINES);
	/* Lenient (a fixture written by hand, or dmesg's format). */
	memset(k, 0, sizeof(*k));
	gb_kmsg_parse_buffer("[    9.346415] Loading of unsigned module is rejected\nplain\n", 60, "nvidia", true, k);
	CHECK_INT(k->n, 1);
	CHECK_STREQ(k->line[0].text, "Loading of unsigned module is rejected");
	CHECK_INT(k->line[0].prio, -1);
out:
	free(k);
	free(big);
	free(noise);
}

/* Only what the kernel logged after the mark belongs to the insert. */
TEST(kmsg_mark)
{
	struct gb_root *root = NULL;
	struct gb_kmsg_mark m;
	struct gb_kmsg_lines *k = calloc(1, sizeof(*k));
	char p[4200], kmsg[4200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/kmsgroot", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK_INT(gb_root_open(p, &root), 0);
	if (!root || !k)
		goto out;
	/* No dev/kmsg at the mark: what appears later is read from its start. */
	gb_kmsg_mark(root, &m);
	CHECK(m.absent);
	snprintf(kmsg, sizeof(kmsg), "%s/kmsgroot/dev/kmsg", base);
	write_text(kmsg, "5,1,100,-;Loading of unsigned module is rejected\n");
	CHECK_INT(gb_kmsg_read_since(root, &m, "nvidia", k), 0);
	CHECK_INT(k->n, 1);
	/* An old line (an earlier boot service's try) is before the mark. */
	gb_kmsg_mark(root, &m);
	CHECK(m.is_file && m.offset > 0);
	f = fopen(kmsg, "ae");
	CHECK(f != NULL);
	if (f) {
		fputs("4,2,200,-;NVRM: No NVIDIA GPU found.\n", f);
		fclose(f);
	}
	CHECK_INT(gb_kmsg_read_since(root, &m, "nvidia", k), 0);
	CHECK_INT(k->n, 1);
	CHECK_STREQ(k->line[0].text, "NVRM: No NVIDIA GPU found.");
	gb_root_free(root);
	root = NULL;
	/* The host's /dev/kmsg, when this user may read it: positioned at its end. */
	if (gb_root_open("/", &root) == 0) {
		gb_kmsg_mark(root, &m);
		if (m.fd >= 0) {
			int r = gb_kmsg_read_since(root, &m, "gpuboot-test-no-such-module", k);
			CHECK(r == 0 || r == -EPERM || r == -EACCES);
			CHECK(k->n <= GB_KMSG_MAX_LINES);
		}
		gb_kmsg_mark_close(&m);
	}
out:
	gb_root_free(root);
	free(k);
}

TEST(proc_devices)
{
	static const char devices[] = "Character devices:\n  1 mem\n  4 /dev/vc/0\n195 nvidia-frontend\n"
	                              "245 nvidia-nvlink\n510 nvidia-uvm\n511 nvidia-caps\n99999 huge\nabc nvidia\n"
	                              "0 zero\n\nBlock devices:\n  8 sd\n196 nvidia-block\n";
	char longline[600];
	uint32_t major = 0, minor = 0;

	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "nvidia-frontend", &major), 0);
	CHECK_INT(major, 195);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "nvidia-uvm", &major), 0);
	CHECK_INT(major, 510);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "nvidia-uvm-tools", &major), -ENOENT);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "nvidia-block", &major), -ENOENT);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "huge", &major), -ENOENT);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "nvidia", &major), -ENOENT);
	CHECK_INT(gb_proc_devices_major(devices, strlen(devices), "zero", &major), -ENOENT);
	/* Cut short, and an overlong line. */
	CHECK_INT(gb_proc_devices_major(devices, 40, "nvidia-frontend", &major), -ENOENT);
	memset(longline, 'a', sizeof(longline));
	memcpy(longline, "Character devices:\n195 ", 23);
	CHECK_INT(gb_proc_devices_major(longline, sizeof(longline), "a", &major), -ENOENT);
	CHECK_INT(gb_nvidia_gpu_minor("Model: \t\t NVIDIA H100\nDevice Minor: \t 3\n", 41, &minor), 0);
	CHECK_INT(minor, 3);
	CHECK_INT(gb_nvidia_gpu_minor("Device Minor: 255\n", 18, &minor), -EINVAL);
	CHECK_INT(gb_nvidia_gpu_minor("Device Minor: x\n", 16, &minor), -EINVAL);
	CHECK_INT(gb_nvidia_gpu_minor("nothing\n", 8, &minor), -ENOENT);
}

TEST(devnodes)
{
	struct gb_root *root = NULL;
	struct gb_devnodes *d = calloc(1, sizeof(*d));
	char p[4200];

	snprintf(p, sizeof(p), "%s/devroot", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK_INT(gb_root_open(p, &root), 0);
	if (!root || !d)
		goto out;
	CHECK_INT(gb_load_devnodes(root, d), -ENOENT); /* no proc/devices */
	snprintf(p, sizeof(p), "%s/devroot/proc/devices", base);
	write_text(p, "Character devices:\n  1 mem\n\nBlock devices:\n");
	CHECK_INT(gb_load_devnodes(root, d), -ENODEV);
	write_text(p, "Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\n");
	snprintf(p, sizeof(p), "%s/devroot/proc/driver/nvidia/gpus/0000:01:00.0/information", base);
	write_text(p, "Model: \t\t NVIDIA H100 80GB HBM3\nDevice Minor: \t 3\n");
	snprintf(p, sizeof(p), "%s/devroot/sys/module/nvidia_modeset", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	CHECK_INT(gb_load_devnodes(root, d), 0);
	CHECK_INT(d->n, 5);
	if (d->n == 5) {
		CHECK_STREQ(d->node[0].path, "dev/nvidiactl");
		CHECK_INT(d->node[0].minor, 255);
		CHECK_STREQ(d->node[1].path, "dev/nvidia3");
		CHECK_INT(d->node[1].major, 195);
		CHECK_STREQ(d->node[2].path, "dev/nvidia-modeset");
		CHECK_STREQ(d->node[4].path, "dev/nvidia-uvm-tools");
		CHECK_INT(d->node[4].major, 510);
		CHECK_INT(d->node[4].minor, 1);
	}
out:
	gb_root_free(root);
	free(d);
}

/* ---- gb_load against the fake operations table ---- */

struct world {
	char dir[4200], root[4200], state[4200], record[4200];
	struct gb_ctx ctx;
	struct gb_journal *j;
	json_object *plan;
};

/* A fresh root and state directory under base/name, the fake with extra rules. */
static int world_open(struct world *w, const char *name, const char *rules)
{
	char spec[8192], err[512];
	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s/%s", base, name);
	snprintf(w->root, sizeof(w->root), "%s/root", w->dir);
	snprintf(w->state, sizeof(w->state), "%s/state", w->dir);
	snprintf(w->record, sizeof(w->record), "%s/record", w->dir);
	if (gb_mkdir_p(w->root, 0755) < 0 || gb_root_open(w->root, &w->ctx.root) < 0)
		return -1;
	snprintf(spec, sizeof(spec), "record=%s,root=%s%s%s", w->record, w->root, rules ? "," : "", rules ? rules : "");
	if (gb_ops_fake_new(spec, &w->ctx.ops) < 0)
		return -1;
	w->ctx.opt.state_dir = w->state;
	w->plan = json_tokener_parse("{\"driver\": {\"version\": \"535.261.03\", \"flavour\": \"open\"}}");
	return gb_journal_open(&w->ctx, w->plan, "run", &w->j, err, sizeof(err));
}

static void world_close(struct world *w)
{
	gb_journal_free(w->j);
	gb_ops_fake_free(w->ctx.ops);
	gb_root_free(w->ctx.root);
	json_object_put(w->plan);
}

static const char *step_state(struct gb_journal *j, const char *id)
{
	for (size_t i = 0; i < json_object_array_length(j->steps); i++) {
		json_object *s = json_object_array_get_idx(j->steps, i), *v;
		if (json_object_object_get_ex(s, "id", &v) && streq(json_object_get_string(v), id) &&
		    json_object_object_get_ex(s, "state", &v))
			return json_object_get_string(v);
	}
	return NULL;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	return n;
}

TEST(load_ok_and_rerun)
{
	struct world w;
	struct gb_load_input in;
	struct gb_load_result *res = calloc(1, sizeof(*res));
	char p[4400], *t;

	CHECK_INT(world_open(&w, "ok", NULL), 0);
	if (!w.j || !res)
		goto out;
	gb_load_input_init(&in, true, false);
	CHECK_INT(in.n_modules, 4);
	CHECK_INT(
	    gb_load_input_set_params(&in, "nvidia", "NVreg_EnableGpuFirmware=0 NVreg_OpenRmEnableUnsupportedGpus=1"),
	    0);
	CHECK_INT(gb_load_input_set_params(&in, "nvidia_peermem", "x=1"), -ENOENT);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	CHECK_INT(res->n_loaded, 4);
	CHECK(res->conf_changed);
	CHECK(res->failed_module == NULL);
	CHECK_INT(res->exit_code, 0);
	t = slurp(w.record);
	CHECK_STREQ(t, "module_load nvidia NVreg_EnableGpuFirmware=0 NVreg_OpenRmEnableUnsupportedGpus=1\n"
	               "module_load nvidia_uvm \nmodule_load nvidia_modeset \nmodule_load nvidia_drm \n");
	free(t);
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_LOAD_CONF_PATH);
	t = slurp(p);
	CHECK(t && strstr(t, "\noptions nvidia NVreg_EnableGpuFirmware=0 NVreg_OpenRmEnableUnsupportedGpus=1\n") &&
	      count(t, "options ") == 1);
	free(t);
	CHECK_STREQ(step_state(w.j, "file:" GB_LOAD_CONF_PATH), "done");
	/* no softdep: with one for nvidia, Debian 12's libkmod no longer finds nvidia through the
	 * package's install rule (the bookworm-nvidia guest: "could not find module by name='nvidia'") */
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_LOAD_CONF_PATH);
	t = slurp(p);
	CHECK(t && !strstr(t, "softdep"));
	free(t);
	CHECK_STREQ(step_state(w.j, "module:nvidia"), "done");
	CHECK_STREQ(step_state(w.j, "module:nvidia_drm"), "done");
	CHECK_INT(gb_journal_finish(w.j, "done", 0), 0);
	gb_journal_free(w.j);
	w.j = NULL;

	/* A rerun: everything is live, nothing is loaded, the file is unchanged. */
	{
		char err[256];
		CHECK_INT(gb_journal_open(&w.ctx, w.plan, "run", &w.j, err, sizeof(err)), 0);
	}
	if (!w.j)
		goto out;
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	CHECK_INT(res->n_loaded, 0);
	CHECK(!res->conf_changed);
	CHECK_INT(w.j->n_effects, 0);
	for (size_t i = 0; i < res->n_modules; i++)
		CHECK_INT(res->modules[i].state, GB_LOAD_ALREADY);
	t = slurp(w.record);
	CHECK_INT(count(t, "module_load"), 4);
	free(t);
	CHECK(step_state(w.j, "module:nvidia") == NULL); /* no effect, no record */
out:
	world_close(&w);
	free(res);
}

/* ib_umad for NVLSM: loaded after the NVIDIA modules, and listed for
 * systemd-modules-load so every boot has it; a bad name is refused. */
TEST(load_at_boot)
{
	struct world w;
	struct gb_load_input in;
	struct gb_load_result *res = calloc(1, sizeof(*res));
	char p[4400], *t;

	CHECK_INT(world_open(&w, "at-boot", NULL), 0);
	if (!w.j || !res)
		goto out;
	gb_load_input_init(&in, true, false);
	CHECK_INT(gb_load_input_add_at_boot(&in, "ib_umad"), 0);
	CHECK_INT(gb_load_input_add_at_boot(&in, "../x"), -EINVAL);
	CHECK_INT(in.n_modules, 5);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	t = slurp(w.record);
	CHECK(t && strstr(t, "module_load nvidia_drm \nmodule_load ib_umad \n"));
	free(t);
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_LOAD_AT_BOOT_PATH);
	t = slurp(p);
	CHECK(t && strstr(t, "\nib_umad\n") && count(t, "\n") == 2 && !strstr(t, "nvidia"));
	free(t);
	CHECK_STREQ(step_state(w.j, "file:" GB_LOAD_AT_BOOT_PATH), "done");
	/* without one, no file */
	world_close(&w);
	CHECK_INT(world_open(&w, "at-boot-none", NULL), 0);
	if (!w.j)
		goto out;
	gb_load_input_init(&in, true, false);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_LOAD_AT_BOOT_PATH);
	CHECK(access(p, F_OK) != 0);
out:
	world_close(&w);
	free(res);
}

/* A resumed journal after a reboot: the steps are done, the modules are
 * not live any more, so they are loaded again, recorded before and after. */
TEST(load_resumed_after_reboot)
{
	struct world w;
	struct gb_load_input in;
	struct gb_load_result *res = calloc(1, sizeof(*res));
	char err[256], *t;

	CHECK_INT(world_open(&w, "resume", NULL), 0);
	if (!w.j || !res)
		goto out;
	gb_load_input_init(&in, false, true);
	CHECK_INT(in.n_modules, 4);
	CHECK_STREQ(in.modules[3].name, "nvidia_peermem");
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	gb_journal_free(w.j); /* killed before the run finished */
	w.j = NULL;
	for (size_t i = in.n_modules; i-- > 0;)
		CHECK_INT(w.ctx.ops->module_unload(w.ctx.ops, in.modules[i].name), 0);
	CHECK_INT(gb_journal_open(&w.ctx, w.plan, "run", &w.j, err, sizeof(err)), 0);
	if (!w.j)
		goto out;
	CHECK(w.j->resumed);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), 0);
	CHECK_INT(res->n_loaded, 4);
	CHECK_STREQ(step_state(w.j, "module:nvidia_peermem"), "done");
	t = slurp(w.record);
	CHECK_INT(count(t, "module_load nvidia_peermem"), 2);
	free(t);
out:
	world_close(&w);
	free(res);
}

/* A scripted failure of one module: errno and kernel lines, through the
 * fake, to the cause, the journal and the status's object. */
struct failure {
	const char *module;
	int errnum;
	const char *file;
	const char *id;
	int exit_code;
};

static const struct failure failures[] = {
	{ "nvidia", ENODEV, "debian12-no-gpu.kmsg", "no-gpu", 11 },
	/* Debian's install rule: the outer insert says EINVAL, the kernel says why */
	{ "nvidia", EINVAL, "debian12-secureboot-unsigned.kmsg", "secure-boot-unsigned", 14 },
	{ "nvidia", EKEYREJECTED, "debian12-untrusted-key.kmsg", "secure-boot-untrusted-key", 14 },
	{ "nvidia", EPERM, "lockdown.kmsg", "secure-boot-lockdown", 14 },
	{ "nvidia", ENOEXEC, "version-magic.kmsg", "kernel-mismatch", 14 },
	{ "nvidia", ENODEV, "unsupported-by-branch.kmsg", "gpu-unsupported-by-branch", 12 },
	{ "nvidia", EIO, "gsp-firmware-missing.kmsg", "gsp-firmware", 14 },
	{ "nvidia", ENOENT, NULL, "module-missing", 14 },
	{ "nvidia_uvm", ENOENT, "uvm-unknown-symbol.kmsg", "kernel-mismatch", 14 },
	{ "nvidia", EEXIST, NULL, "other-version-loaded", 14 },
};

static void check_failure(const struct failure *f, size_t idx)
{
	struct world w;
	struct gb_load_input in;
	struct gb_load_result *res = calloc(1, sizeof(*res));
	char rules[600], name[32], p[4400], *t;
	size_t at = streq(f->module, "nvidia") ? 0 : 1;
	json_object *o;

	snprintf(rules, sizeof(rules), "module:%s:%d%s%s%s%s", f->module, f->errnum, f->file ? ",kmsg:" : "",
	         f->file ? f->module : "", f->file ? ":tests/load/" : "", f->file ? f->file : "");
	snprintf(name, sizeof(name), "fail%zu", idx);
	CHECK_INT(world_open(&w, name, rules), 0);
	if (!w.j || !res)
		goto out;
	/* An earlier try's line is already in the log: it must not count. */
	snprintf(p, sizeof(p), "%s/dev/kmsg", w.root);
	write_text(p, "5,1,100,-;Loading of module with unsupported crypto is rejected\n");
	if (f->errnum == EEXIST) { /* another version half there */
		snprintf(p, sizeof(p), "%s/sys/module/nvidia/initstate", w.root);
		write_text(p, "going\n");
		snprintf(p, sizeof(p), "%s/sys/module/nvidia/version", w.root);
		write_text(p, "550.54.14\n");
	}
	gb_load_input_init(&in, true, false);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), -f->errnum);
	if (!res->failed_module || !streq(res->cause.info->id, f->id))
		fprintf(stderr, "failure %zu (%s): got %s\n", idx, f->id, res->cause.info->id);
	CHECK_STREQ(res->failed_module, f->module);
	CHECK_STREQ(res->cause.info->id, f->id);
	CHECK_INT(res->exit_code, f->exit_code);
	CHECK_INT(res->modules[at].state, GB_LOAD_FAILED);
	CHECK_INT(res->modules[at].err, -f->errnum);
	/* Stop at the first failure: nothing after it was tried. */
	for (size_t i = at + 1; i < res->n_modules; i++)
		CHECK_INT(res->modules[i].state, GB_LOAD_NOT_TRIED);
	t = slurp(w.record);
	CHECK_INT(count(t, "module_load"), at + 1);
	free(t);
	snprintf(p, sizeof(p), "module:%s", f->module);
	CHECK_STREQ(step_state(w.j, p), "failed");
	if (f->file)
		CHECK(res->kernel.n > 0 && !strstr(res->kernel.line[0].text, "unsupported crypto"));
	if (f->errnum == EEXIST)
		CHECK(strstr(res->hint, "nvidia 550.54.14 is loaded") != NULL);
	o = gb_load_result_to_json(res);
	t = (char *)json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	CHECK(strstr(t, f->id) != NULL && strstr(t, "\"kernel_lines\"") != NULL);
	if (idx == 0)
		CHECK(strstr(t, "NVRM: No NVIDIA GPU found.") && strstr(t, "no NVIDIA GPU the driver can drive"));
	if (idx == 1)
		CHECK(strstr(t, "\"errno\":\"EINVAL\"") && strstr(t, "\"kernel_errno\":\"EKEYREJECTED\""));
	json_object_put(o);
out:
	world_close(&w);
	free(res);
}

TEST(load_failures)
{
	struct world w;
	struct gb_load_input in;
	struct gb_load_result *res = calloc(1, sizeof(*res));
	char *t;

	for (size_t i = 0; i < ARRAY_SIZE(failures); i++)
		check_failure(&failures[i], i);
	/* Parameters that would break the modprobe.d file: refused before any effect. */
	CHECK_INT(world_open(&w, "badparams", NULL), 0);
	if (!w.j || !res)
		goto out;
	gb_load_input_init(&in, false, false);
	CHECK_INT(gb_load_input_set_params(&in, "nvidia", "a=1\ninstall nvidia /bin/sh"), 0);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), -EINVAL);
	CHECK_INT(gb_load_input_set_params(&in, "nvidia", "a=1 # comment"), 0);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), -EINVAL);
	in.modules[1].name = "../evil";
	CHECK_INT(gb_load_input_set_params(&in, "nvidia", NULL), 0);
	CHECK_INT(gb_load(&w.ctx, &in, w.j, res), -EINVAL);
	t = slurp(w.record);
	CHECK(t == NULL || !strstr(t, "module_load"));
	free(t);
out:
	world_close(&w);
	free(res);
}

/* The nodes an H200 with 580.159.04 registers (tests/load/h200-580-nodes:
 * its proc/devices and proc/driver/nvidia, read on the machine), made
 * through the fake, linked under dev/char, and the udev rule. */
TEST(nodes)
{
	struct world w;
	struct gb_nodes_result res;
	char p[4400], cmd[9000], *t;
	json_object *js;

	CHECK_INT(world_open(&w, "nodes", "mknod:dev/nvidia-uvm-tools:1"), 0);
	if (!w.j)
		return;
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), -ENOENT); /* no proc/devices at all */
	snprintf(cmd, sizeof(cmd), "cp -R tests/load/h200-580-nodes/proc '%s/'", w.root);
	CHECK_INT(system(cmd), 0);
	/* a scripted EPERM on the fourth node: the error names it, nothing after it made */
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), -EPERM);
	CHECK_STREQ(res.error, "Failed to make dev/nvidia-uvm-tools (238:1): Operation not permitted");
	CHECK_INT(res.made, 3);
	CHECK_STREQ(step_state(w.j, "node:dev/nvidia-uvm-tools"), "failed");
	world_close(&w);
	snprintf(cmd, sizeof(cmd), "rm -f '%s/record'", w.dir);
	CHECK_INT(system(cmd), 0);

	CHECK_INT(world_open(&w, "nodes", NULL), 0);
	if (!w.j)
		return;
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), 0);
	CHECK_INT(res.n, 6);
	CHECK_INT(res.made, 3); /* the three made before are right already */
	CHECK_INT(res.linked, 6);
	CHECK(res.rule_changed && !res.modify_off);
	t = slurp(w.record);
	CHECK_STREQ(t, "mknod dev/nvidiactl 0666 195:255 0:0\n"
	               "mknod dev/nvidia0 0666 195:0 0:0\n"
	               "mknod dev/nvidia-uvm 0666 238:0 0:0\n"
	               "mknod dev/nvidia-uvm-tools 0666 238:1 0:0\n"
	               "mknod dev/nvidia-caps/nvidia-cap1 0400 241:1 0:0\n"
	               "mknod dev/nvidia-caps/nvidia-cap2 0444 241:2 0:0\n");
	free(t);
	snprintf(p, sizeof(p), "%s/dev/nvidia0", w.root);
	t = slurp(p);
	CHECK_STREQ(t, "c 195:0 0666 0:0\n");
	free(t);
	{
		static const char *const links[][2] = {
			{ "195:255", "../nvidiactl" },
			{ "195:0", "../nvidia0" },
			{ "238:0", "../nvidia-uvm" },
			{ "238:1", "../nvidia-uvm-tools" },
			{ "241:1", "../nvidia-caps/nvidia-cap1" },
			{ "241:2", "../nvidia-caps/nvidia-cap2" },
		};
		for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
			char target[200] = "";
			ssize_t n;
			snprintf(p, sizeof(p), "%s/dev/char/%s", w.root, links[i][0]);
			n = readlink(p, target, sizeof(target) - 1);
			CHECK(n > 0);
			CHECK_STREQ(target, links[i][1]);
		}
	}
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_NODES_UDEV_RULE);
	t = slurp(p);
	CHECK_STREQ(t, gb_load_udev_rule_text());
	CHECK(t && strstr(t, "KERNEL==\"nvidia|nvidia_uvm|nvidia_modeset\"") &&
	      strstr(t, "RUN+=\"/usr/local/bin/gpuboot --repair --nodes\""));
	free(t);
	CHECK_STREQ(step_state(w.j, "node:dev/nvidia-caps/nvidia-cap2"), "done");
	CHECK_STREQ(step_state(w.j, "link:dev/char/195:255"), "done");
	js = gb_nodes_result_to_json(&res);
	CHECK_INT(json_object_get_int(json_object_object_get(js, "made")), 3);
	CHECK_INT(json_object_get_int(json_object_object_get(js, "char_links_made")), 6);
	json_object_put(js);

	/* the rerun: nothing made, linked or written */
	w.j->n_effects = 0;
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), 0);
	CHECK_INT(res.made + res.linked, 0);
	CHECK(!res.rule_changed);
	CHECK_INT(w.j->n_effects, 0);

	/* a node with other numbers (a stale one from another driver) is made again;
	 * a link to something else is replaced */
	snprintf(p, sizeof(p), "%s/dev/nvidia0", w.root);
	write_text(p, "c 195:7 0600 0:0\n");
	snprintf(p, sizeof(p), "%s/dev/char/195:0", w.root);
	CHECK_INT(unlink(p), 0);
	CHECK_INT(symlink("../nvidia7", p), 0);
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), 0);
	CHECK_INT(res.made, 1);
	CHECK_INT(res.linked, 1);

	/* ModifyDeviceFiles: 0: the site's nodes are left alone, the links still made */
	snprintf(p, sizeof(p), "%s/proc/driver/nvidia/params", w.root);
	write_text(p, "ModifyDeviceFiles: 0\nDeviceFileMode: 432\n");
	snprintf(p, sizeof(p), "%s/dev/char/195:255", w.root);
	CHECK_INT(unlink(p), 0);
	CHECK_INT(gb_load_nodes(&w.ctx, w.j, &res), 0);
	CHECK(res.modify_off);
	CHECK_INT(res.made, 0);
	CHECK_INT(res.linked, 1);

	/* the udev rule's own call: no journal, nothing written but nodes and links */
	snprintf(p, sizeof(p), "%s/proc/driver/nvidia/params", w.root);
	write_text(p, "DeviceFileMode: 432\nDeviceFileGID: 44\n");
	CHECK_INT(gb_load_nodes(&w.ctx, NULL, &res), 0);
	CHECK_INT(res.made, 4); /* 0660, group 44 now: the four 195/238 nodes */
	CHECK(!res.rule_changed);
	snprintf(p, sizeof(p), "%s/dev/nvidiactl", w.root);
	t = slurp(p);
	CHECK_STREQ(t, "c 195:255 0660 0:44\n");
	free(t);
	world_close(&w);
}

static void write_at(const char *root, const char *rel, const char *text)
{
	char p[4400], dir[4400];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = '\0';
	CHECK_INT(gb_mkdir_p(dir, 0755), 0);
	write_text(p, text);
}

/* persistenced where its unit is installed; the fabric manager only at the driver's exact version. */
TEST(daemons)
{
	static const char *const both[] = { "nvidia-persistenced", "nvidia-fabricmanager" };
	static const char fm_status[] = "Package: nvidia-fabricmanager-580\nStatus: install ok installed\n"
	                                "Version: 580.95.05-1\n\nPackage: nvidia-fabricmanager-dev-580\n"
	                                "Status: install ok installed\nVersion: 580.82.07-1\n";
	struct world w;
	struct gb_daemons_result *d = calloc(1, sizeof(*d));
	char *t, ver[4400];
	json_object *js;

	CHECK_INT(world_open(&w, "daemons", NULL), 0);
	if (!w.j || !d)
		goto out;
	/* persistenced not installed: left, not a failure; masked by the site: left too */
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, both, 1, "580.95.05", NULL, d), 0);
	CHECK_STREQ(d->d[0].state, "not-installed");
	{
		char p[4400];
		write_at(w.root, "etc/systemd/system/x", "");
		snprintf(p, sizeof(p), "%s/etc/systemd/system/nvidia-persistenced.service", w.root);
		CHECK_INT(symlink("/dev/null", p), 0);
		write_at(w.root, "lib/systemd/system/nvidia-persistenced.service", "[Service]\n");
		CHECK_INT(gb_load_daemons(&w.ctx, w.j, both, 1, "580.95.05", NULL, d), 0);
		CHECK_STREQ(d->d[0].state, "masked");
		CHECK_INT(unlink(p), 0);
	}
	write_at(w.root, "lib/systemd/system/nvidia-persistenced.service", "[Service]\n");
	write_at(w.root, "usr/lib/systemd/system/nvidia-fabricmanager.service", "[Service]\n");
	/* NVSwitches and no fabric manager package: refused, named */
	write_at(w.root, "var/lib/dpkg/status", "Package: bash\nStatus: install ok installed\nVersion: 5.2-1\n");
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, both, 2, "580.95.05", NULL, d), -ENOPKG);
	CHECK_STREQ(d->d[0].state, "started");
	CHECK_STREQ(d->d[1].state, "not-installed");
	CHECK(strstr(d->error, "the plan needs the fabric manager (NVSwitches, or the profile)") != NULL);
	CHECK(strstr(d->hint, "nvidia-fabricmanager at the driver's version 580.95.05") != NULL);
	/* another version: refused before systemctl, both versions named */
	write_at(w.root, "var/lib/dpkg/status", fm_status);
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, both, 2, "580.82.07", NULL, d), -EPROTO);
	CHECK_STREQ(d->d[1].state, "refused");
	CHECK_STREQ(d->d[1].version, "580.95.05");
	CHECK_STREQ(d->error, "the fabric manager is 580.95.05, the driver 580.82.07: it would refuse to start (they "
	                      "must be the same version)");
	t = slurp(w.record);
	CHECK_INT(count(t, "systemctl enable nvidia-persistenced.service"), 2);
	CHECK_INT(count(t, "nvidia-fabricmanager.service"), 0);
	free(t);
	/* the same version: enabled and started, journaled */
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, both, 2, "580.95.05", NULL, d), 0);
	CHECK_STREQ(d->d[1].state, "started");
	t = slurp(w.record);
	CHECK(
	    t &&
	    strstr(t, "systemctl enable nvidia-fabricmanager.service\nsystemctl start nvidia-fabricmanager.service\n"));
	free(t);
	CHECK_STREQ(step_state(w.j, "systemctl:start:nvidia-fabricmanager.service"), "done");
	js = gb_daemons_result_to_json(d);
	CHECK_STREQ(json_object_to_json_string_ext(js, JSON_C_TO_STRING_PLAIN),
	            "[{\"name\":\"nvidia-persistenced\",\"state\":\"started\"},{\"name\":\"nvidia-fabricmanager\","
	            "\"state\":\"started\",\"version\":\"580.95.05\"}]");
	json_object_put(js);
	/* B200/B300: NVLSM checked before the fabric manager starts; missing:
	 * refused, named, the fabric manager not started again */
	{
		static const char *const nvl5[] = { "nvlsm", "nvidia-fabricmanager" };
		size_t starts;
		t = slurp(w.record);
		starts = count(t, "systemctl start nvidia-fabricmanager.service");
		free(t);
		CHECK_INT(gb_load_daemons(&w.ctx, w.j, nvl5, 2, "580.95.05", NULL, d), -ENOPKG);
		CHECK_STREQ(d->d[0].state, "not-installed");
		CHECK_INT(d->n, 1);
		CHECK(strstr(d->error, "NVLSM is not installed") != NULL);
		CHECK_STREQ(d->hint, "install nvlsm and infiniband-diags from NVIDIA's repository");
		t = slurp(w.record);
		CHECK_INT(count(t, "systemctl start nvidia-fabricmanager.service"), starts);
		free(t);
		{
			char st[600];
			snprintf(st, sizeof(st),
			         "%s\nPackage: nvlsm\nStatus: install ok installed\nVersion: 2025.06.10-1\n",
			         fm_status);
			write_at(w.root, "var/lib/dpkg/status", st);
		}
		CHECK_INT(gb_load_daemons(&w.ctx, w.j, nvl5, 2, "580.95.05", NULL, d), 0);
		CHECK_STREQ(d->d[0].state, "installed");
		CHECK_STREQ(d->d[0].version, "2025.06.10-1");
		CHECK_STREQ(d->d[1].state, "started");
	}
	world_close(&w);

	/* no dpkg database (the RPM family): rpm's answer */
	snprintf(ver, sizeof(ver), "%s/daemons-rpm/version", base);
	CHECK_INT(gb_mkdir_p(base, 0755), 0);
	{
		char dir[4400];
		snprintf(dir, sizeof(dir), "%s/daemons-rpm", base);
		CHECK_INT(gb_mkdir_p(dir, 0755), 0);
	}
	write_text(ver, "warning: Found bdb_ro Packages database while attempting sqlite backend\n580.95.05\n");
	{
		char rules[4600];
		snprintf(rules, sizeof(rules), "command:rpm -qf:0:%s,systemctl:start:5", ver);
		CHECK_INT(world_open(&w, "daemons-rpm", rules), 0);
	}
	if (!w.j)
		goto out;
	write_at(w.root, "usr/lib/systemd/system/nvidia-fabricmanager.service", "[Service]\n");
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, both + 1, 1, "580.95.05", NULL, d), -EIO);
	CHECK_STREQ(d->d[0].version, "580.95.05");
	CHECK_STREQ(d->d[0].state, "failed"); /* systemctl start failed (scripted EIO) */
	t = slurp(w.record);
	CHECK(t && strstr(t, "run rpm -qf --qf %{VERSION}\\n /usr/bin/nv-fabricmanager\n"));
	free(t);
	world_close(&w);
out:
	free(d);
}

/* The runfile method's fabric manager (no package): the marker's version,
 * believed only while the binary has the sha256 it recorded. */
TEST(daemons_fm_runfile)
{
	static const char *const fm[] = { "nvidia-fabricmanager" };
	struct world w;
	struct gb_daemons_result *d = calloc(1, sizeof(*d));
	char hex[65], marker[128];
	char *t;

	CHECK_INT(world_open(&w, "daemons-fm-runfile", NULL), 0);
	if (!w.j || !d)
		goto out;
	write_at(w.root, "var/lib/dpkg/status", "Package: bash\nStatus: install ok installed\nVersion: 5.2-1\n");
	write_at(w.root, "usr/lib/systemd/system/nvidia-fabricmanager.service", "[Service]\n");
	write_at(w.root, "usr/bin/nv-fabricmanager", "fm binary\n");
	CHECK_INT(gb_root_sha256(w.ctx.root, "usr/bin/nv-fabricmanager", hex, NULL), 0);
	/* no marker: none installed */
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, fm, 1, "580.95.05", NULL, d), -ENOPKG);
	/* the marker of another version: refused, both named */
	snprintf(marker, sizeof(marker), "580.82.07 %s\n", hex);
	write_at(w.root, GB_FM_MARKER, marker);
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, fm, 1, "580.95.05", NULL, d), -EPROTO);
	CHECK_STREQ(d->d[0].version, "580.82.07");
	CHECK(strstr(d->error, "the fabric manager is 580.82.07, the driver 580.95.05") != NULL);
	/* the driver's version: started */
	snprintf(marker, sizeof(marker), "580.95.05 %s\n", hex);
	write_at(w.root, GB_FM_MARKER, marker);
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, fm, 1, "580.95.05", NULL, d), 0);
	CHECK_STREQ(d->d[0].state, "started");
	t = slurp(w.record);
	CHECK(t && strstr(t, "systemctl start nvidia-fabricmanager.service\n"));
	free(t);
	/* the binary replaced since: not believed, not started */
	write_at(w.root, "usr/bin/nv-fabricmanager", "another binary\n");
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, fm, 1, "580.95.05", NULL, d), -EPROTO);
	CHECK_STREQ(d->d[0].state, "refused");
	CHECK(strstr(d->error, "is not the one gpuboot placed from NVIDIA's archive") != NULL);
	world_close(&w);
out:
	free(d);
}

/* GB200/GB300: nvidia-imex after the fabric manager, its nodes file from
 * the site's list; without a list nothing is written or started. */
TEST(daemons_imex)
{
	static const char *const names[] = { "nvidia-fabricmanager", "nvidia-imex" };
	struct world w;
	struct gb_daemons_result *d = calloc(1, sizeof(*d));
	char *t = NULL, p[4400];
	const char *fm, *ix;

	CHECK_INT(world_open(&w, "imex", NULL), 0);
	if (!w.j || !d)
		goto out;
	write_at(w.root, "var/lib/dpkg/status",
	         "Package: nvidia-fabricmanager\nStatus: install ok installed\nVersion: 580.95.05-1\n");
	write_at(w.root, "lib/systemd/system/nvidia-fabricmanager.service", "[Service]\n");
	/* no [imex] nodes: not configured, nothing written or started */
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, names + 1, 1, "580.95.05", NULL, d), 0);
	CHECK_STREQ(d->d[0].state, "not-configured");
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, names + 1, 1, "580.95.05", "", d), 0);
	CHECK_STREQ(d->d[0].state, "not-configured");
	snprintf(p, sizeof(p), "%s/etc/nvidia-imex/nodes_config.cfg", w.root);
	CHECK(access(p, F_OK) != 0);
	/* nodes, and no unit: refused, named, nothing written */
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, names + 1, 1, "580.95.05", "10.0.0.1 fd00::2", d), -ENOPKG);
	CHECK_STREQ(d->d[0].state, "not-installed");
	CHECK(strstr(d->hint, "nvidia-imex") != NULL);
	CHECK(access(p, F_OK) != 0);
	/* installed: the file, one address a line, then the unit after the fabric manager */
	write_at(w.root, "usr/lib/systemd/system/nvidia-imex.service", "[Service]\n");
	CHECK_INT(gb_load_daemons(&w.ctx, w.j, names, 2, "580.95.05", "10.0.0.1 fd00::2", d), 0);
	CHECK_STREQ(d->d[0].state, "started");
	CHECK_STREQ(d->d[1].state, "started");
	free(t);
	t = slurp(p);
	CHECK_STREQ(t, "10.0.0.1\nfd00::2\n");
	free(t);
	t = slurp(w.record);
	fm = t ? strstr(t, "systemctl start nvidia-fabricmanager.service\n") : NULL;
	ix = t ? strstr(t, "systemctl enable nvidia-imex.service\nsystemctl restart nvidia-imex.service\n") : NULL;
	CHECK(fm && ix && fm < ix);
	CHECK_STREQ(step_state(w.j, "file:etc/nvidia-imex/nodes_config.cfg"), "done");
	{
		json_object *js = gb_daemons_result_to_json(d);
		CHECK_STREQ(json_object_to_json_string_ext(js, JSON_C_TO_STRING_PLAIN),
		            "[{\"name\":\"nvidia-fabricmanager\",\"state\":\"started\",\"version\":\"580.95.05\"},"
		            "{\"name\":\"nvidia-imex\",\"state\":\"started\"}]");
		json_object_put(js);
	}
	world_close(&w);
out:
	free(t);
	free(d);
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
