/* tx/lock.c: a lock file that a reader (a sandboxed command sees every
 * other state dir read-only) cannot hold against txbox: read locks and
 * flocks on it never make a taker wait, a live holder always does, and
 * mutual exclusion survives a reader that grabs every file under the name
 * while many takers compete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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
	/* even a reader's open of the held file cannot take a read lock */
	int r = openat(f->fd, "lock", O_RDONLY | O_CLOEXEC);
	assert_int_equal(read_lock(r), -1);
	close(r);
	close(a);
	int b = txlock_try(f->fd, "lock", false, &err);
	assert_true(b >= 0);
	close(b);
	assert_only_lock(f->fd);
}

static void reader_locks_are_swapped_away(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	close(txlock_try(f->fd, "lock", true, &err));
	int r = openat(f->fd, "lock", O_RDONLY | O_CLOEXEC);
	assert_int_equal(read_lock(r), 0);
	assert_int_equal(flock(r, LOCK_EX | LOCK_NB), 0);
	ino_t before = ino_of(f->fd, "lock");
	int a = txlock_try(f->fd, "lock", true, &err);
	assert_true(a >= 0);
	assert_true(ino_of(f->fd, "lock") != before); /* a new file, born locked */
	assert_int_equal(txlock_try(f->fd, "lock", true, &err), -EBUSY);
	assert_only_lock(f->fd);
	close(a);
	close(r);
}

static void a_flock_alone_does_not_matter(void **state)
{
	fixture *f = *state;
	txbox_error err = TXBOX_ERROR_INIT;
	close(txlock_try(f->fd, "lock", true, &err));
	int r = openat(f->fd, "lock", O_RDONLY | O_CLOEXEC);
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
	assert_int_equal(symlinkat("/etc/passwd", f->fd, "lock"), 0);
	assert_true(txlock_try(f->fd, "lock", true, &err) < 0);
	assert_non_null(strstr(err.message, "lock"));
	txbox_error_clear(&err);
}

/* Takers count in a shared file with a read-modify-write that is only
 * right under mutual exclusion, while a reader keeps read-locking whatever
 * file the name leads to. */
#define TAKERS 4
#define ROUNDS 150

static void bump(int dirfd)
{
	int fd = openat(dirfd, "count", O_RDWR | O_CLOEXEC);
	char buf[32] = {0};
	assert_true(pread(fd, buf, sizeof buf - 1, 0) >= 0);
	long n = strtol(buf, NULL, 10);
	struct timespec nap = {0, 20 * 1000};
	nanosleep(&nap, NULL); /* widen the window a second holder would hit */
	int len = snprintf(buf, sizeof buf, "%ld\n", n + 1);
	assert_int_equal(pwrite(fd, buf, (size_t)len, 0), len);
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
		close(fd);
	}
	_exit(0);
}

static void reader(int dirfd)
{
	for (;;) {
		int fd = openat(dirfd, "lock", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			read_lock(fd);
			flock(fd, LOCK_SH | LOCK_NB);
			sched_yield();
			close(fd);
		}
	}
}

static void exclusion_holds_against_a_reader(void **state)
{
	fixture *f = *state;
	int c = openat(f->fd, "count", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_int_equal(write(c, "0\n", 2), 2);
	close(c);
	pid_t rd = fork();
	if (rd == 0)
		reader(f->fd);
	pid_t kids[TAKERS];
	for (int i = 0; i < TAKERS; i++)
		if ((kids[i] = fork()) == 0)
			taker(f->fd);
	for (int i = 0; i < TAKERS; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	kill(rd, SIGKILL);
	waitpid(rd, NULL, 0);
	char buf[32] = {0};
	c = openat(f->fd, "count", O_RDONLY | O_CLOEXEC);
	assert_true(read(c, buf, sizeof buf - 1) > 0);
	close(c);
	assert_int_equal(strtol(buf, NULL, 10), TAKERS * ROUNDS);
	unlinkat(f->fd, "count", 0);
	assert_only_lock(f->fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(live_holder_makes_takers_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(reader_locks_are_swapped_away, setup, teardown),
		cmocka_unit_test_setup_teardown(a_flock_alone_does_not_matter, setup, teardown),
		cmocka_unit_test_setup_teardown(not_a_regular_file_is_named, setup, teardown),
		cmocka_unit_test_setup_teardown(exclusion_holds_against_a_reader, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
