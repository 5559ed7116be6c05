/* workspace: resolve and vet the directory a transaction works on. */
#include "tx/tx.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

int workspace_open(const char *path, char **canonical, int *ws_fd, txbox_error *err)
{
	*canonical = NULL;
	*ws_fd = -1;
	_cleanup_free_ char *cwd = NULL;
	if (!path) {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return txbox_fail_errno(err, -errno, "cannot determine the current directory");
		path = cwd;
	}
	if (!path[0])
		return txbox_fail(err, -EINVAL, "the workspace path is empty");
	if (strlen(path) >= PATH_MAX)
		return txbox_fail(err, -ENAMETOOLONG, "the workspace path is too long");
	_cleanup_free_ char *real = realpath(path, NULL);
	if (!real) {
		if (errno == ENOENT)
			return txbox_fail(err, -ENOENT, "the workspace %s does not exist", path);
		return txbox_fail_errno(err, -errno, "cannot resolve the workspace %s", path);
	}
	struct stat st;
	if (stat(real, &st) < 0)
		return txbox_fail_errno(err, -errno, "cannot stat the workspace %s", real);
	if (!S_ISDIR(st.st_mode))
		return txbox_fail(err, -ENOTDIR, "the workspace %s is not a directory", real);
	for (size_t i = 0; i < sizeof forbidden_exact / sizeof *forbidden_exact; i++)
		if (!strcmp(real, forbidden_exact[i]))
			return txbox_fail(err, -EPERM,
					  "refusing %s as a workspace: it is a system directory; use a project "
					  "directory",
					  real);
	for (size_t i = 0; i < sizeof forbidden_trees / sizeof *forbidden_trees; i++)
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
	struct statfs sf;
	if (statfs(real, &sf) < 0)
		return txbox_fail_errno(err, -errno, "cannot statfs the workspace %s", real);
	if ((unsigned long)sf.f_type == OVERLAYFS_MAGIC)
		return txbox_fail(err, -EXDEV,
				  "the workspace %s is on overlayfs (inside a container?): the kernel cannot use "
				  "it as an overlay's upper layer; put the workspace on a real filesystem (e.g. a "
				  "volume)",
				  real);
	if ((unsigned long)sf.f_type == NFS_MAGIC || (unsigned long)sf.f_type == FUSE_MAGIC ||
	    (unsigned long)sf.f_type == PROC_MAGIC || (unsigned long)sf.f_type == SYSFS_MAGIC)
		return txbox_fail(err, -EXDEV,
				  "the workspace %s is on a filesystem overlayfs cannot stack on (type 0x%lx)", real,
				  (unsigned long)sf.f_type);
	int fd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "cannot open the workspace %s", real);
	*ws_fd = fd;
	*canonical = steal_ptr(real);
	return 0;
}
