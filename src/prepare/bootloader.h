/* SPDX-License-Identifier: MIT */
/* The kernel that will boot next, read the way GRUB reads it: the
 * environment block (grubenv: next_entry, set by grub-reboot, wins once;
 * then saved_entry when grub.cfg says `set default="${saved_entry}"`), then
 * the menu of grub.cfg (Debian, Ubuntu) or the Boot Loader Specification
 * entries of boot/loader/entries (RHEL family, Fedora, Amazon Linux 2023:
 * grub.cfg only says `blscfg`). Never the /vmlinuz link: it names the
 * newest installed kernel, not the one GRUB will start.
 *
 * The parsers are pure (bytes in, answer out) and bounded: every byte of
 * these files is input. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct gb_root;

#define GB_KVER_MAX 128
#define GB_BLS_MAX_ENTRIES 64

/* The value of key in a GRUB environment block ("# GRUB Environment
 * Block" then NAME=VALUE lines, padded with '#'). 0; -ENOENT when the key
 * is absent; -EINVAL when the block is not one; -ENAMETOOLONG when the
 * value does not fit. An empty value is returned as "". */
int gb_grubenv_get(const char *buf, size_t len, const char *key, char *ret, size_t n);

/* The effective default of grub.cfg: next_entry when set, else the value of
 * its last `set default=` that is not next_entry's, with ${saved_entry}
 * replaced by saved_entry; "0" when there is none. */
int gb_grubcfg_default(const char *cfg, size_t len, const char *next_entry, const char *saved_entry, char *ret,
                       size_t n);

/* The kernel release booted by the entry that default (an index, a title
 * or an id; a submenu path joined by '>') names in grub.cfg; as GRUB does,
 * a default that names nothing falls back to the first entry. 0; -ENOENT
 * when no entry boots a versioned kernel (/boot/vmlinuz-<release>);
 * -EINVAL for a malformed file. */
int gb_grubcfg_kernel(const char *cfg, size_t len, const char *def, char *ret, size_t n);

/* The reverse of gb_grubcfg_kernel: the path (ids joined by '>', a title
 * where an item has no id) of grub.cfg's first entry that boots kver and
 * whose id or title names it (not the "simple" entry, which follows the
 * newest kernel; not a recovery entry): what GRUB_DEFAULT names to keep
 * booting kver.
 * 0; -ENOENT when no entry boots kver; -EINVAL for a malformed file. */
int gb_grubcfg_entry_path(const char *cfg, size_t len, const char *kver, char *ret, size_t n);

/* Does grub.cfg hand the menu to the BLS entries (`blscfg`)? */
bool gb_grubcfg_uses_bls(const char *cfg, size_t len);

struct gb_bls_entry {
	char id[256]; /* the file name without .conf: what saved_entry names */
	char title[256];
	char version[GB_KVER_MAX]; /* the kernel release (version, else from linux) */
	char sort_key[64];
};

/* One entry file's content. 0; -EINVAL when it boots no versioned kernel
 * or holds a control byte. */
int gb_bls_parse(const char *id, const char *buf, size_t len, struct gb_bls_entry *ret);

/* Sort as GRUB's blscfg does (sort-key, then the newest version first, then
 * the id), and pick the entry def names (id, title or index; "" or nothing
 * matching: the first). Returns its index or -ENOENT when n is 0. */
void gb_bls_sort(struct gb_bls_entry *e, size_t n);
int gb_bls_pick(const struct gb_bls_entry *e, size_t n, const char *def);

/* The kernel release GRUB will boot next under root (boot/grub/grubenv or
 * boot/grub2/grubenv, boot/grub/grub.cfg or boot/grub2/grub.cfg,
 * boot/loader/entries/ *.conf). 0; -ENOENT when there is no boot loader
 * configuration to read (an image root without one, systemd-boot alone);
 * -EINVAL when it cannot be understood; another negative errno when it
 * cannot be read. */
int gb_prepare_next_kernel(struct gb_root *root, char *ret, size_t n);

/* Is s a plausible kernel release ([A-Za-z0-9._+~-], not "." or "..")? */
bool gb_kver_valid(const char *s);
