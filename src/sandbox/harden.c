/* sandbox/harden: the last steps before execve() inside the sandbox. */
#include "sandbox/harden.h"
#include "util/trace.h"

#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/rlimits.h"
#include "sandbox/seccomp_filter.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/prctl.h>

int harden_child_apply(const harden_opts *o, int *abi_out, txbox_error *err)
{
	if (abi_out)
		*abi_out = 0;
	if (!o)
		return txbox_fail(err, -EINVAL, "harden: no options");

	int r = harden_rlimits_apply(o, err);
	if (r < 0)
		return r;
	if (o->keep_namespaced_caps)
		r = harden_caps_limit_namespaced(err);
	else
		r = harden_caps_drop(o->in_userns, err);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return txbox_fail_errno(err, -errno, "harden: PR_SET_NO_NEW_PRIVS");

	trace_mark("cmd: caps dropped");
	/* The read layer last: its rules come from the helper, which may still
	 * be granting them; everything that does not need it is done while it
	 * works (Landlock layers and the seccomp filter do not depend on each
	 * other's order, and the filter lets landlock_restrict_self through). */
	int abi = landlock_probe_abi();
	if (abi > 0) {
		if ((r = harden_landlock_apply(abi, o->workspace, o->writable, o->network, err)) < 0)
			return r;
	}
	if (abi_out)
		*abi_out = abi;
	trace_mark("cmd: write layer applied");
	r = o->seccomp_bpf ? harden_seccomp_load_bpf(o->seccomp_bpf, o->seccomp_bpf_len, err)
			   : harden_seccomp_apply(o->allow_extra_socket_families, err);
	if (r < 0)
		return r;
	trace_mark("cmd: seccomp loaded");
	if ((r = harden_landlock_read_apply(o, err)) < 0)
		return r;
	trace_mark("cmd: read layer applied");
	return 0;
}

int harden_seccomp_precompile(const harden_opts *o, void **bpf, size_t *len, txbox_error *err)
{
	return harden_seccomp_compile(o->allow_extra_socket_families, bpf, len, err);
}

const void *harden_seccomp_prebuilt_for(bool allow_extra_socket_families, size_t *len)
{
	const harden_seccomp_prebuilt *p = &harden_seccomp_prebuilt_filter;
	if (p->arch == 0 || p->arch != seccomp_arch_native())
		return NULL;
	*len = p->len[allow_extra_socket_families ? 1 : 0];
	return p->bpf[allow_extra_socket_families ? 1 : 0];
}
