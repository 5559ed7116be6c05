/* snapshot/: plan, commit and reversal on real directories, with a
 * hand-made upper layer (whiteouts, opaque dirs, overlay xattrs) standing
 * in for what overlayfs leaves. Needs root for whiteouts (mknod 0/0) and
 * trusted.* xattrs; skips otherwise. */
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
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "snapshot/snapshot.h"
#include "util/fsutil.h"

static char root[256];
static int ws = -1, up = -1, disp = -1;

static void mk(int dfd, const char *path, const char *content)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static char *slurp(int dfd, const char *path)
{
	static char buf[256];
	int fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(root, sizeof root, "/var/tmp/txbox-plan-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	int r = open(root, O_RDONLY | O_DIRECTORY);
	mkdirat(r, "ws", 0755);
	mkdirat(r, "up", 0755);
	mkdirat(r, "disp", 0700);
	mkdirat(r, "outside", 0755);
	ws = openat(r, "ws", O_RDONLY | O_DIRECTORY);
	up = openat(r, "up", O_RDONLY | O_DIRECTORY);
	disp = openat(r, "disp", O_RDONLY | O_DIRECTORY);
	close(r);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	close(ws);
	close(up);
	close(disp);
	txbox_error e = TXBOX_ERROR_INIT;
	int parent = open("/var/tmp", O_RDONLY | O_DIRECTORY);
	fs_remove_tree_at(parent, root + strlen("/var/tmp/"), &e);
	close(parent);
	txbox_error_clear(&e);
	return 0;
}

static const plan_op *find(const plan *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->ops[i].path, path))
			return &p->ops[i];
	return NULL;
}

/* find() for an op that must exist (fails the test otherwise) */
static const plan_op *must(const plan *p, const char *path)
{
	static plan_op none;
	const plan_op *o = find(p, path);
	if (!o) {
		fail_msg("no op for %s", path);
		return &none;
	}
	return o;
}

static void test_plan_commit_reverse(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	/* workspace */
	mk(ws, "gone", "old");
	mk(ws, "same", "same");
	mk(ws, "chm", "chm");
	mkdirat(ws, "dir", 0755);
	mk(ws, "dir/keep", "keep");
	mkdirat(ws, "opq", 0755);
	mk(ws, "opq/old", "old");
	char out[512];
	snprintf(out, sizeof out, "%s/outside", root);
	assert_int_equal(symlinkat(out, ws, "link"), 0);
	struct stat st;
	fstatat(ws, "same", &st, 0);

	/* upper: whiteout, identical copy-up, chmod copy-up, merged dir with a
	 * new file, opaque dir, a dir replacing a symlink to outside, setuid file,
	 * overlay-private xattrs */
	assert_int_equal(mknodat(up, "gone", S_IFCHR, makedev(0, 0)), 0);
	mk(up, "same", "same");
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	utimensat(up, "same", ts, 0);
	mk(up, "chm", "chm");
	fstatat(ws, "chm", &st, 0);
	struct timespec ts2[2] = {st.st_atim, st.st_mtim};
	utimensat(up, "chm", ts2, 0);
	assert_int_equal(fchmodat(up, "chm", 0600, 0), 0);
	mkdirat(up, "dir", 0755);
	mk(up, "dir/new", "new");
	mkdirat(up, "opq", 0755);
	char p[512];
	snprintf(p, sizeof p, "%s/up/opq", root);
	assert_int_equal(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	mk(up, "opq/fresh", "fresh");
	mkdirat(up, "link", 0755);
	snprintf(p, sizeof p, "%s/up/link", root);
	setxattr(p, "trusted.overlay.opaque", "y", 1, 0);
	mk(up, "link/passwd", "pwned");
	mk(up, "suid", "x");
	assert_int_equal(fchmodat(up, "suid", 04755, 0), 0);
	snprintf(p, sizeof p, "%s/up/suid", root);
	setxattr(p, "trusted.overlay.origin", "zz", 2, 0);

	plan pl;
	plan_opts po = {.strip_setuid = true};
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(plan_build(ws, up, &po, &pl, &e), 0);
	assert_null(find(&pl, "same")); /* copied up, never changed */
	assert_int_equal(must(&pl, "gone")->kind, PLAN_DELETE);
	assert_int_equal(must(&pl, "chm")->kind, PLAN_META);
	assert_int_equal(must(&pl, "chm")->change, TXBOX_CHANGE_METADATA);
	assert_int_equal(must(&pl, "dir/new")->kind, PLAN_PUT);
	assert_int_equal(must(&pl, "dir/new")->change, TXBOX_CHANGE_ADDED);
	assert_int_equal(must(&pl, "opq")->kind, PLAN_PUT);
	assert_int_equal(must(&pl, "link")->change, TXBOX_CHANGE_TYPE_CHANGED);
	assert_null(find(&pl, "link/passwd")); /* moves with its directory */

	assert_int_equal(journal_write(disp, &pl, &e), 0);
	plan back;
	assert_int_equal(journal_read(disp, &back, &e), 0);
	assert_int_equal(back.n, pl.n);
	for (size_t i = 0; i < pl.n; i++) {
		assert_string_equal(back.ops[i].path, pl.ops[i].path);
		assert_int_equal(back.ops[i].kind, pl.ops[i].kind);
		assert_int_equal(back.ops[i].new_ino, pl.ops[i].new_ino);
	}
	unlinkat(disp, "journal", 0);

	assert_int_equal(commit_apply(ws, up, disp, &pl, &e), 0);
	assert_int_equal(faccessat(ws, "gone", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	fstatat(ws, "chm", &st, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_string_equal(slurp(ws, "dir/new"), "new");
	assert_string_equal(slurp(ws, "dir/keep"), "keep");
	assert_int_equal(faccessat(ws, "opq/old", F_OK, 0), -1);
	assert_string_equal(slurp(ws, "opq/fresh"), "fresh");
	fstatat(ws, "link", &st, AT_SYMLINK_NOFOLLOW);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(p, sizeof p, "%s/outside/passwd", root);
	assert_int_equal(access(p, F_OK), -1); /* never written through the old symlink */
	fstatat(ws, "suid", &st, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(p, sizeof p, "%s/ws/suid", root);
	assert_true(getxattr(p, "trusted.overlay.origin", NULL, 0) < 0);
	snprintf(p, sizeof p, "%s/ws/opq", root);
	assert_true(getxattr(p, "trusted.overlay.opaque", NULL, 0) < 0);

	/* undo: everything as before */
	assert_int_equal(commit_reverse(ws, up, disp, &pl, pl.n, &e), 0);
	assert_string_equal(slurp(ws, "gone"), "old");
	fstatat(ws, "chm", &st, 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(faccessat(ws, "dir/new", F_OK, 0), -1);
	assert_string_equal(slurp(ws, "opq/old"), "old");
	fstatat(ws, "link", &st, AT_SYMLINK_NOFOLLOW);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(faccessat(ws, "suid", F_OK, 0), -1);
	plan_free(&back);
	plan_free(&pl);
	txbox_error_clear(&e);
}

static void test_refuses_devices(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	int u = openat(up, ".", O_RDONLY | O_DIRECTORY);
	mkdirat(u, "devdir", 0755);
	assert_int_equal(mknodat(u, "devdir/sda", S_IFBLK | 0600, makedev(8, 0)), 0);
	plan pl;
	plan_opts po = {.strip_setuid = true};
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(plan_build(ws, u, &po, &pl, &e), -EPERM);
	assert_non_null(strstr(e.message, "devdir/sda"));
	txbox_error_clear(&e);
	unlinkat(u, "devdir/sda", 0);
	close(u);
}

/* Planning past the deadline stops with -ETIMEDOUT, touching nothing. */
static void test_deadline(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	int u = openat(up, ".", O_RDONLY | O_DIRECTORY);
	mk(u, "late", "x");
	plan pl;
	plan_opts po = {.strip_setuid = true, .deadline_ns = 1};
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(plan_build(ws, u, &po, &pl, &e), -ETIMEDOUT);
	assert_non_null(strstr(e.message, "time limit"));
	assert_int_equal(faccessat(ws, "late", F_OK, 0), -1);
	txbox_error_clear(&e);
	unlinkat(u, "late", 0);
	close(u);
}

/* An inspected plan leaves the layer as it is, yet already says what will
 * be published (a stripped setuid bit is no change); plan_prepare then
 * makes the layer that, and refuses what plan_build would. */
static void test_inspect_then_prepare(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	int u = openat(up, ".", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mkdirat(ws, "ip", 0755), 0);
	assert_int_equal(mkdirat(u, "ip", 0755), 0);
	mk(ws, "ip/onlysuid", "a");
	struct stat st;
	assert_int_equal(fstatat(ws, "ip/onlysuid", &st, 0), 0);
	mk(u, "ip/onlysuid", "a");
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	assert_int_equal(utimensat(u, "ip/onlysuid", ts, 0), 0);
	assert_int_equal(fchmodat(u, "ip/onlysuid", 04644, 0), 0);
	mk(u, "ip/newsuid", "b");
	assert_int_equal(fchmodat(u, "ip/newsuid", 04755, 0), 0);
	char p[512];
	snprintf(p, sizeof p, "%s/up/ip/newsuid", root);
	assert_int_equal(setxattr(p, "trusted.overlay.origin", "zz", 2, 0), 0);

	plan pl;
	plan_opts po = {.strip_setuid = true, .inspect = true};
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(plan_build(ws, u, &po, &pl, &e), 0);
	assert_null(find(&pl, "ip/onlysuid"));
	assert_int_equal(must(&pl, "ip/newsuid")->new_st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(u, "ip/newsuid", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 04755); /* untouched */
	assert_true(getxattr(p, "trusted.overlay.origin", NULL, 0) > 0);
	assert_int_equal(plan_prepare(u, &po, &pl, &e), 0);
	assert_int_equal(fstatat(u, "ip/newsuid", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_true(getxattr(p, "trusted.overlay.origin", NULL, 0) < 0);
	plan_free(&pl);

	assert_int_equal(mknodat(u, "ip/sdb", S_IFBLK | 0600, makedev(8, 16)), 0);
	assert_int_equal(plan_build(ws, u, &po, &pl, &e), 0);
	assert_int_equal(plan_prepare(u, &po, &pl, &e), -EPERM);
	assert_non_null(strstr(e.message, "ip/sdb"));
	plan_free(&pl);
	txbox_error_clear(&e);
	unlinkat(u, "ip/sdb", 0);
	close(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_commit_reverse),
		cmocka_unit_test(test_refuses_devices),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_inspect_then_prepare),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
