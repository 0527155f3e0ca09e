/* SPDX-License-Identifier: MIT */
/* The distro method's module: the site mirror's prebuilt package for each
 * kernel the install covers (repair/modules-build.c made them; the mirror's
 * signed manifest lists them, run/inputs.c hands them in), or DKMS, with
 * the reason naming what the mirror lacks (docs/mirror.md, "Prebuilt
 * modules"). */
#include <stdio.h>
#include <string.h>

#include "exit-codes.h"
#include "plan-internal.h"
#include "plan.h"
#include "profile.h"
#include "shared/util.h"

/* The offer that fits kernel k exactly, else NULL with why (the closest
 * miss) in why. */
static const struct gb_plan_module_offer *fit(const struct gb_plan *p, const struct gb_site_config *site,
                                              const struct gb_plan_node_kernel *k, char *why, size_t whysz)
{
	const char *flavor = gb_driver_flavor_name(p->driver.flavor);
	char distro[80];

	snprintf(distro, sizeof(distro), "%s:%s", p->in.os_id, p->in.os_version);
	snprintf(why, whysz, "no package for the kernel %s (%s %s, driver %s, %s)", k->release, distro, p->in.deb_arch,
	         p->driver.version, flavor);
	for (size_t i = 0; i < p->in.n_offers; i++) {
		const struct gb_plan_module_offer *o = &p->in.offers[i];
		if (!streq(o->distro, distro) || !streq(o->arch, p->in.deb_arch) || !streq(o->kernel, k->release))
			continue;
		if (!streq(o->driver, p->driver.version) || !streq(o->flavor, flavor))
			snprintf(why, whysz, "its package for %s is driver %s %s, the plan's is %s %s", k->release,
			         o->driver, o->flavor, p->driver.version, flavor);
		else if (!k->package_version[0] || !streq(o->kernel_package_version, k->package_version))
			snprintf(
			    why, whysz,
			    "its package for %s fits the kernel package linux-image-%s %s, this one is %s (a rebuilt "
			    "kernel)",
			    k->release, k->release, o->kernel_package_version,
			    k->package_version[0] ? k->package_version : "not installed");
		else if (!k->vermagic[0] || !streq(o->vermagic, k->vermagic))
			snprintf(why, whysz, "its module for %s has vermagic '%s', the kernel's modules '%s'",
			         k->release, o->vermagic, k->vermagic[0] ? k->vermagic : "(unreadable)");
		else if (p->in.secure_boot == 1 && site && site->signing_cert_subject[0] &&
		         !streq(o->signer, site->signing_cert_subject))
			snprintf(why, whysz,
			         "Secure Boot is on and its module for %s is signed by '%s', not the site's key '%s'",
			         k->release, o->signer[0] ? o->signer : "(as DKMS left it)",
			         site->signing_cert_subject);
		else if (p->in.secure_boot == 1 && !(site && site->signing_cert_subject[0]))
			snprintf(why, whysz,
			         "Secure Boot is on and gpuboot.conf names no [secure_boot] signing_cert to check its "
			         "signer ('%s') against",
			         o->signer);
		else
			return o;
	}
	return NULL;
}

void gb_plan_decide_module_source(struct gb_plan *p, const struct gb_site_config *site)
{
	char why[GB_REASON] = "";

	if (p->driver.method != GB_METHOD_DISTRO || p->refusal_code)
		return;
	p->driver.n_prebuilt = 0;
	p->driver.module_source = "dkms";
	if (p->in.offers_note[0])
		SAY(why, "%s", p->in.offers_note);
	else if (!p->in.n_node_kernels)
		SAY(why, "the kernels are not known (planning for a target OS)");
	for (size_t i = 0; !why[0] && i < p->in.n_node_kernels; i++) {
		const struct gb_plan_module_offer *o = fit(p, site, &p->in.node_kernels[i], why, sizeof(why));
		struct gb_plan_prebuilt *b = &p->driver.prebuilt[p->driver.n_prebuilt];
		if (!o)
			break;
		why[0] = '\0';
		*b = (struct gb_plan_prebuilt){ .size = o->size };
		SAY(b->kernel, "%s", o->kernel);
		SAY(b->package, "%s", o->package);
		SAY(b->version, "%s", o->package_version);
		SAY(b->path, "%s", o->path);
		SAY(b->sha256, "%s", o->sha256);
		SAY(b->signer, "%s", o->signer);
		p->driver.n_prebuilt++;
	}
	if (why[0]) {
		p->driver.n_prebuilt = 0;
		if (site && site->prebuilt_required && !p->in.offers_unread) {
			gb_plan_refuse(
			    p, GB_EXIT_UNSUPPORTED,
			    "no prebuilt module from the site's mirror for this node (%s), and gpuboot.conf's "
			    "[install] prebuilt_modules = require forbids building one: run gpuboot modules "
			    "build for this kernel and publish the mirror",
			    why);
			return;
		}
		SAY(p->driver.module_source_reason, "built by DKMS for each installed kernel: %s%s",
		    p->in.offers_note[0] ? "" : "the site's mirror has ", why);
		return;
	}
	p->driver.module_source = "mirror";
	SAY(p->driver.module_source_reason,
	    "the site's mirror has the prebuilt module package for every installed kernel (%s %s for %s%s): no DKMS, "
	    "no compiler, no kernel headers",
	    p->driver.prebuilt[0].package, p->driver.prebuilt[0].version, p->driver.prebuilt[0].kernel,
	    p->driver.n_prebuilt > 1 ? ", and the others" : "");
}
