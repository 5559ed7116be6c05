/* util/fsutil: beneath-only opens never follow symlinks or `..`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fsutil.h"

static char root[256];
static int rootfd = -1;

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof root, "/var/tmp/txbox-fsutil-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/ws", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/ws/d", root);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/outside", root);
	FILE *f = fopen(p, "w");
	fputs("secret", f);
	fclose(f);
	snprintf(p, sizeof p, "%s/ws/escape", root);
	assert_int_equal(symlink("..", p), 0);
	snprintf(p, sizeof p, "%s/ws/abs", root);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof p, "%s/ws/d/f", root);
	f = fopen(p, "w");
	fputs("ok", f);
	fclose(f);
	snprintf(p, sizeof p, "%s/ws", root);
	rootfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return rootfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	close(rootfd);
	txbox_error e = TXBOX_ERROR_INIT;
	int parent = open("/var/tmp", O_RDONLY | O_DIRECTORY);
	fs_remove_tree_at(parent, root + strlen("/var/tmp/"), &e);
	close(parent);
	txbox_error_clear(&e);
	return 0;
}

static void test_plain_open(void **state)
{
	(void)state;
	int fd = fs_open_beneath(rootfd, "d/f", O_RDONLY, 0);
	assert_true(fd >= 0);
	char buf[8] = {0};
	assert_int_equal(read(fd, buf, sizeof buf), 2);
	assert_string_equal(buf, "ok");
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

static void test_refuses_escapes(void **state)
{
	(void)state;
	assert_true(fs_open_beneath(rootfd, "../outside", O_RDONLY, 0) < 0);
	assert_true(fs_open_beneath(rootfd, "escape/outside", O_RDONLY, 0) < 0);
	assert_true(fs_open_beneath(rootfd, "abs/passwd", O_RDONLY, 0) < 0);
	assert_true(fs_open_beneath(rootfd, "abs", O_RDONLY, 0) < 0);
	assert_true(fs_open_beneath(rootfd, "/etc/passwd", O_RDONLY, 0) < 0);
	assert_true(fs_open_beneath(rootfd, "", O_RDONLY, 0) < 0);
	/* creating through a symlinked parent must fail too */
	assert_true(fs_open_beneath(rootfd, "escape/new", O_WRONLY | O_CREAT, 0600) < 0);
	char p[512];
	snprintf(p, sizeof p, "%s/new", root);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_remove_tree_does_not_follow(void **state)
{
	(void)state;
	txbox_error e = TXBOX_ERROR_INIT;
	int fd = fs_mkdir_p_at(rootfd, "t/a/b/c", 0755, &e);
	assert_true(fd >= 0);
	close(fd);
	char p[512];
	snprintf(p, sizeof p, "%s/ws/t/a/link", root);
	assert_int_equal(symlink(root, p), 0); /* points at the whole test root */
	assert_int_equal(fs_remove_tree_at(rootfd, "t", &e), 0);
	snprintf(p, sizeof p, "%s/outside", root);
	assert_int_equal(access(p, F_OK), 0); /* the symlink's target survived */
	assert_int_equal(faccessat(rootfd, "t", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	txbox_error_clear(&e);
}

static void test_atomic_write_and_read(void **state)
{
	(void)state;
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(fs_write_file_atomic(rootfd, "state", "hello", 5, 0600, &e), 0);
	char *buf = NULL;
	size_t len = 0;
	assert_int_equal(fs_read_file_at(rootfd, "state", 100, &buf, &len, &e), 0);
	assert_int_equal(len, 5);
	assert_string_equal(buf, "hello");
	free(buf);
	assert_true(fs_read_file_at(rootfd, "state", 3, &buf, &len, &e) < 0); /* over the cap */
	assert_non_null(e.message);
	txbox_error_clear(&e);
}

/* A tree deeper than any fixed limit (and than the fds a process may hold),
 * with read-only directories on the way, is removed whole, both by
 * fs_remove_tree_at and by fs_empty_dir_at (which keeps what keep says). */
static void make_deep(int dfd, const char *name, unsigned depth)
{
	assert_int_equal(mkdirat(dfd, name, 0755), 0);
	int cur = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cur >= 0);
	for (unsigned i = 0; i < depth; i++) {
		assert_int_equal(mkdirat(cur, "d", 0755), 0);
		if (i % 997 == 0) {
			int f = openat(cur, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
			assert_true(f >= 0);
			close(f);
			assert_int_equal(mkdirat(cur, "ro", 0500), 0);
		}
		int next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(next >= 0);
		if (i % 1499 == 0)
			fchmod(cur, 0500);
		close(cur);
		cur = next;
	}
	close(cur);
}

static bool keep_named_keep(int dirfd, const char *name, void *arg)
{
	(void)dirfd;
	(void)arg;
	return !strcmp(name, "keep");
}

static void test_remove_deep_tree(void **state)
{
	(void)state;
	struct rlimit old, low = {.rlim_cur = 48, .rlim_max = 0};
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low.rlim_max = old.rlim_max;
	make_deep(rootfd, "deep", 4200);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	txbox_error e = TXBOX_ERROR_INIT;
	int r = fs_remove_tree_at(rootfd, "deep", &e);
	setrlimit(RLIMIT_NOFILE, &old);
	assert_int_equal(r, 0);
	assert_int_equal(faccessat(rootfd, "deep", F_OK, AT_SYMLINK_NOFOLLOW), -1);

	assert_int_equal(mkdirat(rootfd, "e", 0755), 0);
	int e_fd = openat(rootfd, "e", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(e_fd >= 0);
	make_deep(e_fd, "deep", 4200);
	assert_int_equal(mkdirat(e_fd, "keep", 0755), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	r = fs_empty_dir_at(rootfd, "e", keep_named_keep, NULL, &e);
	setrlimit(RLIMIT_NOFILE, &old);
	assert_int_equal(r, 0);
	assert_int_equal(faccessat(e_fd, "deep", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(faccessat(e_fd, "keep", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	/* nothing hoisted was left behind in the directory kept */
	int dup = openat(e_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(dup);
	assert_non_null(d);
	size_t n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	assert_int_equal(n, 1);
	close(e_fd);
	txbox_error_clear(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_open),
		cmocka_unit_test(test_refuses_escapes),
		cmocka_unit_test(test_remove_tree_does_not_follow),
		cmocka_unit_test(test_atomic_write_and_read),
		cmocka_unit_test(test_remove_deep_tree),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
