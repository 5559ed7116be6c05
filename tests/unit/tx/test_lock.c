/* tx/lock.c: a lock file no sandboxed command can hold against txbox.
 * Lock files are write-only (mode 0200; as root, group TXLOCK_GID, which
 * a root-mode command cannot reach), so a process without
 * CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH cannot open one for reading; a
 * flock never matters; a read lock that somebody privileged still takes
 * is waited for, never stolen; and mutual exclusion survives holders that
 * delete the lock file while holding it (as a transaction's removal does). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tx/lock.h"
#include "util/fsutil.h"

typedef struct fixture {
	char path[64];
	int fd;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	strcpy(f->path, "/tmp/test-txlock-XXXXXX");
	assert_non_null(mkdtemp(f->path));
	f->fd = open(f->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->fd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	fs_remove_tree_at(AT_FDCWD, f->path, NULL);
	close(f->fd);
	free(f);
	return 0;
}

static int read_lock(int fd)
{
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	return fcntl(fd, F_OFD_SETLK, &fl);
}

static ino_t ino_of(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino : 0;
}

/* Only "lock" is left: no claim file survives a take. */
static void assert_only_lock(int dirfd)
{
	int dup = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(dup);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			assert_string_equal(de->d_name, "lock");
			n++;
		}
	closedir(d);
	assert_int_equal(n, 1);
}

static void live_holder_makes_takers_wait(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(txlock_try(f->fd, "lock", false, &err), -ENOENT);
	int a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	assert_int_equal(txlock_try(f->fd, "lock", true, &err), -EBUSY);
	assert_non_null(strstr(err.message, "held by another txbox process"));
	txbox_error_clear(&err);
	close(a);
	int b = txlock_try(f->fd, "lock", false, &err);
	assert_true(b >= 0);
	close(b);
	assert_only_lock(f->fd);
}

static void lock_files_are_write_only(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	int a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	struct stat st;
	assert_int_equal(fstat(a, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0200);
	if (geteuid() == 0)
		assert_int_equal(st.st_gid, TXLOCK_GID);
	close(a);
	/* one an older txbox made readable is sealed by the next taker */
	assert_int_equal(fchmodat(f->fd, "lock", 0644, 0), 0);
	if (geteuid() == 0)
		assert_int_equal(fchownat(f->fd, "lock", 0, 0, AT_SYMLINK_NOFOLLOW), 0);
	a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	assert_int_equal(fstat(a, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0200);
	if (geteuid() == 0)
		assert_int_equal(st.st_gid, TXLOCK_GID);
	close(a);
}

/* What a sandboxed command is: the file's owner (rootless) or root, but
 * without capabilities over it. */
static void drop_dac_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		_exit(3);
	for (int i = 0; i < 2; i++)
		d[i].effective = 0;
	if (syscall(SYS_capset, &h, d) < 0)
		_exit(3);
}

static void without_capabilities_it_cannot_be_opened_to_read(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	close(txlock_try(f->fd, "lock", true, &err));
	pid_t p = fork();
	if (p == 0) {
		drop_dac_caps();
		int fd = openat(f->fd, "lock", O_RDONLY | O_CLOEXEC);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void a_read_lock_is_waited_for_not_stolen(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	close(txlock_try(f->fd, "lock", true, &err));
	if (geteuid() != 0)
		assert_int_equal(fchmodat(f->fd, "lock", 0600, 0), 0); /* a reader needs to open it */
	int r = openat(f->fd, "lock", O_RDONLY | O_CLOEXEC);
	assert_true(r >= 0);
	assert_int_equal(read_lock(r), 0);
	ino_t before = ino_of(f->fd, "lock");
	assert_int_equal(txlock_try(f->fd, "lock", true, &err), -EBUSY);
	assert_non_null(strstr(err.message, "read-locked by a process that is not txbox"));
	txbox_error_clear(&err);
	assert_true(ino_of(f->fd, "lock") == before);
	assert_only_lock(f->fd);
	close(r);
	int a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	close(a);
}

static void a_flock_alone_does_not_matter(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	close(txlock_try(f->fd, "lock", true, &err));
	int r = openat(f->fd, "lock", O_WRONLY | O_CLOEXEC);
	assert_int_equal(flock(r, LOCK_EX | LOCK_NB), 0);
	ino_t before = ino_of(f->fd, "lock");
	int a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	assert_true(ino_of(f->fd, "lock") == before);
	close(a);
	close(r);
}

static void not_a_regular_file_is_named(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(mkfifoat(f->fd, "lock", 0600), 0);
	assert_int_equal(txlock_try(f->fd, "lock", true, &err), -EINVAL);
	assert_non_null(strstr(err.message, "not a regular file"));
	txbox_error_clear(&err);
	assert_int_equal(unlinkat(f->fd, "lock", 0), 0);
	assert_int_equal(mkdirat(f->fd, "lock", 0700), 0);
	assert_int_equal(txlock_try(f->fd, "lock", true, &err), -EINVAL);
	assert_non_null(strstr(err.message, "not a regular file"));
	txbox_error_clear(&err);
	assert_int_equal(unlinkat(f->fd, "lock", AT_REMOVEDIR), 0);
	assert_int_equal(symlinkat("/etc/passwd", f->fd, "lock"), 0);
	assert_true(txlock_try(f->fd, "lock", true, &err) < 0);
	assert_non_null(strstr(err.message, "lock"));
	txbox_error_clear(&err);
}

/* Takers count in a shared file with a read-modify-write that is only
 * right under mutual exclusion. Every third holder deletes the lock file
 * before letting go, as a transaction's removal does: a taker that opened
 * the old file just before then locks a file without a name, and must not
 * count itself a holder. A flocker keeps flocking whatever the name leads
 * to, which must change nothing. */
#define TAKERS 4
#define ROUNDS 150

/* In a child: failures exit (a cmocka assertion there would run the rest
 * of the suite in the child). */
static void bump(int dirfd)
{
	int fd = openat(dirfd, "count", O_RDWR | O_CLOEXEC);
	char buf[32] = {0};
	if (fd < 0 || pread(fd, buf, sizeof buf - 1, 0) < 0)
		_exit(4);
	long n = strtol(buf, NULL, 10);
	struct timespec nap = {0, 20 * 1000};
	nanosleep(&nap, NULL); /* widen the window a second holder would hit */
	int len = snprintf(buf, sizeof buf, "%ld\n", n + 1);
	if (pwrite(fd, buf, (size_t)len, 0) != len)
		_exit(4);
	close(fd);
}

static void taker(int dirfd)
{
	for (int i = 0; i < ROUNDS; i++) {
		txbox_error err = TXBOX_ERROR_INIT;
		int fd;
		while ((fd = txlock_try(dirfd, "lock", true, &err)) < 0) {
			if (fd != -EBUSY && fd != -EAGAIN)
				_exit(2);
			txbox_error_clear(&err);
			sched_yield();
		}
		bump(dirfd);
		if (i % 3 == 0 && unlinkat(dirfd, "lock", 0) < 0)
			_exit(3);
		close(fd);
	}
	_exit(0);
}

static void flocker(int dirfd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		int fd = openat(dirfd, "lock", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			flock(fd, LOCK_EX | LOCK_NB);
			sched_yield();
			close(fd);
		}
	}
}

static void exclusion_holds(void **state)
{
	fixture *f = *state;
	int c = openat(f->fd, "count", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_int_equal(write(c, "0\n", 2), 2);
	close(c);
	pid_t fl = fork();
	if (fl == 0)
		flocker(f->fd);
	pid_t kids[TAKERS];
	for (int i = 0; i < TAKERS; i++)
		if ((kids[i] = fork()) == 0)
			taker(f->fd);
	for (int i = 0; i < TAKERS; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	kill(fl, SIGKILL);
	waitpid(fl, NULL, 0);
	char buf[32] = {0};
	c = openat(f->fd, "count", O_RDONLY | O_CLOEXEC);
	assert_true(read(c, buf, sizeof buf - 1) > 0);
	close(c);
	assert_int_equal(strtol(buf, NULL, 10), TAKERS * ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(live_holder_makes_takers_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(lock_files_are_write_only, setup, teardown),
		cmocka_unit_test_setup_teardown(without_capabilities_it_cannot_be_opened_to_read, setup, teardown),
		cmocka_unit_test_setup_teardown(a_read_lock_is_waited_for_not_stolen, setup, teardown),
		cmocka_unit_test_setup_teardown(a_flock_alone_does_not_matter, setup, teardown),
		cmocka_unit_test_setup_teardown(not_a_regular_file_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(exclusion_holds, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
