/* SPDX-License-Identifier: MIT */
/* libFuzzer target: kernel log records (/dev/kmsg, and dmesg-style text in
 * fixtures) and the classification of a failed insert from the lines kept. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "load/classify.h"
#include "load/kmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gb_kmsg_lines l;
	static struct gb_kmsg_line one;
	const char *lines[GB_KMSG_MAX_LINES];
	struct gb_load_class c;
	char name[32];

	(void)gb_kmsg_parse_record((const char *)data, size, &one);
	for (int lenient = 0; lenient < 2; lenient++) {
		l.n = l.dropped = l.skipped = 0;
		gb_kmsg_parse_buffer((const char *)data, size, "nvidia", lenient, &l);
		for (size_t i = 0; i < l.n; i++)
			lines[i] = l.line[i].text;
		gb_load_classify(-EINVAL, lines, l.n, &c);
		gb_load_classify(-EKEYREJECTED, lines, l.n, &c);
		gb_load_classify(-ENODEV, lines, l.n, &c);
	}
	(void)gb_load_errno_name(size ? -(int)data[0] : 0, name, sizeof(name));
	return 0;
}
