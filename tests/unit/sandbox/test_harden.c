/* Unit tests for sandbox/harden: seccomp, Landlock, capabilities, rlimits,
 * all exercised for real in forked children. */
#include "sandbox/harden.h"
#include "sandbox/seccomp_filter.h"

#include "child.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#if defined(__SANITIZE_ADDRESS__)
#define TXBOX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TXBOX_TEST_ASAN 1
#endif
#endif

#ifndef SECBIT_NO_CAP_AMBIENT_RAISE
#define SECBIT_NO_CAP_AMBIENT_RAISE (1 << 6)
#endif

static char g_ws[64], g_out[64];
static const char *const g_writable[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty",
					 "/dev/pts", "/dev/shm", "/nonexistent-xyz",
					 "/dev/stdout", "/dev/stderr", NULL};

static void apply_or_die(bool in_userns, int *abi)
{
	harden_opts o = {
		.workspace = g_ws,
		.writable = g_writable,
		.in_userns = in_userns,
		.no_core = true,
	};
	txbox_error err = TXBOX_ERROR_INIT;
	int r = harden_child_apply(&o, abi, &err);
	if (r < 0)
		fprintf(stderr, "harden_child_apply: %s\n", err.message);
	CHILD_CHECK(r == 0);
	txbox_error_clear(&err);
}

static uint64_t status_hex(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	CHILD_CHECK(f != NULL);
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtoull(line + kl + 1, NULL, 16);
	fclose(f);
	return v;
}

static void *thread_fn(void *arg)
{
	return arg;
}

/* ---- seccomp ----------------------------------------------------------- */

/* Every fallocate mode that can reserve blocks is refused (EOPNOTSUPP),
 * whatever junk the upper half of the mode holds; freeing modes work. */
static void child_fallocate_refused(int fd)
{
	static const long allocating[] = {0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE,
					  FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_UNSHARE_RANGE,
					  FALLOC_FL_INSERT_RANGE, 0x80 /* FALLOC_FL_WRITE_ZEROES */};
	for (size_t i = 0; i < sizeof allocating / sizeof allocating[0]; i++) {
		errno = 0;
		CHILD_CHECK(syscall(SYS_fallocate, fd, allocating[i], 0, 1 << 20) < 0 && errno == EOPNOTSUPP);
		CHILD_CHECK(syscall(SYS_fallocate, fd, 0xdead00000000ULL | (unsigned long)allocating[i], 0,
				    1 << 20) < 0 &&
			    errno == EOPNOTSUPP);
	}
	struct stat st;
	CHILD_CHECK(fstat(fd, &st) == 0 && st.st_size == 65536);
	CHILD_CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) == 0);
	CHILD_CHECK(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096) == 0 || errno == EINVAL);
}

/* rt8 B4/B6: no lease (it stalls every host writer of the file for up to
 * lease-break-time), whatever junk the upper half of cmd holds; reading
 * the lease state still works. */
static void child_lease_refused(int fd)
{
	errno = 0;
	CHILD_CHECK(fcntl(fd, F_SETLEASE, F_RDLCK) < 0 && errno == EACCES);
	CHILD_CHECK(syscall(SYS_fcntl, fd, 0xdead00000000ULL | F_SETLEASE, F_RDLCK) < 0 && errno == EACCES);
	CHILD_CHECK(fcntl(fd, F_GETLEASE) == F_UNLCK);
	CHILD_CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
}

/* rt8 B3: host device events (NETLINK_KOBJECT_UEVENT) are refused, also
 * with junk in the upper halves; NETLINK_ROUTE stays. */
static void child_uevent_refused(void)
{
	errno = 0;
	CHILD_CHECK(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 15) < 0 && errno == EPROTONOSUPPORT);
	CHILD_CHECK(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, 15) < 0 && errno == EPROTONOSUPPORT);
	CHILD_CHECK(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0xdead00000000ULL | 15) < 0 &&
		    errno == EPROTONOSUPPORT);
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */);
	CHILD_CHECK(s >= 0);
	close(s);
}

static void child_seccomp(void *arg)
{
	(void)arg;
	/* In a fresh user+mount namespace we hold every capability there, so
	 * the refusals below come from the filter, not from missing privilege.
	 * Without user namespaces fall back to root (capabilities dropped). */
	bool userns = unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0;
	if (!userns && geteuid() != 0)
		_exit(CHILD_SKIP);
	if (userns) {
		/* control: these work before hardening */
		CHILD_CHECK(mount("none", g_out, "tmpfs", 0, NULL) == 0);
		CHILD_CHECK(umount2(g_out, MNT_DETACH) == 0);
	}
	/* a file to fallocate in, opened before Landlock applies */
	char fpath[128];
	snprintf(fpath, sizeof fpath, "%s/falloc", g_ws);
	int ffd = open(fpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHILD_CHECK(ffd >= 0);
	CHILD_CHECK(fallocate(ffd, 0, 0, 65536) == 0); /* control: the file system can */
	/* a file to lease: read-only fd, no writer (control: the kernel grants it) */
	char lpath[128];
	snprintf(lpath, sizeof lpath, "%s/lease", g_ws);
	int lfd = open(lpath, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	CHILD_CHECK(lfd >= 0);
	CHILD_CHECK(fcntl(lfd, F_SETLEASE, F_RDLCK) == 0 && fcntl(lfd, F_SETLEASE, F_UNLCK) == 0);
	int abi = -1;
	apply_or_die(userns, &abi);
	child_fallocate_refused(ffd);
	close(ffd);
	unlink(fpath);
	child_lease_refused(lfd);
	close(lfd);
	unlink(lpath);
	child_uevent_refused();

	errno = 0;
	CHILD_CHECK(mount("none", g_out, "tmpfs", 0, NULL) < 0 && errno == EPERM);
	CHILD_CHECK(umount2("/proc", MNT_DETACH) < 0 && errno == EPERM);
	CHILD_CHECK(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	CHILD_CHECK(unshare(CLONE_NEWNS) < 0 && errno == EPERM);
	CHILD_CHECK(unshare(0) < 0 && errno == EPERM);
	CHILD_CHECK(setns(0, 0) < 0 && errno == EPERM);
	CHILD_CHECK(ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 && errno == EPERM);
	CHILD_CHECK(ptrace(PTRACE_ATTACH, getppid(), NULL, NULL) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_bpf, 0, NULL, 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_keyctl, 0, 0, 0, 0, 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_userfaultfd, 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_open_tree, AT_FDCWD, "/", 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_fsopen, "tmpfs", 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_clock_settime, CLOCK_REALTIME, NULL) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_syslog, 3, NULL, 0) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_io_uring_setup, 1, NULL) < 0 && errno == EPERM);
	/* clone with a namespace flag: EPERM; clone3: ENOSYS */
	CHILD_CHECK(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, NULL, NULL, NULL, 0) < 0 &&
		    errno == EPERM);
	CHILD_CHECK(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
	/* plain fork and threads still work (glibc falls back to clone) */
	pid_t p = fork();
	CHILD_CHECK(p >= 0);
	if (p == 0)
		_exit(7);
	int st = 0;
	CHILD_CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	pthread_t t;
	CHILD_CHECK(pthread_create(&t, NULL, thread_fn, NULL) == 0);
	CHILD_CHECK(pthread_join(t, NULL) == 0);
	/* sockets */
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(s >= 0);
	close(s);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(s >= 0);
	close(s);
	s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(s >= 0 || errno == EAFNOSUPPORT); /* kernels without IPv6 */
	if (s >= 0)
		close(s);
	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */);
	CHILD_CHECK(s >= 0);
	close(s);
	CHILD_CHECK(socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT);
	CHILD_CHECK(socket(AF_ALG, SOCK_SEQPACKET, 0) < 0 && errno == EAFNOSUPPORT);
	CHILD_CHECK(socket(AF_VSOCK, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT);
	CHILD_CHECK(syscall(SYS_socket, 0x100000000ULL | AF_PACKET, SOCK_RAW, 0) < 0 &&
		    errno == EAFNOSUPPORT);
	/* ioctl: TIOCSTI/TIOCLINUX refused, even with junk in the upper half */
	char c = 'x';
	CHILD_CHECK(ioctl(0, TIOCSTI, &c) < 0 && errno == EPERM);
	CHILD_CHECK(syscall(SYS_ioctl, 0, 0xdead00000000ULL | TIOCSTI, &c) < 0 && errno == EPERM);
	CHILD_CHECK(ioctl(0, TIOCLINUX, &c) < 0 && errno == EPERM);
	CHILD_CHECK(ioctl(0, FIONREAD, &st) < 0 ? errno != EPERM : 1);
	/* personality: query and PER_LINUX fine, ASLR off refused */
	CHILD_CHECK(personality(0xffffffff) >= 0);
	CHILD_CHECK(personality(PER_LINUX) >= 0);
	CHILD_CHECK(personality(ADDR_NO_RANDOMIZE) < 0 && errno == EPERM);
	CHILD_CHECK(personality(READ_IMPLIES_EXEC) < 0 && errno == EPERM);
	CHILD_CHECK(personality(0xffffffff) == PER_LINUX);
#if defined(__x86_64__)
	/* x32 ABI: the bad-arch action (EPERM), not ENOSYS */
	CHILD_CHECK(syscall(0x40000000 | SYS_getpid) < 0 && errno == EPERM);
#endif
	/* harmless calls still fine */
	CHILD_CHECK(getpid() > 0);
	CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
}

static void test_seccomp_refuses(void **state)
{
	(void)state;
	run_child(child_seccomp, NULL);
}

/* ---- Landlock ---------------------------------------------------------- */

static int write_file(const char *dir, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = write(fd, "hi\n", 3) == 3 ? 0 : -EIO;
	close(fd);
	return r;
}

static void child_landlock(void *arg)
{
	(void)arg;
	if (landlock_probe_abi() == 0)
		_exit(CHILD_SKIP);
	int abi = 0;
	apply_or_die(geteuid() != 0, &abi);
	CHILD_CHECK(abi == landlock_probe_abi());
	CHILD_CHECK(abi > 0);

	char p[256];
	/* inside the workspace: everything */
	CHILD_CHECK(write_file(g_ws, "new") == 0);
	snprintf(p, sizeof(p), "%s/sub", g_ws);
	CHILD_CHECK(mkdir(p, 0755) == 0);
	CHILD_CHECK(write_file(p, "deep") == 0);
	char q[256];
	snprintf(q, sizeof(q), "%s/moved", g_ws);
	snprintf(p, sizeof(p), "%s/new", g_ws);
	CHILD_CHECK(rename(p, q) == 0);
	snprintf(p, sizeof(p), "%s/sub/deep", g_ws);
	snprintf(q, sizeof(q), "%s/deep-moved", g_ws);
	CHILD_CHECK(rename(p, q) == 0); /* reparenting inside the tree (refer) */
	CHILD_CHECK(unlink(q) == 0);
	CHILD_CHECK(truncate(p, 0) < 0 && errno == ENOENT);
	/* outside: read yes, write no */
	snprintf(p, sizeof(p), "%s/existing", g_out);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	close(fd);
	CHILD_CHECK(open(p, O_WRONLY | O_CLOEXEC) < 0 && errno == EACCES);
	CHILD_CHECK(write_file(g_out, "x") == -EACCES);
	CHILD_CHECK(unlink(p) < 0 && errno == EACCES);
	if (abi >= 3)
		CHILD_CHECK(truncate(p, 0) < 0 && errno == EACCES);
	snprintf(q, sizeof(q), "%s/d", g_out);
	CHILD_CHECK(mkdir(q, 0755) < 0 && errno == EACCES);
	CHILD_CHECK(symlink("x", q) < 0 && errno == EACCES);
	CHILD_CHECK(mkfifo(q, 0644) < 0 && errno == EACCES);
	/* moving a file out of the workspace is refused */
	snprintf(p, sizeof(p), "%s/moved", g_ws);
	CHILD_CHECK(rename(p, q) < 0 && (errno == EACCES || errno == EXDEV));
	/* the writable list */
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, "x", 1) == 1);
	close(fd);
	/* executing from the host still works */
	pid_t pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(99);
	}
	int st = 0;
	CHILD_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (abi >= 6)
		CHILD_CHECK(kill(getppid(), 0) < 0 && errno == EPERM); /* signal scoping */
}

static void test_landlock_confines_writes(void **state)
{
	(void)state;
	char p[128];
	snprintf(p, sizeof(p), "%s/existing", g_out);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	run_child(child_landlock, NULL);
	/* nothing leaked outside */
	snprintf(p, sizeof(p), "%s/x", g_out);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/moved", g_ws);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_landlock_abi_probe(void **state)
{
	(void)state;
	int abi = landlock_probe_abi();
	assert_true(abi >= 0);
	print_message("landlock ABI %d\n", abi);
}

/* ---- capabilities ------------------------------------------------------ */

static void child_caps_root(void *arg)
{
	(void)arg;
	if (geteuid() != 0)
		_exit(CHILD_SKIP);
	CHILD_CHECK(status_hex("CapEff") != 0);
	apply_or_die(false, NULL);
	CHILD_CHECK(status_hex("CapEff") == 0);
	CHILD_CHECK(status_hex("CapPrm") == 0);
	CHILD_CHECK(status_hex("CapInh") == 0);
	CHILD_CHECK(status_hex("CapBnd") == 0);
	CHILD_CHECK(status_hex("CapAmb") == 0);
	int sb = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	CHILD_CHECK(sb >= 0);
	CHILD_CHECK((sb & SECBIT_NOROOT) && (sb & SECBIT_NOROOT_LOCKED));
	CHILD_CHECK((sb & SECBIT_NO_SETUID_FIXUP) && (sb & SECBIT_NO_SETUID_FIXUP_LOCKED));
	CHILD_CHECK(!(sb & SECBIT_KEEP_CAPS) && (sb & SECBIT_KEEP_CAPS_LOCKED));
	/* still uid 0, but root powers are gone: cannot read a 0000 file
	 * owned by someone else, cannot chown */
	char p[128];
	snprintf(p, sizeof(p), "%s/moved-not-there", g_ws);
	CHILD_CHECK(chown(g_ws, 1234, 1234) < 0 && errno == EPERM);
	CHILD_CHECK(setuid(1234) == 0 || errno == EPERM);
	/* an exec'd child of uid 0 gets no capability back */
	pid_t pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status", (char *)NULL);
		_exit(99);
	}
	int st = 0;
	CHILD_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_caps_dropped_as_root(void **state)
{
	(void)state;
	run_child(child_caps_root, NULL);
}

static void child_caps_userns(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWUSER) < 0) {
		fprintf(stderr, "no user namespaces: %s\n", strerror(errno));
		_exit(CHILD_SKIP);
	}
	apply_or_die(true, NULL);
	CHILD_CHECK(status_hex("CapBnd") == 0);
	CHILD_CHECK(status_hex("CapAmb") == 0);
	CHILD_CHECK(unshare(CLONE_NEWNS) < 0 && errno == EPERM);
	pid_t pid = fork();
	CHILD_CHECK(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status", (char *)NULL);
		_exit(99);
	}
	int st = 0;
	CHILD_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_caps_in_userns(void **state)
{
	(void)state;
	run_child(child_caps_userns, NULL);
}

static void child_unprivileged(void *arg)
{
	(void)arg;
	if (geteuid() == 0 && drop_to_nobody() < 0)
		_exit(CHILD_SKIP);
	/* must not fail: nothing to drop, Landlock and seccomp still apply */
	int abi = -1;
	apply_or_die(false, &abi);
	CHILD_CHECK(abi == landlock_probe_abi());
	CHILD_CHECK(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	CHILD_CHECK(socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT);
	CHILD_CHECK(status_hex("CapEff") == 0);
}

static void test_harden_unprivileged(void **state)
{
	(void)state;
	run_child(child_unprivileged, NULL);
}

/* ---- rlimits ----------------------------------------------------------- */

static void child_rlimits(void *arg)
{
	(void)arg;
	harden_opts o = {
		.workspace = g_ws,
		.writable = g_writable,
		.in_userns = geteuid() != 0,
		.cpu_seconds = 7,
#ifndef TXBOX_TEST_ASAN
		.address_space_bytes = 4ULL << 30, /* ASan reserves terabytes */
#endif
		.nofile = 77,
		.nproc = 5000,
		.fsize_bytes = 1 << 20,
		.no_core = true,
	};
	txbox_error err = TXBOX_ERROR_INIT;
	int r = harden_child_apply(&o, NULL, &err);
	if (r < 0)
		fprintf(stderr, "%s\n", err.message);
	CHILD_CHECK(r == 0);
	struct rlimit rl;
	CHILD_CHECK(getrlimit(RLIMIT_CPU, &rl) == 0 && rl.rlim_cur == 7 && rl.rlim_max == 8);
#ifndef TXBOX_TEST_ASAN
	CHILD_CHECK(getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur == 4ULL << 30);
#endif
	CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == 77 && rl.rlim_max == 77);
	CHILD_CHECK(getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur == 5000);
	CHILD_CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur == 1 << 20);
	CHILD_CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 0 && rl.rlim_max == 0);
	/* fsize is enforced */
	signal(SIGXFSZ, SIG_IGN);
	char p[128];
	snprintf(p, sizeof(p), "%s/big", g_ws);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHILD_CHECK(fd >= 0);
	static char buf[64 * 1024];
	ssize_t total = 0, n;
	while ((n = write(fd, buf, sizeof(buf))) > 0)
		total += n;
	CHILD_CHECK(n < 0 && errno == EFBIG && total == 1 << 20);
	close(fd);
	unlink(p);
	/* cannot raise them back */
	rl.rlim_cur = rl.rlim_max = 1000;
	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) < 0 && errno == EPERM);
}

static void test_rlimits_set(void **state)
{
	(void)state;
	run_child(child_rlimits, NULL);
}

static void child_cpu_rlimit(void *arg)
{
	(void)arg;
	harden_opts o = {.workspace = g_ws, .in_userns = geteuid() != 0, .cpu_seconds = 1};
	txbox_error err = TXBOX_ERROR_INIT;
	CHILD_CHECK(harden_child_apply(&o, NULL, &err) == 0);
	for (volatile unsigned long i = 0;; i++)
		;
}

static void test_cpu_rlimit_kills(void **state)
{
	(void)state;
	int st = run_child_status(child_cpu_rlimit, NULL);
	assert_true(WIFSIGNALED(st));
	assert_true(WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGKILL);
}

static void child_extra_families(void *arg)
{
	(void)arg;
	harden_opts o = {.workspace = g_ws, .in_userns = geteuid() != 0,
			 .allow_extra_socket_families = true};
	txbox_error err = TXBOX_ERROR_INIT;
	CHILD_CHECK(harden_child_apply(&o, NULL, &err) == 0);
	/* the filter no longer answers EAFNOSUPPORT (the kernel may still
	 * refuse for lack of CAP_NET_RAW) */
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	CHILD_CHECK(s >= 0 || errno != EAFNOSUPPORT);
	CHILD_CHECK(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	/* extra families widen families, not host device events */
	child_uevent_refused();
}

static void test_extra_socket_families(void **state)
{
	(void)state;
	run_child(child_extra_families, NULL);
}

static void child_missing_workspace(void *arg)
{
	(void)arg;
	if (landlock_probe_abi() == 0)
		_exit(CHILD_SKIP);
	harden_opts o = {.workspace = "/nonexistent/txbox-ws", .in_userns = geteuid() != 0};
	txbox_error err = TXBOX_ERROR_INIT;
	int abi = -1;
	CHILD_CHECK(harden_child_apply(&o, &abi, &err) < 0);
	CHILD_CHECK(err.message && strstr(err.message, "/nonexistent/txbox-ws"));
	txbox_error_clear(&err);
}

static void test_missing_workspace_reported(void **state)
{
	(void)state;
	run_child(child_missing_workspace, NULL);
}

/* A kernel without Landlock, simulated: landlock_create_ruleset -> ENOSYS. */
static void child_no_landlock(void *arg)
{
	(void)arg;
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	CHILD_CHECK(ctx != NULL);
	int nr = seccomp_syscall_resolve_name("landlock_create_ruleset");
	if (nr < 0)
		_exit(CHILD_SKIP);
	CHILD_CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) == 0);
	CHILD_CHECK(seccomp_load(ctx) == 0);
	seccomp_release(ctx);
	CHILD_CHECK(landlock_probe_abi() == 0);
	int abi = -1;
	apply_or_die(geteuid() != 0, &abi);
	CHILD_CHECK(abi == 0);
	/* seccomp still applied */
	CHILD_CHECK(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	/* and writes outside the workspace are (only) up to the mounts now */
	CHILD_CHECK(write_file(g_out, "no-landlock") == 0);
}

static void test_degrades_without_landlock(void **state)
{
	(void)state;
	run_child(child_no_landlock, NULL);
}

static void test_bad_args(void **state)
{
	(void)state;
	txbox_error err = TXBOX_ERROR_INIT;
	int abi = 42;
	assert_true(harden_child_apply(NULL, &abi, &err) < 0);
	assert_int_equal(abi, 0);
	assert_non_null(err.message);
	txbox_error_clear(&err);
}

static int setup(void **state)
{
	(void)state;
	strcpy(g_ws, "/tmp/txbox-harden-ws-XXXXXX");
	strcpy(g_out, "/tmp/txbox-harden-out-XXXXXX");
	if (!mkdtemp(g_ws) || !mkdtemp(g_out))
		return -1;
	/* reachable by nobody in the unprivileged test */
	chmod(g_ws, 0777);
	chmod(g_out, 0777);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s' '%s'", g_ws, g_out);
	return system(cmd) == 0 ? 0 : -1;
}

/* The filter compiled at build time is the one the code compiles now,
 * for both variants (a stale or foreign prebuilt would be caught here). */
static void test_prebuilt_filter_matches(void **state)
{
	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		size_t plen = 0;
		const void *pre = harden_seccomp_prebuilt_for(extra, &plen);
		assert_non_null(pre); /* built on this machine: same architecture */
		void *bpf = NULL;
		size_t len = 0;
		txbox_error err = TXBOX_ERROR_INIT;
		assert_int_equal(harden_seccomp_compile(extra, &bpf, &len, &err), 0);
		assert_int_equal(len, plen);
		assert_memory_equal(bpf, pre, len);
		free(bpf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_landlock_abi_probe),
		cmocka_unit_test(test_seccomp_refuses),
		cmocka_unit_test(test_landlock_confines_writes),
		cmocka_unit_test(test_caps_dropped_as_root),
		cmocka_unit_test(test_caps_in_userns),
		cmocka_unit_test(test_harden_unprivileged),
		cmocka_unit_test(test_rlimits_set),
		cmocka_unit_test(test_cpu_rlimit_kills),
		cmocka_unit_test(test_extra_socket_families),
		cmocka_unit_test(test_prebuilt_filter_matches),
		cmocka_unit_test(test_missing_workspace_reported),
		cmocka_unit_test(test_degrades_without_landlock),
	};
	return cmocka_run_group_tests_name("sandbox-harden", tests, setup, teardown);
}
