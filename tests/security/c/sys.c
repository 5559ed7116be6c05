/* sys.c MODE [ARG]: privileged or dangerous system calls, one group per mode:
 *   module kexec bpf perf keyctl io_uring userfaultfd clock sysadmin handle
 *   hostname selfmem */
#include "probe.h"
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>

#ifndef KEXEC_FILE_UNLOAD
#define KEXEC_FILE_UNLOAD 0x1
#endif

static void do_module(void)
{
	static const char junk[64] = "\177ELF-not-a-module";
	EXPECT_FAIL("init_module", syscall(SYS_init_module, junk, sizeof junk, ""));
	int fd = open("/dev/null", O_RDONLY);
	EXPECT_FAIL("finit_module", syscall(SYS_finit_module, fd, "", 0));
	close(fd);
	EXPECT_FAIL("delete_module", syscall(SYS_delete_module, "txsec_nonexistent", O_NONBLOCK));
}

static void do_kexec(void)
{
	/* zero segments / the UNLOAD flag: would only unload a loaded image */
	EXPECT_FAIL("kexec_load", syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL));
	EXPECT_FAIL("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0UL, "", (unsigned long)KEXEC_FILE_UNLOAD));
}

static void do_bpf(void)
{
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	EXPECT_FAIL_FD("bpf-map-create", syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a));
	struct bpf_insn prog[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (unsigned long)prog;
	a.license = (unsigned long)"GPL";
	EXPECT_FAIL_FD("bpf-prog-load", syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a));
}

static void do_perf(void)
{
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof pe);
	pe.size = sizeof pe;
	pe.type = PERF_TYPE_SOFTWARE;
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	pe.disabled = 1;
	pe.exclude_kernel = 1;
	pe.exclude_hv = 1;
	EXPECT_FAIL_FD("perf_event_open-self", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
	EXPECT_FAIL_FD("perf_event_open-cpu-wide", syscall(SYS_perf_event_open, &pe, -1, 0, -1, 0));
	pe.type = PERF_TYPE_HARDWARE;
	pe.config = PERF_COUNT_HW_CPU_CYCLES;
	EXPECT_FAIL_FD("perf_event_open-hw", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
}

static void do_keyctl(const char *mark)
{
	char desc[128];
	snprintf(desc, sizeof desc, "txsec-pwn-%s", mark ? mark : "x");
	EXPECT_FAIL("add_key-user-keyring", syscall(SYS_add_key, "user", desc, "x", 1, -4 /*KEY_SPEC_USER_KEYRING*/));
	EXPECT_FAIL("add_key-session-keyring", syscall(SYS_add_key, "user", desc, "x", 1, -3 /*SESSION*/));
	EXPECT_FAIL("keyctl-join-session", syscall(SYS_keyctl, 1 /*KEYCTL_JOIN_SESSION_KEYRING*/, desc));
	EXPECT_FAIL("keyctl-get-user-keyring", syscall(SYS_keyctl, 0 /*GET_KEYRING_ID*/, -4, 0));
	EXPECT_FAIL("request_key", syscall(SYS_request_key, "user", desc, NULL, 0));
}

static void do_io_uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	EXPECT_FAIL_FD("io_uring_setup", syscall(SYS_io_uring_setup, 8, &p));
	EXPECT_FAIL("io_uring_enter", syscall(SYS_io_uring_enter, 0, 0, 0, 0, NULL, 0));
	EXPECT_FAIL("io_uring_register", syscall(SYS_io_uring_register, 0, 0, NULL, 0));
}

static void do_userfaultfd(void)
{
	EXPECT_FAIL_FD("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
	EXPECT_FAIL_FD("userfaultfd-user-only", syscall(SYS_userfaultfd, O_CLOEXEC | 1 /*UFFD_USER_MODE_ONLY*/));
	EXPECT_FAIL_FD("open-/dev/userfaultfd", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
}

static void do_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	EXPECT_FAIL("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	EXPECT_FAIL("settimeofday", settimeofday(&tv, NULL));
	struct timex tx;
	memset(&tx, 0, sizeof tx);
	tx.modes = ADJ_OFFSET | ADJ_STATUS;
	tx.status = 0;
	tx.offset = 0;
	EXPECT_FAIL("adjtimex-set", adjtimex(&tx));
	memset(&tx, 0, sizeof tx);
	tx.modes = ADJ_OFFSET;
	EXPECT_FAIL("clock_adjtime-set", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
}

static void do_sysadmin(void)
{
	/* CAD_ON only changes what Ctrl-Alt-Del does (and inside a child PID
	 * namespace it is EINVAL): EPERM is what proves the refusal. */
	errno = 0;
	long r = syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_ON, NULL);
	if (r == 0)
		escaped("reboot-cad-on", "returned 0");
	else if (errno == EPERM)
		blocked("reboot-cad-on", "%s", strerror(errno));
	else
		escaped("reboot-cad-on", "reached the kernel's reboot code (%s), not refused", strerror(errno));
	EXPECT_FAIL("acct", syscall(SYS_acct, "/tmp/txsec-acct"));
	EXPECT_FAIL("swapon", syscall(SYS_swapon, "/tmp/txsec-swap", 0));
	EXPECT_FAIL("swapoff", syscall(SYS_swapoff, "/dev/zram0"));
	EXPECT_FAIL("iopl", syscall(SYS_iopl, 3));
	EXPECT_FAIL("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
	char buf[256];
	EXPECT_FAIL("syslog-read-all", syscall(SYS_syslog, 3 /*SYSLOG_ACTION_READ_ALL*/, buf, sizeof buf));
	EXPECT_FAIL("syslog-console-level", syscall(SYS_syslog, 8 /*CONSOLE_LEVEL*/, NULL, 7));
	EXPECT_FAIL("vhangup", syscall(SYS_vhangup));
	EXPECT_FAIL("quotactl", syscall(SYS_quotactl, 0x800002 /*Q_SYNC*/, NULL, 0, NULL));
}

static void do_handle(void)
{
	struct {
		struct file_handle fh;
		unsigned char buf[128];
	} h;
	memset(&h, 0, sizeof h);
	h.fh.handle_bytes = 128;
	int mnt = -1;
	if (name_to_handle_at(AT_FDCWD, "/etc/passwd", &h.fh, &mnt, 0) < 0) {
		blocked("name_to_handle_at", "%s (nothing to replay)", strerror(errno));
		h.fh.handle_bytes = 8;
		h.fh.handle_type = 1;
	}
	int root = open("/", O_RDONLY | O_DIRECTORY);
	EXPECT_FAIL_FD("open_by_handle_at", syscall(SYS_open_by_handle_at, root, &h.fh, O_RDONLY));
	EXPECT_FAIL_FD("open_by_handle_at-rw", syscall(SYS_open_by_handle_at, root, &h.fh, O_RDWR));
	close(root);
}

static void do_hostname(const char *mark)
{
	char name[64];
	snprintf(name, sizeof name, "txsec-pwn-%.20s", mark ? mark : "x");
	EXPECT_FAIL("sethostname", sethostname(name, strlen(name)));
	EXPECT_FAIL("setdomainname", setdomainname(name, strlen(name)));
	struct utsname u;
	uname(&u);
	printf("INFO hostname inside: %s\n", u.nodename);
}

static int victim = 12345;

static void do_selfmem(void)
{
	/* Writing one's own memory through /proc/self/mem is ordinary Linux
	 * behaviour (debuggers, JITs); it must not lift any restriction. */
	int fd = open("/proc/self/mem", O_RDWR);
	if (fd >= 0) {
		int v = 777;
		if (pwrite(fd, &v, sizeof v, (off_t)(uintptr_t)&victim) == (ssize_t)sizeof v && victim == 777)
			printf("INFO /proc/self/mem write to own memory works (expected on Linux)\n");
		close(fd);
	} else
		printf("INFO /proc/self/mem: %s\n", strerror(errno));
	/* ... and it changes nothing about what the process may do */
	EXPECT_FAIL("mount-after-selfmem", mount("tmpfs", "/etc", "tmpfs", 0, NULL));
	EXPECT_FAIL("unshare-after-selfmem", unshare(0x10000000 /*CLONE_NEWUSER*/));
	/* init's memory (pid 1 holds every capability of the sandbox) */
	EXPECT_FAIL_FD("open-/proc/1/mem-rw", open("/proc/1/mem", O_RDWR));
	EXPECT_FAIL_FD("open-/proc/1/mem-ro", open("/proc/1/mem", O_RDONLY));
	int v = 0;
	fd = open("/proc/1/mem", O_WRONLY);
	if (fd >= 0) {
		EXPECT_FAIL("write-/proc/1/mem", pwrite(fd, &v, sizeof v, 0x400000));
		close(fd);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : NULL;
	if (!strcmp(mode, "module"))
		do_module();
	else if (!strcmp(mode, "kexec"))
		do_kexec();
	else if (!strcmp(mode, "bpf"))
		do_bpf();
	else if (!strcmp(mode, "perf"))
		do_perf();
	else if (!strcmp(mode, "keyctl"))
		do_keyctl(arg);
	else if (!strcmp(mode, "io_uring"))
		do_io_uring();
	else if (!strcmp(mode, "userfaultfd"))
		do_userfaultfd();
	else if (!strcmp(mode, "clock"))
		do_clock();
	else if (!strcmp(mode, "sysadmin"))
		do_sysadmin();
	else if (!strcmp(mode, "handle"))
		do_handle();
	else if (!strcmp(mode, "hostname"))
		do_hostname(arg);
	else if (!strcmp(mode, "selfmem"))
		do_selfmem();
	else {
		fprintf(stderr, "sys: unknown mode '%s'\n", mode);
		return 2;
	}
	return probe_done();
}
