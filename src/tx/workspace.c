/* workspace: resolve and vet the directory a transaction works on. */
#include "tx/tx.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define OVERLAYFS_MAGIC 0x794c7630
#define NFS_MAGIC 0x6969
#define PROC_MAGIC 0x9fa0
#define SYSFS_MAGIC 0x62656572
#define FUSE_MAGIC 0x65735546

/* Directories that are never a workspace themselves. */
static const char *const forbidden_exact[] = {
	"/",     "/bin",  "/boot",  "/dev",    "/etc",     "/home",    "/lib",    "/lib32",
	"/lib64", "/libx32", "/media", "/mnt",  "/opt",     "/proc",    "/root",   "/run",
	"/sbin",  "/srv",  "/sys",   "/tmp",    "/usr",     "/var",     "/var/tmp", "/var/lib",
	"/var/log", "/var/cache", "/var/spool", "/var/mail", "/nix", "/snap",
};
/* Trees no workspace may live in. */
static const char *const forbidden_trees[] = {
	"/proc", "/sys", "/dev", "/run", "/boot", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

static bool under(const char *path, const char *tree)
{
	size_t n = strlen(tree);
	return strncmp(path, tree, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether real (canonical) may be a workspace: not a system directory,
 * not $HOME. err may be NULL. */
static int vet_path(const char *real, txbox_error *err)
{
	for (size_t i = 0; i < ARRAY_SIZE(forbidden_exact); i++)
		if (!strcmp(real, forbidden_exact[i]))
			return txbox_fail(err, -EPERM,
					  "refusing %s as a workspace: it is a system directory; use a project "
					  "directory",
					  real);
	for (size_t i = 0; i < ARRAY_SIZE(forbidden_trees); i++)
		if (under(real, forbidden_trees[i]))
			return txbox_fail(err, -EPERM, "refusing %s as a workspace: it is inside the system tree %s",
					  real, forbidden_trees[i]);
	const char *home = getenv("HOME");
	if (home && home[0]) {
		_cleanup_free_ char *rhome = realpath(home, NULL);
		if (rhome && !strcmp(rhome, real))
			return txbox_fail(err, -EPERM,
					  "refusing the home directory %s as a workspace: it holds secrets and "
					  "start-up files; use a project directory",
					  real);
	}
	return 0;
}

/* The outermost of dir's first `limit` bytes' directories ("/", "/a",
 * "/a/b", … up to dir itself) that holds a .txbox directory: with own,
 * one owned by the caller in a directory that may be a workspace. Its path
 * goes to found; false when there is none. */
static bool outermost_workspace(const char *dir, size_t limit, bool own, char found[static PATH_MAX])
{
	size_t n = strlen(dir);
	for (size_t k = 0; k <= n && k < limit; k++) {
		if (!(k == 0 || k == n || dir[k] == '/') || (k == n && n == 1))
			continue;
		char p[PATH_MAX + sizeof "/" TX_STATE_DIR_NAME];
		snprintf(p, sizeof p, "%.*s/%s", (int)k, dir, TX_STATE_DIR_NAME);
		struct stat st;
		if (fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(found, PATH_MAX, "%.*s", k ? (int)k : 1, k ? dir : "/");
		if (!own || (st.st_uid == geteuid() && vet_path(found, NULL) == 0))
			return true;
	}
	return false;
}

#define SYMLINKS_MAX 40

typedef struct walk {
	int fd;              /* O_PATH of path */
	char path[PATH_MAX]; /* physical, absolute */
	char rest[2 * PATH_MAX]; /* what is left to resolve */
	size_t pos;
	int links;
} walk;

/* Follow the symlink at fd (named name in w->path): refused where w->path
 * is (inside) a txbox workspace; else its target replaces it in w->rest. */
static int walk_symlink(walk *w, int fd, const char *name, const char *logical, txbox_error *err)
{
	char ws[PATH_MAX], target[PATH_MAX];
	if (outermost_workspace(w->path, SIZE_MAX, false, ws))
		return txbox_fail(err, -ELOOP,
				  "refusing the workspace %s: it passes through the symlink %s%s%s inside the txbox "
				  "workspace %s, and a symlink there may have been committed by a transaction; name the "
				  "real directory (or work in %s)",
				  logical, w->path, strcmp(w->path, "/") ? "/" : "", name, ws, ws);
	ssize_t tl = readlinkat(fd, "", target, sizeof target - 1);
	if (tl <= 0 || ++w->links > SYMLINKS_MAX)
		return txbox_fail(err, -ELOOP, "cannot resolve the workspace %s: bad or too many symlinks", logical);
	target[tl] = '\0';
	char tail[2 * PATH_MAX];
	snprintf(tail, sizeof tail, "%s", w->rest + w->pos);
	if ((size_t)snprintf(w->rest, sizeof w->rest, "%s/%s", target, tail) >= sizeof w->rest)
		return txbox_fail(err, -ENAMETOOLONG, "cannot resolve the workspace %s: path too long", logical);
	w->pos = 0;
	if (target[0] == '/') {
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return txbox_fail_errno(err, -errno, "opening /");
		close(w->fd);
		w->fd = root;
		snprintf(w->path, sizeof w->path, "/");
	}
	return 0;
}

/* One component of w->rest; 1 when there was none left. */
static int walk_step(walk *w, const char *logical, txbox_error *err)
{
	while (w->rest[w->pos] == '/')
		w->pos++;
	size_t len = strcspn(w->rest + w->pos, "/");
	if (!len)
		return 1;
	char name[NAME_MAX + 1];
	if (len > NAME_MAX)
		return txbox_fail(err, -ENAMETOOLONG, "cannot resolve the workspace %s: a name is too long", logical);
	memcpy(name, w->rest + w->pos, len);
	name[len] = '\0';
	w->pos += len;
	if (!strcmp(name, "."))
		return 0;
	bool up = !strcmp(name, "..");
	_cleanup_close_ int fd = openat(w->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (errno == ENOENT)
			return txbox_fail(err, -ENOENT, "the workspace %s does not exist", logical);
		return txbox_fail_errno(err, -errno, "cannot resolve the workspace %s", logical);
	}
	if (S_ISLNK(st.st_mode))
		return walk_symlink(w, fd, name, logical, err);
	if (!S_ISDIR(st.st_mode) && w->rest[w->pos])
		return txbox_fail(err, -ENOTDIR, "cannot resolve the workspace %s: %s is not a directory", logical, name);
	size_t pl = strlen(w->path);
	if (up) {
		char *slash = strrchr(w->path, '/');
		slash[slash == w->path ? 1 : 0] = '\0';
	} else if (pl + 1 + len >= sizeof w->path)
		return txbox_fail(err, -ENAMETOOLONG, "the workspace path %s is too long", logical);
	else
		snprintf(w->path + pl, sizeof w->path - pl, "%s%s", pl > 1 ? "/" : "", name);
	close(w->fd);
	w->fd = steal_fd(fd);
	return 0;
}

/* The path as the caller sees it: relative paths and the current
 * directory are taken from $PWD when it names the current directory (a
 * shell's logical path keeps the symlinks it was reached through, which
 * getcwd() does not). */
static char *logical_path(const char *path, bool *physical)
{
	*physical = false;
	if (path && path[0] == '/')
		return strdup(path);
	const char *pwd = getenv("PWD");
	struct stat a, b;
	_cleanup_free_ char *cwd = NULL;
	if (!(pwd && pwd[0] == '/' && stat(pwd, &a) == 0 && stat(".", &b) == 0 && a.st_dev == b.st_dev &&
	      a.st_ino == b.st_ino)) {
		if (!(cwd = getcwd(NULL, 0)))
			return NULL;
		pwd = cwd;
		*physical = true;
	}
	char *out = NULL;
	if (asprintf(&out, "%s%s%s", pwd, path ? "/" : "", path ? path : "") < 0)
		return NULL;
	return out;
}

static int resolve(const char *logical, walk *w, txbox_error *err)
{
	w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->fd < 0)
		return txbox_fail_errno(err, -errno, "opening /");
	snprintf(w->path, sizeof w->path, "/");
	snprintf(w->rest, sizeof w->rest, "%s", logical);
	w->pos = 0;
	w->links = 0;
	int r;
	while ((r = walk_step(w, logical, err)) == 0)
		;
	return r < 0 ? r : 0;
}

/* A directory inside a workspace of the caller's: the current directory
 * stands for the outermost one (the command starts in it); a named one is
 * refused — the outer workspace's commands can write its state dir. */
static int enclosing(walk *w, bool named, txbox_error *err)
{
	char outer[PATH_MAX];
	if (!outermost_workspace(w->path, strlen(w->path), true, outer))
		return 0;
	if (named)
		return txbox_fail(err, -EPERM,
				  "refusing the workspace %s: it is inside the txbox workspace %s, whose "
				  "transactions can write anything in it, %s included; use -w %s",
				  w->path, outer, TX_STATE_DIR_NAME, outer);
	int fd = open(outer, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "opening the enclosing workspace %s", outer);
	close(w->fd);
	w->fd = fd;
	snprintf(w->path, sizeof w->path, "%s", outer);
	return 0;
}

/* A current directory known only by its physical path ($PWD missing or
 * naming another directory) stands for a workspace only when it is
 * (inside) one already: a directory reached through a symlink a
 * transaction published (cd W/link) would otherwise become a new
 * workspace outside W. Named with -w, or by a $PWD that names it, the path
 * is walked and such a symlink refused. */
static int existing_workspace(const walk *w, txbox_error *err)
{
	struct stat st;
	if (fstatat(w->fd, TX_STATE_DIR_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return txbox_fail(err, -ENOENT,
			  "the current directory %s is not a txbox workspace (it holds no %s) and $PWD does "
			  "not name it, so the path it was reached by is unknown: name the workspace with -w DIR "
			  "for its first use; later runs may start anywhere inside it",
			  w->path, TX_STATE_DIR_NAME);
}

static int check_owner(int fd, const char *path, unsigned flags, txbox_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "cannot stat the workspace %s", path);
	if (!S_ISDIR(st.st_mode))
		return txbox_fail(err, -ENOTDIR, "the workspace %s is not a directory", path);
	if (st.st_uid == geteuid() || (flags & WS_ALLOW_FOREIGN))
		return 0;
	char who[96], me[96];
	tx_owner_name(st.st_uid, who);
	tx_owner_name(geteuid(), me);
	return txbox_fail(err, -EPERM,
			  "refusing the workspace %s: it is owned by %s, not by you, %s; its owner controls what "
			  "is in it, its state dir included; pass --allow-foreign-workspace to run there anyway "
			  "(a state dir is then used only when it is yours)",
			  path, who, me);
}

/* ---- the caller's homes inside the workspace --------------------------- */

/* The deepest directory on the way to path the caller can open: path
 * itself, or where the command could create it (a home not there yet) or
 * open it up (one below a directory the caller may not search). A dangling
 * symlink is followed to its target. -1 (errno) when none opens. */
static int open_nearest_dir(const char *path)
{
	char p[PATH_MAX];
	if ((size_t)snprintf(p, sizeof p, "%s", path) >= sizeof p)
		return errno = ENAMETOOLONG, -1;
	for (int hops = 0; hops < 4 * SYMLINKS_MAX; hops++) {
		int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 || (errno != ENOENT && errno != ENOTDIR && errno != EACCES))
			return fd;
		char target[PATH_MAX];
		ssize_t tl = readlink(p, target, sizeof target - 1);
		char *slash = strrchr(p, '/');
		if (tl > 0) {
			target[tl] = '\0';
			size_t keep = target[0] == '/' || !slash ? 0 : (size_t)(slash - p) + 1;
			if (keep + (size_t)tl >= sizeof p)
				return errno = ENAMETOOLONG, -1;
			memcpy(p + keep, target, (size_t)tl + 1);
		} else if (!slash)
			snprintf(p, sizeof p, ".");
		else
			slash[slash == p ? 1 : 0] = '\0';
	}
	return errno = ELOOP, -1;
}

/* Whether the directory at fd is the one of ws or below it: each
 * directory on its physical path (the kernel's name of fd, symlinks
 * resolved), compared by device and inode with ws — a bind mount of the
 * workspace counts too. Walking down from / needs no search permission on
 * the directory itself (a HOME=/root the caller cannot enter is fine); an
 * ancestor the caller cannot reach is not the workspace (which it
 * reached). 1, 0, or -errno. */
static int physically_within(int fd, const struct stat *ws)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n <= 0 || path[0] != '/')
		return n < 0 ? -errno : -ENOENT;
	path[n] = '\0';
	for (;;) {
		struct stat st;
		if (stat(path, &st) == 0 && st.st_dev == ws->st_dev && st.st_ino == ws->st_ino)
			return 1;
		char *slash = strrchr(path, '/');
		if (slash == path && !path[1])
			return 0;
		slash[slash == path ? 1 : 0] = '\0';
	}
}

/* A workspace that contains one of the caller's homes ($HOME, and the
 * password database's home of the real uid) is refused: the command could
 * rewrite the start-up files (~/.bashrc, ~/.gitconfig's core.fsmonitor, …)
 * that the host then runs, and the effect rules do not look there. */
static int vet_homes(int ws_fd, const char *ws_path, txbox_error *err)
{
	struct stat ws;
	if (fstat(ws_fd, &ws) < 0)
		return txbox_fail_errno(err, -errno, "cannot stat the workspace %s", ws_path);
	struct passwd pwbuf, *pw = NULL;
	char tmp[2048];
	if (getpwuid_r(getuid(), &pwbuf, tmp, sizeof tmp, &pw) != 0)
		pw = NULL;
	const char *homes[2] = {getenv("HOME"), pw ? pw->pw_dir : NULL};
	static const char *const what[2] = {"$HOME", "your home in the password database"};
	for (int i = 0; i < 2; i++) {
		if (!homes[i] || !homes[i][0])
			continue;
		_cleanup_close_ int fd = open_nearest_dir(homes[i]);
		int in = fd < 0 ? -errno : physically_within(fd, &ws);
		if (in == 0)
			continue;
		if (in < 0)
			return txbox_fail_errno(err, in,
						"refusing the workspace %s: cannot tell whether it contains the home "
						"directory %s (%s)",
						ws_path, homes[i], what[i]);
		return txbox_fail(err, -EPERM,
				  "refusing the workspace %s: it contains the home directory %s (%s), whose "
				  "start-up files (~/.bashrc, ~/.gitconfig, …) the host runs and a command could "
				  "rewrite; use a workspace that does not hold the home, or set HOME outside it",
				  ws_path, homes[i], what[i]);
	}
	return 0;
}

int workspace_open(const char *path, unsigned flags, char **canonical, int *ws_fd, txbox_error *err)
{
	*canonical = NULL;
	*ws_fd = -1;
	if (path && !path[0])
		return txbox_fail(err, -EINVAL, "the workspace path is empty");
	if (path && strlen(path) >= PATH_MAX)
		return txbox_fail(err, -ENAMETOOLONG, "the workspace path is too long");
	bool physical;
	_cleanup_free_ char *logical = logical_path(path, &physical);
	if (!logical)
		return txbox_fail_errno(err, -errno, "cannot determine the current directory");
	_cleanup_free_ walk *w = calloc(1, sizeof *w);
	if (!w)
		return txbox_fail(err, -ENOMEM, "out of memory");
	int r = resolve(logical, w, err);
	_cleanup_close_ int pfd = w->fd;
	if (r < 0 || (r = enclosing(w, path != NULL, err)) < 0)
		return r;
	pfd = w->fd;
	if (!path && physical && !(flags & WS_CWD_NEW) && (r = existing_workspace(w, err)) < 0)
		return r;
	if ((r = check_owner(pfd, w->path, flags, err)) < 0 || (r = vet_path(w->path, err)) < 0 ||
	    (r = vet_homes(pfd, w->path, err)) < 0)
		return r;
	struct statfs sf;
	if (fstatfs(pfd, &sf) < 0)
		return txbox_fail_errno(err, -errno, "cannot statfs the workspace %s", w->path);
	if ((unsigned long)sf.f_type == OVERLAYFS_MAGIC)
		return txbox_fail(err, -EXDEV,
				  "the workspace %s is on overlayfs (inside a container?): the kernel cannot use "
				  "it as an overlay's upper layer; put the workspace on a real filesystem (e.g. a "
				  "volume)",
				  w->path);
	if ((unsigned long)sf.f_type == NFS_MAGIC || (unsigned long)sf.f_type == FUSE_MAGIC ||
	    (unsigned long)sf.f_type == PROC_MAGIC || (unsigned long)sf.f_type == SYSFS_MAGIC)
		return txbox_fail(err, -EXDEV,
				  "the workspace %s is on a filesystem overlayfs cannot stack on (type 0x%lx)", w->path,
				  (unsigned long)sf.f_type);
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "cannot open the workspace %s", w->path);
	if (!(*canonical = strdup(w->path))) {
		close(fd);
		return txbox_fail(err, -ENOMEM, "out of memory");
	}
	*ws_fd = fd;
	return 0;
}
