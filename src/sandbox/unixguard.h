/* sandbox/unixguard: the supervisor of the command's socket calls.
 *
 * A read-only mount does not stop connect() on a Unix socket, Landlock (up
 * to ABI 7) does not govern pathname sockets, and pathname sockets ignore
 * network namespaces. So the command runs under a seccomp filter
 * (harden_seccomp_load_notify) that hands every connect(), sendmsg(),
 * sendmmsg() and sendto() with an address to a guard process, which carries
 * the call out itself on a copy of the command's socket (pidfd_getfd) with
 * a copy of the address — never letting the kernel re-read the command's
 * memory. A Unix pathname address is resolved as the command would (its
 * root and cwd) to the socket inode, which must be the sandbox's own (on a
 * filesystem the sandbox made: its private /tmp, /var/tmp, /dev/shm, /run
 * or the workspace overlay) or on the policy's allowed_sockets; the call
 * then goes to that very inode (/proc/self/fd/N of the O_PATH fd checked).
 *
 * The guard is a child of the sandbox's init, forked in the sandbox's
 * namespaces before the command exists; init hands it each command's
 * listener. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct unixguard unixguard;

/* In init, while the host's paths are still in place (before the view is
 * built): the allowed sockets' inodes, and the devices of the places the
 * view replaces (to tell the sandbox's own filesystems later). */
int unixguard_new(const char *workspace, const char *const *allowed_sockets, bool network, unixguard **out,
		  txbox_error *err);
void unixguard_free(unixguard *g);

/* Fork the guard process now (init does while the command child hardens
 * itself, off the way to its exec); unixguard_take forks one when there is
 * none. */
int unixguard_spawn(unixguard *g, txbox_error *err);

/* The command child's listener (its fd number child_fd in pid child): the
 * guard takes it over. After this returns 0 the child may close its copy. */
int unixguard_take(unixguard *g, pid_t child, int child_fd, txbox_error *err);

/* The guard was killed (with every other process of the sandbox) and
 * reaped: the next command gets a new one. */
void unixguard_gone(unixguard *g);
