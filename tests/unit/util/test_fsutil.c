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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_open),
		cmocka_unit_test(test_refuses_escapes),
		cmocka_unit_test(test_remove_tree_does_not_follow),
		cmocka_unit_test(test_atomic_write_and_read),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
