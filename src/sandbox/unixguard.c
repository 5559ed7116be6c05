/* sandbox/unixguard: see unixguard.h.
 *
 * Why the guard carries the calls out instead of answering "continue": the
 * kernel would re-read the address (and the descriptor number) after the
 * check, and another thread of the command can change them in between. So
 * every notified call is emulated from copies: the socket is duplicated out
 * of the caller's descriptor table (pidfd_getfd: the same open file, so
 * O_NONBLOCK, socket options and the resulting connection are the caller's),
 * the address and data are copied (process_vm_readv, checked still valid
 * with SECCOMP_IOCTL_NOTIF_ID_VALID after each read), and the result is the
 * call's answer. Each call runs on a thread of its own: a blocking connect
 * or send only holds that thread.
 *
 * Differences from a native call (documented in ARCHITECTURE.md): the
 * peer's SO_PEERCRED / SCM_CREDENTIALS default name the guard (same uid,
 * another pid); path resolution uses the guard's credentials and refuses
 * magic links (/proc/self/fd/N as an address); a blocked call is
 * interrupted only by a fatal signal; one send copies at most DATA_MAX
 * bytes (a stream socket sees a short write, a larger datagram EMSGSIZE);
 * with --net an abstract address is refused (the guard is not inside the
 * command's Landlock domain, which scopes abstract sockets), for bind too
 * (handed over only then); a pathname bind creates the socket file with
 * the guard's credentials and the caller's umask. */
#include "sandbox/unixguard.h"

#include "util/cleanup.h"
#include "util/syscalls.h"

#include <errno.h>
#include <linux/capability.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

#define ALLOWED_MAX 64
#define DATA_MAX (256u << 10) /* bytes copied per send */
#define CONTROL_MAX (64u << 10)
#define IOV_MAX_ 1024 /* UIO_MAXIOV */
#define FDS_MAX 253   /* SCM_MAX_FD */
#define LISTENERS_MAX 8
/* Calls served at once. Each holds up to DATA_MAX + CONTROL_MAX of copies
 * and a 256 KiB stack, in the guard's memory (outside the transaction's
 * cgroup): bounded at about 36 MiB. Past it a call fails with EAGAIN — the
 * command's own calls, never another sandbox's, since every guard is its
 * own process. */
#define SERVING_MAX 64

/* The places the view replaces by filesystems of its own (the workspace:
 * by its overlay). A device seen there after the view is built, and not
 * before, is the sandbox's. */
static const char *const replaced[] = {"/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run"};
enum { NPLACES = ARRAY_SIZE(replaced) + 1 };

struct unixguard {
	const char *workspace;
	bool network;
	size_t nallowed;
	struct {
		dev_t dev;
		ino_t ino;
		int fd; /* O_PATH, held: the inode (and its number) cannot be freed and reused */
	} allowed[ALLOWED_MAX];
	dev_t before[NPLACES];
	bool had[NPLACES];
	size_t nown;
	dev_t own[NPLACES];
	pid_t pid; /* the guard process, 0: none */
	int ctl;   /* init's end of the socket the listeners go through */
	atomic_uint serving; /* in the guard process: calls being served */
};

static const char *place(const unixguard *g, size_t i) { return i == 0 ? g->workspace : replaced[i - 1]; }

int unixguard_new(const char *workspace, const char *const *allowed, bool network, unixguard **out,
		  txbox_error *err)
{
	unixguard *g = calloc(1, sizeof *g);
	if (!g)
		return txbox_fail(err, -ENOMEM, "out of memory");
	g->workspace = workspace;
	g->network = network;
	g->ctl = -1;
	struct stat st;
	for (size_t i = 0; allowed && allowed[i]; i++) {
		if (g->nallowed == ALLOWED_MAX) {
			free(g);
			return txbox_fail(err, -E2BIG, "more than %d allowed sockets", ALLOWED_MAX);
		}
		/* connect() follows symlinks: so does the policy's path */
		int fd = open(allowed[i], O_PATH | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
			g->allowed[g->nallowed].dev = st.st_dev;
			g->allowed[g->nallowed].ino = st.st_ino;
			g->allowed[g->nallowed++].fd = fd;
		} else if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < NPLACES; i++)
		if (stat(place(g, i), &st) == 0) {
			g->had[i] = true;
			g->before[i] = st.st_dev;
		}
	*out = g;
	return 0;
}

void unixguard_free(unixguard *g)
{
	if (!g)
		return;
	if (g->ctl >= 0)
		close(g->ctl);
	for (size_t i = 0; i < g->nallowed; i++)
		close(g->allowed[i].fd);
	free(g);
}

/* In the guard, once the view is built: the filesystems the sandbox made. */
static void note_own_filesystems(unixguard *g)
{
	struct stat st;
	g->nown = 0;
	for (size_t i = 0; i < NPLACES; i++)
		if (stat(place(g, i), &st) == 0 && (!g->had[i] || st.st_dev != g->before[i]))
			g->own[g->nown++] = st.st_dev;
}

static bool permitted(const unixguard *g, const struct stat *st)
{
	for (size_t i = 0; i < g->nallowed; i++)
		if (g->allowed[i].dev == st->st_dev && g->allowed[i].ino == st->st_ino)
			return true;
	for (size_t i = 0; i < g->nown; i++)
		if (g->own[i] == st->st_dev)
			return true;
	return false;
}

/* ---- the caller of one notified call ----------------------------------- */

typedef struct target {
	const unixguard *g;
	atomic_uint *serving;
	int listener;
	struct seccomp_notif req;
	int pidfd;
} target;

static int still_valid(const target *t)
{
	return ioctl(t->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &t->req.id) == 0 ? 0 : -ENOENT;
}

static int peek(const target *t, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	struct iovec l = {.iov_base = buf, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv((pid_t)t->req.pid, &l, 1, &r, 1, 0);
	if (n != (ssize_t)len)
		return -EFAULT;
	return still_valid(t);
}

static int poke(const target *t, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = {.iov_base = (void *)buf, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	return process_vm_writev((pid_t)t->req.pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* A copy of the caller's descriptor fd (close-on-exec). */
static int take_fd(const target *t, uint64_t fd)
{
	if (fd > INT_MAX)
		return -EBADF;
	int s = (int)syscall(SYS_pidfd_getfd, t->pidfd, (int)fd, 0);
	return s < 0 ? -errno : s;
}

static int take_socket(const target *t, uint64_t fd)
{
	int s = take_fd(t, fd);
	struct stat st;
	if (s >= 0 && (fstat(s, &st) < 0 || !S_ISSOCK(st.st_mode))) {
		close(s);
		return -ENOTSOCK;
	}
	return s;
}

static int sock_opt(int s, int opt)
{
	int v = -1;
	socklen_t l = sizeof v;
	return getsockopt(s, SOL_SOCKET, opt, &v, &l) < 0 ? -1 : v;
}

/* ---- addresses ---------------------------------------------------------- */

typedef struct dest {
	struct sockaddr_storage ss;
	socklen_t len;
	int opath; /* the socket inode a pathname address was checked as */
} dest;

static void dest_done(dest *d)
{
	if (d->opath >= 0)
		close(d->opath);
}

/* "/proc/self/fd/N" and its spellings name the caller's descriptor N (a
 * way around sun_path's 108 bytes): N, or -1. */
static int own_fd_name(const char *path)
{
	static const char *const prefixes[] = {"/proc/self/fd/", "/proc/thread-self/fd/", "/dev/fd/"};
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(path, prefixes[i], n) || path[n] < '0' || path[n] > '9')
			continue;
		char *end;
		long fd = strtol(path + n, &end, 10);
		return *end == '\0' && fd <= INT_MAX ? (int)fd : -1;
	}
	return -1;
}

/* path as the caller would resolve it: from its root or its cwd. */
static int resolve(const target *t, const char *path)
{
	int own = own_fd_name(path);
	if (own >= 0)
		return take_fd(t, (uint64_t)own);
	char base[64];
	snprintf(base, sizeof base, "/proc/%u/%s", t->req.pid, path[0] == '/' ? "root" : "cwd");
	_cleanup_close_ int dfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int r = still_valid(t);
	if (r < 0)
		return r;
	/* No other magic link: /proc/self would be the guard's. */
	struct txbox_open_how how = {.flags = O_PATH | O_CLOEXEC,
				     .resolve = RESOLVE_NO_MAGICLINKS | (path[0] == '/' ? RESOLVE_IN_ROOT : 0)};
	int fd = sys_openat2(dfd, path, &how);
	return fd < 0 ? -errno : fd;
}

/* A Unix pathname address: resolve, decide, and point the address at the
 * inode decided on. Abstract names are the network namespace's: the
 * sandbox's own without --net. */
static int dest_check_unix(const target *t, int sock, dest *d)
{
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	struct sockaddr_un *u = (struct sockaddr_un *)&d->ss;
	if (d->len <= off || u->sun_family != AF_UNIX || sock_opt(sock, SO_DOMAIN) != AF_UNIX)
		return 0; /* nothing to look up: the kernel answers as it would */
	if (d->len > sizeof *u)
		return -EINVAL;
	if (u->sun_path[0] == '\0')
		return t->g->network ? -EPERM : 0;
	char path[sizeof u->sun_path + 1];
	size_t n = strnlen(u->sun_path, d->len - off);
	memcpy(path, u->sun_path, n);
	path[n] = '\0';
	int fd = resolve(t, path);
	if (fd < 0)
		return fd;
	struct stat st;
	int refuse = 0;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		refuse = -ECONNREFUSED; /* what the kernel answers for a non-socket */
	else if (!permitted(t->g, &st))
		refuse = -EACCES; /* a host socket */
	if (refuse) {
		close(fd);
		return refuse;
	}
	d->opath = fd;
	memset(u->sun_path, 0, sizeof u->sun_path);
	int l = snprintf(u->sun_path, sizeof u->sun_path, "/proc/self/fd/%d", fd);
	d->len = (socklen_t)(off + (size_t)l + 1);
	return 0;
}

/* The caller's address at addr (len bytes), checked. */
static int dest_load(const target *t, int sock, uint64_t addr, uint64_t len, dest *d)
{
	d->opath = -1;
	d->len = 0;
	if (len == 0)
		return 0;
	if (len > sizeof d->ss)
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	int r = peek(t, addr, &d->ss, (size_t)len);
	if (r < 0)
		return r;
	d->len = (socklen_t)len;
	return dest_check_unix(t, sock, d);
}

/* ---- the calls ---------------------------------------------------------- */

static long emu_connect(const target *t, int s)
{
	const __u64 *a = t->req.data.args;
	_cleanup_(dest_done) dest d = {.opath = -1};
	int r = dest_load(t, s, a[1], (uint32_t)a[2], &d);
	if (r < 0)
		return r;
	return connect(s, d.len ? (struct sockaddr *)&d.ss : NULL, d.len) < 0 ? -errno : 0;
}

/* The caller's umask (/proc/PID/status), 022 when unreadable. */
static mode_t caller_umask(const target *t)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%u/status", t->req.pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return 022;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nUmask:");
	return p ? (mode_t)(strtoul(p + 7, NULL, 8) & 0777) : 022;
}

/* A pathname bind carried out for the caller: the name is created in the
 * directory its path names (resolved as it would: from its root or cwd),
 * with its umask — on this thread only, whose fs context is made its own
 * (each call has a thread of its own). */
static long bind_path(const target *t, int s, const struct sockaddr_un *u, size_t len)
{
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	char path[sizeof u->sun_path + 1];
	size_t n = strnlen(u->sun_path, len - off);
	memcpy(path, u->sun_path, n);
	path[n] = '\0';
	char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base)
		return -ENOENT;
	if (slash == path)
		path[1] = '\0'; /* "/name": the root */
	else if (slash)
		*slash = '\0';
	mode_t mask = caller_umask(t);
	_cleanup_close_ int dfd = resolve(t, slash ? path : ".");
	if (dfd < 0)
		return dfd;
	if (unshare(CLONE_FS) < 0 || fchdir(dfd) < 0)
		return -errno;
	umask(mask);
	struct sockaddr_un rel = {.sun_family = AF_UNIX};
	size_t bl = strlen(base);
	memcpy(rel.sun_path, base, bl);
	return bind(s, (struct sockaddr *)&rel, (socklen_t)(off + bl + 1)) < 0 ? -errno : 0;
}

/* bind(), handed over only with --net, where abstract names are the host's:
 * an abstract name is refused (the command would squat a host service's
 * name and receive its clients' data); everything else is carried out from
 * the copied address. */
static long emu_bind(const target *t, int s)
{
	const __u64 *a = t->req.data.args;
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	struct sockaddr_storage ss;
	uint64_t len = (uint32_t)a[2];
	if (len > sizeof ss)
		return -EINVAL;
	if (len && !a[1])
		return -EFAULT;
	int r = len ? peek(t, a[1], &ss, (size_t)len) : 0;
	if (r < 0)
		return r;
	const struct sockaddr_un *u = (const struct sockaddr_un *)&ss;
	if (len > off && u->sun_family == AF_UNIX && sock_opt(s, SO_DOMAIN) == AF_UNIX) {
		if (u->sun_path[0] == '\0')
			return t->g->network ? -EPERM : (bind(s, (struct sockaddr *)&ss, (socklen_t)len) < 0 ? -errno : 0);
		return bind_path(t, s, u, (size_t)len);
	}
	return bind(s, len ? (struct sockaddr *)&ss : NULL, (socklen_t)len) < 0 ? -errno : 0;
}

/* How much of want bytes one send copies (see DATA_MAX); -EMSGSIZE when a
 * message cannot be cut. */
static long data_len(int s, uint64_t want)
{
	if (want <= DATA_MAX)
		return (long)want;
	return sock_opt(s, SO_TYPE) == SOCK_STREAM ? (long)DATA_MAX : -EMSGSIZE;
}

/* The kernel raises SIGPIPE in the caller; the guard's own sends never do. */
static long sent(const target *t, ssize_t n, int flags)
{
	if (n >= 0)
		return n;
	int e = errno;
	if (e == EPIPE && !(flags & MSG_NOSIGNAL))
		syscall(SYS_pidfd_send_signal, t->pidfd, SIGPIPE, NULL, 0);
	return -e;
}

static long emu_sendto(const target *t, int s)
{
	const __u64 *a = t->req.data.args;
	_cleanup_(dest_done) dest d = {.opath = -1};
	int r = dest_load(t, s, a[4], (uint32_t)a[5], &d);
	if (r < 0)
		return r;
	long len = data_len(s, a[2]);
	if (len < 0)
		return len;
	_cleanup_free_ char *buf = malloc(len ? (size_t)len : 1);
	if (!buf)
		return -ENOMEM;
	if ((r = peek(t, a[1], buf, (size_t)len)) < 0)
		return r;
	int flags = (int)a[3];
	ssize_t n = sendto(s, buf, (size_t)len, flags | MSG_NOSIGNAL, d.len ? (struct sockaddr *)&d.ss : NULL, d.len);
	return sent(t, n, flags);
}

/* The caller's message, copied: data gathered into one buffer, descriptors
 * passed with SCM_RIGHTS duplicated out of its table. */
typedef struct message {
	dest d;
	char *data;
	size_t len;
	char *control;
	size_t controllen;
	int fds[FDS_MAX * 4];
	size_t nfds;
} message;

static void message_done(message *m)
{
	dest_done(&m->d);
	free(m->data);
	free(m->control);
	for (size_t i = 0; i < m->nfds; i++)
		close(m->fds[i]);
}

static int load_data(const target *t, int s, const struct msghdr *um, message *m)
{
	if (um->msg_iovlen > IOV_MAX_)
		return -EMSGSIZE;
	struct iovec iov[IOV_MAX_];
	int r = peek(t, (uintptr_t)um->msg_iov, iov, um->msg_iovlen * sizeof *iov);
	if (r < 0)
		return r;
	uint64_t want = 0;
	for (size_t i = 0; i < um->msg_iovlen; i++) {
		if (iov[i].iov_len > SSIZE_MAX || want + iov[i].iov_len > SSIZE_MAX)
			return -EINVAL;
		want += iov[i].iov_len;
	}
	long len = data_len(s, want);
	if (len < 0)
		return (int)len;
	if (!(m->data = malloc(len ? (size_t)len : 1)))
		return -ENOMEM;
	for (size_t i = 0; i < um->msg_iovlen && m->len < (size_t)len; i++) {
		size_t k = iov[i].iov_len < (size_t)len - m->len ? iov[i].iov_len : (size_t)len - m->len;
		if ((r = peek(t, (uintptr_t)iov[i].iov_base, m->data + m->len, k)) < 0)
			return r;
		m->len += k;
	}
	return 0;
}

static int load_control(const target *t, const struct msghdr *um, message *m)
{
	if (!um->msg_controllen)
		return 0;
	if (um->msg_controllen > CONTROL_MAX)
		return -ENOBUFS;
	if (!(m->control = malloc(um->msg_controllen)))
		return -ENOMEM;
	int r = peek(t, (uintptr_t)um->msg_control, m->control, um->msg_controllen);
	if (r < 0)
		return r;
	m->controllen = um->msg_controllen;
	struct msghdr h = {.msg_control = m->control, .msg_controllen = m->controllen};
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
		if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_len > m->controllen - (size_t)((char *)c - m->control))
			return -EINVAL; /* as the kernel says of a header past the buffer */
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *fds = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			if (m->nfds == ARRAY_SIZE(m->fds))
				return -ETOOMANYREFS;
			int fd = take_fd(t, (uint32_t)fds[i]);
			if (fd < 0)
				return -EBADF;
			fds[i] = m->fds[m->nfds++] = fd;
		}
	}
	return 0;
}

/* One message of sendmsg/sendmmsg, um copied from the caller. */
static long send_one(const target *t, int s, const struct msghdr *um, int flags)
{
	_cleanup_(message_done) message m = {.d = {.opath = -1}};
	if ((int)um->msg_namelen < 0)
		return -EINVAL;
	size_t nl = um->msg_namelen > sizeof m.d.ss ? sizeof m.d.ss : um->msg_namelen;
	int r = um->msg_name ? dest_load(t, s, (uintptr_t)um->msg_name, nl, &m.d) : 0;
	if (r < 0 || (r = load_data(t, s, um, &m)) < 0 || (r = load_control(t, um, &m)) < 0)
		return r;
	struct iovec iov = {.iov_base = m.data, .iov_len = m.len};
	struct msghdr h = {
		.msg_name = m.d.len ? &m.d.ss : NULL, .msg_namelen = m.d.len, .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = m.control, .msg_controllen = m.controllen,
	};
	return sent(t, sendmsg(s, &h, flags | MSG_NOSIGNAL), flags);
}

static long emu_sendmsg(const target *t, int s)
{
	const __u64 *a = t->req.data.args;
	struct msghdr um;
	int r = peek(t, a[1], &um, sizeof um);
	return r < 0 ? r : send_one(t, s, &um, (int)a[2]);
}

static long emu_sendmmsg(const target *t, int s)
{
	const __u64 *a = t->req.data.args;
	unsigned vlen = (unsigned)a[2] > IOV_MAX_ ? IOV_MAX_ : (unsigned)a[2];
	long done = 0;
	for (unsigned i = 0; i < vlen; i++) {
		uint64_t at = a[1] + (uint64_t)i * sizeof(struct mmsghdr);
		struct mmsghdr mm;
		long r = peek(t, at, &mm, sizeof mm);
		if (r >= 0)
			r = send_one(t, s, &mm.msg_hdr, (int)a[3]);
		if (r < 0)
			return done ? done : r;
		unsigned len = (unsigned)r;
		if (poke(t, at + offsetof(struct mmsghdr, msg_len), &len, sizeof len) < 0)
			return done ? done : -EFAULT;
		done++;
	}
	return done;
}

/* Every notified call takes a socket as its first argument. */
static long emulate(const target *t)
{
	_cleanup_close_ int s = take_socket(t, t->req.data.args[0]);
	if (s < 0)
		return s;
	switch (t->req.data.nr) {
	case __NR_connect:
		return emu_connect(t, s);
	case __NR_sendto:
		return emu_sendto(t, s);
	case __NR_sendmsg:
		return emu_sendmsg(t, s);
	case __NR_sendmmsg:
		return emu_sendmmsg(t, s);
	case __NR_bind:
		return emu_bind(t, s);
	default:
		return -ENOSYS;
	}
}

/* ---- the guard process ---------------------------------------------------- */

static void *serve(void *arg)
{
	target *t = arg;
	struct seccomp_notif_resp resp = {.id = t->req.id};
	t->pidfd = sys_pidfd_open((pid_t)t->req.pid, PIDFD_THREAD);
	if (t->pidfd < 0)
		t->pidfd = sys_pidfd_open((pid_t)t->req.pid, 0);
	long r = t->pidfd < 0 ? -ESRCH : still_valid(t);
	if (r == 0)
		r = emulate(t);
	if (r < 0)
		resp.error = (int)r;
	else
		resp.val = r;
	ioctl(t->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp); /* ENOENT: the caller is gone */
	if (t->pidfd >= 0)
		close(t->pidfd);
	close(t->listener);
	atomic_fetch_sub(t->serving, 1);
	free(t);
	return NULL;
}

/* One notification off listener, served on a thread of its own (inline
 * when no thread can be made). */
static void dispatch(unixguard *g, int listener)
{
	target *t = calloc(1, sizeof *t);
	if (!t)
		return;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &t->req) < 0) {
		free(t); /* EINTR, or the caller died meanwhile (ENOENT) */
		return;
	}
	if (atomic_fetch_add(&g->serving, 1) >= SERVING_MAX) {
		struct seccomp_notif_resp resp = {.id = t->req.id, .error = -EAGAIN};
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		atomic_fetch_sub(&g->serving, 1);
		free(t);
		return;
	}
	t->g = g;
	t->serving = &g->serving;
	t->pidfd = -1;
	t->listener = fcntl(listener, F_DUPFD_CLOEXEC, 0);
	if (t->listener < 0) {
		struct seccomp_notif_resp resp = {.id = t->req.id, .error = -EMFILE};
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		atomic_fetch_sub(&g->serving, 1);
		free(t);
		return;
	}
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 << 10);
	if (pthread_create(&th, &at, serve, t) != 0)
		serve(t);
	pthread_attr_destroy(&at);
}

/* A listener init sent over ctl (SCM_RIGHTS), or -1 at EOF. */
static int receive_listener(int ctl)
{
	char b;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &b, .iov_len = 1};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	do
		n = recvmsg(ctl, &h, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&h) : NULL;
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return n > 0 ? -2 : -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

/* Close every descriptor but *ctl and the allowed sockets' (moved, with
 * *ctl, to 3, 4, …). */
static int keep_only(unixguard *g, int *ctl)
{
	int base = 3 + (int)ARRAY_SIZE(g->allowed) + 1, next = 3;
	int *fds[1 + ALLOWED_MAX];
	size_t n = 0;
	fds[n++] = ctl;
	for (size_t i = 0; i < g->nallowed; i++)
		fds[n++] = &g->allowed[i].fd;
	for (size_t i = 0; i < n; i++) /* out of the way first, then down */
		if ((*fds[i] = fcntl(*fds[i], F_DUPFD_CLOEXEC, base)) < 0)
			return -1;
	if (syscall(SYS_close_range, 0, base - 1, 0) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (dup3(*fds[i], next, O_CLOEXEC) < 0)
			return -1;
		*fds[i] = next++;
	}
	return (int)syscall(SYS_close_range, next, ~0U, 0);
}

/* The calls are carried out with the guard's credentials, and the kernel
 * checks some against the caller's capabilities at that moment (netlink
 * messages sent to an address, SO_MARK and priority control messages,
 * SCM_CREDENTIALS naming another process): keep only what reaching the
 * command needs — its memory and descriptors (CAP_SYS_PTRACE) and paths
 * as root sees them (CAP_DAC_*) — never network or admin powers. */
static int drop_capabilities(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	static const int keep[] = {CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH};
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		d[keep[i] / 32].permitted |= 1u << (keep[i] % 32);
		d[keep[i] / 32].effective |= 1u << (keep[i] % 32);
	}
	struct __user_cap_data_struct cur[2];
	if (syscall(SYS_capget, &h, cur) < 0)
		return -1;
	for (int i = 0; i < 2; i++) { /* never more than held (rootless without some of them) */
		d[i].permitted &= cur[i].permitted;
		d[i].effective &= cur[i].permitted;
	}
	return (int)syscall(SYS_capset, &h, d);
}

static void __attribute__((noreturn)) guard_main(unixguard *g, int ctl)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (drop_capabilities() < 0)
		_exit(1); /* no guard: the command's socket calls fail (ENOSYS) */
	signal(SIGPIPE, SIG_IGN);
	/* Nothing of init's but ctl and the allowed sockets: above all not the
	 * output pipes, whose EOF the supervisor waits for. */
	if (keep_only(g, &ctl) < 0)
		_exit(1);
	struct pollfd pf[1 + LISTENERS_MAX] = {{.fd = ctl, .events = POLLIN}};
	nfds_t n = 1;
	for (;;) {
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (nfds_t i = n; i-- > 1;) {
			if (pf[i].revents & POLLIN)
				dispatch(g, pf[i].fd);
			else if (pf[i].revents) { /* every filtered process is gone */
				close(pf[i].fd);
				pf[i] = pf[--n];
				if (n == 1) /* the command is over: exit while init reaps it */
					_exit(0);
			}
		}
		if (pf[0].revents) {
			int fd = receive_listener(ctl);
			if (fd == -1)
				_exit(0);
			if (fd < 0)
				continue;
			note_own_filesystems(g); /* the view is built by now */
			if (n == ARRAY_SIZE(pf))
				close(fd); /* its calls fail (ENOSYS): closed, never open */
			else
				pf[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
		}
	}
}

int unixguard_spawn(unixguard *g, txbox_error *err)
{
	if (g->pid > 0)
		return 0;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return txbox_fail_errno(err, -errno, "socket guard: socketpair");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sp[0]);
		close(sp[1]);
		return txbox_fail_errno(err, -e, "socket guard: fork");
	}
	if (pid == 0) {
		prctl(PR_SET_NAME, "txbox-guard");
		guard_main(g, sp[1]);
	}
	close(sp[1]);
	if (g->ctl >= 0)
		close(g->ctl);
	g->ctl = sp[0];
	g->pid = pid;
	return 0;
}

int unixguard_take(unixguard *g, pid_t child, int child_fd, txbox_error *err)
{
	int r = unixguard_spawn(g, err);
	if (r < 0)
		return r;
	_cleanup_close_ int pidfd = sys_pidfd_open(child, 0);
	if (pidfd < 0)
		return txbox_fail_errno(err, -errno, "socket guard: pidfd_open of the command");
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_getfd, pidfd, child_fd, 0);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "socket guard: taking the command's listener");
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	char tag = 'l';
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(g->ctl, &h, MSG_NOSIGNAL) != 1)
		return txbox_fail_errno(err, -errno, "socket guard: handing over the listener");
	return 0;
}

void unixguard_gone(unixguard *g)
{
	g->pid = 0;
	if (g->ctl >= 0)
		close(g->ctl);
	g->ctl = -1;
}
