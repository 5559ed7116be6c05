/* mounts: build the sandbox's view of the filesystem, inside its own mount
 * namespace (runs in the cloned init, before anything of the command runs).
 *
 *   /            host, recursively read-only, nosuid (mount_setattr, or a
 *                remount walk over /proc/self/mountinfo where it is missing)
 *   /tmp, /var/tmp, /dev/shm, /run   directories of one private tmpfs
 *                (size and inodes capped: mount_private_tmpfs)
 *   /dev         tmpfs with null zero full random urandom tty bound from the
 *                host, a new devpts instance, fd/stdin/stdout/stderr links
 *   /proc        fresh procfs of the new PID namespace; /proc/sys and
 *                /proc/sysrq-trigger read-only
 *   /sys         the host's, read-only; as root without its root-only
 *                kernel views (hide_kernel_views)
 *   WORKSPACE    overlay: lower = workspace, upper/work = the layer
 *   WORKSPACE/.txbox  hidden (whiteout in the layer, or an empty ro tmpfs)
 *   masked secrets   empty (secrets.c)
 */
#include "sandbox/sandbox.h"
#include "sandbox/rlimits.h"
#include "util/trace.h"

#include "util/cleanup.h"
#include "util/fsutil.h"
#include "util/syscalls.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static int failf(char *msg, size_t len, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int failf(char *msg, size_t len, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len && e)
		snprintf(msg + n, len - (size_t)n, ": %s", strerror(e));
	return -(e ? e : EINVAL);
}

/* mkdir -p for an absolute path (used only on our private tmpfs mounts). */
static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (strlen(path) >= sizeof buf)
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Decode the octal escapes (\040 etc.) mountinfo uses. */
static void unescape_mountinfo(char *s)
{
	char *o = s;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else
			*o++ = *s++;
	}
	*o = '\0';
}

/* One line of /proc/self/mountinfo, split in place: "id parent maj:min
 * root mountpoint opts [optional...] - fstype source superopts". */
typedef struct mountinfo_line {
	char *root, *point, *opts, *type;
} mountinfo_line;

/* False for a line without those fields. Root and point are unescaped. */
static bool mountinfo_parse(char *line, mountinfo_line *m)
{
	char *sep = strstr(line, " - "), *save = NULL, *field[6] = {0};
	char *t = strtok_r(line, " ", &save);
	for (int i = 0; i < 6 && t; i++, t = strtok_r(NULL, " ", &save))
		field[i] = t;
	if (!sep || !field[5] || field[5] > sep)
		return false;
	*m = (mountinfo_line){.root = field[3], .point = field[4], .opts = field[5], .type = sep + 3};
	m->type[strcspn(m->type, " ")] = '\0';
	unescape_mountinfo(m->root);
	unescape_mountinfo(m->point);
	return true;
}

static unsigned long mount_flags_from_opts(const char *opts)
{
	unsigned long f = 0;
	_cleanup_free_ char *c = strdup(opts);
	if (!c)
		return 0;
	char *save = NULL;
	for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "nosuid"))
			f |= MS_NOSUID;
		else if (!strcmp(t, "nodev"))
			f |= MS_NODEV;
		else if (!strcmp(t, "noexec"))
			f |= MS_NOEXEC;
		else if (!strcmp(t, "noatime"))
			f |= MS_NOATIME;
		else if (!strcmp(t, "nodiratime"))
			f |= MS_NODIRATIME;
		else if (!strcmp(t, "relatime"))
			f |= MS_RELATIME;
	}
	return f;
}

/* Fallback for kernels without mount_setattr: remount every mount read-only,
 * keeping the flags a user namespace may not clear. */
static int remount_all_readonly(char *msg, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return failf(msg, len, errno, "reading /proc/self/mountinfo");
	char *line = NULL;
	size_t cap = 0;
	int r = 0;
	while (getline(&line, &cap, f) > 0) {
		mountinfo_line m;
		if (!mountinfo_parse(line, &m))
			continue;
		unsigned long fl = mount_flags_from_opts(m.opts);
		if (mount(NULL, m.point, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | fl, NULL) < 0 &&
		    errno != ENOENT && errno != EACCES && errno != EPERM) {
			r = failf(msg, len, errno, "remounting %s read-only", m.point);
			break;
		}
	}
	free(line);
	return r;
}

static int make_host_readonly(char *msg, size_t len)
{
	struct txbox_mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
	if (sys_mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL)
		return failf(msg, len, errno, "making the host read-only (mount_setattr)");
	return remount_all_readonly(msg, len);
}

/* A directory of the sandbox's one private tmpfs (shared, an O_PATH fd of
 * its root) bound on `where`: every private writable place draws on the
 * same size and inode caps, and one statfs measures them all. */
static int bind_private(int shared, const char *sub, mode_t mode, const char *where, char *msg, size_t len)
{
	if (mkdirat(shared, sub, mode) < 0 || fchmodat(shared, sub, mode, 0) < 0)
		return failf(msg, len, errno, "creating the private %s", where);
	char src[64];
	snprintf(src, sizeof src, "/proc/self/fd/%d/%s", shared, sub);
	if (mount(src, where, NULL, MS_BIND, NULL) < 0)
		return failf(msg, len, errno, "mounting a private tmpfs on %s", where);
	return 0;
}

/* The private tmpfs's caps: the memory limit (its pages are memory: a
 * memory cgroup charges them, the rlimit mechanism measures them), else
 * half of the machine's RAM for all of /tmp, /var/tmp, /dev/shm and /run
 * together; an inode per 16 KiB (inodes are kernel memory no size= caps).
 * SysV shared memory of the IPC namespace gets the same cap. */
static uint64_t private_memory_cap(const sandbox_spec *s)
{
	if (s->limits.memory_bytes)
		return s->limits.memory_bytes;
	return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) / 2;
}

/* Mount the private tmpfs on /tmp, its "tmp" directory over it; returns an
 * O_PATH fd of its root for the other binds (or -errno). */
static int mount_private_tmpfs(const sandbox_spec *s, char *msg, size_t len)
{
	uint64_t cap = private_memory_cap(s);
	uint64_t inodes = cap / 16384 < 16384 ? 16384 : cap / 16384;
	char opts[96];
	snprintf(opts, sizeof opts, "mode=0755,size=%llu,nr_inodes=%llu", (unsigned long long)cap,
		 (unsigned long long)inodes);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return failf(msg, len, errno, "mounting a private tmpfs on /tmp");
	int fd = open("/tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return failf(msg, len, errno, "opening the private tmpfs");
	int r = bind_private(fd, "tmp", 01777, "/tmp", msg, len);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* One device of the minimal /dev: a node of the host's device number when
 * we may make one (root: ten times cheaper than a bind mount), else a bind
 * mount of the host's node. A device the host lacks is left out. */
static int bind_dev(int devfd, const char *name, char *msg, size_t len)
{
	char target[64];
	snprintf(target, sizeof target, "/dev/%s", name);
	struct stat st;
	if (fstatat(devfd, name, &st, 0) < 0)
		return errno == ENOENT ? 0 : failf(msg, len, errno, "looking at the host's %s", target);
	if (!S_ISCHR(st.st_mode))
		return failf(msg, len, EINVAL, "the host's %s is not a character device", target);
	if (mknod(target, S_IFCHR | 0600, st.st_rdev) == 0) {
		if (chmod(target, 0666) < 0)
			return failf(msg, len, errno, "creating %s", target);
		return 0;
	}
	if (errno != EPERM)
		return failf(msg, len, errno, "creating %s", target);
	int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return failf(msg, len, errno, "creating %s", target);
	close(fd);
	char src[64];
	snprintf(src, sizeof src, "/proc/self/fd/%d/%s", devfd, name);
	if (mount(src, target, NULL, MS_BIND, NULL) < 0) {
		if (errno == ENOENT) { /* host has no such device: leave none */
			unlink(target);
			return 0;
		}
		return failf(msg, len, errno, "binding %s", target);
	}
	return 0;
}

/* Ptys the sandbox may hold at once: a terminal or a few for tests. */
#define SANDBOX_MAX_PTYS "64"

static int build_dev(int shared, char *msg, size_t len)
{
	/* Keep the host's /dev reachable while the new one is assembled. */
	_cleanup_close_ int hostdev = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (hostdev < 0)
		return failf(msg, len, errno, "opening /dev");
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m,nr_inodes=256") < 0)
		return failf(msg, len, errno, "mounting /dev");
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++) {
		int r = bind_dev(hostdev, devs[i], msg, len);
		if (r < 0)
			return r;
	}
	if (mkdir("/dev/pts", 0755) < 0 || mkdir("/dev/shm", 01777) < 0)
		return failf(msg, len, errno, "creating /dev directories");
	/* The pty count is machine-wide (kernel.pty.max); max= caps this
	 * instance so the command can never take the host's ptys. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620,max=" SANDBOX_MAX_PTYS) == 0) {
		if (symlink("pts/ptmx", "/dev/ptmx") < 0)
			return failf(msg, len, errno, "creating /dev/ptmx");
	}
	int r = bind_private(shared, "shm", 01777, "/dev/shm", msg, len);
	if (r < 0)
		return r;
	if (symlink("/proc/self/fd", "/dev/fd") < 0 || symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 || symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		return failf(msg, len, errno, "creating /dev links");
	if (mount(NULL, "/dev", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) < 0)
		return failf(msg, len, errno, "making /dev read-only");
	return 0;
}

static int build_proc(const sandbox_spec *s, char *msg, size_t len)
{
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return failf(msg, len, errno, "mounting a fresh /proc");
	/* SysV shared memory is capped like the private tmpfs (both are
	 * memory), before /proc/sys is read-only. Only root of the user
	 * namespace owning the IPC namespace may: rootless, init is the
	 * caller's own uid, refused — there the segments are measured with
	 * the rest of the memory (limits_memwatch_bytes), not capped. A
	 * kernel without SysV IPC has no such files. */
	int r = limits_ipc_cap(private_memory_cap(s));
	if (r < 0 && r != -ENOENT && !(s->use_userns && (r == -EACCES || r == -EPERM)))
		return failf(msg, len, -r, "capping SysV shared memory");
	/* Rootless, init is root of the sandbox's own user namespace, whose
	 * per-user counters it may cap; as real root, /proc/sys/user is the
	 * host's own and stays untouched. */
	if (s->use_userns && (r = limits_ucounts_cap()) < 0)
		return failf(msg, len, -r, "capping the sandbox's inotify and fanotify counters");
	/* /proc/irq and /proc/bus need capabilities of the initial user
	 * namespace to write, which the command never has: no bind needed. */
	static const char *const ro[] = {"/proc/sys", "/proc/sysrq-trigger"};
	for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
		if (mount(ro[i], ro[i], NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			return failf(msg, len, errno, "binding %s", ro[i]);
		}
		if (mount(NULL, ro[i], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL) < 0)
			return failf(msg, len, errno, "making %s read-only", ro[i]);
	}
	return 0;
}

static int mount_overlay(const sandbox_spec *s, const int fds[3], char *msg, size_t len)
{
	char opts[256];
	/* The paths go through /proc/self/fd so no workspace name needs escaping
	 * in the option string. Every variant pins metacopy=off and no redirect
	 * creation: each change must be a real copy in the upper layer, or the
	 * commit (a plain merge) would publish metadata-only files. A kernel
	 * whose defaults differ is never trusted with them. */
	static const char *const variants[] = {
		"redirect_dir=off,metacopy=off,index=on,xino=off",
		"redirect_dir=off,metacopy=off,index=off,xino=off",
		/* userxattr refuses redirect_dir=off; nofollow also makes renames of
		 * lower directories EXDEV (never a redirect) */
		"redirect_dir=nofollow,metacopy=off,index=on",
		"redirect_dir=nofollow,metacopy=off",
	};
	/* Each refused attempt costs a millisecond or more: with userxattr
	 * (a user namespace), whose kernels refuse redirect_dir=off, the
	 * nofollow variants go first. */
	static const size_t order_root[] = {0, 1, 2, 3}, order_userxattr[] = {2, 3, 0, 1};
	int e = 0;
	for (int ux = 0; ux < 2; ux++) {
		/* A user namespace needs userxattr; otherwise trusted.overlay.*
		 * only: the layer recorded which one the commit trusts. */
		if (ux != (int)s->use_userns)
			continue;
		/* volatile (5.10+) first: without it the overlay's unmount, when
		 * init exits, syncs the whole upper filesystem — every dirty page
		 * of the workspace's disk, others' too — while the supervisor
		 * waits (0.5-2 ms here). A sync inside the sandbox means nothing
		 * anyway: a crash rolls the transaction back, and the commit
		 * syncs the layer (syncfs) before it journals. */
		for (size_t k = 0; k < 2 * ARRAY_SIZE(variants); k++) {
			size_t i = ux ? order_userxattr[k / 2] : order_root[k / 2];
			snprintf(opts, sizeof opts,
				 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d%s%s%s%s",
				 fds[0], fds[1], fds[2], ux ? ",userxattr" : "",
				 variants[i][0] ? "," : "", variants[i], k % 2 ? "" : ",volatile");
			if (mount("overlay", s->workspace, "overlay", MS_NOSUID | MS_NODEV, opts) == 0)
				return 0;
			e = errno;
			if (e != EINVAL)
				break;
		}
		if (e != EINVAL)
			break;
	}
	if (e == EINVAL || e == ENODEV)
		return failf(msg, len, e,
			     "the kernel cannot stack an overlay on the workspace %s (is it on overlayfs, NFS or "
			     "another filesystem overlayfs does not support as upper layer?)",
			     s->workspace);
	return failf(msg, len, e, "mounting the overlay on %s", s->workspace);
}

static int loopback_up(void)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}

int mounts_new_netns(void)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	return loopback_up();
}

#define SOCKETS_MAX 64

/* Host Unix sockets the policy keeps reachable, opened (O_PATH) before /run
 * is replaced, so they can be bound back at their paths. */
static int open_kept_sockets(const sandbox_spec *s, int *fds, size_t *n, char *msg, size_t len)
{
	*n = 0;
	for (size_t i = 0; s->allowed_sockets && s->allowed_sockets[i]; i++) {
		if (*n == SOCKETS_MAX)
			return failf(msg, len, E2BIG, "more than %d allowed sockets", SOCKETS_MAX);
		int fd = open(s->allowed_sockets[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* not there on this host: nothing to keep */
		fds[(*n)++] = fd;
	}
	return 0;
}

/* Paths under /run kept when the network is granted (name resolution). */
static const char *const run_keep_for_net[] = {"/run/systemd/resolve", "/run/resolvconf", NULL};

static bool run_hidden;

/* /run (and /var/run when it is a directory of its own) hold the host's
 * service sockets — Docker, D-Bus, databases, the user's session bus. A
 * read-only mount does not stop connect(), so they are replaced by an
 * empty tmpfs; allowed sockets (and, with --net, the resolver's files) are
 * bound back at their own paths. */
static int hide_run(const sandbox_spec *s, int shared, const int *sockfds, size_t nsock, char *msg, size_t len)
{
	struct stat st;
	run_hidden = false;
	int keep[4] = {-1, -1, -1, -1};
	size_t nkeep = 0;
	if (s->network)
		for (size_t i = 0; run_keep_for_net[i] && nkeep < 4; i++) {
			int fd = open(run_keep_for_net[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0)
				keep[nkeep++] = fd;
		}
	int r = 0;
	if (stat("/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		if ((r = bind_private(shared, "run", 0755, "/run", msg, len)) < 0)
			goto out;
		run_hidden = true;
	}
	if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode) &&
	    (r = bind_private(shared, "var-run", 0755, "/var/run", msg, len)) < 0)
		goto out;
	for (size_t i = 0; i < nkeep; i++) {
		r = mkdir_p(run_keep_for_net[i], 0755);
		char src[32];
		snprintf(src, sizeof src, "/proc/self/fd/%d", keep[i]);
		if (r == 0 && mount(src, run_keep_for_net[i], NULL, MS_BIND | MS_REC, NULL) < 0) {
			r = failf(msg, len, errno, "keeping %s", run_keep_for_net[i]);
			goto out;
		}
		r = 0;
	}
	for (size_t i = 0; i < nsock; i++) {
		const char *path = s->allowed_sockets[i];
		char src[32], parent[PATH_MAX];
		snprintf(src, sizeof src, "/proc/self/fd/%d", sockfds[i]);
		snprintf(parent, sizeof parent, "%s", path);
		char *slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			mkdir_p(parent, 0755); /* on our tmpfs when under /run; exists otherwise */
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0)
			close(fd);
		if (mount(src, path, NULL, MS_BIND, NULL) < 0) {
			r = failf(msg, len, errno, "keeping the allowed socket %s", path);
			goto out;
		}
	}
out:
	for (size_t i = 0; i < nkeep; i++)
		close(keep[i]);
	for (size_t i = 0; i < nsock; i++)
		close(sockfds[i]);
	return r;
}

static int remount_rw(const char *where, unsigned long flags, char *msg, size_t len)
{
	if (mount(NULL, where, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0 && errno != EINVAL)
		return failf(msg, len, errno, "making %s writable", where);
	return 0;
}

static void close_fds(int fds[3])
{
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int mounts_view_begin(const sandbox_spec *s, mounts_view *v, char *msg, size_t len)
{
	int r;
	v->ws_fd = v->state_fd = v->read_layer_view_built = -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return failf(msg, len, errno, "making mounts private");
	/* The workspace and the state dir are resolved in this mount namespace
	 * (overlayfs clones their mounts) and before /tmp is replaced (they may
	 * be there); the layer inside is found from them once it exists. */
	v->ws_fd = open(s->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->ws_fd < 0)
		return failf(msg, len, errno, "opening %s", s->workspace);
	/* The read layer's helper next: it has the most to do, and most of
	 * it does not depend on the view (see secrets_read_layer_start). */
	if (s->masked_paths) {
		txbox_error e = TXBOX_ERROR_INIT;
		r = secrets_read_layer_start(s->masked_paths, s->home, v->ws_fd, s->workspace,
					     (const char *const *)environ /* the caller's, unfiltered */,
					     (harden_opts *)&s->harden, &v->read_layer_view_built, &e);
		if (r < 0) {
			r = failf(msg, len, 0, "masking secrets: %s", e.message ? e.message : "?");
			txbox_error_clear(&e);
			return r;
		}
	}
	if (!s->state_name) {
		if (!s->state_path)
			return failf(msg, len, EINVAL, "no state dir");
		v->state_fd = open(s->state_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (v->state_fd < 0)
			return failf(msg, len, errno, "opening %s", s->state_path);
	}

	struct stat st;
	v->var_tmp = stat("/var/tmp", &st) == 0 && S_ISDIR(st.st_mode);
	int sockfds[SOCKETS_MAX];
	size_t nsock = 0;
	r = open_kept_sockets(s, sockfds, &nsock, msg, len);
	if (r < 0)
		return r;
	trace_mark("init: waiting for the helper's copy");
	if (v->read_layer_view_built >= 0)
		secrets_read_layer_copy_made(v->read_layer_view_built);
	trace_mark("init: the helper's copy made");
	_cleanup_close_ int shared = mount_private_tmpfs(s, msg, len);
	if (shared < 0)
		return shared;
	if ((v->var_tmp && (r = bind_private(shared, "var-tmp", 01777, "/var/tmp", msg, len)) < 0) ||
	    (r = hide_run(s, shared, sockfds, nsock, msg, len)) < 0 || (r = build_dev(shared, msg, len)) < 0 ||
	    (r = build_proc(s, msg, len)) < 0)
		return r;
	if (!s->network && !s->netns_from_supervisor) {
		if ((r = mounts_new_netns()) < 0)
			return failf(msg, len, -r, "creating the network namespace (loopback up)");
		trace_mark("view: network namespace");
	}
	if (sethostname("txbox", 5) < 0)
		return failf(msg, len, errno, "setting the host name");
	trace_mark("view: tmpfs, /run, /dev, /proc, lo");
	return 0;
}

int mounts_view_finish(const sandbox_spec *s, mounts_view *v, const char *layer_rel, bool hide_by_whiteout,
		       char *msg, size_t len)
{
	int r;
	struct stat st;
	/* layers/<n>/{upper,work}: beneath the state dir, no symlink followed */
	int fds[3] = {v->ws_fd, -1, -1};
	v->ws_fd = -1;
	for (int i = 1; i < 3; i++) {
		char rel[PATH_MAX];
		if (snprintf(rel, sizeof rel, "%s%s%s/%s", s->state_name ? s->state_name : "", s->state_name ? "/" : "",
			     layer_rel, i == 1 ? "upper" : "work") >= (int)sizeof rel) {
			close_fds(fds);
			return failf(msg, len, ENAMETOOLONG, "layer path too long");
		}
		fds[i] = fs_open_beneath(s->state_name ? fds[0] : v->state_fd, rel, O_PATH | O_DIRECTORY, 0);
		if (fds[i] < 0) {
			close_fds(fds);
			return failf(msg, len, -fds[i], "opening the layer %s", rel);
		}
	}
	if (v->state_fd >= 0)
		close(v->state_fd);
	v->state_fd = -1;

	/* The workspace may live under one of the private mounts just made
	 * (e.g. /tmp/ws): give it a mount point there. */
	if (stat(s->workspace, &st) < 0) {
		r = mkdir_p(s->workspace, 0755);
		if (r < 0) {
			close_fds(fds);
			return failf(msg, len, -r, "creating the mount point %s", s->workspace);
		}
	}
	r = mount_overlay(s, fds, msg, len);
	close_fds(fds);
	if (r < 0)
		return r;
	trace_mark("view: overlay");

	if (s->state_name && !hide_by_whiteout) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", s->workspace, s->state_name) >= (int)sizeof p)
			return failf(msg, len, ENAMETOOLONG, "workspace path too long");
		if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0000,size=4k") < 0 &&
		    errno != ENOENT)
			return failf(msg, len, errno, "hiding %s", p);
	}

	return 0;
}

/* The kernel's views of the whole host that only root reads: the ftrace
 * buffers (every process's activity; reading trace_pipe takes the events
 * from the host's tracers), debugfs, securityfs (IMA's list of measured
 * files), crash logs, pinned BPF objects, EFI variables, configfs, and
 * sysfs's firmware tables (red team rt17). As real root every mount of
 * those types, wherever the mount table shows one (stacked, bound into a
 * chroot: rt18), is covered by an empty read-only tmpfs, and so is the
 * firmware directory of every sysfs mount, before the read-only pass (a
 * file, by /dev/null: never by unmounting, which would take whatever is on
 * top; rt19). The workspace shows none of the host's mounts. Rootless
 * (use_userns) the command reads none of them: they are its user's to
 * read or not. */
static const char *const kernel_view_types[] = {"tracefs", "debugfs",  "securityfs", "pstore",
						"bpf",     "efivarfs", "configfs"};

/* Whether path is ws or below it: the view shows the workspace's overlay
 * there, which shows none of the host's mounts below it. */
static bool in_workspace(const char *path, const char *ws)
{
	size_t n = ws ? strlen(ws) : 0;
	return n && !strncmp(path, ws, n) && (path[n] == '\0' || path[n] == '/' || !strcmp(ws, "/"));
}

/* On top of whatever is mounted at point: an empty read-only tmpfs on a
 * directory, /dev/null on anything else (a bind of a file). */
static int cover_kernel_view(const sandbox_spec *s, const char *point, char *msg, size_t len)
{
	struct stat st;
	if (in_workspace(point, s->workspace))
		return 0;
	if (lstat(point, &st) < 0)
		return errno == ENOENT || errno == EACCES ? 0 : failf(msg, len, errno, "hiding the host's %s", point);
	int r = S_ISDIR(st.st_mode) ? mount("none", point, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
					    "size=4k,mode=0555")
				    : mount("/dev/null", point, NULL, MS_BIND, NULL);
	return r < 0 && errno != ENOENT ? failf(msg, len, errno, "hiding the host's %s", point) : 0;
}

/* The parts of sysfs hidden from root's command: firmware tables (ACPI,
 * DMI, EFI) and the machine's serial numbers. */
static const char *const sysfs_hidden[] = {"/firmware", "/devices/virtual/dmi"};

/* Where a sysfs mount whose root (in sysfs) is root shows the hidden part
 * h: below its mount point at the returned rest ("" for the mount point
 * itself: a mount of h or of a part of it), or NULL when it does not. */
static const char *sysfs_hidden_below(const char *root, const char *h)
{
	size_t n = strlen(h), rn = strcmp(root, "/") ? strlen(root) : 0;
	if (!strncmp(root, h, n) && (root[n] == '\0' || root[n] == '/'))
		return "";
	if (!strncmp(h, root, rn) && h[rn] == '/')
		return h + rn;
	return NULL;
}

/* The hidden part of sysfs at point + rest (rest NULL: not shown here). */
static int cover_sysfs_part(const sandbox_spec *s, const char *point, const char *rest, char *msg, size_t len)
{
	char p[PATH_MAX];
	if (!rest)
		return 0;
	if (snprintf(p, sizeof p, "%s%s", strcmp(point, "/") ? point : "", rest) >= (int)sizeof p)
		return failf(msg, len, ENAMETOOLONG, "hiding the firmware tables of the host's sysfs at %s", point);
	return cover_kernel_view(s, *p ? p : "/", msg, len);
}

static int hide_kernel_views(const sandbox_spec *s, char *msg, size_t len)
{
	if (s->use_userns)
		return 0;
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return failf(msg, len, errno, "reading /proc/self/mountinfo");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int r = 0;
	while (r == 0 && getline(&line, &cap, f) > 0) {
		mountinfo_line m;
		if (!mountinfo_parse(line, &m))
			continue;
		bool view = false;
		for (size_t i = 0; i < ARRAY_SIZE(kernel_view_types) && !view; i++)
			view = !strcmp(m.type, kernel_view_types[i]);
		if (view)
			r = cover_kernel_view(s, m.point, msg, len);
		for (size_t i = 0; r == 0 && !strcmp(m.type, "sysfs") && i < ARRAY_SIZE(sysfs_hidden); i++)
			r = cover_sysfs_part(s, m.point, sysfs_hidden_below(m.root, sysfs_hidden[i]), msg, len);
	}
	return r;
}

int mounts_view_seal(const sandbox_spec *s, mounts_view *v, char *msg, size_t len)
{
	int r = hide_kernel_views(s, msg, len);
	if (r < 0)
		return r;
	/* Everything read-only, then the few writable places writable again
	 * (they were created in this namespace, so they are not locked). */
	r = make_host_readonly(msg, len);
	if (r < 0)
		return r;
	if ((r = remount_rw(s->workspace, MS_NOSUID | MS_NODEV, msg, len)) < 0 ||
	    (r = remount_rw("/tmp", MS_NOSUID | MS_NODEV, msg, len)) < 0 ||
	    (v->var_tmp && (r = remount_rw("/var/tmp", MS_NOSUID | MS_NODEV, msg, len)) < 0) ||
	    (r = remount_rw("/dev/shm", MS_NOSUID | MS_NODEV, msg, len)) < 0 ||
	    (r = remount_rw("/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, msg, len)) < 0 ||
	    (run_hidden && (r = remount_rw("/run", MS_NOSUID | MS_NODEV | MS_NOEXEC, msg, len)) < 0) ||
	    (r = remount_rw("/dev/pts", MS_NOSUID | MS_NOEXEC, msg, len)) < 0)
		return r;
	trace_mark("view: read-only + remounts");
	/* Secrets last: every mount is made (Landlock rules bind to them). */
	if (v->read_layer_view_built >= 0) {
		/* a helper gone is not reported here: each command fails with its reason */
		if ((r = secrets_read_layer_view_built(&v->read_layer_view_built)) < 0)
			return failf(msg, len, -r, "masking secrets: telling the read layer's helper the view is built");
	} else if (s->masked_paths) {
		txbox_error e = TXBOX_ERROR_INIT;
		if (secrets_mask_paths_by_mounts(s->masked_paths, s->home, s->workspace,
						 (const char *const *)environ, &e) < 0) {
			r = failf(msg, len, 0, "masking secrets: %s", e.message ? e.message : "?");
			txbox_error_clear(&e);
			return r;
		}
	}
	trace_mark("view: secrets masked");
	if (chdir(s->cwd) < 0)
		return failf(msg, len, errno, "entering %s", s->cwd);
	return 0;
}
