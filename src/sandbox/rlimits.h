/* sandbox/rlimits: per-process resource limits, and the memory measure of
 * the rlimit mechanism (limits.c). */
#pragma once

#include "sandbox/harden.h"

#include <stdint.h>

/* Lower the RLIMIT_* named in o (0 = leave as is); never raises a hard
 * limit. RLIMIT_CPU gets soft = cpu_seconds, hard = soft + 1 (SIGXCPU, then
 * SIGKILL a second later). */
int harden_rlimits_apply(const harden_opts *o, txbox_error *err);

/* Kernel memory an inode of the private tmpfs costs (inode + dentry),
 * charged with its pages when memory is measured without a cgroup. */
#define LIMITS_TMPFS_INODE_BYTES 1024u

/* Without a memory cgroup, the sandbox's init samples what the sandbox
 * holds in memory: the private (anonymous) memory of every process of its
 * PID namespace, plus shared memory held by objects rather than processes
 * — its private tmpfs, SysV segments of its IPC namespace, memfds (open,
 * only mapped, or in flight in a socket: bounded by the machine's shmem
 * growth since init_memwatch). Runs in init, with the sandbox's /proc. */
typedef struct limits_memwatch {
	uint64_t shmem_base;
} limits_memwatch;
void limits_memwatch_init(limits_memwatch *w);
uint64_t limits_memwatch_bytes(const limits_memwatch *w);

/* In the sandbox's IPC namespace (init, before /proc/sys is read-only):
 * SysV shared memory of at most `bytes` in all. 0 or -errno. */
int limits_ipc_cap(uint64_t bytes);
