/* SPDX-License-Identifier: MIT */
/* The fake operations table's kernel: what inserting and removing the
 * NVIDIA modules leaves under a fixture root (fake-kernel.c). */
#pragma once

/* Called before the fake marks MODULE live: for nvidia, read the module
 * file of RELEASE (the root's running kernel when NULL or "") and bind the
 * GPUs. 0, or the negative errno the real init_module would return
 * (-ENOEXEC: no module; -ENODEV: no GPU it could bind). */
int gb_fake_kernel_insert(const char *root, const char *release, const char *module);
/* Called after the fake removed MODULE: unbind its PCI functions and
 * remove what its insert made. */
void gb_fake_kernel_remove(const char *root, const char *module);
/* The fake package manager's install: SRC's tree (files, links, modes)
 * copied over DST. 0 or a negative errno. */
int gb_fake_copy_tree(const char *src, const char *dst);
