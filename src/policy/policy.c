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

static const char *const default_masked[] = {
	"~/.ssh",    "~/.gnupg",  "~/.aws",           "~/.azure",          "~/.config/gcloud",
	"~/.kube",   "~/.docker/config.json", "~/.netrc", "~/.git-credentials", "~/.npmrc",
	"~/.pypirc", NULL,
};

static const char *const default_env_deny[] = {
	"*_TOKEN",      "*_TOKEN_*",    "*SECRET*",      "*_KEY",          "*_KEY_*",
	"*PASSWORD*",   "*PASSWD*",     "AWS_*",         "*_CREDENTIALS*", "GITHUB_TOKEN",
	"GH_TOKEN",     "*API_KEY*",    "*APIKEY*",      "*PRIVATE_KEY*",  "*ACCESS_KEY*",
	"AZURE_*",      "GOOGLE_APPLICATION_CREDENTIALS", "NPM_TOKEN",     "SSH_AUTH_SOCK",
	"*_PAT",        NULL,
};

static char **strv_dup(arena *mem, const char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	char **out = arena_calloc(mem, n + 1, sizeof(*out));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = arena_strdup(mem, v[i])))
			return NULL;
	return out;
}

void policy_sandbox_set_defaults(policy_sandbox *s, arena *mem)
{
	static const char *const none[] = {NULL};
	memset(s, 0, sizeof(*s));
	s->masked_paths = strv_dup(mem, default_masked);
	s->env_deny = strv_dup(mem, default_env_deny);
	s->allowed_sockets = strv_dup(mem, none);
	s->network = false;
	s->strip_setuid = true;
}

void policy_free(policy *p)
{
	if (!p)
		return;
	arena_free(&p->mem);
	free(p);
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
	return policy_load_buffer(path, buf, len, out, err);
}

int policy_load_default(policy **out, txbox_error *err)
{
	/* The tree was parsed from policy_default_yaml at build time. */
	*out = NULL;
	return policy_from_tree("<built-in default policy>", policy_default_tree, out, err);
}
