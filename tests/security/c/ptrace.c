/* ptrace.c HOSTPID: attach to / read the memory of a host process, and
 * ptrace at all (PTRACE_TRACEME, attaching to our own child). */
#include "probe.h"
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	pid_t host = argc > 1 ? (pid_t)atoi(argv[1]) : 0;
	if (host > 0) {
		EXPECT_FAIL("ptrace-attach-host", ptrace(PTRACE_ATTACH, host, 0, 0));
		EXPECT_FAIL("ptrace-seize-host", ptrace(PTRACE_SEIZE, host, 0, 0));
		char buf[16];
		struct iovec l = {buf, sizeof buf}, r = {(void *)0x400000, sizeof buf};
		EXPECT_FAIL("process_vm_readv-host", syscall(SYS_process_vm_readv, host, &l, 1, &r, 1, 0));
		EXPECT_FAIL_FD("pidfd_open-host", syscall(SYS_pidfd_open, host, 0));
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/mem", host);
		EXPECT_FAIL_FD("open-host-proc-mem", open(p, O_RDWR));
	}
	/* ptrace inside the sandbox: refused entirely. */
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	usleep(50000);
	EXPECT_FAIL("ptrace-attach-own-child", ptrace(PTRACE_ATTACH, c, 0, 0));
	EXPECT_FAIL("ptrace-seize-own-child", ptrace(PTRACE_SEIZE, c, 0, 0));
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	pid_t t = fork();
	if (t == 0) {
		long r = ptrace(PTRACE_TRACEME, 0, 0, 0);
		_exit(r == 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(t, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		escaped("ptrace-traceme", "PTRACE_TRACEME succeeded");
	else
		blocked("ptrace-traceme", "refused");
	/* init (pid 1 of the sandbox) holds every capability in its namespaces. */
	EXPECT_FAIL("ptrace-attach-init", ptrace(PTRACE_ATTACH, 1, 0, 0));
	return probe_done();
}
