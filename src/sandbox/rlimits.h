/* sandbox/rlimits: per-process resource limits, and the memory measure of
 * the rlimit mechanism (limits.c). */
#pragma once

#include "sandbox/harden.h"

#include <stdbool.h>
#include <stdint.h>

/* Lower the RLIMIT_* named in o (0 = leave as is); never raises a hard
 * limit. RLIMIT_CPU gets soft = cpu_seconds, hard = soft + 1 (SIGXCPU, then
 * SIGKILL a second later). */
int harden_rlimits_apply(const harden_opts *o, txbox_error *err);

/* RLIMIT_SIGPENDING of every command: signals it may have queued at once. */
#define LIMITS_SIGPENDING 256u

/* SysV message queues: bytes per queue (the kernel's default msgmnb), and
 * the kernel memory each queued message costs beyond its text. */
#define LIMITS_MSGMNB 16384u
#define LIMITS_MSG_HEADER_BYTES 64u

/* Kernel memory an inode of the private tmpfs costs (inode + dentry),
 * charged with its pages when memory is measured without a cgroup. */
#define LIMITS_TMPFS_INODE_BYTES 1024u

/* Without a memory cgroup, the sandbox's init samples what the sandbox
 * holds in memory: the private (anonymous) memory of every process of its
 * PID namespace, plus shared memory held by objects rather than processes
 * — its private tmpfs, SysV segments and message queues of its IPC
 * namespace, Unix socket buffers of its network namespace, memfds (open,
 * only mapped, or in flight in a socket: bounded by the machine's shmem
 * growth since init_memwatch). Runs in init, with the sandbox's /proc
 * (procfd: init's descriptor of it, opened before the command exists).
 * Fail closed: what cannot be measured (a file that cannot be opened or
 * read, out of descriptors) is an error naming it, never 0; only a process
 * that is gone is skipped. */
typedef struct limits_memwatch {
	int procfd;
	uint64_t shmem_base;
	/* The network namespace is the sandbox's own: the buffers of its Unix
	 * sockets are the command's (with --net they would be the host's). */
	bool own_netns;
} limits_memwatch;
int limits_memwatch_init(limits_memwatch *w, int procfd, txbox_error *err);
int limits_memwatch_bytes(const limits_memwatch *w, uint64_t *bytes, txbox_error *err);

/* In the sandbox's IPC namespace (init, before /proc/sys is read-only):
 * SysV shared memory, and SysV message queues, of at most `bytes` each.
 * 0 or -errno. */
int limits_ipc_cap(uint64_t bytes);

/* In the sandbox's own user namespace (init, rootless, before /proc/sys is
 * read-only): per-user kernel counters (inotify, fanotify) capped at a
 * quarter of the host user's allowance. 0 or -errno. */
int limits_ucounts_cap(void);

/* CPU used so far by the sandbox's PID namespace, in clock ticks: every
 * live process's, and what its processes (init included) reaped. Init
 * samples it to enforce one CPU budget for the whole sandbox when no
 * cgroup accounts it (RLIMIT_CPU is per process). procfd is the
 * namespace's /proc; 0 or -errno (fail closed, as limits_memwatch_bytes). */
int limits_ns_cpu_ticks(int procfd, uint64_t *ticks, txbox_error *err);
