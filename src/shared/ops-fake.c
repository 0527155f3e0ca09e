/* SPDX-License-Identifier: MIT */
/* The fake operations table: records what was asked, fails on cue, and
 * keeps the fixture tree in step with what it did (as kmod's testsuite
 * does with its init_module and sysfs fakes), so the stages after an effect
 * read the world the effect made. */
#include "ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-apt.h"
#include "fake-kernel.h"
#include "fake-rpm.h"
#include "fileio.h"
#include "macro.h"
#include "util.h"

#define FAKE_MAX_RULES 64

struct fake_rule {
	char kind[16];
	char name[256];
	int value;
	char file[512];
};

struct fake {
	struct gb_ops ops;
	char record[1024];
	char root[1024];
	struct fake_rule rules[FAKE_MAX_RULES];
	size_t n_rules;
	uint64_t clock;
	bool has_clock;
	int random_byte; /* -1: real getrandom */
	char release[65];
	char machine[65];
	char apt[512]; /* apt=DIR: the fake apt and dpkg's archive (fake-apt.c) */
	char rpm[512]; /* rpm=DIR: the fake rpm, dnf and zypper's archive and database (fake-rpm.c) */
};

static struct fake *F(const struct gb_ops *ops)
{
	return ops->data;
}

_printf_(2, 3) static void fake_record(const struct gb_ops *ops, const char *fmt, ...)
{
	struct fake *f = F(ops);
	FILE *out;
	va_list ap;
	if (!f->record[0])
		return;
	out = fopen(f->record, "ae");
	if (!out)
		return;
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fclose(out);
}

static const struct fake_rule *fake_find(const struct fake *f, const char *kind, const char *name)
{
	for (size_t i = 0; i < f->n_rules; i++)
		if (streq(f->rules[i].kind, kind) && streq(f->rules[i].name, name))
			return &f->rules[i];
	return NULL;
}

/* Append FILE's bytes to the fixture's dev/kmsg, as the kernel would log them. */
static void fake_kmsg(struct fake *f, const char *module)
{
	const struct fake_rule *k = fake_find(f, "kmsg", module);
	_cleanup_free_ char *text = NULL;
	char path[1200];
	size_t len;
	FILE *out;
	if (!k || !f->root[0] || gb_read_file(k->file, 1u << 20, &text, &len) < 0)
		return;
	snprintf(path, sizeof(path), "%s/dev", f->root);
	(void)gb_mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/dev/kmsg", f->root);
	out = fopen(path, "ae");
	if (!out)
		return;
	fwrite(text, 1, len, out);
	if (len && text[len - 1] != '\n')
		fputc('\n', out);
	fclose(out);
}

/* The fake kernel's module state under its root; a negative errno (the
 * call fails, proc/modules unchanged) when its own bookkeeping cannot be
 * done, as a kernel out of memory would fail the load. */
static int fake_set_loaded(struct fake *f, const char *module, bool loaded)
{
	char path[1200];
	_cleanup_free_ char *mods = NULL;
	size_t len = 0;
	FILE *out;
	int r;

	if (!f->root[0])
		return 0;
	/* proc/modules: one line per module, "name size refs deps state address". */
	snprintf(path, sizeof(path), "%s/proc/modules", f->root);
	r = gb_read_file(path, 1u << 20, &mods, &len);
	if (r < 0 && r != -ENOENT)
		return r;
	snprintf(path, sizeof(path), "%s/proc", f->root);
	(void)gb_mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/modules", f->root);
	out = fopen(path, "we");
	if (!out)
		return negative_errno();
	snprintf(path, sizeof(path), "%s/sys/module/%s", f->root, module);
	if (loaded) {
		(void)gb_mkdir_p(path, 0755);
		snprintf(path, sizeof(path), "%s/sys/module/%s/initstate", f->root, module);
		r = gb_write_file_atomic(path, "live\n", 5, 0644);
		if (r < 0) {
			fclose(out);
			return r;
		}
	} else {
		snprintf(path, sizeof(path), "%s/sys/module/%s/initstate", f->root, module);
		unlink(path);
		snprintf(path, sizeof(path), "%s/sys/module/%s", f->root, module);
		rmdir(path);
	}
	for (char *line = mods, *next; line && *line; line = next) {
		size_t n = strcspn(line, "\n"), ml = strlen(module);
		next = line[n] ? line + n + 1 : line + n;
		if (n > ml && strneq(line, module, ml) && line[ml] == ' ')
			continue;
		fwrite(line, 1, n, out);
		fputc('\n', out);
	}
	if (loaded)
		fprintf(out, "%s 1048576 0 - Live 0x0000000000000000\n", module);
	fclose(out);
	return 0;
}

/* A loaded nvidia or nvidia_uvm registers its character major, as the
 * real modules do (the numbers an H200 with 580.159.04 showed): a line in
 * proc/devices' "Character devices:" section. */
static int fake_register_chrdev(struct fake *f, const char *module)
{
	const char *line = streq(module, "nvidia")       ? "195 nvidia\n"
	                   : streq(module, "nvidia_uvm") ? "238 nvidia-uvm\n"
	                                                 : NULL;
	_cleanup_free_ char *text = NULL, *out = NULL;
	const char *head = "Character devices:\n", *at;
	char path[1200];
	size_t len = 0, hl = strlen(head);
	int r;

	if (!line || !f->root[0])
		return 0;
	snprintf(path, sizeof(path), "%s/proc/devices", f->root);
	r = gb_read_file(path, 1u << 20, &text, &len);
	if (r < 0 && r != -ENOENT)
		return r;
	if (text && strstr(text, line))
		return 0;
	at = text && gb_startswith(text, head) ? text + hl : text ? text : "";
	if (asprintf(&out, "%s%s%s", head, line, at) < 0)
		return -ENOMEM;
	return gb_write_file_atomic(path, out, strlen(out), 0444);
}

static int fake_module_load(const struct gb_ops *ops, const char *module, const char *params)
{
	struct fake *f = F(ops);
	const struct fake_rule *r = fake_find(f, "module", module);
	int r2;

	fake_record(ops, "module_load %s %s", module, params ? params : "");
	if (r) {
		fake_kmsg(f, module);
		return -r->value;
	}
	r2 = gb_fake_kernel_insert(f->root, f->release, module);
	if (r2 < 0)
		return r2;
	r2 = fake_set_loaded(f, module, true);
	return r2 < 0 ? r2 : fake_register_chrdev(f, module);
}

static int fake_module_unload(const struct gb_ops *ops, const char *module)
{
	struct fake *f = F(ops);
	const struct fake_rule *r = fake_find(f, "remove", module);
	fake_record(ops, "module_unload %s", module);
	if (r)
		return -r->value;
	gb_fake_kernel_remove(f->root, module);
	return fake_set_loaded(f, module, false);
}

static int fake_module_state(const struct gb_ops *ops, const char *module, enum gb_module_state *ret)
{
	struct fake *f = F(ops);
	char path[1200];
	_cleanup_free_ char *s = NULL;
	size_t len;
	struct stat st;
	int r;

	*ret = GB_MODULE_ABSENT;
	if (!f->root[0])
		return 0;
	snprintf(path, sizeof(path), "%s/sys/module/%s/initstate", f->root, module);
	r = gb_read_file(path, 64, &s, &len);
	if (r == 0) {
		gb_strstrip(s);
		*ret = streq(s, "live") ? GB_MODULE_LIVE : streq(s, "coming") ? GB_MODULE_COMING : GB_MODULE_GOING;
		return 0;
	}
	if (r == -ENOMEM)
		return r; /* as the real one (libkmod) answers when it cannot read it */
	snprintf(path, sizeof(path), "%s/sys/module/%s", f->root, module);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		*ret = GB_MODULE_BUILTIN;
	return 0;
}

/* A rule's PREFIX matches when the argv, joined by single spaces, starts with it. */
static const struct fake_rule *fake_find_command(const struct fake *f, const char *line)
{
	const struct fake_rule *best = NULL;
	for (size_t i = 0; i < f->n_rules; i++) {
		const struct fake_rule *r = &f->rules[i];
		size_t n = strlen(r->name);
		if (!streq(r->kind, "command") || !strneq(line, r->name, n) || (line[n] && line[n] != ' '))
			continue;
		if (!best || n > strlen(best->name))
			best = r; /* the longest prefix wins */
	}
	return best;
}

/* installs: rules: a command whose argv names NAME (or a path ending in
 * /NAME) puts DIR's tree into the root, as a package manager or an
 * installer would. 0 or the negative errno of a copy that failed. */
static int fake_installs(struct fake *f, const struct gb_cmd_spec *spec)
{
	int r = 0;
	for (size_t i = 0; i < f->n_rules && f->root[0] && r >= 0; i++) {
		const struct fake_rule *ru = &f->rules[i];
		bool match = false;
		for (size_t a = 0; spec->argv[a] && !match; a++) {
			const char *base = strrchr(spec->argv[a], '/');
			match = streq(spec->argv[a], ru->name) || (base && streq(base + 1, ru->name));
		}
		if (streq(ru->kind, "installs") && match)
			r = gb_fake_copy_tree(ru->file, f->root);
	}
	return r;
}

/* creates: rules: the files the command stands for would put in place. */
static void fake_creates(struct fake *f, const struct gb_cmd_spec *spec)
{
	for (size_t i = 0; i < f->n_rules && f->root[0]; i++) {
		const struct fake_rule *r = &f->rules[i];
		char path[1600];
		bool match = false;
		for (size_t a = 0; spec->argv[a] && !match; a++)
			match = streq(spec->argv[a], r->name);
		if (!streq(r->kind, "creates") || !match)
			continue;
		snprintf(path, sizeof(path), "%s/%s", f->root, r->file);
		*strrchr(path, '/') = '\0';
		(void)gb_mkdir_p(path, 0755);
		path[strlen(path)] = '/';
		(void)gb_write_file_atomic(path, "fake\n", 5, 0755);
	}
}

/* argv as one line, a space between words, cut at sz. */
static void join_argv(const char *const *argv, char *line, size_t sz)
{
	size_t o = 0;

	line[0] = '\0';
	for (size_t i = 0; argv[i] && o < sz - 2; i++) {
		int n = snprintf(line + o, sz - o, "%s%s", i ? " " : "", argv[i]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

static int fake_run_command(const struct gb_ops *ops, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret)
{
	struct fake *f = F(ops);
	const struct fake_rule *r;
	char line[2048];

	memset(ret, 0, sizeof(*ret));
	if (!spec->argv || !spec->argv[0])
		return -EINVAL;
	join_argv(spec->argv, line, sizeof(line));
	fake_record(ops, "run%s%s %s", spec->chroot_dir ? " chroot=" : "", spec->chroot_dir ? spec->chroot_dir : "",
	            line);
	fake_creates(f, spec);
	r = fake_find_command(f, line);
	if (!r && f->apt[0]) {
		int a = gb_fake_apt_run(f->root, f->apt, spec->argv, ret);
		if (a != 0)
			return a < 0 ? a : 0;
	}
	if (!r && f->rpm[0]) {
		int a = gb_fake_rpm_run(f->root, f->rpm, spec->argv, ret);
		if (a != 0)
			return a < 0 ? a : 0;
	}
	if (!(r && r->value) && fake_installs(f, spec) < 0)
		return -EIO; /* the fake's own failure: never a silent half-install */
	if (r && r->file[0]) {
		_cleanup_free_ char *text = NULL;
		size_t len;
		if (gb_read_file(r->file, 1u << 20, &text, &len) == 0) {
			size_t keep = len < sizeof(ret->output) - 1 ? len : sizeof(ret->output) - 1;
			memcpy(ret->output, text + len - keep, keep);
			ret->output[keep] = '\0';
			ret->output_len = keep;
		}
	}
	if (r && r->value == 999) /* the scripted timeout */
		return ret->timed_out = true, -ETIMEDOUT;
	ret->status = r ? (r->value & 0xff) << 8 : 0;
	return 0;
}

/* Refused by the kernel on cue (exec:NAME:ERRNO, then recorded), else really run. */
static int fake_run_exec(const struct gb_ops *ops, const struct gb_exec_spec *spec, struct gb_exec_result *ret)
{
	const struct fake_rule *r;
	char line[1024];

	memset(ret, 0, sizeof(*ret));
	if (!spec->argv || !spec->argv[0])
		return -EINVAL;
	join_argv((const char *const *)spec->argv, line, sizeof(line));
	/* a program run to measure (the probe) changes nothing: recorded only
	 * where the spec scripts it, so a run with no effect records nothing */
	r = fake_find(F(ops), "exec", spec->argv[0]);
	if (r)
		fake_record(ops, "exec %s", line);
	if (r && r->value) {
		ret->exec_errno = r->value;
		ret->status = 127 << 8;
		return 0;
	}
	return gb_ops_real.run_exec(ops, spec, ret);
}

/* Recorded; fails on cue (write:PATH:ERRNO), else written below the root. */
static int fake_write_attr(const struct gb_ops *ops, struct gb_root *root, const char *path, const char *data)
{
	const struct fake_rule *r = fake_find(F(ops), "write", path);
	fake_record(ops, "write %s %s", path, data);
	return r ? -r->value : gb_ops_real.write_attr(ops, root, path, data);
}

static int fake_systemctl(const struct gb_ops *ops, const char *verb, const char *unit)
{
	const struct fake_rule *r = fake_find(F(ops), "systemctl", verb);
	fake_record(ops, "systemctl %s %s", verb, unit ? unit : "");
	return r ? -r->value : 0;
}

static int fake_random(const struct gb_ops *ops, void *buf, size_t n)
{
	struct fake *f = F(ops);
	if (f->random_byte < 0)
		return gb_ops_real.random(&gb_ops_real, buf, n);
	memset(buf, f->random_byte, n);
	return 0;
}

static void fake_sleep_ms(const struct gb_ops *ops, unsigned ms)
{
	struct fake *f = F(ops);
	fake_record(ops, "sleep %u", ms);
	if (f->has_clock)
		f->clock += (uint64_t)ms * 1000000ull;
	else
		gb_ops_real.sleep_ms(&gb_ops_real, ms);
}

static uint64_t fake_now(const struct gb_ops *ops)
{
	struct fake *f = F(ops);
	if (!f->has_clock)
		return gb_ops_real.now_monotonic_ns(&gb_ops_real);
	f->clock += 1000000ull;
	return f->clock;
}

static uint64_t fake_now_realtime(const struct gb_ops *ops)
{
	struct fake *f = F(ops);
	if (!f->has_clock)
		return gb_ops_real.now_realtime_ns(&gb_ops_real);
	f->clock += 1000000ull;
	return f->clock;
}

static int fake_uname(const struct gb_ops *ops, struct utsname *ret)
{
	struct fake *f = F(ops);
	int r = gb_ops_real.uname(&gb_ops_real, ret);
	if (r < 0)
		return r;
	if (f->release[0])
		gb_strscpy(ret->release, sizeof(ret->release), f->release);
	if (f->machine[0])
		gb_strscpy(ret->machine, sizeof(ret->machine), f->machine);
	return 0;
}

static int fake_mount_bind(const struct gb_ops *ops, const char *src, const char *dst)
{
	const struct fake_rule *r = fake_find(F(ops), "mount", dst);
	fake_record(ops, "mount_bind %s %s", src, dst);
	return r ? -r->value : 0;
}

static int fake_umount(const struct gb_ops *ops, const char *dst)
{
	const struct fake_rule *r = fake_find(F(ops), "umount", dst);
	fake_record(ops, "umount %s", dst);
	return r ? -r->value : 0;
}

/* The node's stand-in: a regular file that names what the node would be. */
static int fake_mknod(const struct gb_ops *ops, int dirfd, const char *name, const struct gb_node_spec *spec)
{
	const struct fake_rule *r = fake_find(F(ops), "mknod", spec->path);
	char want[96], have[96];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int len;

	fake_record(ops, "mknod %s %04o %u:%u %u:%u", spec->path, spec->perm, spec->major, spec->minor, spec->uid,
	            spec->gid);
	if (r)
		return -r->value;
	len = snprintf(want, sizeof(want), "c %u:%u %04o %u:%u\n", spec->major, spec->minor, spec->perm, spec->uid,
	               spec->gid);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		n = read(fd, have, sizeof(have));
		if (n == len && memcmp(have, want, (size_t)len) == 0)
			return 1;
		close(fd);
		fd = -1;
	}
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return negative_errno();
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return negative_errno();
	return write(fd, want, (size_t)len) == len ? 0 : -EIO;
}

/* kind:NAME:VALUE[:FILE]; NAME may hold spaces, not colons. */
static int parse_rule(struct fake *f, char *item)
{
	char *field[4] = { NULL };
	size_t n = 0;
	struct fake_rule *r;
	uint32_t value = 0;

	field[n++] = item;
	for (char *p = strchr(item, ':'); p && n < ARRAY_SIZE(field); p = strchr(p, ':')) {
		*p++ = '\0';
		field[n++] = p;
	}
	if (n < 3 || f->n_rules >= FAKE_MAX_RULES)
		return -EINVAL;
	if (!streq(field[0], "module") && !streq(field[0], "remove") && !streq(field[0], "command") &&
	    !streq(field[0], "systemctl") && !streq(field[0], "kmsg") && !streq(field[0], "mount") &&
	    !streq(field[0], "umount") && !streq(field[0], "creates") && !streq(field[0], "mknod") &&
	    !streq(field[0], "installs") && !streq(field[0], "exec") && !streq(field[0], "write"))
		return -EINVAL;
	r = &f->rules[f->n_rules];
	if (streq(field[0], "kmsg")) {
		if (n != 3 || gb_strscpy(r->file, sizeof(r->file), field[2]) < 0)
			return -EINVAL;
	} else {
		if (gb_safe_atou32(field[2], 10, &value) < 0 || value > 4095)
			return -EINVAL;
		if (streq(field[0], "creates") && (n != 4 || strstr(field[3], "..") || field[3][0] == '/'))
			return -EINVAL;
		if (streq(field[0], "installs") && (n != 4 || field[3][0] != '/'))
			return -EINVAL;
		if (n == 4 &&
		    ((!streq(field[0], "command") && !streq(field[0], "creates") && !streq(field[0], "installs")) ||
		     gb_strscpy(r->file, sizeof(r->file), field[3]) < 0))
			return -EINVAL;
	}
	if (!field[1][0] || gb_strscpy(r->kind, sizeof(r->kind), field[0]) < 0 ||
	    gb_strscpy(r->name, sizeof(r->name), field[1]) < 0)
		return -EINVAL;
	r->value = (int)value;
	f->n_rules++;
	return 0;
}

static int parse_item(struct fake *f, char *item)
{
	const char *v;
	if ((v = gb_startswith(item, "record=")))
		return gb_strscpy(f->record, sizeof(f->record), v) < 0 ? -EINVAL : 0;
	if ((v = gb_startswith(item, "root=")))
		return gb_strscpy(f->root, sizeof(f->root), v) < 0 ? -EINVAL : 0;
	if ((v = gb_startswith(item, "apt=")))
		return gb_strscpy(f->apt, sizeof(f->apt), v) < 0 ? -EINVAL : 0;
	if ((v = gb_startswith(item, "rpm=")))
		return gb_strscpy(f->rpm, sizeof(f->rpm), v) < 0 ? -EINVAL : 0;
	if ((v = gb_startswith(item, "clock:"))) {
		f->has_clock = true;
		return gb_safe_atou64(v, 10, &f->clock);
	}
	if ((v = gb_startswith(item, "random:"))) {
		uint32_t b;
		if (gb_safe_atou32(v, 10, &b) < 0 || b > 255)
			return -EINVAL;
		f->random_byte = (int)b;
		return 0;
	}
	if ((v = gb_startswith(item, "uname:"))) {
		const char *c = strchr(v, ':');
		if (!c || (size_t)(c - v) >= sizeof(f->release))
			return -EINVAL;
		memcpy(f->release, v, (size_t)(c - v));
		return gb_strscpy(f->machine, sizeof(f->machine), c + 1) < 0 ? -EINVAL : 0;
	}
	return parse_rule(f, item);
}

int gb_ops_fake_new(const char *spec, const struct gb_ops **ret)
{
	struct fake *f;
	char *save = NULL, *item, *copy;
	int r = 0;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	copy = strdup(spec);
	if (!copy) {
		free(f);
		return -ENOMEM;
	}
	f->random_byte = -1;
	for (item = strtok_r(copy, ",", &save); item && r == 0; item = strtok_r(NULL, ",", &save))
		r = parse_item(f, item);
	free(copy);
	if (r < 0) {
		free(f);
		return -EINVAL;
	}
	f->ops = (struct gb_ops){
		.name = "fake",
		.data = f,
		.module_load = fake_module_load,
		.module_unload = fake_module_unload,
		.module_state = fake_module_state,
		.run_command = fake_run_command,
		.run_exec = fake_run_exec,
		.systemctl = fake_systemctl,
		.random = fake_random,
		.sleep_ms = fake_sleep_ms,
		.now_monotonic_ns = fake_now,
		.now_realtime_ns = fake_now_realtime,
		.uname = fake_uname,
		.mount_bind = fake_mount_bind,
		.umount = fake_umount,
		.mknod = fake_mknod,
		.write_attr = fake_write_attr,
	};
	*ret = &f->ops;
	return 0;
}

void gb_ops_fake_free(const struct gb_ops *ops)
{
	if (ops && ops != &gb_ops_real)
		free(ops->data);
}
