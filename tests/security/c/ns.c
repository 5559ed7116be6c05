/* ns.c unshare|userns|setns: new or foreign namespaces. */
#include "probe.h"
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static void try_unshare(void)
{
	static const struct {
		int flag;
		const char *name;
	} f[] = {{CLONE_NEWUSER, "unshare-user"}, {CLONE_NEWNS, "unshare-mnt"},   {CLONE_NEWNET, "unshare-net"},
		 {CLONE_NEWPID, "unshare-pid"},   {CLONE_NEWUTS, "unshare-uts"},   {CLONE_NEWIPC, "unshare-ipc"},
		 {CLONE_NEWCGROUP, "unshare-cgroup"}, {CLONE_NEWTIME, "unshare-time"},
		 {CLONE_NEWUSER | CLONE_NEWNS, "unshare-user+mnt"}};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		/* in a child, so a success does not change this process */
		pid_t c = fork();
		if (c == 0)
			_exit(unshare(f[i].flag) == 0 ? 0 : 10 + (errno & 0x7f) % 100);
		int st = 0;
		waitpid(c, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			escaped(f[i].name, "unshare succeeded");
		else
			blocked(f[i].name, "refused (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

static void try_clone_userns(void)
{
	static const struct {
		unsigned long flag;
		const char *name;
	} f[] = {{CLONE_NEWUSER, "clone-newuser"}, {CLONE_NEWNS, "clone-newns"}, {CLONE_NEWNET, "clone-newnet"},
		 {CLONE_NEWPID, "clone-newpid"}};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		long c = syscall(SYS_clone, f[i].flag | SIGCHLD, 0, 0, 0, 0);
		if (c == 0)
			_exit(0);
		if (c > 0) {
			waitpid((pid_t)c, NULL, 0);
			escaped(f[i].name, "clone created pid %ld", c);
		} else
			blocked(f[i].name, "%s", strerror(errno));
	}
	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_NEWUSER;
	ca.exit_signal = SIGCHLD;
	long c = syscall(SYS_clone3, &ca, sizeof ca);
	if (c == 0)
		_exit(0);
	if (c > 0) {
		waitpid((pid_t)c, NULL, 0);
		escaped("clone3-newuser", "clone3 created pid %ld", c);
	} else
		blocked("clone3-newuser", "%s", strerror(errno));
	/* clone3 with the flags in the upper half of a 64-bit word */
	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_NEWUSER | CLONE_NEWNS;
	ca.exit_signal = SIGCHLD;
	c = syscall(SYS_clone3, &ca, sizeof ca);
	if (c == 0)
		_exit(0);
	if (c > 0) {
		waitpid((pid_t)c, NULL, 0);
		escaped("clone3-newuser-newns", "clone3 created pid %ld", c);
	} else
		blocked("clone3-newuser-newns", "%s", strerror(errno));
}

static void try_setns(void)
{
	static const char *const ns[] = {"mnt", "net", "user", "pid", "uts", "ipc", "cgroup", "time"};
	const char *who[] = {"self", "1"};
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
			char p[64], name[64];
			snprintf(p, sizeof p, "/proc/%s/ns/%s", who[w], ns[i]);
			snprintf(name, sizeof name, "setns-%s-%s", who[w], ns[i]);
			int fd = open(p, O_RDONLY);
			if (fd < 0) {
				blocked(name, "open %s: %s", p, strerror(errno));
				continue;
			}
			EXPECT_FAIL(name, setns(fd, 0));
			close(fd);
		}
	/* pidfd-based setns on init */
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	if (pfd >= 0) {
		EXPECT_FAIL("setns-pidfd-init", setns(pfd, CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWNET));
		close(pfd);
	} else
		blocked("setns-pidfd-init", "pidfd_open: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	if (!strcmp(mode, "unshare") || !strcmp(mode, "all"))
		try_unshare();
	if (!strcmp(mode, "userns") || !strcmp(mode, "all"))
		try_clone_userns();
	if (!strcmp(mode, "setns") || !strcmp(mode, "all"))
		try_setns();
	return probe_done();
}
