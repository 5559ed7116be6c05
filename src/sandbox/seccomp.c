/* sandbox/seccomp: the system-call filter.
 *
 * Policy: default ALLOW; refuse what a coding tool never needs and what is
 * kernel attack surface or a sandbox escape (mount API, namespaces, ptrace,
 * module/kexec/bpf/keyring, clock setting, TIOCSTI, other processes'
 * rlimits, …). Refusals are ERRNO,
 * not KILL, so well-written tools print an error and carry on.
 *
 * Foreign ABIs: the filter is built for the native architecture only and the
 * bad-architecture action is ERRNO(EPERM). On x86_64 that makes every i386
 * (int 0x80) and x32 (nr | __X32_SYSCALL_BIT) call fail: libseccomp emits
 * the x32 range check itself when x32 is not part of the filter.
 *
 * Socket families: AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK are allowed.
 * AF_NETLINK is kept because glibc's getaddrinfo(AI_ADDRCONFIG), ip(8), ss(8)
 * and friends use NETLINK_ROUTE; inside the sandbox's own network namespace
 * it only sees the sandbox's loopback, and the privileged netlink families
 * (audit, netfilter, …) still require capabilities the sandbox does not
 * hold; NETLINK_KOBJECT_UEVENT (host device events) is refused, even with
 * allow_extra_socket_families. Every other family (AF_PACKET, AF_ALG, AF_VSOCK, AF_BLUETOOTH, …)
 * fails with EAFNOSUPPORT unless allow_extra_socket_families.
 *
 * personality(2) and socket(2) need "argument not in a set" tests, which
 * libseccomp 2.5 cannot express (one comparison per argument per rule):
 * socket is written as one EQ rule per refused family below AF_MAX plus a
 * GE AF_MAX rule; personality gets a second, hand-written classic-BPF filter
 * (seccomp filters stack; the most restrictive verdict wins). */
#include "sandbox/seccomp_filter.h"

#include "util/cleanup.h"

#include <errno.h>
#include <sys/mman.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef AF_NETLINK
#define AF_NETLINK 16
#endif

/* Refused with EPERM whatever the arguments. Names, so that a syscall the
 * running libseccomp does not know (or this architecture lacks) is skipped. */
static const char *const denied_always[] = {
	/* mount API: the sandbox's mounts are final */
	"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree",
	"open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	/* other processes' memory */
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	/* kernel code, kexec, bpf, perf */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open",
	/* keyrings are not namespaced */
	"keyctl", "add_key", "request_key",
	/* userfaultfd: classic exploitation aid */
	"userfaultfd",
	/* namespaces: no nesting, no joining */
	"unshare", "setns",
	/* file handles bypass path-based confinement (name_to_handle_at is harmless) */
	"open_by_handle_at",
	/* hardware, swap, power, accounting, quotas */
	"iopl", "ioperm", "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd",
	/* the clock is the host's */
	"settimeofday", "clock_settime", "clock_settime64", "clock_adjtime",
	"clock_adjtime64", "adjtimex", "stime",
	/* kernel log, obsolete or dangerous odds and ends */
	"syslog", "lookup_dcookie", "vhangup", "nfsservctl",
	/* io_uring: large attack surface, bypasses this filter (and the
	 * socket-call one: IORING_OP_CONNECT, SENDMSG) for the ops it
	 * performs; users fall back to plain syscalls on EPERM */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
};

/* Refused with ENOSYS whatever the arguments: legacy (kernel) AIO. Its
 * event pool (fs.aio-max-nr) is one per machine, with no per-user or
 * per-cgroup share, so one command could starve every database and VM on
 * the host. ENOSYS, as on a kernel built without AIO: glibc's POSIX AIO
 * uses threads and never calls these; libaio users fall back. */
static const char *const denied_nosys[] = {
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
	"io_pgetevents_time64",
};

static const uint64_t clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	/* CLONE_NEWTIME (0x80) overlaps CSIGNAL for clone(); clone3 is refused whole. */
};

/* personality(2) values allowed (everything else, e.g. ADDR_NO_RANDOMIZE or
 * READ_IMPLIES_EXEC, is refused): PER_LINUX, PER_LINUX32, UNAME26 and the
 * 0xffffffff query — Docker's list. */
static const uint32_t personality_allowed[] = {
	PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32 | UNAME26, 0xffffffffu,
};

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned nargs,
		    const struct scmp_arg_cmp *cmp, const char *name, txbox_error *err)
{
	int r = seccomp_rule_add_array(ctx, action, nr, nargs, cmp);
	if (r < 0)
		return txbox_fail_errno(err, r, "seccomp: adding the rule for %s", name);
	return 0;
}

static int add_denied_list(scmp_filter_ctx ctx, const char *const *names, size_t n, int errnum,
			   txbox_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* unknown to this libseccomp: skip */
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(errnum), nr, 0);
		if (r < 0) {
			/* A syscall this architecture lacks (negative pseudo
			 * number that cannot be rewritten) is not an error. */
			if (nr < 0 && (r == -EDOM || r == -EINVAL || r == -EFAULT))
				continue;
			return txbox_fail_errno(err, r, "seccomp: adding the rule for %s", names[i]);
		}
	}
	return 0;
}

static int add_denied_names(scmp_filter_ctx ctx, txbox_error *err)
{
	int r = add_denied_list(ctx, denied_always, ARRAY_SIZE(denied_always), EPERM, err);
	if (r < 0)
		return r;
	return add_denied_list(ctx, denied_nosys, ARRAY_SIZE(denied_nosys), ENOSYS, err);
}

static int add_clone_rules(scmp_filter_ctx ctx, txbox_error *err)
{
	int nr = seccomp_syscall_resolve_name("clone");
	if (nr != __NR_SCMP_ERROR) {
		for (size_t i = 0; i < ARRAY_SIZE(clone_ns_flags); i++) {
			/* flags are the first argument everywhere but s390 (where
			 * clone takes the stack first). */
#if defined(__s390__) || defined(__s390x__)
			struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
							clone_ns_flags[i]);
#else
			struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
							clone_ns_flags[i]);
#endif
			int r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &c, "clone", err);
			if (r < 0)
				return r;
		}
	}
	/* clone3 passes its flags in a struct the filter cannot read: ENOSYS
	 * makes glibc (pthread_create, posix_spawn) fall back to clone. */
	nr = seccomp_syscall_resolve_name("clone3");
	if (nr != __NR_SCMP_ERROR && nr >= 0) {
		int r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL, "clone3", err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* prlimit64(pid, resource, new, old) with pid != 0 and new != NULL sets
 * another process's limits, and needs only the same uid (no capability,
 * no LSM hook): init's and the socket guard's samplers and descriptors
 * would be the command's to shrink. Reading (new == NULL) and the caller's
 * own limits (pid 0: setrlimit, ulimit, prlimit(1) running a command) stay
 * allowed; naming one's own pid is refused too (the filter cannot know it).
 * pid is a pid_t: any bit set in the 64-bit argument is "not 0" here, and
 * a kernel that sees 0 after truncation only gets a stricter answer. */
static int add_prlimit_rule(scmp_filter_ctx ctx, txbox_error *err)
{
	int nr = seccomp_syscall_resolve_name("prlimit64");
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;
	struct scmp_arg_cmp c[2] = {SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0)};
	return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, c, "prlimit64", err);
}

/* fallocate(fd, mode, offset, len) reserves blocks at no cost: about
 * 100 GiB/s here, so the disk limit, measured between polls, could be
 * overshot by the whole free space of the host's file system in one poll
 * interval; and FALLOC_FL_KEEP_SIZE allocates past EOF, which RLIMIT_FSIZE
 * never sees (one call filled the disk). Only the modes that free space
 * (punch a hole, collapse a range) are allowed; every mode that can
 * allocate (plain, KEEP_SIZE, ZERO_RANGE, UNSHARE_RANGE, INSERT_RANGE,
 * WRITE_ZEROES) gets EOPNOTSUPP, the answer of a file system without
 * preallocation: glibc's posix_fallocate then writes the blocks, at the
 * speed of writing. The kernel refuses PUNCH_HOLE or COLLAPSE_RANGE
 * combined with any allocating mode (EINVAL), so testing these two bits
 * is enough. */
#define FALLOC_FREEING_BITS 0x0au /* FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE */

static int add_fallocate_rule(scmp_filter_ctx ctx, txbox_error *err)
{
	int nr = seccomp_syscall_resolve_name("fallocate");
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;
	struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, FALLOC_FREEING_BITS, 0);
	return add_rule(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), nr, 1, &c, "fallocate", err);
}

static int add_ioctl_rules(scmp_filter_ctx ctx, txbox_error *err)
{
	/* The kernel reads the request as unsigned int: compare the low 32
	 * bits only so junk in the upper half cannot slip past. */
	/* TIOCSETD: line disciplines (n_gsm, n_hdlc) are a kernel attack surface */
	static const uint64_t requests[] = {TIOCSTI, TIOCLINUX, TIOCSETD};
	for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, requests[i]);
		int r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &c, "ioctl", err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* fcntl(fd, F_SETLEASE, …): a read lease needs only ownership of the file
 * (or CAP_LEASE), not write access, so the command could lease host files
 * it sees read-only (as root: every root-owned file) or another
 * workspace's .txbox/lock, and every host open() for writing would then
 * block for up to lease-break-time (45 s) — txbox's own included. No
 * coding tool needs a lease. EACCES is the kernel's own "you may not
 * lease this file" (not the owner, no CAP_LEASE), which lease users
 * (Samba, NFS servers) already treat as "no lease here". F_GETLEASE stays.
 * The kernel reads cmd as unsigned int: only the low 32 bits count. */
#ifndef F_SETLEASE
#define F_SETLEASE 1024
#endif

static int add_fcntl_rules(scmp_filter_ctx ctx, txbox_error *err)
{
	static const char *const names[] = {"fcntl", "fcntl64"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue; /* fcntl64 exists on 32-bit ABIs only */
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETLEASE);
		int r = add_rule(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, &c, names[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* socket(AF_NETLINK, *, NETLINK_KOBJECT_UEVENT): as root the sandbox's
 * network namespace belongs to the initial user namespace, and the kernel
 * broadcasts every device event (add/remove with DEVPATH, USB serial
 * numbers, …) to such namespaces: a live view of host activity. Refused
 * whatever the family policy (allow_extra_socket_families widens families,
 * not this), with the kernel's answer for a protocol it lacks. Family and
 * protocol are ints to the kernel: low 32 bits only. */
#ifndef NETLINK_KOBJECT_UEVENT
#define NETLINK_KOBJECT_UEVENT 15
#endif

static int add_netlink_rules(scmp_filter_ctx ctx, txbox_error *err)
{
	struct scmp_arg_cmp c[2] = {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_NETLINK),
				    SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffu, NETLINK_KOBJECT_UEVENT)};
	return add_rule(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2, c, "socket", err);
}

static bool socket_family_allowed(uint64_t family)
{
	return family == AF_UNIX || family == AF_INET || family == AF_INET6 ||
	       family == AF_NETLINK;
}

static int add_socket_rules(scmp_filter_ctx ctx, txbox_error *err)
{
	/* socketpair() creates sockets of its family too (and can load its module). */
	static const struct {
		int nr;
		const char *name;
	} calls[] = {{SCMP_SYS(socket), "socket"}, {SCMP_SYS(socketpair), "socketpair"}};
	for (size_t k = 0; k < sizeof calls / sizeof *calls; k++) {
		for (uint64_t fam = 0; fam < AF_MAX; fam++) {
			if (socket_family_allowed(fam))
				continue;
			struct scmp_arg_cmp c = {.arg = 0, .op = SCMP_CMP_EQ, .datum_a = fam, .datum_b = 0};
			int r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[k].nr, 1, &c, calls[k].name, err);
			if (r < 0)
				return r;
		}
		/* Families newer than this header, and any value with upper bits set. */
		struct scmp_arg_cmp c = {.arg = 0, .op = SCMP_CMP_GE, .datum_a = AF_MAX, .datum_b = 0};
		int r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), calls[k].nr, 1, &c, calls[k].name, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Offsets of the low and high halves of seccomp_data.args[0]. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#else
#define ARG0_LO (offsetof(struct seccomp_data, args[0]) + 4)
#endif

static int load_personality_filter(txbox_error *err)
{
	uint32_t arch = seccomp_arch_native();
	int nr = seccomp_syscall_resolve_name("personality");
	if (arch == 0 || nr < 0)
		return 0; /* not on this architecture */

	enum { NALLOW = ARRAY_SIZE(personality_allowed) };
	/* 0 ld arch; 1 jeq arch; 2 ld nr; 3 jeq nr; 4 ld arg0.lo;
	 * 5..5+NALLOW-1 jeq allowed; deny; allow */
	struct sock_filter prog[5 + NALLOW + 2];
	size_t n = 0;
	const size_t deny = 5 + NALLOW, allow = deny + 1;
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, arch));
	prog[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0,
					       (uint8_t)(allow - n - 1));
	n++;
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						 offsetof(struct seccomp_data, nr));
	prog[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0,
					       (uint8_t)(allow - n - 1));
	n++;
	/* The kernel takes the persona as unsigned int: only the low half counts. */
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO);
	for (size_t i = 0; i < NALLOW; i++, n++)
		prog[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						       personality_allowed[i],
						       (uint8_t)(allow - n - 1), 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						 SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
		return txbox_fail_errno(err, -errno, "seccomp: loading the personality filter");
	return 0;
}

static int build_filter(scmp_filter_ctx ctx, bool allow_extra_socket_families, txbox_error *err)
{
	/* Foreign ABIs (i386 via int 0x80, x32) hit the bad-arch action. */
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
	if (r < 0)
		return txbox_fail_errno(err, r, "seccomp: setting the bad-architecture action");
	/* NO_NEW_PRIVS is set by the caller (harden_child_apply); leave the
	 * attribute at its default (set on load) so this also works alone. */
	if ((r = add_denied_names(ctx, err)) < 0 || (r = add_clone_rules(ctx, err)) < 0 ||
	    (r = add_ioctl_rules(ctx, err)) < 0 || (r = add_prlimit_rule(ctx, err)) < 0 ||
	    (r = add_fallocate_rule(ctx, err)) < 0 || (r = add_fcntl_rules(ctx, err)) < 0 ||
	    (r = add_netlink_rules(ctx, err)) < 0)
		return r;
	if (!allow_extra_socket_families && (r = add_socket_rules(ctx, err)) < 0)
		return r;
	return 0;
}

/* A filter context with the txbox rules (the caller releases it). */
static int new_filter(bool allow_extra_socket_families, scmp_filter_ctx *out, txbox_error *err)
{
	*out = seccomp_init(SCMP_ACT_ALLOW);
	if (!*out)
		return txbox_fail(err, -ENOMEM, "seccomp: cannot create a filter context");
	return build_filter(*out, allow_extra_socket_families, err);
}

int harden_seccomp_apply(bool allow_extra_socket_families, txbox_error *err)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	int r = new_filter(allow_extra_socket_families, &ctx, err);
	if (r < 0)
		return r;
	r = seccomp_load(ctx);
	if (r < 0)
		return txbox_fail_errno(err, r, "seccomp: loading the filter");
	return load_personality_filter(err);
}

int harden_seccomp_compile(bool allow_extra_socket_families, void **bpf, size_t *len, txbox_error *err)
{
	*bpf = NULL;
	*len = 0;
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	int r = new_filter(allow_extra_socket_families, &ctx, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = memfd_create("txbox-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "seccomp: memfd_create");
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return txbox_fail_errno(err, r, "seccomp: exporting the filter");
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size > 512 * 1024 || size % (off_t)sizeof(struct sock_filter))
		return txbox_fail(err, -EINVAL, "seccomp: exported filter has a bad size (%lld)", (long long)size);
	void *buf = malloc((size_t)size);
	if (!buf)
		return txbox_fail(err, -ENOMEM, "out of memory");
	if (pread(fd, buf, (size_t)size, 0) != size) {
		free(buf);
		return txbox_fail_errno(err, -errno, "seccomp: reading the exported filter");
	}
	*bpf = buf;
	*len = (size_t)size;
	return 0;
}

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

/* Offsets of the halves of seccomp_data.args[4] (sendto's dest_addr). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG4_LO offsetof(struct seccomp_data, args[4])
#define ARG4_HI (offsetof(struct seccomp_data, args[4]) + 4)
#else
#define ARG4_LO (offsetof(struct seccomp_data, args[4]) + 4)
#define ARG4_HI offsetof(struct seccomp_data, args[4])
#endif

int harden_seccomp_load_notify(bool with_bind, int *listener, txbox_error *err)
{
	*listener = -1;
#if defined(__NR_connect) && defined(__NR_sendto) && defined(__NR_sendmsg) && defined(__NR_sendmmsg) && \
	defined(__NR_bind)
	uint32_t arch = seccomp_arch_native();
	/* Without bind, its test compares with a number no call has (and a
	 * call numbered so would get the guard's ENOSYS, as natively). */
	uint32_t bind_nr = with_bind ? (uint32_t)__NR_bind : 0xffffffffu;
	enum { NOTIFY = 12, ALLOW = 13 };
	/* Foreign ABIs never get here: the main filter refuses them (bad
	 * architecture, x32), and the strictest verdict of all filters wins. */
	struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, ALLOW - 2),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, NOTIFY - 4, 0),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, NOTIFY - 5, 0),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, NOTIFY - 6, 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bind_nr, NOTIFY - 7, 0),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 0, ALLOW - 8),
		/* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG4_LO),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, NOTIFY - 10),
		/* 10 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG4_HI),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, ALLOW - 12, NOTIFY - 12),
		/* 12 NOTIFY */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		/* 13 ALLOW */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = ARRAY_SIZE(prog), .filter = prog};
	/* WAIT_KILLABLE_RECV: once the guard has the call, only a fatal signal
	 * interrupts it, so a call it carried out is never restarted (and run
	 * twice) because the caller caught a signal meanwhile. */
	int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			      SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &fprog);
	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "seccomp: loading the socket-call filter (user notification)");
	*listener = fd;
	return 0;
#else
	return txbox_fail(err, -ENOSYS, "seccomp: socket calls cannot be filtered on this architecture");
#endif
}

int harden_seccomp_load_bpf(const void *bpf, size_t len, txbox_error *err)
{
	if (!bpf || !len || len % sizeof(struct sock_filter) || len / sizeof(struct sock_filter) > 0xffff)
		return txbox_fail(err, -EINVAL, "seccomp: bad precompiled filter");
	struct sock_fprog fprog = {.len = (unsigned short)(len / sizeof(struct sock_filter)),
				   .filter = (struct sock_filter *)bpf};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
		return txbox_fail_errno(err, -errno, "seccomp: loading the filter");
	return load_personality_filter(err);
}
