/* Policy lifetime and accessors: load from a file, a buffer or the default
 * compiled into the binary (policy/default.yaml via embed.py), free. */
#include "policy/internal.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
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
	return policy_load_file_cached(path, false, out, err);
}

int policy_load_file_cached(const char *path, bool use_cache, policy **out, txbox_error *err)
{
	_cleanup_close_ int cache_fd = use_cache ? policy_cache_dir() : -1;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return txbox_fail_errno(err, -errno, "%s: cannot open the policy", path);
	if (fstat(fd, &st) < 0)
		return txbox_fail_errno(err, -errno, "%s: cannot stat the policy", path);
	if (!S_ISREG(st.st_mode))
		return txbox_fail(err, -EINVAL, "%s: the policy is not a regular file", path);
	if (st.st_size > POLICY_MAX_FILE_BYTES)
		return txbox_fail(err, -EFBIG, "%s:1:1: policy is %lld bytes, over the limit of %d bytes",
				  path, (long long)st.st_size, POLICY_MAX_FILE_BYTES);
	buf = malloc(POLICY_MAX_FILE_BYTES + 1);
	if (!buf)
		return txbox_fail(err, -ENOMEM, "%s: out of memory", path);
	while (len <= POLICY_MAX_FILE_BYTES) {
		ssize_t n = read(fd, buf + len, POLICY_MAX_FILE_BYTES + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return txbox_fail_errno(err, -errno, "%s: cannot read the policy", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > POLICY_MAX_FILE_BYTES)
		return txbox_fail(err, -EFBIG, "%s:1:1: policy is over the limit of %d bytes", path,
				  POLICY_MAX_FILE_BYTES);
	if ((*out = policy_cache_load(cache_fd, buf, len)))
		return 0;
	int r = policy_load_buffer(path, buf, len, out, err);
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
