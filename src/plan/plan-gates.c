/* SPDX-License-Identifier: MIT */
/* Gates the hardware cannot pass are refusals at plan time (exit 12,
 * naming the gate and the GPU's figure), not verification failures after
 * an install; gates that only the full tier measures, or that do not apply
 * to this machine, are said so. */
#include <stdio.h>
#include <string.h>

#include "exit-codes.h"
#include "plan-internal.h"
#include "shared/util.h"

static void memory_gate(struct gb_plan *p)
{
	for (size_t i = 0; i < p->n_gpus && p->verify.min_gpu_memory_gib > 0; i++) {
		const struct gb_gpu_traits *t = gb_catalog_traits(p->gpus[i].device);
		double gib;
		if (!t || !t->memory_mib)
			continue; /* not recorded: the verifier measures it */
		gib = t->memory_mib / 1024.0;
		if (gib + 1e-9 >= p->verify.min_gpu_memory_gib)
			continue;
		gb_plan_refuse(
		    p, GB_EXIT_UNSUPPORTED_GPU,
		    "the profile's gate min_gpu_memory_gib = %g cannot pass on %s (%u MiB = %.1f GiB as NVML "
		    "reports it): use a profile whose gate fits (inference), or lower it in a profile of "
		    "your own",
		    p->verify.min_gpu_memory_gib, p->gpus[i].name, t->memory_mib, gib);
		return;
	}
}

static void fabric_gate(struct gb_plan *p, const struct gb_profile *prof)
{
	if (p->in.n_nvswitches == 0 || prof->fabricmanager != GB_NO)
		return;
	gb_plan_refuse(p, GB_EXIT_UNSUPPORTED_GPU,
	               "%u NVSwitch(es) present but the profile turns the fabric manager off: CUDA fails with error "
	               "802 (system not yet initialized) without it; set [daemons] fabricmanager = auto",
	               p->in.n_nvswitches);
}

/* Network: only where the node is built for multi-node work (Mellanox,
 * InfiniBand or AWS's EFA present); disk and network are measured by the
 * full tier only. */
static void say_gates(struct gb_plan *p)
{
	bool fast_nic = p->in.mellanox > 0 || p->in.efa > 0;
	bool full = streq(p->verify.tier, "full");
	char net[200], disk[160];

	p->verify.network_gate_applies = fast_nic && p->verify.min_network_gbps > 0;
	if (p->verify.min_network_gbps <= 0)
		SAY(net, "no network gate");
	else if (!fast_nic)
		SAY(net, "network gate %g Gb/s not applied: no Mellanox, InfiniBand or EFA NIC, a single node",
		    p->verify.min_network_gbps);
	else
		SAY(net, "network gate applies: %g Gb/s (high-speed NICs present)%s", p->verify.min_network_gbps,
		    full ? "" : ", measured by the full tier only");
	if (p->verify.min_disk_write_mbps <= 0)
		SAY(disk, "no disk gate");
	else
		SAY(disk, "disk gate %g MB/s%s", p->verify.min_disk_write_mbps,
		    full ? "" : ", measured by the full tier only");
	SAY(p->verify.gates_reason, "%s; %s", net, disk);
}

void gb_plan_check_gates(struct gb_plan *p, const struct gb_profile *prof)
{
	memory_gate(p);
	fabric_gate(p, prof);
	say_gates(p);
}
