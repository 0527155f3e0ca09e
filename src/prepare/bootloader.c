/* SPDX-License-Identifier: MIT */
/* The next kernel, from GRUB's own files. grub.cfg is a script, but the
 * part that picks the kernel is regular: `set default=...` and the nesting
 * of menuentry/submenu blocks, each one line that ends with '{'. The words
 * are split as GRUB's lexer does (single quotes literal, double quotes with
 * backslash escapes, '\'' inside a single-quoted title). */
#include "bootloader.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "effect/pkg.h"
#include "shared/macro.h"
#include "shared/root.h"
#include "shared/util.h"

#define CFG_MAX (4u << 20) /* a grub.cfg of a thousand kernels is 2 MiB */
#define ENV_MAX (64u << 10)
#define BLS_FILE_MAX (64u << 10)
#define MAX_WORDS 32
#define MAX_DEPTH 32
#define MAX_COMPONENTS 8

bool gb_kver_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= GB_KVER_MAX || streq(s, ".") || streq(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._+~-", s[i]))
			return false;
	return true;
}

/* One line split into words, GRUB's way. buf holds the words (it must be as
 * long as the line plus one); a '#' at a word's start comments out the
 * rest; ';' ends a word. -EINVAL for an unterminated quote or a NUL byte. */
static int split_words(const char *line, size_t len, char *buf, const char **w, size_t *ret_n)
{
	size_t i = 0, o = 0, n = 0;

	while (i < len) {
		bool in_word = false;
		while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == ';'))
			i++;
		if (i >= len || line[i] == '#')
			break;
		if (n < MAX_WORDS)
			w[n] = buf + o;
		while (i < len && !strchr(" \t\r;", line[i])) {
			char c = line[i++];
			in_word = true;
			if (c == '\0')
				return -EINVAL;
			if (c == '\'') {
				while (i < len && line[i] != '\'')
					buf[o++] = line[i++];
				if (i++ >= len)
					return -EINVAL;
			} else if (c == '"') {
				while (i < len && line[i] != '"') {
					if (line[i] == '\\' && i + 1 < len && strchr("\"\\$", line[i + 1]))
						i++;
					buf[o++] = line[i++];
				}
				if (i++ >= len)
					return -EINVAL;
			} else if (c == '\\' && i < len) {
				buf[o++] = line[i++];
			} else {
				buf[o++] = c;
			}
		}
		buf[o++] = '\0';
		if (in_word && n < MAX_WORDS)
			n++;
	}
	*ret_n = n;
	return 0;
}

/* Walk the lines of text; fn sees each line's words. Stops at fn's
 * non-zero return (returned). -EINVAL for a NUL byte or a bad quote. */
typedef int (*line_fn)(const char **w, size_t n, void *data);
static int each_line(const char *text, size_t len, line_fn fn, void *data)
{
	_cleanup_free_ char *buf = NULL;
	const char *w[MAX_WORDS];
	size_t pos = 0;

	if (memchr(text, '\0', len))
		return -EINVAL;
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) : len - pos, n = 0;
		int r = split_words(text + pos, l, buf, w, &n);
		if (r < 0)
			return r;
		if (n > 0 && (r = fn(w, n, data)) != 0)
			return r;
		pos += l + 1;
	}
	return 0;
}

/* The end of the line at pos in a GRUB environment block: a newline that
 * no backslash escapes. */
static size_t env_line_end(const char *buf, size_t len, size_t pos)
{
	while (pos < len && buf[pos] != '\n')
		pos += buf[pos] == '\\' && pos + 1 < len ? 2 : 1;
	return pos;
}

int gb_grubenv_get(const char *buf, size_t len, const char *key, char *ret, size_t n)
{
	static const char magic[] = "# GRUB Environment Block\n";
	size_t pos = sizeof(magic) - 1, klen = strlen(key);

	if (len < pos || memcmp(buf, magic, pos) != 0 || memchr(buf, '\0', len))
		return -EINVAL;
	while (pos < len) {
		size_t end = env_line_end(buf, len, pos), o = 0;
		const char *line = buf + pos;
		size_t l = end - pos;
		pos = end + 1;
		if (l <= klen || line[0] == '#' || memcmp(line, key, klen) != 0 || line[klen] != '=')
			continue;
		/* grub-editenv escapes '\' and newline with a backslash */
		for (size_t i = klen + 1; i < l; i++) {
			if (line[i] == '\\' && i + 1 < l)
				i++;
			if ((unsigned char)line[i] < 0x20 && line[i] != '\n')
				return -EINVAL;
			if (o + 1 >= n)
				return -ENAMETOOLONG;
			ret[o++] = line[i];
		}
		ret[o] = '\0';
		return 0;
	}
	return -ENOENT;
}

struct default_scan {
	char last[512];
	bool found, too_long;
};

static int default_line(const char **w, size_t n, void *data)
{
	struct default_scan *s = data;
	const char *v;
	if (n < 2 || !streq(w[0], "set") || !(v = gb_startswith(w[1], "default=")) || strstr(v, "next_entry"))
		return 0;
	s->found = true;
	s->too_long = gb_strscpy(s->last, sizeof(s->last), v) < 0;
	return 0;
}

int gb_grubcfg_default(const char *cfg, size_t len, const char *next_entry, const char *saved_entry, char *ret,
                       size_t n)
{
	struct default_scan s = { .found = false };
	const char *v;
	int r;

	if (next_entry && next_entry[0])
		return gb_strscpy(ret, n, next_entry);
	r = each_line(cfg, len, default_line, &s);
	if (r < 0)
		return r;
	if (s.too_long)
		return -ENAMETOOLONG;
	v = s.found ? s.last : "0";
	if (streq(v, "${saved_entry}") || streq(v, "$saved_entry"))
		v = saved_entry && saved_entry[0] ? saved_entry : "0";
	else if (strchr(v, '$'))
		v = "0"; /* another variable: GRUB would find it empty, and boot the first entry */
	return gb_strscpy(ret, n, v);
}

/* The kernel release in a linux line's path: /boot/vmlinuz-6.1.0-18-amd64. */
static int kver_from_path(const char *path, char *ret, size_t n)
{
	const char *base = strrchr(path, '/'), *v;
	base = base ? base + 1 : path;
	if (!(v = gb_startswith(base, "vmlinuz-")) && !(v = gb_startswith(base, "vmlinux-")) &&
	    !(v = gb_startswith(base, "kernel-")))
		return -ENOENT;
	if (!gb_kver_valid(v))
		return -EINVAL;
	return gb_strscpy(ret, n, v);
}

struct menu_frame {
	bool on_path; /* its children are matched against the next component */
	bool chosen; /* the entry the default names */
	unsigned level, children;
};

struct menu_walk {
	const char *comp[MAX_COMPONENTS];
	size_t n_comp;
	struct menu_frame stack[MAX_DEPTH];
	size_t depth;
	char kernel[GB_KVER_MAX];
	int kernel_err; /* the chosen entry's linux line, when it named no versioned kernel */
	bool chosen_seen;
};

static bool comp_matches(const char *comp, unsigned index, const char *title, const char *id)
{
	uint32_t want;
	if (gb_safe_atou32(comp, 10, &want) == 0 && comp[0] >= '0' && comp[0] <= '9')
		return want == index;
	return streq(comp, title) || (id && streq(comp, id));
}

/* A menuentry or submenu line: its id follows --id or $menuentry_id_option. */
static int menu_open(struct menu_walk *m, const char **w, size_t n)
{
	struct menu_frame *parent = &m->stack[m->depth - 1], *f;
	bool submenu = streq(w[0], "submenu"), match;
	const char *id = NULL;
	unsigned index = parent->children++;

	for (size_t i = 2; i + 2 < n; i++)
		if (streq(w[i], "--id") || streq(w[i], "$menuentry_id_option"))
			id = w[i + 1];
	match = parent->on_path && parent->level < m->n_comp && comp_matches(m->comp[parent->level], index, w[1], id);
	if (match)
		parent->on_path = false; /* the first match wins */
	if (m->depth >= MAX_DEPTH)
		return -EINVAL;
	f = &m->stack[m->depth++];
	*f = (struct menu_frame){ .level = parent->level + 1 };
	f->on_path = match && submenu && f->level < m->n_comp;
	f->chosen = match && !submenu && f->level == m->n_comp;
	m->chosen_seen |= f->chosen;
	return 0;
}

static int menu_line(const char **w, size_t n, void *data)
{
	struct menu_walk *m = data;
	struct menu_frame *top = &m->stack[m->depth - 1];

	if (streq(w[0], "}")) {
		if (m->depth <= 1)
			return -EINVAL;
		m->depth--;
		return 0;
	}
	if (!streq(w[n - 1], "{")) {
		if (top->chosen && !m->kernel[0] && !m->kernel_err && n >= 2 &&
		    (streq(w[0], "linux") || streq(w[0], "linux16") || streq(w[0], "linuxefi")))
			m->kernel_err = kver_from_path(w[1], m->kernel, sizeof(m->kernel));
		return 0;
	}
	if ((streq(w[0], "menuentry") || streq(w[0], "submenu")) && n >= 3)
		return menu_open(m, w, n);
	/* function, or any other block: not a menu item */
	if (m->depth >= MAX_DEPTH)
		return -EINVAL;
	m->stack[m->depth++] = (struct menu_frame){ .level = top->level };
	return 0;
}

static int walk_menu(const char *cfg, size_t len, const char *def, char *ret, size_t n)
{
	_cleanup_free_ char *path = strdup(def);
	_cleanup_free_ struct menu_walk *m = calloc(1, sizeof(*m));
	char *save = NULL;
	int r;

	if (!path || !m)
		return -ENOMEM;
	for (char *c = strtok_r(path, ">", &save); c; c = strtok_r(NULL, ">", &save)) {
		if (m->n_comp >= MAX_COMPONENTS)
			return -ENOENT;
		m->comp[m->n_comp++] = c;
	}
	if (m->n_comp == 0)
		return -ENOENT;
	m->stack[0] = (struct menu_frame){ .on_path = true };
	m->depth = 1;
	r = each_line(cfg, len, menu_line, m);
	if (r < 0)
		return r;
	if (m->depth != 1)
		return -EINVAL; /* a block never closed */
	if (!m->chosen_seen)
		return -ENOENT;
	if (!m->kernel[0])
		return m->kernel_err ? m->kernel_err : -ENOENT;
	return gb_strscpy(ret, n, m->kernel);
}

int gb_grubcfg_kernel(const char *cfg, size_t len, const char *def, char *ret, size_t n)
{
	int r = walk_menu(cfg, len, def, ret, n);
	/* GRUB boots the first entry when the default names none. */
	if (r == -ENOENT && !streq(def, "0"))
		r = walk_menu(cfg, len, "0", ret, n);
	return r;
}

/* The inverse walk: the first entry that boots kver and is named for it
 * (not a recovery entry), named by the path of ids (titles where an item
 * has no id) GRUB's `default` takes. */
struct entry_walk {
	const char *kver;
	char names[MAX_DEPTH][256];
	bool menu[MAX_DEPTH], recovery[MAX_DEPTH];
	size_t depth;
	char path[1024];
	bool found;
};

static bool is_recovery(const char *title, const char *id)
{
	return strstr(title, "(recovery mode)") || (id && strstr(id, "-recovery-"));
}

static int entry_line(const char **w, size_t n, void *data)
{
	struct entry_walk *e = data;
	const char *id = NULL;
	char k[GB_KVER_MAX];

	if (streq(w[0], "}"))
		return e->depth <= 1 ? -EINVAL : (e->depth--, 0);
	if (!streq(w[n - 1], "{")) {
		/* only an entry named for its kernel: the first ("simple") entry
		 * boots whichever kernel is newest when grub.cfg is made again */
		if (e->found || e->depth < 2 || !e->menu[e->depth - 1] || e->recovery[e->depth - 1] || n < 2 ||
		    !strstr(e->names[e->depth - 1], e->kver) ||
		    !(streq(w[0], "linux") || streq(w[0], "linux16") || streq(w[0], "linuxefi")) ||
		    kver_from_path(w[1], k, sizeof(k)) < 0 || !streq(k, e->kver))
			return 0;
		for (size_t i = 1, off = 0; i < e->depth; i++) {
			int m;
			if (!e->menu[i])
				continue;
			m = snprintf(e->path + off, sizeof(e->path) - off, "%s%s", off ? ">" : "", e->names[i]);
			if (m < 0 || (size_t)m >= sizeof(e->path) - off)
				return -ENAMETOOLONG;
			off += (size_t)m;
		}
		e->found = true;
		return 0;
	}
	if (e->depth >= MAX_DEPTH)
		return -EINVAL;
	e->menu[e->depth] = (streq(w[0], "menuentry") || streq(w[0], "submenu")) && n >= 3;
	e->recovery[e->depth] = false;
	e->names[e->depth][0] = '\0';
	if (e->menu[e->depth]) {
		for (size_t i = 2; i + 2 < n; i++)
			if (streq(w[i], "--id") || streq(w[i], "$menuentry_id_option"))
				id = w[i + 1];
		gb_strscpy(e->names[e->depth], sizeof(e->names[0]), id ? id : w[1]);
		e->recovery[e->depth] = is_recovery(w[1], id);
	}
	e->depth++;
	return 0;
}

int gb_grubcfg_entry_path(const char *cfg, size_t len, const char *kver, char *ret, size_t n)
{
	_cleanup_free_ struct entry_walk *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return -ENOMEM;
	e->kver = kver;
	e->depth = 1;
	e->menu[0] = false;
	r = each_line(cfg, len, entry_line, e);
	if (r < 0)
		return r;
	if (!e->found)
		return -ENOENT;
	return gb_strscpy(ret, n, e->path);
}

static int bls_line(const char **w, size_t n, void *data)
{
	bool *found = data;
	if (n >= 1 && streq(w[0], "blscfg"))
		*found = true;
	return 0;
}

bool gb_grubcfg_uses_bls(const char *cfg, size_t len)
{
	bool found = false;
	return each_line(cfg, len, bls_line, &found) >= 0 && found;
}

int gb_bls_parse(const char *id, const char *buf, size_t len, struct gb_bls_entry *ret)
{
	struct gb_bls_entry e = { .version = "" };
	char linux_path[512] = "";
	size_t pos = 0;

	if (gb_strscpy(e.id, sizeof(e.id), id) < 0)
		return -EINVAL;
	while (pos < len) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - line) : len - pos, k = 0, v;
		char value[512];
		pos += l + 1;
		for (size_t i = 0; i < l; i++)
			if ((unsigned char)line[i] < 0x20 && line[i] != '\t' && line[i] != '\r')
				return -EINVAL;
		while (k < l && line[k] != ' ' && line[k] != '\t')
			k++;
		for (v = k; v < l && (line[v] == ' ' || line[v] == '\t'); v++)
			;
		if (l - v >= sizeof(value))
			continue; /* an options line longer than we care for */
		memcpy(value, line + v, l - v);
		value[l - v] = '\0';
		gb_strstrip(value);
#define KEY(name) (k == strlen(name) && memcmp(line, name, k) == 0)
		if (KEY("title"))
			gb_strscpy(e.title, sizeof(e.title), value);
		else if (KEY("version"))
			gb_strscpy(e.version, sizeof(e.version), value);
		else if (KEY("sort-key"))
			gb_strscpy(e.sort_key, sizeof(e.sort_key), value);
		else if (KEY("linux") && !linux_path[0])
			gb_strscpy(linux_path, sizeof(linux_path), value);
#undef KEY
	}
	if (!e.version[0] && linux_path[0]) {
		char *sp = strpbrk(linux_path, " \t");
		if (sp)
			*sp = '\0';
		if (kver_from_path(linux_path, e.version, sizeof(e.version)) < 0)
			return -EINVAL;
	}
	if (!gb_kver_valid(e.version))
		return -EINVAL;
	*ret = e;
	return 0;
}

/* grub's blscfg (Fedora's patch): sort-key, then the newest version first,
 * then the id, newest first too. */
static int bls_cmp(const void *x, const void *y)
{
	const struct gb_bls_entry *a = x, *b = y;
	int c;
	if (a->sort_key[0] && b->sort_key[0] && (c = strcmp(a->sort_key, b->sort_key)) != 0)
		return c;
	if (!!a->sort_key[0] != !!b->sort_key[0])
		return a->sort_key[0] ? -1 : 1;
	if ((c = gb_rpmvercmp(a->version, b->version)) != 0)
		return -c;
	return -strcmp(a->id, b->id);
}

void gb_bls_sort(struct gb_bls_entry *e, size_t n)
{
	if (n > 1)
		qsort(e, n, sizeof(*e), bls_cmp);
}

int gb_bls_pick(const struct gb_bls_entry *e, size_t n, const char *def)
{
	uint32_t index;
	if (n == 0)
		return -ENOENT;
	if (!def || !def[0])
		return 0;
	for (size_t i = 0; i < n; i++)
		if (streq(e[i].id, def) || streq(e[i].title, def))
			return (int)i;
	if (def[0] >= '0' && def[0] <= '9' && gb_safe_atou32(def, 10, &index) == 0 && index < n)
		return (int)index;
	return 0;
}

/* The BLS entries under root, sorted. -ENOENT when there is none. */
static int bls_read(struct gb_root *root, struct gb_bls_entry **ret, size_t *ret_n)
{
	_cleanup_free_ struct gb_bls_entry *e = NULL;
	char **names = NULL;
	size_t n_names = 0, n = 0;
	int r;

	r = gb_root_list_dir(root, "boot/loader/entries", &names, &n_names);
	if (r < 0)
		return r;
	e = calloc(GB_BLS_MAX_ENTRIES, sizeof(*e));
	if (!e) {
		gb_strv_free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_names && n < GB_BLS_MAX_ENTRIES; i++) {
		_cleanup_free_ char *text = NULL;
		size_t l = strlen(names[i]), tlen;
		char p[512], id[256];
		if (l <= 5 || !streq(names[i] + l - 5, ".conf") || l - 5 >= sizeof(id))
			continue;
		memcpy(id, names[i], l - 5);
		id[l - 5] = '\0';
		snprintf(p, sizeof(p), "boot/loader/entries/%s", names[i]);
		if (gb_root_read_file(root, p, BLS_FILE_MAX, &text, &tlen) < 0)
			continue;
		if (gb_bls_parse(id, text, tlen, &e[n]) == 0)
			n++;
	}
	gb_strv_free(names);
	if (n == 0)
		return -ENOENT;
	gb_bls_sort(e, n);
	*ret = TAKE_PTR(e);
	*ret_n = n;
	return 0;
}

static int read_first(struct gb_root *root, const char *const *paths, size_t max, char **ret, size_t *ret_len)
{
	int r = -ENOENT;
	for (size_t i = 0; paths[i]; i++) {
		r = gb_root_read_file(root, paths[i], max, ret, ret_len);
		if (r != -ENOENT)
			return r;
	}
	return r;
}

int gb_prepare_next_kernel(struct gb_root *root, char *ret, size_t n)
{
	static const char *const env_paths[] = { "boot/grub/grubenv", "boot/grub2/grubenv", NULL };
	static const char *const cfg_paths[] = { "boot/grub/grub.cfg", "boot/grub2/grub.cfg", NULL };
	_cleanup_free_ char *env = NULL, *cfg = NULL;
	_cleanup_free_ struct gb_bls_entry *bls = NULL;
	char next[512] = "", saved[512] = "", def[512];
	size_t env_len = 0, cfg_len = 0, n_bls = 0;
	int r;

	r = read_first(root, env_paths, ENV_MAX, &env, &env_len);
	if (r < 0 && r != -ENOENT)
		return r;
	/* a missing or foreign environment block: GRUB sees no variable either */
	if (env && gb_grubenv_get(env, env_len, "next_entry", next, sizeof(next)) < 0)
		next[0] = '\0';
	if (env && gb_grubenv_get(env, env_len, "saved_entry", saved, sizeof(saved)) < 0)
		saved[0] = '\0';
	r = read_first(root, cfg_paths, CFG_MAX, &cfg, &cfg_len);
	if (r < 0 && r != -ENOENT)
		return r;
	if (!cfg || gb_grubcfg_uses_bls(cfg, cfg_len)) {
		r = bls_read(root, &bls, &n_bls);
		if (r < 0)
			return r == -ENOENT && cfg ? -EINVAL : r;
		r = cfg ? gb_grubcfg_default(cfg, cfg_len, next, saved, def, sizeof(def)) : 0;
		if (r < 0)
			return r;
		r = gb_bls_pick(bls, n_bls, cfg ? def : "");
		return r < 0 ? r : gb_strscpy(ret, n, bls[r].version);
	}
	r = gb_grubcfg_default(cfg, cfg_len, next, saved, def, sizeof(def));
	if (r < 0)
		return r;
	return gb_grubcfg_kernel(cfg, cfg_len, def, ret, n);
}
