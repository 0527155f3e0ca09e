/* SPDX-License-Identifier: MIT */
/* InfiniBand ports (sys/class/infiniband): state, rate and link layer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "detect.h"
#include "shared/log.h"
#include "shared/root.h"
#include "shared/util.h"

#define IB_DIR "sys/class/infiniband"
#define IB_MAX_PORTS 256

static bool name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", *p))
			return false;
	return true;
}

static char *port_attr(struct gb_ctx *ctx, const char *dev, const char *port, const char *attr)
{
	char path[384];
	char *v = NULL;

	snprintf(path, sizeof(path), IB_DIR "/%s/ports/%s/%s", dev, port, attr);
	if (gb_root_read_attr(ctx->root, path, &v) < 0)
		return NULL;
	return v;
}

int gb_detect_net(struct gb_ctx *ctx, struct gb_facts *f)
{
	char **devs = NULL;
	int r;

	r = gb_root_list_dir(ctx->root, IB_DIR, &devs, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0; /* no RDMA devices: the common case */
	for (char **d = devs; *d && f->network.n_ib < IB_MAX_PORTS; d++) {
		char path[256];
		char **ports = NULL;

		if (!name_ok(*d))
			continue;
		snprintf(path, sizeof(path), IB_DIR "/%s/ports", *d);
		if (gb_root_list_dir(ctx->root, path, &ports, NULL) < 0)
			continue;
		for (char **p = ports; *p && f->network.n_ib < IB_MAX_PORTS; p++) {
			struct gb_ib_port *a, *port;
			uint32_t num;
			_cleanup_free_ char *state = NULL;

			if (gb_safe_atou32(*p, 10, &num) < 0)
				continue;
			a = realloc(f->network.ib, (f->network.n_ib + 1) * sizeof(*a));
			if (!a) {
				gb_strv_free(ports);
				gb_strv_free(devs);
				return -ENOMEM;
			}
			f->network.ib = a;
			port = &a[f->network.n_ib++];
			memset(port, 0, sizeof(*port));
			port->device = strdup(*d);
			port->port = num;
			/* "4: ACTIVE" -> "ACTIVE" */
			state = port_attr(ctx, *d, *p, "state");
			if (state) {
				const char *c = strchr(state, ':');
				port->state = strdup(c ? gb_strstrip(state + (c - state) + 1) : state);
			}
			port->rate = port_attr(ctx, *d, *p, "rate");
			port->link_layer = port_attr(ctx, *d, *p, "link_layer");
			if (!port->device || (state && !port->state)) {
				gb_strv_free(ports);
				gb_strv_free(devs);
				return -ENOMEM;
			}
		}
		gb_strv_free(ports);
	}
	gb_strv_free(devs);
	return 0;
}
