/* sandbox/secrets: hiding secret files and environment variables.
 *
 * Masking runs inside the sandbox's private mount namespace, before the host
 * is remounted read-only:
 *   directory -> an empty tmpfs, mounted read-only, nosuid,nodev,noexec,
 *                mode 0700, 4 KiB, 2 inodes;
 *   other     -> an empty, read-only regular file (mode 0400) bind-mounted
 *                over it. The file lives on a small detached tmpfs built with
 *                the new mount API (fsopen/fsmount/open_tree/move_mount,
 *                Linux >= 5.2), so nothing is ever created on the host. On
 *                older kernels /dev/null is bind-mounted instead and the
 *                bind made read-only.
 * Symlinks are resolved first: a secret path that is a symlink (~/.ssh ->
 * /data/keys) masks what it points to, wherever that is, because that is
 * where the secret is readable from. A path that resolves to "/" is refused
 * (masking it would hide the whole system). Missing paths are skipped. */
#include "sandbox/harden.h"

#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* New mount API, by raw syscall (glibc < 2.36 has no wrappers). */
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING 1
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

#if defined(SYS_fsopen) && defined(SYS_fsconfig) && defined(SYS_fsmount) && \
	defined(SYS_open_tree) && defined(SYS_move_mount)
#define HAVE_NEW_MOUNT_API 1
#else
#define HAVE_NEW_MOUNT_API 0
#endif

#define MASK_TMPFS_OPTS "mode=0700,size=4k,nr_inodes=2"
#define MASK_FILE_NAME "empty"

#if HAVE_NEW_MOUNT_API
/* A detached, read-only tmpfs holding one empty 0400 file. Returns the
 * mount fd, or -errno (ENOSYS on kernels without the API). */
static int make_empty_file_mount(void)
{
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", "4", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	_cleanup_close_ int mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
					       MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return -errno;
	int f = openat(mnt, MASK_FILE_NAME, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0400);
	if (f < 0)
		return -errno;
	close(f);
	return steal_fd(mnt);
}

/* Clone the empty file out of the detached tmpfs, make the clone read-only,
 * and attach it over target. */
static int bind_empty_file(int empty_mnt, const char *target)
{
	_cleanup_close_ int tree = (int)syscall(SYS_open_tree, empty_mnt, MASK_FILE_NAME,
						OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return -errno;
#ifdef SYS_mount_setattr
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			      MOUNT_ATTR_NOEXEC};
	/* Kernels 5.2-5.11 lack mount_setattr: the file is 0400 and the
	 * sandbox holds no capabilities, which keeps it empty anyway. */
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0 &&
	    errno != ENOSYS)
		return -errno;
#endif
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}
#endif

/* Old kernels: /dev/null over the file, then make that bind read-only. */
static int bind_dev_null(const char *target)
{
	if (mount("/dev/null", target, NULL, MS_BIND, NULL) < 0)
		return -errno;
	if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		  NULL) < 0)
		return -errno;
	return 0;
}

static int mask_dir(const char *target)
{
	if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  MASK_TMPFS_OPTS) < 0)
		return -errno;
	return 0;
}

/* "~" and "~/x" against home; other paths as given. */
static char *expand_home(const char *path, const char *home)
{
	if (path[0] == '~' && (path[1] == '\0' || path[1] == '/')) {
		if (!home || home[0] != '/')
			return NULL;
		char *s = NULL;
		if (asprintf(&s, "%s%s", home, path + 1) < 0)
			return NULL;
		return s;
	}
	return strdup(path);
}

int secrets_mask_paths(const char *const *paths, const char *home, txbox_error *err)
{
	int empty_mnt = -1; /* built on first use */
	_cleanup_close_ int empty_guard = -1;
	bool new_api = HAVE_NEW_MOUNT_API;

	for (const char *const *p = paths; p && *p; p++) {
		if (!**p)
			continue;
		if ((*p)[0] == '~' && (!home || home[0] != '/'))
			continue; /* no home to expand against: nothing to hide there */
		_cleanup_free_ char *expanded = expand_home(*p, home);
		if (!expanded)
			return txbox_fail(err, -ENOMEM, "secrets: out of memory");
		if (expanded[0] != '/')
			return txbox_fail(err, -EINVAL, "secrets: %s: not an absolute path", *p);

		_cleanup_free_ char *real = realpath(expanded, NULL);
		if (!real) {
			if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
				continue; /* missing (or dangling): nothing to hide */
			return txbox_fail_errno(err, -errno, "secrets: resolving %s", expanded);
		}
		if (strcmp(real, "/") == 0)
			return txbox_fail(err, -EINVAL,
					  "secrets: %s resolves to / and cannot be masked", expanded);
		struct stat st;
		if (stat(real, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return txbox_fail_errno(err, -errno, "secrets: stat %s", real);
		}

		int r;
		if (S_ISDIR(st.st_mode)) {
			r = mask_dir(real);
		} else {
			r = -ENOSYS;
#if HAVE_NEW_MOUNT_API
			if (new_api && empty_mnt < 0) {
				empty_mnt = make_empty_file_mount();
				if (empty_mnt == -ENOSYS || empty_mnt == -EPERM) {
					new_api = false;
					empty_mnt = -1;
				} else if (empty_mnt < 0) {
					return txbox_fail_errno(err, empty_mnt,
								"secrets: making the empty file for %s", real);
				} else {
					empty_guard = empty_mnt;
				}
			}
			if (new_api)
				r = bind_empty_file(empty_mnt, real);
#endif
			if (r == -ENOSYS)
				r = bind_dev_null(real);
		}
		if (r < 0)
			return txbox_fail_errno(err, r, "secrets: masking %s", real);
	}
	return 0;
}

/* ---- environment ------------------------------------------------------- */

static bool name_denied(const char *entry, size_t namelen, const char *const *deny)
{
	char name[256];
	char *heap = NULL;
	char *n = name;
	if (namelen >= sizeof(name)) {
		heap = malloc(namelen + 1);
		if (!heap)
			return true; /* fail closed */
		n = heap;
	}
	memcpy(n, entry, namelen);
	n[namelen] = '\0';
	bool denied = false;
	for (const char *const *g = deny; g && *g && !denied; g++)
		denied = fnmatch(*g, n, FNM_CASEFOLD) == 0; /* github_token is GITHUB_TOKEN */
	free(heap);
	return denied;
}

void secrets_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

char **secrets_filter_env(char *const *envp, const char *const *deny, txbox_error *err)
{
	size_t n = 0;
	for (char *const *e = envp; e && *e; e++)
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out) {
		txbox_fail(err, -ENOMEM, "secrets: out of memory filtering the environment");
		return NULL;
	}
	size_t k = 0;
	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || eq == *e)
			continue; /* malformed: no name or no '=' */
		if (name_denied(*e, (size_t)(eq - *e), deny))
			continue;
		out[k] = strdup(*e);
		if (!out[k]) {
			secrets_env_free(out);
			txbox_fail(err, -ENOMEM, "secrets: out of memory filtering the environment");
			return NULL;
		}
		k++;
	}
	out[k] = NULL;
	return out;
}
