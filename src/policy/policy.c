/* Policy lifetime and accessors: load from a file, a buffer or the default
 * compiled into the binary (policy/default.yaml via embed.py), free. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *policy_decision_name(policy_decision d)
{
	switch (d) {
	case POLICY_ALLOW:
		return "allow";
	case POLICY_HOLD:
		return "hold";
	case POLICY_DENY:
		return "deny";
	}
	return "deny";
}


const policy_sandbox *policy_get_sandbox(const policy *p) { return p ? &p->sandbox : NULL; }

int policy_load_buffer(const char *name, const char *buf, size_t len, policy **out, txbox_error *err)
{
	ynode *root = NULL;
	*out = NULL;
	if (!name)
		name = "<policy>";
	if (!buf && len)
		return txbox_fail(err, -EINVAL, "%s: no policy text", name);
	arena tree = {0};
	int r = ytree_parse(name, buf ? buf : "", len, &tree, &root, err);
	if (r == 0)
		r = policy_from_tree(name, root, out, err);
	arena_free(&tree);
	return r;
}

int policy_load_file(const char *path, policy **out, txbox_error *err)
{
	return policy_load_file_in(path, -1, out, err);
}

static const char *file_type_name(mode_t m)
{
	static const struct {
		mode_t type;
		const char *name;
	} types[] = {{S_IFDIR, "a directory"},		{S_IFIFO, "a FIFO"},	    {S_IFSOCK, "a socket"},
		     {S_IFCHR, "a character device"}, {S_IFBLK, "a block device"}, {S_IFLNK, "a symlink"}};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if ((m & S_IFMT) == types[i].type)
			return types[i].name;
	return "of an unknown type";
}

/* Opened without blocking (a FIFO or a device would hang open(2) before
 * any timeout applies) and accepted only as a regular file. */
static int open_policy_file(const char *path, struct stat *st, txbox_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "%s: cannot open the policy", path);
	if (fstat(fd, st) < 0)
		return txbox_fail_errno(err, -errno, "%s: cannot stat the policy", path);
	if (!S_ISREG(st->st_mode))
		return txbox_fail(err, -EINVAL, "%s: the policy is %s, not a regular file", path,
				  file_type_name(st->st_mode));
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return txbox_fail_errno(err, -errno, "%s: cannot open the policy", path);
	int r = fd;
	fd = -1;
	return r;
}

static int read_policy_file(const char *path, char **buf, size_t *len, txbox_error *err)
{
	struct stat st;
	_cleanup_close_ int fd = open_policy_file(path, &st, err);
	if (fd < 0)
		return fd;
	if (st.st_size > POLICY_MAX_FILE_BYTES)
		return txbox_fail(err, -EFBIG, "%s:1:1: policy is %lld bytes, over the limit of %d bytes",
				  path, (long long)st.st_size, POLICY_MAX_FILE_BYTES);
	*buf = malloc(POLICY_MAX_FILE_BYTES + 1);
	if (!*buf)
		return txbox_fail(err, -ENOMEM, "%s: out of memory", path);
	*len = 0;
	while (*len <= POLICY_MAX_FILE_BYTES) {
		ssize_t n = read(fd, *buf + *len, POLICY_MAX_FILE_BYTES + 1 - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return txbox_fail_errno(err, -errno, "%s: cannot read the policy", path);
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	if (*len > POLICY_MAX_FILE_BYTES)
		return txbox_fail(err, -EFBIG, "%s:1:1: policy is over the limit of %d bytes", path,
				  POLICY_MAX_FILE_BYTES);
	return 0;
}

/* The cache dir for a run in ws_fd: XDG's choice, else the usual one, else
 * the password database's home (HOME may point into the workspace; it is
 * looked up last: NSS costs more than the rest of a cache hit). */
static int cache_dir_for(int ws_fd)
{
	if (ws_fd < 0)
		return -1;
	char path[PATH_MAX];
	const char *home = getenv("HOME");
	const char *bases[2] = {getenv("XDG_CACHE_HOME"), NULL};
	if (home && snprintf(path, sizeof path, "%s/.cache", home) < (int)sizeof path)
		bases[1] = path;
	int fd = policy_cache_open(ws_fd, bases, ARRAY_SIZE(bases));
	if (fd >= 0)
		return fd;
	const struct passwd *pw = getpwuid(geteuid());
	if (!pw || !pw->pw_dir || snprintf(path, sizeof path, "%s/.cache", pw->pw_dir) >= (int)sizeof path)
		return -1;
	bases[0] = path;
	return policy_cache_open(ws_fd, bases, 1);
}

int policy_load_file_in(const char *path, int ws_fd, policy **out, txbox_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	*out = NULL;
	int r = read_policy_file(path, &buf, &len, err);
	if (r < 0)
		return r;
	_cleanup_close_ int cache_fd = cache_dir_for(ws_fd);
	if ((*out = policy_cache_load(cache_fd, buf, len)))
		return 0;
	r = policy_load_buffer(path, buf, len, out, err);
	if (r == 0)
		policy_cache_store(cache_fd, buf, len, *out);
	return r;
}

int policy_load_default(policy **out, txbox_error *err)
{
	/* Loaded and validated from policy_default_yaml at build time. */
	(void)err;
	*out = policy_default_compiled; /* static data; policy_free leaves it */
	return 0;
}
