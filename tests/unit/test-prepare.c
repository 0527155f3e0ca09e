/* SPDX-License-Identifier: MIT */
/* The prepare stage: the next kernel from real GRUB files (Debian 12's
 * grub.cfg written by its own grub-mkconfig, grubenv by grub-editenv, RHEL
 * 9 BLS entries) and from hostile ones; the initramfs reader on images
 * built here (an uncompressed early cpio followed by a gzip, zstd or xz
 * main cpio, as the kernel reads them) and on hostile ones (truncated,
 * garbage after the trailer, a huge declared entry, a decompression bomb,
 * too many entries for the deadline); gb_prepare_nouveau against the fake
 * operations table (free: unbound, unloaded, blacklisted; held: a reboot;
 * an initramfs with nouveau rebuilt once, without it not at all, a rerun
 * doing nothing); the resume unit and the rule against reboot loops. Run
 * from the repository root. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "effect/pkg.h"
#include "context.h"
#include "prepare/bootloader.h"
#include "prepare/initramfs.h"
#include "prepare/prepare.h"
#include "effect/journal.h"
#include "shared/fileio.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"
#include "unit.h"

static char base[] = "/tmp/gpuboot-test-prepare.XXXXXX";

static char *slurp(const char *path, size_t *len)
{
	char *t = NULL;
	size_t n = 0;
	if (gb_read_file(path, 4u << 20, &t, &n) < 0)
		return NULL;
	if (len)
		*len = n;
	return t;
}

/* ---- GRUB ---- */

TEST(grubenv)
{
	size_t len;
	char *env = slurp("tests/prepare/debian12/boot/grub/grubenv", &len), v[512], small[8];
	static const char bad[] = "saved_entry=x\n", ctl[] = "# GRUB Environment Block\nsaved_entry=a\x01b\n";
	static const char esc[] = "# GRUB Environment Block\nk=a\\\\b\\\nc\n####";

	CHECK(env != NULL);
	if (!env)
		return;
	CHECK_INT(len, 1024); /* grub-editenv's fixed block */
	CHECK_INT(gb_grubenv_get(env, len, "next_entry", v, sizeof(v)), 0);
	CHECK_STREQ(v, "1>2");
	CHECK_INT(gb_grubenv_get(env, len, "saved_entry", v, sizeof(v)), 0);
	CHECK_STREQ(v, "gnulinux-advanced-6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10>gnulinux-6.1.0-18-amd64-advanced-"
	               "6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10");
	CHECK_INT(gb_grubenv_get(env, len, "next", v, sizeof(v)), -ENOENT);
	CHECK_INT(gb_grubenv_get(env, len, "saved_entry", small, sizeof(small)), -ENAMETOOLONG);
	CHECK_INT(gb_grubenv_get(bad, strlen(bad), "saved_entry", v, sizeof(v)), -EINVAL);
	CHECK_INT(gb_grubenv_get(ctl, strlen(ctl), "saved_entry", v, sizeof(v)), -EINVAL);
	CHECK_INT(gb_grubenv_get(esc, strlen(esc), "k", v, sizeof(v)), 0);
	CHECK_STREQ(v, "a\\b\nc");
	free(env);
}

static void check_cfg_kernel(const char *cfg, size_t len, const char *def, int want_r, const char *want)
{
	char k[GB_KVER_MAX] = "";
	int r = gb_grubcfg_kernel(cfg, len, def, k, sizeof(k));
	if (r != want_r || (want && strcmp(k, want) != 0))
		fprintf(stderr, "default '%s': %d '%s'\n", def, r, k);
	CHECK_INT(r, want_r);
	if (want)
		CHECK_STREQ(k, want);
}

TEST(grubcfg_debian)
{
	size_t len, slen;
	char *cfg = slurp("tests/prepare/debian12/boot/grub/grub.cfg", &len);
	char *saved = slurp("tests/prepare/debian12-saved/boot/grub/grub.cfg", &slen), d[512];
	const char *adv = "gnulinux-advanced-6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10";
	char path[512];

	CHECK(cfg && saved);
	if (!cfg || !saved)
		goto out;
	/* GRUB_DEFAULT=0: "0"; next_entry wins; ${saved_entry} only where the file says so */
	CHECK_INT(gb_grubcfg_default(cfg, len, NULL, "x", d, sizeof(d)), 0);
	CHECK_STREQ(d, "0");
	CHECK_INT(gb_grubcfg_default(cfg, len, "1>2", "x", d, sizeof(d)), 0);
	CHECK_STREQ(d, "1>2");
	CHECK_INT(gb_grubcfg_default(saved, slen, "", "x>y", d, sizeof(d)), 0);
	CHECK_STREQ(d, "x>y");
	CHECK_INT(gb_grubcfg_default(saved, slen, NULL, "", d, sizeof(d)), 0);
	CHECK_STREQ(d, "0");
	CHECK(!gb_grubcfg_uses_bls(cfg, len));
	/* the menu: 0 the simple entry (newest), 1 the submenu: 21, 21 recovery, 18, 18 recovery */
	check_cfg_kernel(cfg, len, "0", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, "1>0", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, "1>2", 0, "6.1.0-18-amd64");
	check_cfg_kernel(cfg, len, "1>3", 0, "6.1.0-18-amd64");
	snprintf(path, sizeof(path), "%s>gnulinux-6.1.0-18-amd64-advanced-6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10", adv);
	check_cfg_kernel(cfg, len, path, 0, "6.1.0-18-amd64");
	check_cfg_kernel(cfg, len, "Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-18-amd64",
	                 0, "6.1.0-18-amd64");
	check_cfg_kernel(cfg, len, "gnulinux-simple-6e0a1f1c-3b7e-4d2a-9b1f-2f3c5d7e9a10", 0, "6.1.0-21-amd64");
	/* names nothing, or a submenu, or too deep: GRUB's fallback, the first entry */
	check_cfg_kernel(cfg, len, "7", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, "1", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, "1>9", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, "0>1", 0, "6.1.0-21-amd64");
	check_cfg_kernel(cfg, len, ">>>", 0, "6.1.0-21-amd64");
out:
	free(cfg);
	free(saved);
}

TEST(grubcfg_hostile)
{
	static const char *const bad[] = {
		"menuentry 'x' {\n linux /boot/vmlinuz-1.0\n", /* never closed */
		"}\n", /* closes nothing */
		"menuentry 'x {\n linux /boot/vmlinuz-1.0\n}\n", /* unterminated quote */
		"menuentry 'x' {\n linux /boot/vmlinuz-a*b\n}\n", /* not a release */
		"menuentry 'x' {\n linux /boot/vmlinuz-\x01\n}\n", /* control byte */
	};
	static const char quoted[] = "set default=\"Debian's\"\n"
	                             "menuentry 'a' { \n linux /vmlinuz-1.0 \n}\n"
	                             "menuentry 'Debian'\\''s' --id x {\n\tlinux\t/boot/vmlinuz-2.0-amd64 ro\n}\n";
	static const char nokernel[] = "menuentry 'x' {\n linux /vmlinuz\n}\n";
	char k[GB_KVER_MAX], d[64], *deep, *noise;
	size_t o = 0;
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = gb_grubcfg_kernel(bad[i], strlen(bad[i]), "0", k, sizeof(k));
		if (r != -EINVAL)
			fprintf(stderr, "bad grub.cfg %zu: %d\n", i, r);
		CHECK_INT(r, -EINVAL);
	}
	CHECK_INT(gb_grubcfg_kernel("x\0y", 3, "0", k, sizeof(k)), -EINVAL);
	CHECK_INT(gb_grubcfg_kernel(nokernel, strlen(nokernel), "0", k, sizeof(k)), -ENOENT);
	CHECK_INT(gb_grubcfg_kernel("", 0, "0", k, sizeof(k)), -ENOENT);
	/* a title with '\'' and a tab-separated linux line */
	CHECK_INT(gb_grubcfg_default(quoted, strlen(quoted), NULL, NULL, d, sizeof(d)), 0);
	CHECK_STREQ(d, "Debian's");
	check_cfg_kernel(quoted, strlen(quoted), d, 0, "2.0-amd64");
	/* nesting deeper than we follow */
	deep = malloc(100 * 16 + 1);
	noise = malloc(65536);
	if (!deep || !noise)
		goto out;
	for (int i = 0; i < 100; i++)
		o += (size_t)snprintf(deep + o, 17, "submenu 'a' {\n");
	CHECK_INT(gb_grubcfg_kernel(deep, o, "0", k, sizeof(k)), -EINVAL);
	/* random bytes (printable and not): an answer or an error, never a crash */
	for (int round = 0; round < 200; round++) {
		static const char alphabet[] = "{}'\"\\\n #;>menuentry linux /vmlinuz-1 submenu set default=";
		size_t n = 1 + (x % 65535);
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			noise[i] = round & 1 ? (char)(x & 0xff) : alphabet[x % (sizeof(alphabet) - 1)];
		}
		(void)gb_grubcfg_kernel(noise, n, round & 2 ? "1>0" : "0", k, sizeof(k));
		(void)gb_grubcfg_default(noise, n, NULL, "s", d, sizeof(d));
		(void)gb_grubenv_get(noise, n, "saved_entry", d, sizeof(d));
	}
out:
	free(deep);
	free(noise);
}

TEST(bls)
{
	struct gb_bls_entry e[3];
	size_t len;
	char *t = slurp("tests/prepare/rhel9/boot/loader/entries/"
	                "8215ac7e45d34823b4dce2e258c3cc47-5.14.0-362.8.1.el9_3.x86_64.conf",
	                &len);
	static const char nover[] = "title t\nlinux /vmlinuz-6.8.5-200.fc39.x86_64\n", bad[] = "version ../x\n";

	CHECK(t != NULL);
	if (!t)
		return;
	CHECK_INT(gb_bls_parse("a", t, len, &e[0]), 0);
	CHECK_STREQ(e[0].version, "5.14.0-362.8.1.el9_3.x86_64");
	CHECK_STREQ(e[0].title, "Red Hat Enterprise Linux (5.14.0-362.8.1.el9_3.x86_64) 9.3 (Plow)");
	CHECK_INT(gb_bls_parse("b", nover, strlen(nover), &e[1]), 0);
	CHECK_STREQ(e[1].version, "6.8.5-200.fc39.x86_64");
	CHECK_INT(gb_bls_parse("c", bad, strlen(bad), &e[2]), -EINVAL);
	CHECK_INT(gb_bls_parse("c", "title x\n", 8, &e[2]), -EINVAL);
	CHECK_INT(gb_bls_parse("c", "version 1\x02\n", 10, &e[2]), -EINVAL);
	/* rpm's order: 362.18.1 is newer than 362.8.1 */
	CHECK(gb_rpmvercmp("5.14.0-362.18.1.el9_3", "5.14.0-362.8.1.el9_3") > 0);
	CHECK(gb_rpmvercmp("1.0", "1.0") == 0);
	CHECK(gb_rpmvercmp("1.0a", "1.0") > 0);
	CHECK(gb_rpmvercmp("1.001", "1.1") == 0);
	CHECK(gb_rpmvercmp("2", "10") < 0);
	gb_strscpy(e[2].id, sizeof(e[2].id), "z");
	gb_strscpy(e[2].version, sizeof(e[2].version), "5.14.0-362.18.1.el9_3.x86_64");
	e[2].title[0] = e[2].sort_key[0] = '\0';
	gb_bls_sort(e, 3);
	CHECK_STREQ(e[0].version, "6.8.5-200.fc39.x86_64");
	CHECK_STREQ(e[1].version, "5.14.0-362.18.1.el9_3.x86_64");
	CHECK_INT(gb_bls_pick(e, 3, ""), 0);
	CHECK_INT(gb_bls_pick(e, 3, "a"), 2);
	CHECK_INT(gb_bls_pick(e, 3, "2"), 2);
	CHECK_INT(gb_bls_pick(e, 3, "99"), 0);
	CHECK_INT(gb_bls_pick(e, 0, ""), -ENOENT);
	free(t);
}

static void check_next_kernel(const char *root_dir, int want_r, const char *want)
{
	struct gb_root *root = NULL;
	char k[GB_KVER_MAX] = "";
	CHECK_INT(gb_root_open(root_dir, &root), 0);
	if (!root)
		return;
	int r = gb_prepare_next_kernel(root, k, sizeof(k));
	if (r != want_r)
		fprintf(stderr, "%s: %d '%s'\n", root_dir, r, k);
	CHECK_INT(r, want_r);
	if (want)
		CHECK_STREQ(k, want);
	gb_root_free(root);
}

static void write_text(const char *path, const char *text)
{
	char dir[4200];
	gb_strscpy(dir, sizeof(dir), path);
	*strrchr(dir, '/') = '\0';
	CHECK_INT(gb_mkdir_p(dir, 0755), 0);
	CHECK_INT(gb_write_file_atomic(path, text, strlen(text), 0644), 0);
}

TEST(next_kernel)
{
	char p[4200], q[4200];

	/* Debian 12: grub-reboot's next_entry 1>2 wins over saved_entry */
	check_next_kernel("tests/prepare/debian12", 0, "6.1.0-18-amd64");
	/* GRUB_DEFAULT=saved, grub-set-default to the older kernel's id */
	check_next_kernel("tests/prepare/debian12-saved", 0, "6.1.0-18-amd64");
	/* RHEL 9: blscfg, saved_entry names the older entry by its id */
	check_next_kernel("tests/prepare/rhel9", 0, "5.14.0-362.8.1.el9_3.x86_64");
	/* no saved_entry: the newest; no grub.cfg at all: the BLS entries alone */
	snprintf(p, sizeof(p), "%s/bls-nosaved", base);
	snprintf(q, sizeof(q), "cp -a tests/prepare/rhel9 %s && rm %s/boot/grub2/grubenv", p, p);
	CHECK_INT(system(q), 0);
	check_next_kernel(p, 0, "5.14.0-362.18.1.el9_3.x86_64");
	snprintf(q, sizeof(q), "rm %s/boot/grub2/grub.cfg", p);
	CHECK_INT(system(q), 0);
	check_next_kernel(p, 0, "5.14.0-362.18.1.el9_3.x86_64");
	/* nothing to read; blscfg without entries; a grubenv that is not one */
	snprintf(p, sizeof(p), "%s/empty", base);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	check_next_kernel(p, -ENOENT, NULL);
	snprintf(p, sizeof(p), "%s/bls-none/boot/grub2/grub.cfg", base);
	write_text(p, "insmod blscfg\nblscfg\n");
	snprintf(p, sizeof(p), "%s/bls-none", base);
	check_next_kernel(p, -EINVAL, NULL);
	snprintf(p, sizeof(p), "%s/badenv", base);
	snprintf(q, sizeof(q), "cp -a tests/prepare/debian12 %s && printf 'next_entry=1>2\\n' > %s/boot/grub/grubenv",
	         p, p);
	CHECK_INT(system(q), 0);
	check_next_kernel(p, 0, "6.1.0-21-amd64");
}

/* ---- initramfs images ---- */

struct cpio {
	unsigned char *buf;
	size_t len, cap;
};

static void put(struct cpio *c, const void *p, size_t n)
{
	if (c->len + n + 4 > c->cap) {
		c->cap = (c->len + n + 4) * 2;
		c->buf = realloc(c->buf, c->cap);
		if (!c->buf)
			abort();
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
}

static void pad4(struct cpio *c)
{
	static const char z[4];
	put(c, z, (4 - c->len % 4) % 4);
}

/* One newc entry; declared is the size the header claims (data may be shorter). */
static void cpio_entry(struct cpio *c, const char *name, unsigned mode, const void *data, size_t len, size_t declared)
{
	char h[111];
	snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", 1u, mode, 0u, 0u, 1u, 0u,
	         declared, 0u, 0u, 0u, 0u, strlen(name) + 1, 0u);
	put(c, h, 110);
	put(c, name, strlen(name) + 1);
	pad4(c);
	put(c, data, len);
	pad4(c);
}

static void cpio_file(struct cpio *c, const char *name, const char *text)
{
	cpio_entry(c, name, 0100644, text, strlen(text), strlen(text));
}

static void cpio_trailer(struct cpio *c)
{
	cpio_entry(c, "TRAILER!!!", 0, "", 0, 0);
}

/* The kernel's early microcode archive, then 512-byte zero padding (as dracut and mkinitramfs leave). */
static void early_cpio(struct cpio *c)
{
	static const char z[512];
	cpio_entry(c, "kernel", 040755, "", 0, 0);
	cpio_entry(c, "kernel/x86/microcode", 040755, "", 0, 0);
	cpio_file(c, "kernel/x86/microcode/GenuineIntel.bin", "microcode");
	cpio_trailer(c);
	put(c, z, 512 - c->len % 512);
}

/* A main archive: a few files, nouveau.ko.xz with nouveau, a modprobe.d blacklist with blacklist. */
static void main_cpio(struct cpio *c, bool nouveau, bool blacklist)
{
	cpio_entry(c, ".", 040755, "", 0, 0);
	cpio_file(c, "./init", "#!/bin/sh\n");
	cpio_file(c, "./usr/lib/modules/6.1.0-21-amd64/kernel/drivers/gpu/drm/drm.ko.xz", "drm");
	if (nouveau)
		cpio_file(c, "./usr/lib/modules/6.1.0-21-amd64/kernel/drivers/gpu/drm/nouveau/nouveau.ko.xz", "nv");
	cpio_file(c, "./etc/modprobe.d/other.conf", "options snd_hda_intel power_save=1\n");
	if (blacklist)
		cpio_file(c, "./etc/modprobe.d/gpuboot-blacklist-nouveau.conf", GB_PREPARE_BLACKLIST_TEXT);
	cpio_trailer(c);
}

/* Compress with libarchive's writer ("raw": the bytes as they are). */
static void compress_into(struct cpio *out, const struct cpio *in, int (*filter)(struct archive *))
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	size_t cap = in->len + 65536, used = 0;
	unsigned char *buf = malloc(cap);

	if (!a || !e || !buf)
		abort();
	CHECK_INT(filter(a), ARCHIVE_OK);
	CHECK_INT(archive_write_set_format_raw(a), ARCHIVE_OK);
	CHECK_INT(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	archive_entry_set_pathname(e, "data");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)in->len);
	CHECK_INT(archive_write_header(a, e), ARCHIVE_OK);
	CHECK_INT(archive_write_data(a, in->buf, in->len), (la_ssize_t)in->len);
	CHECK_INT(archive_write_close(a), ARCHIVE_OK);
	put(out, buf, used);
	archive_entry_free(e);
	archive_write_free(a);
	free(buf);
}

/* early (optional) + compressed main */
static struct cpio image(bool early, bool nouveau, bool blacklist, int (*filter)(struct archive *))
{
	struct cpio img = { 0 }, m = { 0 };
	if (early)
		early_cpio(&img);
	main_cpio(&m, nouveau, blacklist);
	if (filter)
		compress_into(&img, &m, filter);
	else
		put(&img, m.buf, m.len);
	free(m.buf);
	return img;
}

static void save(const char *path, const struct cpio *c)
{
	char dir[4200];
	gb_strscpy(dir, sizeof(dir), path);
	*strrchr(dir, '/') = '\0';
	CHECK_INT(gb_mkdir_p(dir, 0755), 0);
	CHECK_INT(gb_write_file_atomic(path, c->buf, c->len, 0644), 0);
}

static int scan_file(const char *path, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *s)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	if (fd < 0)
		return -errno;
	r = gb_initramfs_scan_fd(fd, lim, s);
	close(fd);
	return r;
}

static int scan_buf(const struct cpio *c, const struct gb_initramfs_limits *lim, struct gb_initramfs_scan *s)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/img/scan", base);
	save(p, c);
	return scan_file(p, lim, s);
}

TEST(initramfs_layouts)
{
	struct gb_initramfs_limits lim;
	struct gb_initramfs_scan *s = calloc(1, sizeof(*s));
	struct cpio c;

	if (!s)
		return;
	gb_initramfs_limits_init(&lim, NULL, 0);
	/* Debian/Ubuntu: microcode early cpio + zstd main with nouveau, no blacklist */
	c = image(true, true, false, archive_write_add_filter_zstd);
	CHECK_INT(scan_buf(&c, &lim, s), 0);
	CHECK(s->has_nouveau && !s->blacklisted);
	CHECK_STREQ(s->nouveau_entry, "usr/lib/modules/6.1.0-21-amd64/kernel/drivers/gpu/drm/nouveau/nouveau.ko.xz");
	CHECK_INT(s->n_early, 1);
	CHECK_INT(s->main_offset, 1024);
	CHECK_STREQ(s->compression, "zstd");
	CHECK_INT(s->n_entries, 3 + 5);
	free(c.buf);
	/* rebuilt after the blacklist (initramfs-tools copies etc/modprobe.d): nouveau inside, blacklisted */
	c = image(true, true, true, archive_write_add_filter_gzip);
	CHECK_INT(scan_buf(&c, &lim, s), 0);
	CHECK(s->has_nouveau && s->blacklisted);
	CHECK_STREQ(s->blacklist_entry, "etc/modprobe.d/gpuboot-blacklist-nouveau.conf");
	CHECK_STREQ(s->compression, "gzip");
	free(c.buf);
	/* dracut without nouveau, xz; no early archive */
	c = image(false, false, false, archive_write_add_filter_xz);
	CHECK_INT(scan_buf(&c, &lim, s), 0);
	CHECK(!s->has_nouveau);
	CHECK_INT(s->n_early, 0);
	CHECK_STREQ(s->compression, "xz");
	free(c.buf);
	/* all uncompressed, two archives */
	c = image(true, true, false, NULL);
	CHECK_INT(scan_buf(&c, &lim, s), 0);
	CHECK(s->has_nouveau);
	CHECK_INT(s->n_early, 2);
	CHECK_STREQ(s->compression, "none");
	free(c.buf);
	free(s);
}

TEST(initramfs_hostile)
{
	struct gb_initramfs_limits lim;
	struct gb_initramfs_scan *s = calloc(1, sizeof(*s));
	struct cpio c, m = { 0 }, z = { 0 };
	const struct gb_ops *ops = NULL;
	unsigned char *zeros = calloc(1, 8u << 20);

	if (!s || !zeros)
		goto out;
	gb_initramfs_limits_init(&lim, NULL, 0);
	/* truncated in the compressed part, and in the early cpio */
	c = image(true, true, false, archive_write_add_filter_gzip);
	c.len -= 40;
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	CHECK(s->error[0] != '\0');
	c.len = 300;
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	free(c.buf);
	/* garbage after the early trailer */
	c = (struct cpio){ 0 };
	early_cpio(&c);
	put(&c, "GARBAGE!", 8);
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	CHECK(strstr(s->error, "unrecognised bytes at offset 1024") != NULL);
	free(c.buf);
	/* a header that lies: a name longer than PATH_MAX, a size past the end */
	c = (struct cpio){ 0 };
	cpio_file(&c, "x", "y");
	memcpy(c.buf + 94, "00100000", 8);
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	memcpy(c.buf + 94, "00000002", 8);
	memcpy(c.buf + 54, "FFFFFFF0", 8);
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	memcpy(c.buf + 54, "0000000G", 8);
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	free(c.buf);
	/* compressed: an entry declaring 4 GiB (a zip bomb's header) */
	cpio_entry(&m, "huge", 0100644, "", 0, 0xFFFFFFF0u);
	c = (struct cpio){ 0 };
	compress_into(&c, &m, archive_write_add_filter_gzip);
	CHECK_INT(scan_buf(&c, &lim, s), -EFBIG);
	free(c.buf);
	/* compressed: 8 MiB of zeros (not cpio) decompressed under a 1 MiB cap */
	put(&z, zeros, 8u << 20);
	c = (struct cpio){ 0 };
	compress_into(&c, &z, archive_write_add_filter_gzip);
	CHECK(c.len < (64u << 10));
	lim.max_unpacked = 1u << 20;
	CHECK(scan_buf(&c, &lim, s) < 0);
	/* a real entry as large: the declared size stops it first, then the stream cap */
	free(m.buf);
	m = (struct cpio){ 0 };
	cpio_entry(&m, "big", 0100644, zeros, 4u << 20, 4u << 20);
	cpio_trailer(&m);
	free(c.buf);
	c = (struct cpio){ 0 };
	compress_into(&c, &m, archive_write_add_filter_zstd);
	CHECK_INT(scan_buf(&c, &lim, s), -EFBIG);
	lim.max_entry = 1u << 20;
	lim.max_unpacked = 4ull << 30;
	CHECK_INT(scan_buf(&c, &lim, s), -EFBIG);
	free(c.buf);
	/* an lz4 image where this build's libarchive has no lz4: refused, never an external program */
	c = (struct cpio){ 0 };
	put(&c, "\x02\x21\x4c\x18\0\0\0\0", 8);
	gb_initramfs_limits_init(&lim, NULL, 0);
	int r = scan_buf(&c, &lim, s);
	CHECK(r == -EPROTONOSUPPORT || r == -EBADMSG);
	free(c.buf);
	/* too slow: the fake clock moves 1 ms a read; 600 entries against a 1 ms deadline */
	CHECK_INT(gb_ops_fake_new("clock:1000000000", &ops), 0);
	free(m.buf);
	m = (struct cpio){ 0 };
	for (int i = 0; i < 600; i++) {
		char n[32];
		snprintf(n, sizeof(n), "f%d", i);
		cpio_file(&m, n, "x");
	}
	cpio_trailer(&m);
	c = (struct cpio){ 0 };
	compress_into(&c, &m, archive_write_add_filter_gzip);
	gb_initramfs_limits_init(&lim, ops, 1);
	CHECK_INT(scan_buf(&c, &lim, s), -ETIME);
	/* too many entries */
	gb_initramfs_limits_init(&lim, NULL, 0);
	lim.max_entries = 100;
	CHECK_INT(scan_buf(&c, &lim, s), -EFBIG);
	free(c.buf);
	/* not a file, empty */
	CHECK_INT(scan_file("/", &lim, s), -EBADMSG);
	c = (struct cpio){ 0 };
	put(&c, "", 0);
	CHECK_INT(scan_buf(&c, &lim, s), -EBADMSG);
	free(c.buf);
	/* modprobe.d lines */
	CHECK(gb_modprobe_blacklists("# x\n  blacklist\tnouveau # y\n", 28, "nouveau"));
	CHECK(gb_modprobe_blacklists("install nouveau /bin/false\n", 27, "nouveau"));
	CHECK(!gb_modprobe_blacklists("# blacklist nouveau\nblacklist nouveaux\noptions nouveau modeset=0\n", 66,
	                              "nouveau"));
out:
	gb_ops_fake_free(ops);
	free(m.buf);
	free(z.buf);
	free(zeros);
	free(s);
}

/* ---- the stage, against the fake ---- */

struct world {
	char dir[4200], root[4200], state[4200], record[4200], img[4400];
	struct gb_ops wrapped; /* the fake, with a rebuild that rewrites the image */
	const struct gb_ops *fake;
	bool rebuild_keeps_nouveau; /* initramfs-tools: the drm modules are copied, blacklist and all */
	struct gb_ctx ctx;
	struct gb_journal *j;
	json_object *plan;
};

static struct world *world_of(const struct gb_ops *ops)
{
	return (struct world *)((char *)ops - offsetof(struct world, wrapped));
}

static int rebuild_command(const struct gb_ops *ops, const struct gb_cmd_spec *spec, struct gb_cmd_result *ret)
{
	struct world *w = world_of(ops);
	struct cpio c = image(true, w->rebuild_keeps_nouveau, true, archive_write_add_filter_gzip);
	save(w->img, &c);
	free(c.buf);
	return w->fake->run_command(w->fake, spec, ret);
}

static void world_sysfs(struct world *w, const char *refcnt)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/initstate", w->root);
	write_text(p, "live\n");
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/refcnt", w->root);
	write_text(p, refcnt);
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/holders", w->root);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sys/bus/pci/drivers/nouveau/unbind", w->root);
	write_text(p, "");
	snprintf(p, sizeof(p), "%s/sys/bus/pci/drivers/nouveau/bind", w->root);
	write_text(p, "");
	snprintf(p, sizeof(p), "%s/sys/bus/pci/drivers/nouveau/0000:01:00.0", w->root);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
}

/* A root with one Debian kernel and its initramfs (nouveau inside or not). */
static int world_open(struct world *w, const char *name, const char *rules, bool nouveau_inside)
{
	char spec[8192], err[512], p[4400];
	struct cpio c;

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "%s/%s", base, name);
	snprintf(w->root, sizeof(w->root), "%s/root", w->dir);
	snprintf(w->state, sizeof(w->state), "%s/state", w->dir);
	snprintf(w->record, sizeof(w->record), "%s/record", w->dir);
	snprintf(w->img, sizeof(w->img), "%s/boot/initrd.img-6.1.0-21-amd64", w->root);
	snprintf(p, sizeof(p), "%s/boot/vmlinuz-6.1.0-21-amd64", w->root);
	write_text(p, "kernel");
	c = image(true, nouveau_inside, false, archive_write_add_filter_zstd);
	save(w->img, &c);
	free(c.buf);
	if (gb_root_open(w->root, &w->ctx.root) < 0)
		return -1;
	snprintf(spec, sizeof(spec), "record=%s,root=%s%s%s", w->record, w->root, rules ? "," : "", rules ? rules : "");
	if (gb_ops_fake_new(spec, &w->fake) < 0)
		return -1;
	w->wrapped = *w->fake;
	w->wrapped.run_command = rebuild_command;
	w->rebuild_keeps_nouveau = true;
	w->ctx.ops = &w->wrapped;
	w->ctx.opt.state_dir = w->state;
	w->plan = json_tokener_parse("{\"nouveau\": {\"action\": \"unload\"}}");
	return gb_journal_open(&w->ctx, w->plan, "run", &w->j, err, sizeof(err));
}

/* The same world, a new run: the last journal finished, a fresh one opened. */
static int world_rerun(struct world *w)
{
	char err[512];
	CHECK_INT(gb_journal_finish(w->j, "done", 0), 0);
	gb_journal_free(w->j);
	w->j = NULL;
	return gb_journal_open(&w->ctx, w->plan, "run", &w->j, err, sizeof(err));
}

static void world_close(struct world *w)
{
	gb_journal_free(w->j);
	gb_ops_fake_free(w->fake);
	gb_root_free(w->ctx.root);
	json_object_put(w->plan);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static char *world_file(struct world *w, const char *rel)
{
	char p[4400];
	snprintf(p, sizeof(p), "%s/%s", w->root, rel);
	return slurp(p, NULL);
}

/* An image root (Packer's chroot, an mmdebstrap tree): nouveau "loaded" in
 * what the root shows is the build host's kernel, not the image's: the
 * blacklist and the initramfs are the image's, nothing is unbound or
 * unloaded. */
TEST(nouveau_image_root)
{
	struct world w;
	struct gb_prepare_input in = { .nouveau = GB_PREPARE_NOUVEAU_UNLOAD, .image = true };
	struct gb_prepare_result *res = calloc(1, sizeof(*res));
	char *rec = NULL, *t = NULL;

	CHECK_INT(world_open(&w, "image-root", NULL, true), 0);
	if (!w.j || !res)
		goto out;
	world_sysfs(&w, "0\n");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(!res->unloaded && !res->reboot_needed && res->n_unbound == 0 && res->blacklist_changed);
	CHECK_INT(res->n_rebuilt, 1);
	t = world_file(&w, "sys/bus/pci/drivers/nouveau/unbind");
	CHECK(!t || !t[0]);
	free(t);
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, "module_unload"), 0);
	CHECK_INT(count(rec, "module_state"), 0);
	CHECK_INT(count(rec, " update-initramfs -u -k 6.1.0-21-amd64"), 1);
out:
	free(rec);
	free(res);
	world_close(&w);
}

TEST(nouveau_free)
{
	struct world w;
	struct gb_prepare_input in = { .nouveau = GB_PREPARE_NOUVEAU_UNLOAD };
	struct gb_prepare_result *res = calloc(1, sizeof(*res));
	char *rec = NULL, *t = NULL, p[4400];

	CHECK_INT(world_open(&w, "free", NULL, true), 0);
	if (!w.j || !res)
		goto out;
	world_sysfs(&w, "0\n");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->state, GB_MODULE_LIVE);
	CHECK_INT(res->n_unbound, 1);
	CHECK(res->unloaded && !res->reboot_needed && res->blacklist_changed);
	CHECK_INT(res->n_images, 1);
	CHECK_STREQ(res->images[0].kver, "6.1.0-21-amd64");
	CHECK_STREQ(res->images[0].path, "boot/initrd.img-6.1.0-21-amd64");
	CHECK_INT(res->images[0].before, GB_INITRAMFS_LOADS_NOUVEAU);
	CHECK(res->images[0].rebuilt);
	CHECK_INT(res->images[0].after, GB_INITRAMFS_BLACKLISTED);
	CHECK_INT(res->n_rebuilt, 1);
	t = world_file(&w, GB_PREPARE_BLACKLIST_PATH);
	CHECK_STREQ(t, GB_PREPARE_BLACKLIST_TEXT);
	free(t);
	t = world_file(&w, "sys/bus/pci/drivers/nouveau/unbind");
	CHECK_STREQ(t, "0000:01:00.0");
	free(t);
	CHECK(!gb_root_exists(w.ctx.root, GB_PREPARE_DRACUT_PATH)); /* no dracut here */
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, "module_unload nouveau"), 1);
	CHECK_INT(count(rec, " update-initramfs -u -k 6.1.0-21-amd64"), 1);
	CHECK_INT(count(rec, "run chroot="), 1); /* an image root: chrooted */
	free(rec);
	json_object *js = gb_prepare_result_to_json(res),
	            *img0 = json_object_array_get_idx(json_object_object_get(js, "initramfs"), 0);
	CHECK_STREQ(json_object_get_string(json_object_object_get(img0, "after")), "nouveau-blacklisted");
	CHECK_STREQ(json_object_get_string(json_object_object_get(js, "nouveau_state")), "live");
	json_object_put(js);
	/* the rerun: nouveau is gone (the kernel removes sys/module/nouveau), nothing to do */
	snprintf(p, sizeof(p), "rm -rf %s/sys/module/nouveau %s/sys/bus/pci/drivers/nouveau/0000:01:00.0", w.root,
	         w.root);
	CHECK_INT(system(p), 0);
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->state, GB_MODULE_ABSENT);
	CHECK(!res->blacklist_changed && !res->unloaded && !res->reboot_needed);
	CHECK_INT(res->images[0].before, GB_INITRAMFS_BLACKLISTED);
	CHECK_INT(res->n_rebuilt, 0);
	CHECK_INT(w.j->n_effects, 0);
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, " update-initramfs"), 1);
	CHECK_INT(count(rec, "module_unload"), 1);
out:
	free(rec);
	free(res);
	world_close(&w);
}

TEST(nouveau_held)
{
	struct world w;
	struct gb_prepare_input in = { .nouveau = GB_PREPARE_NOUVEAU_UNLOAD };
	struct gb_prepare_result *res = calloc(1, sizeof(*res));
	char *rec = NULL, p[4400];

	/* fbcon holds it: a reboot, the blacklist in place, nothing unloaded */
	CHECK_INT(world_open(&w, "held", NULL, false), 0);
	if (!w.j || !res)
		goto out;
	world_sysfs(&w, "1\n");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(res->reboot_needed && !res->unloaded);
	CHECK_STREQ(res->reboot_reason, GB_PREPARE_REBOOT_NOUVEAU);
	CHECK(strstr(res->cause, "1 references") != NULL);
	CHECK_INT(res->n_unbound, 0);
	CHECK(res->blacklist_changed);
	CHECK_INT(res->images[0].before, GB_INITRAMFS_CLEAN);
	CHECK_INT(res->n_rebuilt, 0);
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, "module_unload"), 0);
	CHECK_INT(count(rec, "run "), 0);
	free(rec);
	rec = NULL;
	/* a module that depends on it */
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/holders/drm_ttm_helper", w.root);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/refcnt", w.root);
	write_text(p, "0\n");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(res->reboot_needed && strstr(res->cause, "drm_ttm_helper") != NULL);
	world_close(&w);
	/* the unload fails (EBUSY): a reboot too */
	CHECK_INT(world_open(&w, "busy", "remove:nouveau:16", false), 0);
	if (!w.j)
		goto out;
	world_sysfs(&w, "0\n");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(res->reboot_needed && !res->unloaded && res->n_unbound == 1);
	CHECK(strstr(res->cause, "could not unload nouveau") != NULL);
	world_close(&w);
	/* the plan's "reboot": no unload tried */
	CHECK_INT(world_open(&w, "planned", NULL, false), 0);
	if (!w.j)
		goto out;
	world_sysfs(&w, "0\n");
	in.nouveau = GB_PREPARE_NOUVEAU_REBOOT;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(res->reboot_needed && !res->unloaded && res->n_unbound == 0);
	world_close(&w);
	/* built in: the blacklist cannot help */
	CHECK_INT(world_open(&w, "builtin", NULL, false), 0);
	if (!w.j)
		goto out;
	snprintf(p, sizeof(p), "%s/sys/module/nouveau/parameters", w.root);
	CHECK_INT(gb_mkdir_p(p, 0755), 0);
	in.nouveau = GB_PREPARE_NOUVEAU_UNLOAD;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), -EOPNOTSUPP);
	CHECK(strstr(res->cause, "nouveau.modeset=0") != NULL);
out:
	free(rec);
	free(res);
	world_close(&w);
}

TEST(initramfs_rebuild)
{
	struct world w;
	struct gb_prepare_input in = { .nouveau = GB_PREPARE_NOUVEAU_BLACKLIST, .tool = GB_INITRAMFS_TOOL_DRACUT };
	struct gb_prepare_result *res = calloc(1, sizeof(*res));
	char *rec = NULL, p[4400];
	struct cpio c;

	/* dracut: the omit_drivers file, and the rebuilt image without nouveau */
	CHECK_INT(world_open(&w, "dracut", NULL, true), 0);
	if (!w.j || !res)
		goto out;
	w.rebuild_keeps_nouveau = false;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK(gb_root_exists(w.ctx.root, GB_PREPARE_DRACUT_PATH));
	CHECK_INT(res->images[0].after, GB_INITRAMFS_CLEAN);
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, " dracut -f --kver 6.1.0-21-amd64"), 1);
	free(rec);
	rec = NULL;
	world_close(&w);
	/* the tool ran but the image still loads nouveau: a failure that says so */
	CHECK_INT(world_open(&w, "still", "command:update-initramfs:0", true), 0);
	if (!w.j)
		goto out;
	w.ctx.ops = w.fake; /* a rebuild that changes nothing */
	in.tool = GB_INITRAMFS_TOOL_AUTO;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), -EIO);
	CHECK(strstr(res->cause, "still loads nouveau") != NULL);
	world_close(&w);
	/* the tool fails */
	CHECK_INT(world_open(&w, "fails", "command:update-initramfs:1", true), 0);
	if (!w.j)
		goto out;
	w.ctx.ops = w.fake;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), -EIO);
	CHECK(strstr(res->cause, "update-initramfs for 6.1.0-21-amd64 failed") != NULL);
	world_close(&w);
	/* an unreadable image older than the blacklist: rebuilt once; newer: left alone */
	CHECK_INT(world_open(&w, "garbled", NULL, false), 0);
	if (!w.j)
		goto out;
	c = (struct cpio){ 0 };
	early_cpio(&c);
	put(&c, "GARBAGE!", 8);
	save(w.img, &c);
	free(c.buf);
	{
		/* older for certain: the blacklist written next may land in the same clock tick */
		const struct timespec past[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
		CHECK_INT(utimensat(AT_FDCWD, w.img, past, 0), 0);
	}
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->images[0].before, GB_INITRAMFS_UNREADABLE);
	CHECK_INT(res->n_rebuilt, 1);
	CHECK_INT(res->images[0].after, GB_INITRAMFS_BLACKLISTED);
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->n_rebuilt, 0);
	/* a kernel without an initramfs, a rescue kernel, a hostile name: nothing to rebuild */
	snprintf(p, sizeof(p), "%s/boot/vmlinuz-0-rescue-8215ac7e45d34823b4dce2e258c3cc47", w.root);
	write_text(p, "k");
	snprintf(p, sizeof(p), "%s/boot/vmlinuz-6.2 x", w.root);
	write_text(p, "k");
	snprintf(p, sizeof(p), "%s/lib/modules/6.9.0-1-amd64/vmlinuz", w.root);
	write_text(p, "k");
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->n_images, 2);
	CHECK_STREQ(res->images[1].kver, "6.9.0-1-amd64");
	CHECK_INT(res->images[1].before, GB_INITRAMFS_MISSING);
	/* none: nothing at all */
	in.nouveau = GB_PREPARE_NOUVEAU_NONE;
	CHECK_INT(gb_prepare_nouveau(&w.ctx, w.j, &in, res), 0);
	CHECK_INT(res->n_images, 0);
out:
	free(rec);
	free(res);
	world_close(&w);
}

/* ---- reboot and resume ---- */

static json_object *doc_of(const char *text)
{
	json_object *o = json_tokener_parse(text);
	CHECK(o != NULL);
	return o;
}

TEST(reboot_rule)
{
	char why[512];
	json_object *d;

	d = doc_of("{\"boots\": 1, \"steps\": []}");
	CHECK_INT(gb_prepare_reboot_allowed(d, "nouveau-in-use", why, sizeof(why)), 0);
	json_object_put(d);
	/* armed in this boot already (a rerun before the reboot): the same reboot */
	d = doc_of("{\"boots\": 1, \"steps\": [{\"kind\": \"reboot\", \"reason\": \"nouveau-in-use\", \"boot\": 1}]}");
	CHECK_INT(gb_prepare_reboot_allowed(d, "nouveau-in-use", why, sizeof(why)), 0);
	json_object_put(d);
	/* taken before and needed again: it did not help */
	d = doc_of("{\"boots\": 2, \"steps\": [{\"kind\": \"reboot\", \"reason\": \"nouveau-in-use\", \"boot\": 1}]}");
	CHECK_INT(gb_prepare_reboot_allowed(d, "nouveau-in-use", why, sizeof(why)), -ELOOP);
	CHECK(strstr(why, "did not help") != NULL);
	/* another reason: a second reboot is allowed */
	CHECK_INT(gb_prepare_reboot_allowed(d, "kernel-hwe", why, sizeof(why)), 0);
	json_object_put(d);
	/* a third is not */
	d = doc_of("{\"boots\": 3, \"steps\": [{\"kind\": \"reboot\", \"reason\": \"a\", \"boot\": 1},"
	           "{\"kind\": \"reboot\", \"reason\": \"b\", \"boot\": 2}]}");
	CHECK_INT(gb_prepare_reboot_allowed(d, "c", why, sizeof(why)), -ELOOP);
	CHECK(strstr(why, "rebooted 2 times") != NULL);
	json_object_put(d);
	/* garbage documents: no steps, wrong types */
	d = doc_of("{\"boots\": \"x\", \"steps\": {}}");
	CHECK_INT(gb_prepare_reboot_allowed(d, "a", why, sizeof(why)), 0);
	json_object_put(d);
	CHECK_INT(gb_prepare_reboot_allowed(NULL, "a", why, sizeof(why)), 0);
}

TEST(resume_unit)
{
	struct world w;
	char why[512], *t = NULL, *rec = NULL, link[256] = "", p[4400];
	ssize_t n;

	CHECK_INT(world_open(&w, "resume", NULL, false), 0);
	if (!w.j)
		goto out;
	w.ctx.opt.profile = "training";
	w.ctx.opt.mirror = "https://mirror.example/gpuboot";
	w.ctx.opt.state_dir_given = true;
	w.ctx.opt.offline = true;
	w.ctx.opt.method = "distro";
	w.ctx.opt.target_gpu = "Tesla T4"; /* an image root's first boot plans for its own GPU: not carried */
	/* an image root: the wants/ link */
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, GB_PREPARE_REBOOT_NOUVEAU, why, sizeof(why)), 0);
	t = world_file(&w, GB_PREPARE_RESUME_PATH);
	CHECK(t && strstr(t, "Type=oneshot\n") && strstr(t, "After=network-online.target\n"));
	snprintf(p, sizeof(p),
	         "ExecStart=/usr/local/bin/gpuboot run --resume --profile training --method distro --state-dir %s "
	         "--mirror https://mirror.example/gpuboot --offline\n",
	         w.state);
	CHECK(t && strstr(t, p));
	CHECK(t && strstr(t, "SuccessExitStatus=3\n") && strstr(t, "disable gpuboot-resume.service"));
	/* gpuboot's own disarm removed the file: ExecStopPost then has nothing to disable, and does not fail */
	CHECK(t && strstr(t, "|| [ ! -e /etc/systemd/system/gpuboot-resume.service ] ||"));
	snprintf(p, sizeof(p), "%s/%s", w.root, GB_PREPARE_RESUME_WANTS);
	n = readlink(p, link, sizeof(link) - 1);
	CHECK(n > 0);
	CHECK_STREQ(link, "/etc/systemd/system/gpuboot-resume.service");
	/* again in the same boot: allowed, nothing new */
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, GB_PREPARE_REBOOT_NOUVEAU, why, sizeof(why)), 0);
	{
		/* readable by all: no credential in it */
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", w.root, GB_PREPARE_RESUME_PATH);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0644);
	}
	/* the next boot needs the same reboot: refused */
	json_object_object_add(w.j->doc, "boots", json_object_new_int(2));
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, GB_PREPARE_REBOOT_NOUVEAU, why, sizeof(why)), -ELOOP);
	CHECK(strstr(why, "did not help") != NULL);
	/* an option that would break the unit */
	w.ctx.opt.profile = "a\"b";
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, "kernel-hwe", why, sizeof(why)), -EINVAL);
	w.ctx.opt.profile = "x%n";
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, "kernel-hwe", why, sizeof(why)), -EINVAL);
	/* disarm: both gone; twice is nothing */
	CHECK_INT(gb_prepare_disarm_resume(&w.ctx, w.j), 0);
	CHECK(!gb_root_lexists(w.ctx.root, GB_PREPARE_RESUME_PATH));
	CHECK(!gb_root_lexists(w.ctx.root, GB_PREPARE_RESUME_WANTS));
	CHECK_INT(gb_prepare_disarm_resume(&w.ctx, w.j), 0);
	/* the live machine: systemctl enable and disable through the operations table */
	w.ctx.root->is_host = true;
	w.ctx.opt.profile = "training";
	CHECK_INT(world_rerun(&w), 0);
	CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, "kernel-hwe", why, sizeof(why)), 0);
	free(t);
	t = world_file(&w, GB_PREPARE_RESUME_PATH);
	/* the live machine's run was told its GPU: the resumed run plans for the same one */
	CHECK(t && strstr(t, " --profile training --method distro --target-gpu \"Tesla T4\" --state-dir "));
	CHECK_INT(gb_prepare_disarm_resume(&w.ctx, w.j), 0);
	rec = slurp(w.record, NULL);
	CHECK_INT(count(rec, "systemctl enable gpuboot-resume.service"), 1);
	CHECK_INT(count(rec, "systemctl disable gpuboot-resume.service"), 1);
	{
		/* a mirror with credentials: the resumed run gets them, and only root can read them */
		struct stat st;
		CHECK_INT(world_rerun(&w), 0);
		w.ctx.opt.mirror = "https://fleet:s3cret@mirror.example/gpuboot";
		CHECK_INT(gb_prepare_arm_resume(&w.ctx, w.j, "kernel-hwe", why, sizeof(why)), 0);
		free(t);
		t = world_file(&w, GB_PREPARE_RESUME_PATH);
		CHECK(t && strstr(t, "--mirror https://fleet:s3cret@mirror.example/gpuboot"));
		snprintf(p, sizeof(p), "%s/%s", w.root, GB_PREPARE_RESUME_PATH);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
		CHECK_INT(gb_prepare_disarm_resume(&w.ctx, w.j), 0);
		w.ctx.opt.mirror = "https://mirror.example/gpuboot";
	}
	w.ctx.root->is_host = false;
out:
	free(t);
	free(rec);
	world_close(&w);
}

/* The newer kernel (Ubuntu's HWE metapackage, Debian's backports kernel):
 * installed through the apt backend (chrooted below a root that is not
 * "/"), against the fake apt and dpkg (apt=DIR: the archive, the root's
 * var/lib/dpkg/status), then the kernel GRUB boots next read; nothing run
 * when it is there. fixture: the root copied; status: dpkg's database
 * before; archive: apt's Packages; rules: more fake-ops items, or "". */
struct hwe_case {
	const char *name, *fixture, *status, *archive, *rules;
	bool killed; /* a record of dpkg's own in var/lib/dpkg/updates, as a kill leaves it */
};

static const char bpo_archive[] = "Package: linux-image-amd64\nVersion: 6.12.48-1~bpo12+1\n\n"
                                  "Package: linux-headers-amd64\nVersion: 6.12.48-1~bpo12+1\n";
static const char bookworm_status[] = "Package: linux-image-amd64\nStatus: install ok installed\nVersion: 6.1.176-1\n";
static const char bpo_status[] =
    "Package: linux-image-amd64\nStatus: install ok installed\nVersion: 6.12.48-1~bpo12+1\n\n"
    "Package: linux-headers-amd64\nStatus: install ok installed\nVersion: 6.12.48-1~bpo12+1\n";

static int hwe_run_req(const struct hwe_case *c, const struct gb_prepare_kernel_request *req,
                       struct gb_prepare_kernel_result *kr, char **record)
{
	struct gb_ctx ctx = { 0 };
	struct gb_journal *j = NULL;
	const struct gb_ops *ops = NULL;
	json_object *plan = json_tokener_parse("{\"kernel\": {\"action\": \"install-hwe\"}}");
	char dir[4200], root[4300], spec[8192], p[4400], err[512];
	int r;

	snprintf(dir, sizeof(dir), "%s/%s", base, c->name);
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(p, sizeof(p), "mkdir -p %s/apt && cp -a %s %s && mkdir -p %s/var/lib/dpkg", dir, c->fixture, root,
	         root);
	CHECK_INT(system(p), 0);
	snprintf(p, sizeof(p), "%s/var/lib/dpkg/status", root);
	write_text(p, c->status);
	if (c->killed) {
		snprintf(p, sizeof(p), "mkdir -p %s/var/lib/dpkg/updates", root);
		CHECK_INT(system(p), 0);
		snprintf(p, sizeof(p), "%s/var/lib/dpkg/updates/0003", root);
		write_text(p, "Package: linux-image-amd64\n");
	}
	snprintf(p, sizeof(p), "%s/apt/Packages", dir);
	write_text(p, c->archive);
	snprintf(spec, sizeof(spec), "record=%s/record,root=%s,apt=%s/apt,clock:1000000000%s%s", dir, root, dir,
	         c->rules[0] ? "," : "", c->rules);
	CHECK_INT(gb_ops_fake_new(spec, &ops), 0);
	ctx.ops = ops;
	CHECK_INT(gb_root_open(root, &ctx.root), 0);
	ctx.opt.root = root;
	snprintf(p, sizeof(p), "%s/state", dir);
	ctx.opt.state_dir = p;
	CHECK_INT(gb_journal_open(&ctx, plan, "run", &j, err, sizeof(err)), 0);
	r = gb_prepare_hwe(&ctx, j, req, kr);
	gb_journal_free(j);
	snprintf(p, sizeof(p), "%s/record", dir);
	*record = slurp(p, NULL);
	if (!*record)
		*record = strdup("");
	gb_ops_fake_free(ops);
	gb_root_free(ctx.root);
	json_object_put(plan);
	return r;
}

/* Debian 12's kernel from bookworm-backports, over bookworm's 6.1. */
TEST(hwe_debian)
{
	struct gb_prepare_kernel_request req = { .package = "linux-image-amd64",
		                                 .headers = "linux-headers-amd64",
		                                 .suite = "bookworm-backports",
		                                 .minimum = "6.12" };
	struct hwe_case c = { "deb-live", "tests/prepare/debian12", bookworm_status, bpo_archive, "" };
	struct gb_prepare_kernel_result kr;
	char *rec = NULL, p[4400];

	/* bookworm's own linux-image-amd64 (6.1) is not the one: apt installs from backports, with the
	 * headers (DKMS builds the module for the new kernel in the same apt run), chrooted below this
	 * root; GRUB's default is still 6.1 in this root, so a live reboot would not help: -ERANGE, named */
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), -ERANGE);
	CHECK(strstr(rec, "dpkg --audit\n") != NULL);
	CHECK(strstr(rec,
	             "apt-get install -y -q -o Dpkg::Options::=--force-confdef -o "
	             "Dpkg::Options::=--force-confold -t bookworm-backports linux-image-amd64 linux-headers-amd64\n") !=
	      NULL);
	CHECK(strstr(rec, "apt-get update -q\n") < strstr(rec, "apt-get install"));
	CHECK(strstr(rec, "mount_bind /proc ") != NULL && strstr(rec, "umount ") != NULL);
	CHECK(kr.installed_now);
	CHECK_STREQ(kr.installed_version, "6.1.176-1");
	CHECK_STREQ(kr.next_kernel, "6.1.0-18-amd64");
	CHECK(strstr(kr.error, "GRUB boots 6.1.0-18-amd64 next, older than 6.12") != NULL);
	/* its journal steps are the kernel's, apart from the driver's install */
	snprintf(p, sizeof(p), "%s/deb-live/state/journal.json", base);
	free(rec);
	rec = slurp(p, NULL);
	CHECK(rec && strstr(rec, "\"kernel/apt-get-install\"") != NULL && strstr(rec, "\"apt-get-install\"") == NULL);
	free(rec);
	/* the backports version already there, headers too: no apt; the same GRUB answer */
	c = (struct hwe_case){ "deb-there", "tests/prepare/debian12", bpo_status, bpo_archive, "" };
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), -ERANGE);
	CHECK(strstr(rec, "apt-get") == NULL);
	CHECK(!kr.installed_now);
	free(rec);
	/* the guest's real grub.cfg after update-grub with backports' kernel installed: GRUB boots 6.12 next,
	 * the reboot will bring it up */
	c = (struct hwe_case){ "deb-grub-6.12", "tests/prepare/debian12-backports", bpo_status, bpo_archive, "" };
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), 0);
	CHECK(strstr(rec, "apt-get") == NULL);
	CHECK_STREQ(kr.next_kernel, "6.12.95+deb12-amd64");
	CHECK_STREQ(kr.error, "");
	free(rec);
	/* an image: its first boot picks its newest kernel; GRUB's file is not held against it */
	req.image = true;
	c = (struct hwe_case){ "deb-image", "tests/prepare/debian12", "", bpo_archive, "" };
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), 0);
	CHECK(strstr(rec, "-t bookworm-backports linux-image-amd64 linux-headers-amd64\n") != NULL);
	CHECK(strstr(rec, "mount_bind /proc ") != NULL);
	free(rec);
	/* backports not in apt's sources: apt's own words turned into the cause and the fix, nothing installed */
	snprintf(p, sizeof(p), "%s/no-suite.out", base);
	write_text(p, "E: The value 'bookworm-backports' is invalid for APT::Default-Release as such a release is "
	              "not available in the sources\n");
	{
		char rules[4600];
		snprintf(rules, sizeof(rules), "command:apt-get install:100:%s", p);
		c = (struct hwe_case){ "deb-no-suite", "tests/prepare/debian12", bookworm_status, bpo_archive, rules };
		CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), -ENOPKG);
	}
	CHECK(strstr(kr.error, "have no suite bookworm-backports: add it") != NULL);
	free(rec);
	/* a suite that is not a word: refused, nothing run */
	{
		struct gb_ctx ctx = { 0 };
		req.suite = "bookworm-backports linux-image-rt-amd64";
		CHECK_INT(gb_prepare_hwe(&ctx, NULL, &req, &kr), -EINVAL);
	}
}

/* A kernel install a kill interrupted (dpkg's journal in
 * var/lib/dpkg/updates, the image package half-configured): the next run
 * repairs dpkg the package manager's way first, under the kernel's steps,
 * then installs; apt alone would refuse ("dpkg was interrupted"). */
TEST(hwe_killed)
{
	const struct gb_prepare_kernel_request req = { .package = "linux-image-amd64",
		                                       .headers = "linux-headers-amd64",
		                                       .suite = "bookworm-backports",
		                                       .minimum = "6.12",
		                                       .image = true };
	static const char killed[] =
	    "Package: linux-image-amd64\nStatus: install ok half-configured\nVersion: 6.12.48-1~bpo12+1\n";
	const struct hwe_case c = { "deb-killed", "tests/prepare/debian12", killed, bpo_archive, "", true };
	struct gb_prepare_kernel_result kr;
	char *rec = NULL;

	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), 0);
	CHECK(strstr(rec, "dpkg --force-confdef --force-confold --configure -a\n") != NULL);
	CHECK(strstr(rec, "dpkg --force-confdef --force-confold --configure -a\n") < strstr(rec, "apt-get install"));
	CHECK(kr.installed_now);
	CHECK_STREQ(kr.error, "");
	free(rec);
}

TEST(hwe)
{
	/* as run.c passes the plan's: Ubuntu's headers and suite are empty
	 * strings, not NULL (image-ubuntu.sh's real run was refused on them:
	 * "(headers '', suite '') is not a kernel package to install") */
	const struct gb_prepare_kernel_request req = { .package = "linux-generic-hwe-22.04",
		                                       .headers = "",
		                                       .suite = "" };
	static const char archive[] = "Package: linux-generic-hwe-22.04\nVersion: 6.8.0.49.52~22.04.1\n";
	static const char there[] =
	    "Package: linux-generic-hwe-22.04\nStatus: install ok installed\nVersion: 6.8.0.49.52~22.04.1\n";
	struct hwe_case c = { "hwe-new", "tests/prepare/debian12", "", archive, "" };
	struct gb_prepare_kernel_result kr;
	char *rec = NULL, p[4400];

	/* not installed: apt-get update and install, chrooted, unmounted after; GRUB's next kernel read */
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), 0);
	CHECK(strstr(rec, "apt-get update -q\n") != NULL);
	CHECK(strstr(rec, "apt-get install -y -q -o Dpkg::Options::=--force-confdef -o "
	                  "Dpkg::Options::=--force-confold linux-generic-hwe-22.04\n") != NULL);
	CHECK(strstr(rec, "mount_bind /proc ") != NULL && strstr(rec, "umount ") != NULL);
	CHECK(strstr(rec, "apt-get install") > strstr(rec, "mount_bind /proc "));
	CHECK(kr.installed_now);
	CHECK_STREQ(kr.next_kernel, "6.1.0-18-amd64");
	free(rec);
	/* already installed: nothing runs */
	c = (struct hwe_case){ "hwe-there", "tests/prepare/debian12", there, archive, "" };
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), 0);
	CHECK(strstr(rec, "apt-get") == NULL);
	CHECK(!kr.installed_now);
	free(rec);
	/* apt fails: -EIO, named; nothing left mounted */
	snprintf(p, sizeof(p), "%s/fails.out", base);
	write_text(p, "E: Sub-process /usr/bin/dpkg returned an error code (1)\n");
	{
		char rules[4600];
		snprintf(rules, sizeof(rules), "command:apt-get install:100:%s", p);
		c = (struct hwe_case){ "hwe-fails", "tests/prepare/debian12", "", archive, rules };
		CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), -EIO);
	}
	CHECK(strstr(kr.error, "apt-get install failed") != NULL);
	CHECK(strstr(rec, "umount ") != NULL);
	free(rec);
	/* not in the archive: named, nothing installed */
	c = (struct hwe_case){ "hwe-unknown", "tests/prepare/debian12", "", "", "" };
	CHECK_INT(hwe_run_req(&c, &req, &kr, &rec), -ENOPKG);
	CHECK(strstr(kr.error, "Not in debian's archive: linux-generic-hwe-22.04") != NULL);
	free(rec);
	/* a name that is not a package: refused, nothing run */
	{
		struct gb_ctx ctx = { 0 };
		const struct gb_prepare_kernel_request bad = { .package = "linux-generic; reboot" };
		CHECK_INT(gb_prepare_hwe(&ctx, NULL, &bad, &kr), -EINVAL);
	}
}

int main(void)
{
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	unit_run_tests();
	if (!unit_failures) {
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", base);
	}
	UNIT_DONE();
}
