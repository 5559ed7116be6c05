/* Unit tests for sandbox/secrets: environment filtering (pure) and path
 * masking (in a forked child with its own mount namespace). */
#include "sandbox/harden.h"

#include "child.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

/* ---- environment ------------------------------------------------------- */

static bool has(char **env, const char *entry)
{
	for (char **e = env; e && *e; e++)
		if (strcmp(*e, entry) == 0)
			return true;
	return false;
}

static size_t count(char **env)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	return n;
}

/* A mutable copy of a constant environment (char *const * is what the API takes). */
static char **env_dup(const char *const *src)
{
	size_t n = 0;
	while (src[n])
		n++;
	char **e = calloc(n + 1, sizeof(*e));
	assert_non_null(e);
	for (size_t i = 0; i < n; i++)
		assert_non_null(e[i] = strdup(src[i]));
	return e;
}

static void test_env_filter(void **state)
{
	(void)state;
	const char *const envc[] = {
		"PATH=/usr/bin", "HOME=/root", "AWS_SECRET_ACCESS_KEY=x", "AWS_REGION=eu",
		"GITHUB_TOKEN=t", "MY_API_KEY=k", "api_key=lower", "NOEQUALS",
		"=novalue", "EMPTY=", "SSH_AUTH_SOCK=/run/ssh", "TOKENIZER=ok", NULL,
	};
	char **envp = env_dup(envc);
	const char *deny[] = {"AWS_*", "*_TOKEN", "*API_KEY*", "SSH_AUTH_SOCK", NULL};
	txbox_error err = TXBOX_ERROR_INIT;
	char **out = secrets_filter_env(envp, deny, &err);
	assert_non_null(out);
	assert_true(has(out, "PATH=/usr/bin"));
	assert_true(has(out, "HOME=/root"));
	assert_true(has(out, "EMPTY="));
	assert_true(has(out, "TOKENIZER=ok"));
	assert_false(has(out, "api_key=lower")); /* names match case-insensitively */
	assert_false(has(out, "AWS_SECRET_ACCESS_KEY=x"));
	assert_false(has(out, "AWS_REGION=eu"));
	assert_false(has(out, "GITHUB_TOKEN=t"));
	assert_false(has(out, "MY_API_KEY=k"));
	assert_false(has(out, "SSH_AUTH_SOCK=/run/ssh"));
	assert_false(has(out, "NOEQUALS"));
	assert_false(has(out, "=novalue"));
	assert_int_equal(count(out), 4);
	/* copies, not aliases */
	for (char **e = out; *e; e++)
		for (char **s = envp; *s; s++)
			assert_ptr_not_equal(*e, *s);
	secrets_env_free(out);
	secrets_env_free(envp);
	assert_int_equal(err.code, 0);
}

static void test_env_filter_value_not_matched(void **state)
{
	(void)state;
	const char *const envc[] = {"SAFE=AWS_SECRET", "X=1", NULL};
	char **envp = env_dup(envc);
	const char *deny[] = {"AWS_*", "*=*", NULL};
	char **out = secrets_filter_env(envp, deny, NULL);
	assert_non_null(out);
	assert_int_equal(count(out), 2); /* globs see the name only */
	secrets_env_free(out);
	secrets_env_free(envp);
}

static void test_env_filter_empty(void **state)
{
	(void)state;
	char **out = secrets_filter_env(NULL, NULL, NULL);
	assert_non_null(out);
	assert_null(out[0]);
	secrets_env_free(out);
	const char *const envc[] = {"A=1", NULL};
	char **envp = env_dup(envc);
	out = secrets_filter_env(envp, NULL, NULL);
	assert_int_equal(count(out), 1);
	secrets_env_free(out);
	secrets_env_free(envp);
	secrets_env_free(NULL);
}

/* ---- masking ----------------------------------------------------------- */

static char g_home[64], g_elsewhere[64];

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size);
	close(fd);
	return n;
}

static size_t dir_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return (size_t)-1;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int write_proc(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace mapping our own uid/gid onto themselves. */
static int enter_userns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_proc("/proc/self/uid_map", map) < 0)
		return -1;
	(void)write_proc("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return write_proc("/proc/self/gid_map", map);
}

static void child_mask(void *arg)
{
	bool want_userns = arg != NULL;
	if (want_userns || unshare(CLONE_NEWNS) < 0) {
		if (enter_userns() < 0)
			_exit(CHILD_SKIP);
	}
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	const char *paths[] = {"~/.ssh", "~/.netrc", "~/.gnupg", "~/missing", "~/.aws/credentials",
			       "", NULL};
	txbox_error err = TXBOX_ERROR_INIT;
	int r = secrets_mask_paths(paths, g_home, &err);
	if (r < 0)
		fprintf(stderr, "mask: %s\n", err.message);
	CHILD_CHECK(r == 0);

	char p[256], buf[64];
	snprintf(p, sizeof(p), "%s/.ssh", g_home);
	CHILD_CHECK(dir_entries(p) == 0 || (dir_entries(p) == (size_t)-1 && errno == EACCES));
	snprintf(p, sizeof(p), "%s/.ssh/id_rsa", g_home);
	CHILD_CHECK(slurp(p, buf, sizeof(buf)) < 0);
	CHILD_CHECK(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0 &&
		    (errno == EROFS || errno == EACCES));
	snprintf(p, sizeof(p), "%s/.netrc", g_home);
	ssize_t n = slurp(p, buf, sizeof(buf));
	CHILD_CHECK(n == 0 || n == -EACCES);
	CHILD_CHECK(open(p, O_WRONLY | O_CLOEXEC) < 0 && (errno == EROFS || errno == EACCES));
	struct stat st;
	CHILD_CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
	snprintf(p, sizeof(p), "%s/.aws/credentials", g_home);
	n = slurp(p, buf, sizeof(buf));
	CHILD_CHECK(n == 0 || n == -EACCES);
	snprintf(p, sizeof(p), "%s/.aws/config", g_home); /* siblings untouched */
	CHILD_CHECK(slurp(p, buf, sizeof(buf)) == 6);
	/* the symlink's target is masked, under its real name too */
	snprintf(p, sizeof(p), "%s/.gnupg/secring", g_home);
	CHILD_CHECK(slurp(p, buf, sizeof(buf)) < 0);
	snprintf(p, sizeof(p), "%s/secring", g_elsewhere);
	CHILD_CHECK(slurp(p, buf, sizeof(buf)) < 0);
	snprintf(p, sizeof(p), "%s/.bashrc", g_home); /* the rest of home is there */
	CHILD_CHECK(slurp(p, buf, sizeof(buf)) == 5);
}

static void mask_paths(bool userns)
{
	char p[256];
	strcpy(g_home, "/tmp/txbox-home-XXXXXX");
	strcpy(g_elsewhere, "/tmp/txbox-else-XXXXXX");
	assert_non_null(mkdtemp(g_home));
	assert_non_null(mkdtemp(g_elsewhere));
	snprintf(p, sizeof(p), "%s/.ssh", g_home);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/.ssh/id_rsa", g_home);
	put(p, "PRIVATE KEY");
	snprintf(p, sizeof(p), "%s/.netrc", g_home);
	put(p, "machine x password y");
	snprintf(p, sizeof(p), "%s/.aws", g_home);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/.aws/credentials", g_home);
	put(p, "aws_secret=1");
	snprintf(p, sizeof(p), "%s/.aws/config", g_home);
	put(p, "region");
	snprintf(p, sizeof(p), "%s/.bashrc", g_home);
	put(p, "alias");
	snprintf(p, sizeof(p), "%s/secring", g_elsewhere);
	put(p, "GPG");
	snprintf(p, sizeof(p), "%s/.gnupg", g_home);
	assert_int_equal(symlink(g_elsewhere, p), 0);

	run_child(child_mask, userns ? &g_home : NULL);

	/* the host's files are untouched */
	char buf[64];
	snprintf(p, sizeof(p), "%s/.ssh/id_rsa", g_home);
	assert_int_equal(slurp(p, buf, sizeof(buf)), 11);
	snprintf(p, sizeof(p), "%s/.netrc", g_home);
	assert_int_equal(slurp(p, buf, sizeof(buf)), 20);
	snprintf(p, sizeof(p), "%s/secring", g_elsewhere);
	assert_int_equal(slurp(p, buf, sizeof(buf)), 3);

	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s' '%s'", g_home, g_elsewhere);
	assert_int_equal(system(cmd), 0);
}

static void test_mask_paths(void **state)
{
	(void)state;
	mask_paths(false);
}

static void test_mask_paths_in_userns(void **state)
{
	(void)state;
	mask_paths(true);
}

static void child_mask_root_refused(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWNS) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		_exit(CHILD_SKIP);
	const char *paths[] = {"~/evil", NULL};
	txbox_error err = TXBOX_ERROR_INIT;
	CHILD_CHECK(secrets_mask_paths(paths, (const char *)arg, &err) < 0);
	CHILD_CHECK(err.message && strstr(err.message, "resolves to /"));
	txbox_error_clear(&err);
	/* no home: "~" entries are skipped, not an error */
	CHILD_CHECK(secrets_mask_paths(paths, NULL, &err) == 0);
	/* relative paths are refused */
	const char *rel[] = {"relative/path", NULL};
	CHILD_CHECK(secrets_mask_paths(rel, NULL, &err) < 0);
	txbox_error_clear(&err);
}

static void test_mask_symlink_to_root_refused(void **state)
{
	(void)state;
	char home[64] = "/tmp/txbox-home2-XXXXXX", p[128];
	assert_non_null(mkdtemp(home));
	snprintf(p, sizeof(p), "%s/evil", home);
	assert_int_equal(symlink("/", p), 0);
	run_child(child_mask_root_refused, home);
	unlink(p);
	rmdir(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_filter),
		cmocka_unit_test(test_env_filter_value_not_matched),
		cmocka_unit_test(test_env_filter_empty),
		cmocka_unit_test(test_mask_paths),
		cmocka_unit_test(test_mask_paths_in_userns),
		cmocka_unit_test(test_mask_symlink_to_root_refused),
	};
	return cmocka_run_group_tests_name("sandbox-secrets", tests, NULL, NULL);
}
