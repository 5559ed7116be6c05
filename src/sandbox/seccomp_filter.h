/* sandbox/seccomp_filter: the system-call filter installed last before execve()
 * (seccomp.c; not named seccomp.h so it can never shadow libseccomp's). */
#pragma once

#include "util/error.h"

#include <stdbool.h>

/* Load the txbox seccomp filter into the calling thread (requires
 * PR_SET_NO_NEW_PRIVS or CAP_SYS_ADMIN). Default action ALLOW; dangerous
 * calls fail with EPERM (clone3 with ENOSYS, foreign socket families with
 * EAFNOSUPPORT) so tools degrade instead of dying. Syscalls unknown to the
 * running libseccomp are skipped. */
int harden_seccomp_apply(bool allow_extra_socket_families, txbox_error *err);

/* The same filter compiled to BPF ahead of time (by the supervisor, while
 * the sandbox builds its view), and loaded from that in the command. The
 * buffer is malloc'ed. */
int harden_seccomp_compile(bool allow_extra_socket_families, void **bpf, size_t *len, txbox_error *err);
int harden_seccomp_load_bpf(const void *bpf, size_t len, txbox_error *err);

/* A second filter, loaded last, that hands connect(), sendmsg(),
 * sendmmsg() and sendto() with an address (and bind() when with_bind: the
 * network namespace is the host's) to a supervisor (unixguard.c) through a
 * user-notification listener (returned in *listener, close-on-exec).
 * Installing it in a process whose filters already have a listener fails
 * (EBUSY): the command can never install one of its own in front. */
int harden_seccomp_load_notify(bool with_bind, int *listener, txbox_error *err);

/* The filter compiled at build time (seccompgen.c): both variants, for
 * the architecture of the build. */
typedef struct harden_seccomp_prebuilt {
	unsigned arch; /* libseccomp's native architecture token at build time */
	const void *bpf[2]; /* [allow_extra_socket_families] */
	size_t len[2];
} harden_seccomp_prebuilt;
extern const harden_seccomp_prebuilt harden_seccomp_prebuilt_filter;

/* The prebuilt program for these options when it suits this machine, else
 * NULL (compile at run time). */
const void *harden_seccomp_prebuilt_for(bool allow_extra_socket_families, size_t *len);
