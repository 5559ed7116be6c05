/* sandbox: spawn the namespaced init, supervise it, capture its output.
 *
 * Process tree:
 *   txbox (parent) ── clone(NEWNS|NEWPID|NEWIPC|NEWUTS[|NEWNET][|NEWUSER]) ──▶ init (pid 1)
 *   init builds the view, forks the command (new session, stdin /dev/null,
 *   stdout/stderr to the parent's pipes, hardened), reaps everything, then
 *   runs the validation command, reports both statuses and exits — which
 *   kills whatever is left in the PID namespace. The parent kills init on
 *   timeout; init dies with the parent (PR_SET_PDEATHSIG + the sync pipe). */
#include "sandbox/sandbox.h"

#include "sandbox/capture.h"
#include "sandbox/quota.h"
#include "sandbox/rlimits.h"
#include "sandbox/seccomp_filter.h"
#include "sandbox/unixguard.h"
#include "util/cleanup.h"
#include "util/cpu.h"
#include "util/clock.h"
#include "util/syscalls.h"
#include "util/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* What init tells the parent, once, at the end (or on a setup failure). */
typedef struct init_report {
	int setup_error;     /* 0, or errno of the failed setup step */
	int harden_error;    /* errno when hardening the command failed */
	int started;
	int status;          /* wait status of the command */
	int validation_ran;
	int validation_status;
	unsigned long long watch_memory; /* bytes; 0 = a cgroup watches (or no limit) */
	int memory_exceeded;
	unsigned long long watch_cpu; /* clock ticks for the whole sandbox; 0 = no limit */
	int cpu_exceeded;
	int cgroup_failed;   /* could not join the v1 cgroup: rlimits hold instead */
	char msg[1024];
	char limit_msg[256]; /* why that limit could not be measured (unmeasured_cpu says which) */
	int unmeasured_cpu;  /* 1: the CPU budget, 0: memory */
} init_report;

/* What init holds for every command it runs: /proc, for its samplers,
 * opened before any command exists (proc_err: why it could not be), and
 * its soft RLIMIT_NOFILE as it was before init raised it to the hard limit
 * (each command gets it back). */
typedef struct init_ctx {
	int procfd, proc_err;
	struct rlimit nofile;
} init_ctx;

/* All of buf; a socket is written with MSG_NOSIGNAL (the sync channel to
 * init: a dead init must not kill a library caller that does not ignore
 * SIGPIPE). */
static void put_all(int fd, const void *buf, size_t len, bool sock)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

static void write_all(int fd, const void *buf, size_t len) { put_all(fd, buf, len, false); }
static void send_all(int fd, const void *buf, size_t len) { put_all(fd, buf, len, true); }

static bool read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void close_from(int lowfd)
{
	if (syscall(SYS_close_range, lowfd, ~0U, 0) == 0)
		return;
	for (int fd = lowfd; fd < 4096; fd++)
		close(fd);
}

/* The environment travels from the supervisor to init as a u32 byte
 * count and the NUL-terminated entries; init keeps it for every command. */
#define ENV_WIRE_MAX (64u << 20)

/* How often the supervisor reads the cgroup's CPU usage during a run with
 * a CPU budget: init's own sampling has the same period. */
#define CPU_WATCH_NS (20u * 1000000u)

static int send_env(int fd, char *const *env)
{
	size_t total = 0;
	for (char *const *e = env; *e; e++)
		total += strlen(*e) + 1;
	if (total > ENV_WIRE_MAX)
		return -E2BIG;
	/* One message: init waits for it, and each send would wake it. */
	uint32_t n = (uint32_t)total;
	_cleanup_free_ char *buf = malloc(sizeof n + total);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, &n, sizeof n);
	char *p = buf + sizeof n;
	for (char *const *e = env; *e; e++)
		p = stpcpy(p, *e) + 1;
	send_all(fd, buf, sizeof n + total);
	return 0;
}

static char **recv_env(int fd)
{
	uint32_t n;
	if (!read_full(fd, &n, sizeof n) || n > ENV_WIRE_MAX)
		return NULL;
	char *buf = malloc((size_t)n + 1);
	if (!buf || (n && !read_full(fd, buf, n)) || (n && buf[n - 1] != '\0')) {
		free(buf);
		return NULL;
	}
	size_t count = 0;
	for (uint32_t i = 0; i < n; i++)
		count += buf[i] == '\0';
	char **env = calloc(count + 1, sizeof *env);
	if (!env) {
		free(buf);
		return NULL;
	}
	for (size_t i = 0, off = 0; i < count; i++) {
		env[i] = buf + off;
		off += strlen(buf + off) + 1;
	}
	return env; /* init's until it exits, as the spec is */
}

/* The go-ahead byte, with the sandbox's network namespace attached when
 * the supervisor made it (fd >= 0). */
static void send_go(int sock, char c, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		h.msg_control = u.buf;
		h.msg_controllen = sizeof u.buf;
		struct cmsghdr *cm = CMSG_FIRSTHDR(&h);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	}
	while (sendmsg(sock, &h, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static bool recv_go(int sock, char *c, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = {.iov_base = c, .iov_len = 1};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do
		n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	*fd = -1;
	for (struct cmsghdr *cm = n == 1 ? CMSG_FIRSTHDR(&h) : NULL; cm; cm = CMSG_NXTHDR(&h, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(cm), sizeof *fd);
	return n == 1;
}

/* As root the supervisor makes the sandbox's network namespace (unshare
 * and the loopback up: ~0.8 ms) while init builds the view, entering it
 * only for that; init joins it with the go-ahead. -1 when it cannot (init
 * makes one then); -2 when the supervisor could not return to its own. */
static int supervisor_netns(void)
{
	_cleanup_close_ int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0 || mounts_new_netns() < 0)
		return own < 0 ? -1 : (setns(own, CLONE_NEWNET) == 0 ? -1 : -2);
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (setns(own, CLONE_NEWNET) < 0) {
		if (fd >= 0)
			close(fd);
		return -2;
	}
	return fd;
}

/* What init waits for once the view is built, made while it built it:
 * the command's environment (filtered here rather than before the clone),
 * then the go-ahead byte, with the network namespace as root. */
static int send_go_ahead(const sandbox_spec *s, int sock, char go, txbox_error *err)
{
	int netns = s->netns_from_supervisor ? supervisor_netns() : -1;
	if (netns >= 0)
		trace_mark("sup: network namespace made");
	if (netns == -2)
		return txbox_fail(err, -EPERM, "cannot return to txbox's own network namespace");
	char **env = secrets_filter_env(s->envp, s->env_deny, err);
	trace_mark("sup: environment filtered");
	int r = env ? send_env(sock, env) : err->code ? err->code : -ENOMEM;
	if (r == -E2BIG)
		txbox_fail(err, r, "the command's environment is too large (over %u bytes)", ENV_WIRE_MAX);
	else if (r == -ENOMEM && !err->code)
		txbox_fail(err, r, "out of memory sending the command's environment");
	secrets_env_free(env);
	if (r == 0)
		send_go(sock, go, netns);
	if (netns >= 0)
		close(netns);
	return r;
}

/* Init, with the go-ahead: into the network namespace the supervisor
 * made, or a new one of its own. */
static int join_netns(const sandbox_spec *s, int fd)
{
	if (s->network || !s->netns_from_supervisor)
		return 0;
	int r = fd < 0 ? mounts_new_netns() : setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return r;
}

/* Whether exec'ing a literal command directly does what `/bin/sh -c`
 * (dash) would with this environment: it has a PATH (without one, sh and
 * execvp search different defaults) and exports no bash functions. */
static bool env_execs_like_sh(char *const *envp)
{
	bool path = false;
	for (char *const *e = envp; *e; e++) {
		if (!strncmp(*e, "PATH=", 5))
			path = true;
		if (!strncmp(*e, "BASH_FUNC_", 10))
			return false;
	}
	return path;
}

/* Message a grandchild sends back through its exec pipe when it fails. */
typedef struct exec_failure {
	int err;
	int harden; /* 1 if hardening failed (a txbox error), 0 if execve failed */
	char msg[512];
} exec_failure;

/* In the forked command process: wire stdio, harden, exec. Never returns. */
/* What `sh -c` does before it execs a command: export PWD, the inherited
 * value when it names the current directory, else the physical path. Then
 * exec through PATH. Returns only when the exec failed. */
static void direct_exec(const char *const *argv, char *const *envp)
{
	size_t n = 0;
	ssize_t pwd_at = -1;
	for (; envp[n]; n++)
		if (!strncmp(envp[n], "PWD=", 4))
			pwd_at = (ssize_t)n;
	char cwd[PATH_MAX + 4] = "PWD=";
	struct stat a, b;
	/* execvpe searches the PATH of the calling process's environment:
	 * make that the command's (this is the forked child) */
	environ = (char **)envp;
	if (pwd_at >= 0 && envp[pwd_at][4] == '/' && stat(envp[pwd_at] + 4, &a) == 0 && stat(".", &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		execvpe(argv[0], (char *const *)argv, envp);
		return;
	}
	if (!getcwd(cwd + 4, sizeof cwd - 4))
		return;
	char **env = calloc(n + 2, sizeof *env);
	if (!env)
		return;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if ((ssize_t)i != pwd_at)
			env[k++] = envp[i];
	env[k] = cwd;
	environ = env;
	execvpe(argv[0], (char *const *)argv, env);
	environ = (char **)envp;
	free(env);
}

static void __attribute__((noreturn)) report_harden_failure(int exec_pipe, txbox_error *e)
{
	exec_failure f = {.err = -e->code, .harden = 1};
	snprintf(f.msg, sizeof f.msg, "%s", e->message ? e->message : "hardening failed");
	write_all(exec_pipe, &f, sizeof f);
	_exit(125);
}

/* The socket-call filter goes on first (before capabilities are dropped,
 * so it needs no no_new_privs yet), and init hands its listener to the
 * socket guard (unixguard.c) while we harden the rest; only then may our
 * copy close: no listener left would make every connect() fail (ENOSYS). */
static int load_socket_filter(const sandbox_spec *s, int exec_pipe)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int listener;
	/* With --net, abstract names are the host's: bind goes to the guard too. */
	if (harden_seccomp_load_notify(s->network, &listener, &e) < 0)
		report_harden_failure(exec_pipe, &e);
	if (write(exec_pipe, &listener, sizeof listener) != (ssize_t)sizeof listener)
		_exit(125);
	return listener;
}

static void await_socket_guard(int exec_pipe, int listener)
{
	char ok = 0;
	if (read(exec_pipe, &ok, 1) != 1 || ok != 'k')
		_exit(125); /* init says why */
	close(listener);
}

static void __attribute__((noreturn))
exec_command(const sandbox_spec *s, const init_ctx *ic, const char *const *argv, const char *shell_text,
	     int out_w, int err_w, int exec_pipe)
{
	trace_mark("cmd: forked, go");
	prctl(PR_SET_NAME, "txbox-cmd");
	setsid();
	(void)setrlimit(RLIMIT_NOFILE, &ic->nofile); /* init's soft limit as it came: only lowers */
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(125);
	/* Keep only stdio and the exec pipe (moved to fd 3, close-on-exec). */
	if (dup3(exec_pipe, 3, O_CLOEXEC) < 0)
		_exit(125);
	close_from(4 + harden_keep_read_layer_fds((harden_opts *)&s->harden, 4));
	exec_pipe = 3;
	signal(SIGPIPE, SIG_DFL);

	int listener = load_socket_filter(s, exec_pipe);
	trace_mark("cmd: socket filter loaded");
	txbox_error e = TXBOX_ERROR_INIT;
	if (harden_child_apply(&s->harden, NULL, &e) < 0)
		report_harden_failure(exec_pipe, &e);
	trace_mark("cmd: hardened");
	await_socket_guard(exec_pipe, listener);
	trace_mark("cmd: hardened, execve");
	const char *shargv[] = {"/bin/sh", "-c", shell_text, NULL};
	if (shell_text) { /* a literal command: exec it as sh -c would (shell_literal_argv) */
		if (env_execs_like_sh(s->envp))
			direct_exec(argv, s->envp);
		argv = shargv; /* not found, not executable, …: the shell says so as it always does */
	}
	execvpe(argv[0], (char *const *)argv, s->envp);
	exec_failure f = {.err = errno, .harden = 0};
	snprintf(f.msg, sizeof f.msg, "txbox: cannot execute %s: %s\n", argv[0], strerror(errno));
	write_all(exec_pipe, &f, sizeof f);
	write_all(2, f.msg, strlen(f.msg));
	_exit(errno == ENOENT ? 127 : 126);
}

/* Until the command child execs: hand its socket-call listener to the
 * guard, then EOF (exec'ed) or a failure message. Returns 0, or negative
 * when hardening (or the guard) failed, with rep->msg saying why. */
static int await_exec(int ep, pid_t pid, unixguard *guard, bool *started, init_report *rep)
{
	union {
		exec_failure f;
		int listener;
	} m;
	for (;;) {
		ssize_t n;
		do
			n = read(ep, &m, sizeof m);
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof m.listener) {
			txbox_error e = TXBOX_ERROR_INIT;
			if (unixguard_take(guard, pid, m.listener, &e) < 0) {
				snprintf(rep->msg, sizeof rep->msg, "%s", e.message ? e.message : "socket guard");
				int code = e.code < 0 ? e.code : -EIO;
				txbox_error_clear(&e);
				*started = false;
				return code; /* the child sees EOF instead of the go-ahead: exits */
			}
			write_all(ep, "k", 1);
			continue;
		}
		*started = (n == 0);
		if (n == (ssize_t)sizeof m.f && m.f.harden) {
			snprintf(rep->msg, sizeof rep->msg, "%s", m.f.msg);
			return -(m.f.err ? m.f.err : EPERM);
		}
		return 0;
	}
}

/* Ends a run whose limits cannot be measured: as if over the limit. */
static bool watch_failed(init_report *rep, int *exceeded, txbox_error *e)
{
	*exceeded = 1;
	rep->unmeasured_cpu = exceeded == &rep->cpu_exceeded;
	snprintf(rep->limit_msg, sizeof rep->limit_msg, "could not be measured: %s",
		 e->message ? e->message : "unknown error");
	txbox_error_clear(e);
	return true;
}

/* The baselines, before the command exists. False when they cannot be
 * taken (rep says which limit and why): the command is not started. */
static bool watch_begin(const sandbox_spec *s, const init_ctx *ic, limits_memwatch *mw, uint64_t *cpu_base,
			init_report *rep)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int *which = rep->watch_memory ? &rep->memory_exceeded : &rep->cpu_exceeded;
	if (!rep->watch_memory && !rep->watch_cpu)
		return true;
	if (ic->procfd < 0) {
		txbox_fail_errno(&e, -ic->proc_err, "opening /proc");
		return !watch_failed(rep, which, &e);
	}
	mw->own_netns = !s->network;
	if (rep->watch_memory && limits_memwatch_init(mw, ic->procfd, &e) < 0)
		return !watch_failed(rep, &rep->memory_exceeded, &e);
	if (rep->watch_cpu && limits_ns_cpu_ticks(ic->procfd, cpu_base, &e) < 0)
		return !watch_failed(rep, &rep->cpu_exceeded, &e);
	return true;
}

/* One sample of what init watches. True when the sandbox is over a limit
 * or cannot be measured (rep says which and why): everything dies then. */
static bool watch_sample(const limits_memwatch *mw, int procfd, uint64_t cpu_base, init_report *rep)
{
	txbox_error e = TXBOX_ERROR_INIT;
	uint64_t v = 0;
	if (rep->watch_memory) {
		if (limits_memwatch_bytes(mw, &v, &e) < 0)
			return watch_failed(rep, &rep->memory_exceeded, &e);
		if (v > rep->watch_memory)
			return (rep->memory_exceeded = 1);
	}
	if (rep->watch_cpu) {
		if (limits_ns_cpu_ticks(procfd, &v, &e) < 0)
			return watch_failed(rep, &rep->cpu_exceeded, &e);
		if (v > cpu_base && v - cpu_base > rep->watch_cpu)
			return (rep->cpu_exceeded = 1);
	}
	return false;
}

/* Fork the command child: as real root it becomes root of its own user
 * namespace (identity map of every id): root-like on the workspace,
 * powerless over the host (capabilities of a child namespace; mounts
 * locked). Returns its pid or -errno; ep[1] is the child's end. */
static pid_t fork_command(const sandbox_spec *s, const init_ctx *ic, const char *const *argv,
			  const char *shell_text, int out_w, int err_w, int ep[2])
{
	bool own_userns = s->harden.keep_namespaced_caps;
	int gp[2] = {-1, -1};
	if (own_userns && pipe2(gp, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = own_userns ? (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL) : fork();
	if (pid < 0) {
		int e = errno;
		if (own_userns) {
			close(gp[0]);
			close(gp[1]);
		}
		return -e;
	}
	if (pid == 0) {
		close(ep[0]);
		if (own_userns) {
			char c;
			close(gp[1]);
			if (read(gp[0], &c, 1) != 1)
				_exit(125);
			close(gp[0]);
		}
		exec_command(s, ic, argv, shell_text, out_w, err_w, ep[1]);
	}
	if (own_userns) {
		close(gp[0]);
		char path[64];
		/* Every id but SANDBOX_UNMAPPED_GID (sandbox.h). */
		static const char *const maps[2] = {"0 0 4294967295\n", SANDBOX_GID_MAP};
		bool ok = true;
		for (int i = 0; i < 2 && ok; i++) {
			snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, i ? "gid_map" : "uid_map");
			int fd = open(path, O_WRONLY | O_CLOEXEC);
			size_t ml = strlen(maps[i]);
			ok = fd >= 0 && write(fd, maps[i], ml) == (ssize_t)ml;
			if (fd >= 0)
				close(fd);
		}
		if (ok)
			write_all(gp[1], "g", 1);
		close(gp[1]); /* EOF without a byte: the child gives up */
	}
	return pid;
}

/* Wait for the command, reaping every orphan meanwhile (we are pid 1).
 * Without a memory cgroup init samples the namespace's memory every
 * 20 ms (RLIMIT_AS at twice the limit is each process's backstop between
 * two samples), and its CPU against --cpu: past a limit, or when a sample
 * cannot be taken, everything dies. */
static void wait_command(pid_t pid, const limits_memwatch *mw, int procfd, uint64_t cpu_base, int *status,
			 init_report *rep)
{
	bool watching = rep->watch_memory || rep->watch_cpu;
	_cleanup_close_ int pidfd = watching ? sys_pidfd_open(pid, 0) : -1;
	if (watching && pidfd < 0) {
		txbox_error e = TXBOX_ERROR_INIT;
		txbox_fail_errno(&e, -errno, "pidfd_open");
		watch_failed(rep, rep->watch_memory ? &rep->memory_exceeded : &rep->cpu_exceeded, &e);
		kill(-1, SIGKILL);
	}
	for (;;) {
		if (pidfd >= 0) {
			struct pollfd pf = {.fd = pidfd, .events = POLLIN};
			if (poll(&pf, 1, 20) == 0) {
				if (watch_sample(mw, procfd, cpu_base, rep))
					kill(-1, SIGKILL);
				while (waitpid(-1, NULL, WNOHANG) > 0) /* orphans */
					;
				continue;
			}
		}
		int st;
		pid_t w = waitpid(pidfd >= 0 ? pid : -1, &st, pidfd >= 0 ? WNOHANG : 0);
		if (w == 0)
			continue;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			*status = 0;
			return;
		}
		if (w == pid) {
			*status = st;
			return;
		}
	}
}

/* Fork one command inside the sandbox and wait for it. Returns its wait
 * status via *status; *started tells whether execve succeeded. Returns
 * -errno on harden failure. */
static int run_one(const sandbox_spec *s, const init_ctx *ic, unixguard *guard, const char *const *argv,
		   const char *shell_text, int out_w, int err_w, int *status, bool *started, init_report *rep)
{
	limits_memwatch mw = {.procfd = -1};
	uint64_t cpu_base = 0;
	*status = 0;
	*started = false;
	if (!watch_begin(s, ic, &mw, &cpu_base, rep))
		return 0;
	int ep[2]; /* exec channel: a datagram per message, so a handoff is told from a failure */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ep) < 0)
		return -errno;
	pid_t pid = fork_command(s, ic, argv, shell_text, out_w, err_w, ep);
	close(ep[1]);
	if (pid < 0) {
		close(ep[0]);
		return pid;
	}
	/* The guard is forked while the child hardens itself, off the way to
	 * its exec; a failure here is retried and reported by unixguard_take. */
	txbox_error ge = TXBOX_ERROR_INIT;
	unixguard_spawn(guard, &ge);
	txbox_error_clear(&ge);
	trace_mark("init: socket guard forked");
	int hard = await_exec(ep[0], pid, guard, started, rep);
	close(ep[0]);
	wait_command(pid, &mw, ic->procfd, cpu_base, status, rep);
	return hard;
}

/* The layer-free half of the view, and the socket guard's notes: the
 * allowed sockets and the places the view replaces, while the host's paths
 * are still in place. The guard itself is forked with each command
 * (run_one). */
static int view_begin_with_guard(const sandbox_spec *s, mounts_view *view, unixguard **guard, char *msg,
				 size_t len)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int r = unixguard_new(s->workspace, s->allowed_sockets, s->network, guard, &e);
	if (r == 0)
		r = mounts_view_begin(s, view, msg, len);
	if (r < 0 && e.message)
		snprintf(msg, len, "%s", e.message);
	txbox_error_clear(&e);
	return r;
}

/* Every process of the sandbox but init (the socket guard too) dies and is reaped. */
static void kill_all(unixguard *guard)
{
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	unixguard_gone(guard);
}

/* Before any command exists: init's /proc (its samplers must not depend
 * on opening it later) and every descriptor its soft limit allows. The
 * command cannot lower either (seccomp refuses prlimit on another process). */
static void init_hold(init_ctx *ic)
{
	ic->procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ic->proc_err = ic->procfd < 0 ? errno : 0;
	/* unknown: nothing is raised, and each command's restore fails (ignored) */
	ic->nofile = (struct rlimit){.rlim_cur = RLIM_INFINITY, .rlim_max = RLIM_INFINITY};
	if (getrlimit(RLIMIT_NOFILE, &ic->nofile) < 0)
		return;
	struct rlimit raised = {.rlim_cur = ic->nofile.rlim_max, .rlim_max = ic->nofile.rlim_max};
	(void)setrlimit(RLIMIT_NOFILE, &raised);
}

/* Every signal at its default action, none blocked: the kernel then
 * drops whatever the sandbox's processes send init (a PID namespace's
 * init receives from inside only the signals it handles), whatever
 * handlers a library caller had installed before the clone, and with
 * Landlock's signal scope missing (ABI < 6) too. */
static void init_default_signals(void)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL); /* EINVAL: one libc keeps for itself */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void __attribute__((noreturn)) init_main(const sandbox_spec *s, int out_w, int err_w, int rep_w, int sync_r)
{
	trace_mark("init: cloned");
	init_report rep;
	memset(&rep, 0, sizeof rep);
	init_default_signals();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	char c;
	ssize_t n;
	if (s->use_userns) { /* the maps must be written before any mount */
		do
			n = read(sync_r, &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(1);
	}

	trace_mark("init: start");
	unixguard *guard = NULL;
	mounts_view view;
	int r = view_begin_with_guard(s, &view, &guard, rep.msg, sizeof rep.msg);
	if (r == 0) {
		/* The seccomp filter: the one compiled at build time, or else
		 * compiled once here for every command of the sandbox while the
		 * supervisor takes the snapshot (failing here, each command
		 * compiles it and reports the error). */
		size_t blen = 0;
		const void *pre = harden_seccomp_prebuilt_for(s->harden.allow_extra_socket_families, &blen);
		void *bpf = NULL;
		txbox_error se = TXBOX_ERROR_INIT;
		if (pre) {
			((sandbox_spec *)s)->harden.seccomp_bpf = pre;
			((sandbox_spec *)s)->harden.seccomp_bpf_len = blen;
		} else if (harden_seccomp_precompile(&s->harden, &bpf, &blen, &se) == 0) {
			((sandbox_spec *)s)->harden.seccomp_bpf = bpf;
			((sandbox_spec *)s)->harden.seccomp_bpf_len = blen;
		} else
			free(bpf);
		txbox_error_clear(&se);
		trace_mark("init: seccomp ready");
		/* The layer, once the supervisor has taken the snapshot: a flag
		 * byte (1: the upper hides the state dir by a whiteout), a u16
		 * length, its path relative to the state dir. EOF: not needed
		 * after all (a denied command). */
		unsigned char hdr[3];
		char rel[PATH_MAX];
		if (!read_full(sync_r, hdr, sizeof hdr))
			_exit(0);
		size_t rl = (size_t)hdr[1] | (size_t)hdr[2] << 8;
		if (rl == 0 || rl >= sizeof rel || !read_full(sync_r, rel, rl))
			_exit(1);
		rel[rl] = '\0';
		trace_mark("init: layer received");
		r = mounts_view_finish(s, &view, rel, hdr[0] == 1, rep.msg, sizeof rep.msg);
	}
	if (r == 0) {
		/* The cgroup v1 `tasks` files to join (made by the supervisor
		 * while the overlay was mounted here): a count, then u16 length
		 * and path each. Writing "0" moves this (single-threaded) process
		 * without the global lock a move by pid takes (see
		 * limits_cgroup_self_join_files). Before the read-only pass,
		 * while /sys is still writable here. */
		unsigned char cnt;
		if (!read_full(sync_r, &cnt, 1))
			_exit(0);
		for (unsigned i = 0; i < cnt; i++) {
			unsigned char l2[2];
			char path[PATH_MAX];
			if (!read_full(sync_r, l2, 2))
				_exit(1);
			size_t jl = (size_t)l2[0] | (size_t)l2[1] << 8;
			if (jl == 0 || jl >= sizeof path || !read_full(sync_r, path, jl))
				_exit(1);
			path[jl] = '\0';
			int fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || write(fd, "0", 1) != 1)
				rep.cgroup_failed = 1;
			if (fd >= 0)
				close(fd);
		}
		trace_mark("init: cgroup joined");
		r = mounts_view_seal(s, &view, rep.msg, sizeof rep.msg);
	}
	trace_mark("init: view built");
	if (r < 0) {
		rep.setup_error = -r;
		write_all(rep_w, &rep, sizeof rep);
		_exit(1);
	}
	init_ctx ic;
	init_hold(&ic);

	/* The view is built while the supervisor puts us in the cgroup (joining
	 * a v1 memory cgroup takes milliseconds); wait for it before the
	 * command exists: the command's environment, then the go-ahead. EOF
	 * means the supervisor died. */
	char **env = recv_env(sync_r);
	int netns = -1;
	if (!env || !recv_go(sync_r, &c, &netns))
		_exit(1);
	((sandbox_spec *)s)->envp = env;
	if ((r = join_netns(s, netns)) < 0) {
		rep.setup_error = -r;
		snprintf(rep.msg, sizeof rep.msg, "joining the network namespace");
		write_all(rep_w, &rep, sizeof rep);
		_exit(1);
	}
	trace_mark("init: go received");
	close(sync_r);
	if (s->limits.memory_bytes && s->harden.address_space_bytes)
		rep.watch_memory = s->limits.memory_bytes;
	/* RLIMIT_CPU is per process: forking spreads any budget. The budget
	 * is the whole sandbox's, sampled here whatever else accounts it. */
	if (s->harden.cpu_seconds)
		rep.watch_cpu = s->harden.cpu_seconds * (unsigned long long)sysconf(_SC_CLK_TCK);
	if (c == 'm' || rep.cgroup_failed) { /* no cgroup after all: fall back to rlimits */
		((sandbox_spec *)s)->harden.address_space_bytes = 2 * s->limits.memory_bytes;
		rep.watch_memory = s->limits.memory_bytes;
		if (s->use_userns || s->harden.keep_namespaced_caps)
			((sandbox_spec *)s)->harden.nproc = s->limits.pids;
	}

	int status = 0;
	bool started = false;
	r = run_one(s, &ic, guard, s->argv, s->shell_text, out_w, err_w, &status, &started, &rep);
	rep.started = started;
	rep.status = status;
	trace_mark("init: command reaped");
	if (r < 0) {
		rep.harden_error = -r;
		write_all(rep_w, &rep, sizeof rep);
		_exit(1);
	}
	/* Whatever the command left running dies before validation and commit. */
	kill_all(guard);
	if (started && WIFEXITED(status) && WEXITSTATUS(status) == 0 && s->validate) {
		const char *vargv[] = {"/bin/sh", "-c", s->validate, NULL};
		int vst = 0;
		bool vstarted = false;
		r = s->validate_argv
			    ? run_one(s, &ic, guard, s->validate_argv, s->validate, out_w, err_w, &vst, &vstarted, &rep)
			    : run_one(s, &ic, guard, vargv, NULL, out_w, err_w, &vst, &vstarted, &rep);
		if (r < 0) {
			rep.harden_error = -r;
			write_all(rep_w, &rep, sizeof rep);
			_exit(1);
		}
		rep.validation_ran = 1;
		rep.validation_status = vst;
		kill_all(guard);
	}
	/* Everything of the sandbox is dead: the supervisor may go on as soon
	 * as the outputs close and the report is in. */
	close(out_w);
	close(err_w);
	trace_mark("init: report");
	write_all(rep_w, &rep, sizeof rep);
	_exit(0);
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

struct sandbox {
	sandbox_spec local; /* the spec, hardening adjusted to the limits in force */
	int outp[2], errp[2], repp[2], syncp[2];
	pid_t pid;
};

static void sandbox_free(sandbox *sb)
{
	for (int i = 0; i < 2; i++) {
		int *fds[] = {&sb->outp[i], &sb->errp[i], &sb->repp[i], &sb->syncp[i]};
		for (size_t k = 0; k < ARRAY_SIZE(fds); k++)
			if (*fds[k] >= 0)
				close(*fds[k]);
	}
	free(sb);
}

int sandbox_start(const sandbox_spec *spec, sandbox **out, txbox_error *err)
{
	*out = NULL;
	sandbox *sb = calloc(1, sizeof *sb);
	if (!sb)
		return txbox_fail(err, -ENOMEM, "out of memory");
	for (int i = 0; i < 2; i++)
		sb->outp[i] = sb->errp[i] = sb->repp[i] = sb->syncp[i] = -1;
	sb->local = *spec;
	sandbox_spec *s = &sb->local;
	int r;
	if (pipe2(sb->outp, O_CLOEXEC) < 0 || pipe2(sb->errp, O_CLOEXEC) < 0 || pipe2(sb->repp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sb->syncp) < 0) {
		r = txbox_fail_errno(err, -errno, "creating pipes");
		sandbox_free(sb);
		return r;
	}
	if (s->limits.disk_bytes && (!s->harden.fsize_bytes || s->harden.fsize_bytes > s->limits.disk_bytes))
		s->harden.fsize_bytes = s->limits.disk_bytes;

	trace_mark("sup: pipes");
	/* The network namespace (the dearest part: ~1 ms) is made by init
	 * itself (mounts_view_begin), in parallel with the snapshot. */
	s->netns_from_supervisor = !s->network && !s->use_userns;
	unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD;
	if (s->use_userns)
		flags |= CLONE_NEWUSER;
	/* Fault injection for the tests of a machine without user namespaces
	 * (a sysctl tests cannot always change): TXBOX_FAULT_CLONE=errno. */
	const char *fault = getenv("TXBOX_FAULT_CLONE");
	pid_t pid = fault && atoi(fault) > 0 ? (errno = atoi(fault), -1)
					     : (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		int e = errno;
		if (e == EPERM || e == EINVAL || e == ENOSPC || e == EUSERS)
			r = txbox_fail_errno(err, -e,
					     "cannot create the sandbox namespaces%s",
					     s->use_userns ? " (txbox needs user namespaces to run without root: are "
							     "they disabled? see /proc/sys/kernel/unprivileged_userns_clone, "
							     "/proc/sys/user/max_user_namespaces or an AppArmor restriction; or "
							     "run as root)"
							   : "");
		else
			r = txbox_fail_errno(err, -e, "clone");
		sandbox_free(sb);
		return r;
	}
	if (pid == 0) {
		prctl(PR_SET_NAME, "txbox-init");
		close(sb->outp[0]);
		close(sb->errp[0]);
		close(sb->repp[0]);
		close(sb->syncp[1]);
		init_main(s, sb->outp[1], sb->errp[1], sb->repp[1], sb->syncp[0]);
	}
	sb->pid = pid;
	close(sb->outp[1]);
	close(sb->errp[1]);
	close(sb->repp[1]);
	close(sb->syncp[0]);
	sb->outp[1] = sb->errp[1] = sb->repp[1] = sb->syncp[0] = -1;
	/* Init would wait on this CPU through the snapshot, cgroup and
	 * namespace work that follows (about 1.5 ms). */
	cpu_step_aside();
	trace_mark("sup: cloned");
	if (s->use_userns) {
		r = userns_write_maps(pid, getuid(), getgid(), err);
		if (r < 0) {
			sandbox_abort(sb);
			return r;
		}
		send_all(sb->syncp[1], "u", 1);
	}
	*out = sb;
	return 0;
}

void sandbox_abort(sandbox *sb)
{
	if (!sb)
		return;
	kill(sb->pid, SIGKILL);
	while (waitpid(sb->pid, NULL, 0) < 0 && errno == EINTR)
		;
	sandbox_free(sb);
}

/* The layer could not be walked (a directory the command left unreadable,
 * a tree deeper than the walk goes): still the disk limit (fail closed),
 * but the detail says why, so it does not read as "too much written". */
static void disk_unmeasured(sandbox_outcome *o, const quota_fault *f)
{
	if (!f->err && !f->too_deep)
		return;
	int n = snprintf(o->limit_detail, sizeof o->limit_detail, "could not be measured: ");
	if (n > 0 && (size_t)n < sizeof o->limit_detail)
		quota_fault_describe(f, o->limit_detail + n, sizeof o->limit_detail - (size_t)n);
}

int sandbox_run_layer(sandbox *sb, const sandbox_layer *layer, sandbox_outcome *o, txbox_error *err)
{
	const sandbox_spec *s = &sb->local;
	pid_t pid = sb->pid;
	int *outp = sb->outp, *errp = sb->errp, *repp = sb->repp, *syncp = sb->syncp;
	int r = 0;
	txbox_error warn = TXBOX_ERROR_INIT;
	memset(o, 0, sizeof *o);
	o->validation_exit = -1;
	o->init_pidfd = -1;
	o->mechanism = TXBOX_LIMITS_RLIMIT;
	{ /* the layer message (init_main reads it) */
		size_t rl = strlen(layer->rel);
		if (rl == 0 || rl >= PATH_MAX) {
			sandbox_abort(sb);
			return txbox_fail(err, -ENAMETOOLONG, "layer path too long");
		}
		unsigned char hdr[3] = {layer->hide_state_by_whiteout ? 1 : 0, (unsigned char)(rl & 0xff),
					(unsigned char)(rl >> 8)};
		send_all(syncp[1], hdr, sizeof hdr);
		send_all(syncp[1], layer->rel, rl);
	}
	/* A cgroup only when a limit needs one, made while init mounts the
	 * overlay. Without it (or when it cannot be joined), init falls back to
	 * rlimits: RLIMIT_AS at twice the memory limit plus sampling of
	 * resident memory, and RLIMIT_NPROC, which in a user namespace counts
	 * only the sandbox's processes (per-namespace ucounts); the command is
	 * always in one (rootless: the sandbox's; as root: its own). */
	limits_cgroup *cg = NULL;
	bool want_cg = s->limits.memory_bytes || s->limits.pids;
	if (want_cg)
		cg = limits_cgroup_create(layer->txid, &s->limits, &o->mechanism, &warn);
	txbox_error_clear(&warn);
	trace_mark("sup: cgroup created");
	{ /* the v1 files init joins by itself: a count, u16 length + path each */
		char *join[4] = {NULL};
		ssize_t nj = limits_cgroup_self_join_files(cg, join, ARRAY_SIZE(join));
		size_t njoin = nj > 0 ? (size_t)nj : 0;
		size_t ok = 0;
		for (size_t i = 0; i < njoin; i++)
			ok += strlen(join[i]) < PATH_MAX;
		unsigned char cnt = (unsigned char)(ok == njoin ? njoin : 0);
		if (nj < 0 || ok != njoin) { /* cannot be said: no cgroup, rlimits */
			limits_cgroup_destroy(cg);
			cg = NULL;
		}
		send_all(syncp[1], &cnt, 1);
		for (size_t i = 0; i < njoin; i++) {
			size_t jl = strlen(join[i]);
			if (cnt) {
				unsigned char l2[2] = {(unsigned char)(jl & 0xff), (unsigned char)(jl >> 8)};
				send_all(syncp[1], l2, 2);
				send_all(syncp[1], join[i], jl);
			}
			free(join[i]);
		}
	}
	/* Move init into a v2 cgroup (v1: it joins itself). */
	if (cg && limits_cgroup_attach_parent_side(cg, pid, &warn) < 0) {
		txbox_error_clear(&warn);
		limits_cgroup_destroy(cg);
		cg = NULL;
	}
	if (!cg)
		o->mechanism = TXBOX_LIMITS_RLIMIT;
	if (send_go_ahead(s, syncp[1], want_cg && !cg ? 'm' : 'g', err) < 0) {
		sandbox_abort(sb);
		limits_cgroup_destroy(cg);
		return err->code;
	}
	o->cgroup = cg;
	uint64_t t0 = clock_now_ns(); /* the timeout counts from here */
	trace_mark("sup: cgroup joined, go sent");
	close(syncp[1]);
	syncp[1] = -1;
	if (layer->while_running)
		layer->while_running(layer->while_running_arg);
	trace_mark("sup: while-running work done");

	int pidfd = sys_pidfd_open(pid, 0);
	capture cap_out, cap_err;
	capture_init(&cap_out, s->output_limit, s->passthrough_stdout);
	capture_init(&cap_err, s->output_limit, s->passthrough_stderr);
	uint64_t deadline = s->timeout_sec > 0 ? t0 + (uint64_t)(s->timeout_sec * 1e9) : 0;
	/* Done when init has reported and closed the output pipes (every
	 * process of the sandbox is dead by then), or when init is gone. Init
	 * tears its namespaces down (a millisecond or two) while we commit. */
	init_report rep;
	memset(&rep, 0, sizeof rep);
	size_t rep_got = 0;
	bool out_open = true, err_open = true, rep_open = true, child_done = false;
	uint64_t last_measure = t0;
	quota_watch qw;
	quota_watch_init(&qw, layer->upper_fd, s->limits.disk_bytes, t0);
	qw.init_pid = pid; /* files the sandbox unlinked but holds open count too */
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	fcntl(repp[0], F_SETFL, O_NONBLOCK);
	while ((out_open || err_open || rep_open) && !child_done) {
		struct pollfd pf[6];
		int np = 0, iout = -1, ierr = -1, irep = -1, ipid = -1, wout = -1, werr = -1;
		if (capture_pass_pending(&cap_out)) { /* the live copy waits for the terminal */
			pf[np] = (struct pollfd){.fd = cap_out.passthrough, .events = POLLOUT};
			wout = np++;
		}
		if (capture_pass_pending(&cap_err)) {
			pf[np] = (struct pollfd){.fd = cap_err.passthrough, .events = POLLOUT};
			werr = np++;
		}
		if (out_open) {
			pf[np] = (struct pollfd){.fd = outp[0], .events = POLLIN};
			iout = np++;
		}
		if (err_open) {
			pf[np] = (struct pollfd){.fd = errp[0], .events = POLLIN};
			ierr = np++;
		}
		if (rep_open) {
			pf[np] = (struct pollfd){.fd = repp[0], .events = POLLIN};
			irep = np++;
		}
		if (pidfd >= 0) {
			pf[np] = (struct pollfd){.fd = pidfd, .events = POLLIN};
			ipid = np++;
		}
		int tmo = -1;
		if (deadline && !o->timed_out) {
			uint64_t now = clock_now_ns();
			tmo = now >= deadline ? 0 : (int)((deadline - now) / 1000000 + 1);
		}
		if (pidfd < 0 && tmo < 0)
			tmo = 50; /* no pidfd: poll the child periodically */
		bool measure = s->limits.disk_bytes && layer->upper_fd >= 0 && !o->limit && rep_got < sizeof rep;
		bool cpu_watch = cg && s->harden.cpu_seconds && !o->limit && rep_got < sizeof rep;
		uint64_t interval = measure ? quota_watch_interval_ns(&qw) : CPU_WATCH_NS;
		if (cpu_watch && interval > CPU_WATCH_NS)
			interval = CPU_WATCH_NS;
		if (measure || cpu_watch) {
			uint64_t due = last_measure + interval, now = clock_now_ns();
			int until = now >= due ? 0 : (int)((due - now + 999999) / 1000000);
			if (tmo < 0 || tmo > until)
				tmo = until;
		}
		int pr = poll(pf, (nfds_t)np, tmo);
		if (pr < 0 && errno != EINTR)
			break;
		if (deadline && !o->timed_out && clock_now_ns() >= deadline) {
			o->timed_out = true;
			kill(pid, SIGKILL);
		}
		if ((measure || cpu_watch) && clock_now_ns() - last_measure >= interval) {
			last_measure = clock_now_ns();
			if (measure && quota_watch_over(&qw, last_measure)) {
				o->limit = "disk";
				disk_unmeasured(o, &qw.fault);
				kill(pid, SIGKILL);
			} else if (cpu_watch && limits_cgroup_cpu_over(cg)) {
				o->limit = "cpu";
				kill(pid, SIGKILL);
			}
		}
		if (wout >= 0 && pr > 0 && pf[wout].revents)
			capture_pass_flush(&cap_out, 0);
		if (werr >= 0 && pr > 0 && pf[werr].revents)
			capture_pass_flush(&cap_err, 0);
		if (iout >= 0 && pr > 0 && (pf[iout].revents & (POLLIN | POLLHUP | POLLERR)))
			out_open = capture_read(&cap_out, outp[0]);
		if (ierr >= 0 && pr > 0 && (pf[ierr].revents & (POLLIN | POLLHUP | POLLERR)))
			err_open = capture_read(&cap_err, errp[0]);
		if (irep >= 0 && pr > 0 && (pf[irep].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = read(repp[0], (char *)&rep + rep_got, sizeof rep - rep_got);
			if (n > 0)
				rep_got += (size_t)n;
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				rep_open = false;
			if (rep_got == sizeof rep)
				rep_open = false;
		}
		if (ipid < 0 || (pr > 0 && (pf[ipid].revents & POLLIN))) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				child_done = true;
		}
	}
	if (child_done) { /* what init and the command left in the pipes (no waiting for EOF) */
		if (out_open)
			capture_drain(&cap_out, outp[0]);
		if (err_open)
			capture_drain(&cap_err, errp[0]);
		while (rep_got < sizeof rep) {
			ssize_t n = read(repp[0], (char *)&rep + rep_got, sizeof rep - rep_got);
			if (n <= 0)
				break;
			rep_got += (size_t)n;
		}
	}
	bool reported = rep_got == sizeof rep;
	o->exec_ms = clock_ms_since(t0);
	trace_mark("sup: init reported");
	/* Init lives on only when it reported everything normally; on any
	 * other path (timeout, limit, failure) the namespace must be dead
	 * before the layer is touched. */
	if (!child_done && (!reported || o->timed_out || o->limit || rep.setup_error || rep.harden_error)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		child_done = true;
	}
	if (!child_done) {
		o->init_pid = pid;
		o->init_pidfd = pidfd;
		pidfd = -1;
	}
	if (pidfd >= 0)
		close(pidfd);

	if (!o->limit && cg)
		o->limit = limits_cgroup_exceeded(cg);
	quota_fault qf;
	if (!o->limit && s->limits.disk_bytes && layer->upper_fd >= 0 &&
	    quota_over(layer->upper_fd, s->limits.disk_bytes, NULL, &qf)) {
		o->limit = "disk";
		disk_unmeasured(o, &qf);
	}
	if (child_done)
		sandbox_reap(o);
	trace_mark("sup: cgroup checked");
	/* What the terminal has not taken yet: deliver it while it keeps
	 * reading (a second without progress ends the live copy; the captured
	 * output is complete either way). */
	if (!o->timed_out) {
		capture_pass_flush(&cap_out, 1000);
		capture_pass_flush(&cap_err, 1000);
	}
	o->out = capture_take(&cap_out, &o->out_len, &o->out_truncated);
	o->err = capture_take(&cap_err, &o->err_len, &o->err_truncated);

	if (o->timed_out || (o->limit && !reported)) {
		o->started = true;
		if (!o->timed_out)
			o->signal = SIGKILL, o->exit_code = 128 + SIGKILL;
		r = 0;
		goto out_pipes;
	}
	if (!reported) {
		r = txbox_fail(err, -EIO, "the sandbox init died before reporting (killed from outside?)");
		goto out_pipes;
	}
	if (rep.setup_error) {
		r = txbox_fail(err, -rep.setup_error, "setting up the sandbox: %s", rep.msg);
		goto out_pipes;
	}
	if (rep.harden_error) {
		r = txbox_fail(err, -rep.harden_error, "hardening the sandbox: %s", rep.msg);
		goto out_pipes;
	}
	o->started = rep.started;
	if (rep.cgroup_failed)
		o->mechanism = TXBOX_LIMITS_RLIMIT;
	if (WIFSIGNALED(rep.status)) {
		o->signal = WTERMSIG(rep.status);
		o->exit_code = 128 + o->signal;
	} else
		o->exit_code = status_code(rep.status);
	if (!rep.started && o->exit_code == 0)
		o->exit_code = 127;
	if (rep.validation_ran) {
		o->validation_ran = true;
		o->validation_exit = status_code(rep.validation_status);
	}
	if (!o->limit && rep.memory_exceeded)
		o->limit = "memory";
	if (!o->limit && rep.cpu_exceeded)
		o->limit = "cpu";
	if (rep.limit_msg[0] && o->limit && !strcmp(o->limit, rep.unmeasured_cpu ? "cpu" : "memory")) {
		rep.limit_msg[sizeof rep.limit_msg - 1] = '\0';
		snprintf(o->limit_detail, sizeof o->limit_detail, "%s", rep.limit_msg);
	}
	if (!o->limit && o->signal == SIGXCPU)
		o->limit = "cpu";
	if (!o->limit && o->signal == SIGXFSZ)
		o->limit = "disk";
	r = 0;

out_pipes:
	sandbox_free(sb);
	return r;
}

void sandbox_reap(sandbox_outcome *o)
{
	if (o->init_pid > 0) {
		trace_mark("reap: waiting for init");
		while (waitpid(o->init_pid, NULL, 0) < 0 && errno == EINTR)
			;
		trace_mark("reap: init gone");
		if (o->init_pidfd >= 0)
			close(o->init_pidfd);
		o->init_pid = 0;
		o->init_pidfd = -1;
	}
	limits_cgroup_destroy(o->cgroup); /* empty now: init was its last member */
	o->cgroup = NULL;
}

void sandbox_outcome_free(sandbox_outcome *o)
{
	sandbox_reap(o);
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}
