/* syscalls: thin wrappers for system calls glibc 2.36 lacks, and the
 * feature probes that decide whether to use them. Probes live here and
 * nowhere else; they test behaviour, never kernel versions. */
#pragma once

#include <fcntl.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#ifndef RESOLVE_NO_XDEV
#define RESOLVE_NO_XDEV 0x01
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#define RESOLVE_IN_ROOT 0x10
#endif

struct txbox_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

static inline int sys_openat2(int dirfd, const char *path, struct txbox_open_how *how)
{
	return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct txbox_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

static inline int sys_mount_setattr(int dirfd, const char *path, unsigned flags,
				    struct txbox_mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr));
}

static inline int sys_pidfd_open(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}

/* Probes (cached after the first call). */
bool probe_openat2(void);
