/* snapshot/journal.c: a journal read back is hostile input. Damaged and
 * hand-made journals must be refused with a message, thousands of random
 * mutations of a valid one must parse into nothing unsafe, and a reversal
 * never restores owner or mode a journal merely claims. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/snapshot.h"
#include "util/fsutil.h"

static const char VALID[] = "txbox-journal 2 trusted\n"
			    "0 1 100 200 100644 1000 1000 1700000000 5 1700000000 6 612f62\n"
			    "1 1 300 400 40755 0 0 1 2 3 4 64\n"
			    "4 0 500 0 0 0 0 0 0 0 0 6c\n"
			    "2 1 600 600 40755 1000 1000 1 0 1 0 -\n";

static int parse(const char *s, size_t len, plan *p)
{
	txbox_error e = TXBOX_ERROR_INIT;
	int r = journal_parse(s, len, p, &e);
	if (r < 0)
		assert_non_null(e.message); /* errors name the problem */
	txbox_error_clear(&e);
	return r;
}

static void test_valid(void **state)
{
	(void)state;
	plan p;
	assert_int_equal(parse(VALID, strlen(VALID), &p), 0);
	assert_int_equal(p.n, 4);
	assert_false(p.userxattr);
	assert_string_equal(p.ops[0].path, "a/b");
	assert_int_equal(p.ops[0].kind, PLAN_PUT);
	assert_int_equal(p.ops[0].old_ino, 200);
	assert_int_equal(p.ops[0].old_st.st_mtim.tv_nsec, 6);
	assert_int_equal(p.ops[2].kind, PLAN_LINK);
	assert_string_equal(p.ops[3].path, "");
	plan_free(&p);
}

/* Each replaces the line after the header of a valid journal. */
static const char *const HOSTILE_OPS[] = {
	"5 1 1 1 100644 0 0 0 0 0 0 61",                  /* unknown kind */
	"3 1 1 1 100644 0 0 0 0 0 0 61",                  /* in-place rewrite: no longer a kind */
	"-1 1 1 1 100644 0 0 0 0 0 0 61",                 /* negative kind */
	"0 2 1 1 100644 0 0 0 0 0 0 61",                  /* existed not 0/1 */
	"0 1 1 1 100644 0 0 0 0 0 0 2e2e",                /* ".." */
	"0 1 1 1 100644 0 0 0 0 0 0 612f2e2e2f62",        /* "a/../b" */
	"0 1 1 1 100644 0 0 0 0 0 0 2f6574632f706173737764", /* "/etc/passwd" */
	"0 1 1 1 100644 0 0 0 0 0 0 612f2f62",            /* "a//b" */
	"0 1 1 1 100644 0 0 0 0 0 0 612f",                /* "a/" */
	"0 1 1 1 100644 0 0 0 0 0 0 2e",                  /* "." */
	"0 1 1 1 100644 0 0 0 0 0 0 612e2f",              /* "a./" trailing slash */
	"0 1 1 1 100644 0 0 0 0 0 0 616",                 /* odd hex */
	"0 1 1 1 100644 0 0 0 0 0 0 4A",                  /* uppercase hex */
	"0 1 1 1 100644 0 0 0 0 0 0 610062",              /* NUL inside */
	"0 1 1 1 100644 0 0 0 0 0 0 ",                    /* empty path */
	"0 1 1 1 20644 0 0 0 0 0 0 61",                   /* a character device */
	"0 1 1 1 60644 0 0 0 0 0 0 61",                   /* a block device */
	"0 1 1 1 140644 0 0 0 0 0 0 61",                  /* a socket */
	"0 1 1 1 1100644 0 0 0 0 0 0 61",                 /* mode out of range */
	"0 1 1 1 100648 0 0 0 0 0 0 61",                  /* not octal */
	"0 1 1 1 100644 4294967295 0 0 0 0 0 61",         /* uid -1 */
	"0 1 1 1 100644 0 0 0 1000000000 0 0 61",         /* nsec out of range */
	"0 1 1 1 100644 0 0 0 0 0 0 61 ",                 /* trailing space */
	"0 1 1 1 100644 0 0 0 0 0 0 61 62",               /* 13 fields */
	"0 1 1 1 100644 0 0 0 0 0 61",                    /* 11 fields */
	"0  1 1 1 100644 0 0 0 0 0 0 61",                 /* empty field */
	"0 1 -1 1 100644 0 0 0 0 0 0 61",                 /* negative inode */
	"0 1 99999999999999999999999 1 100644 0 0 0 0 0 0 61", /* overflow */
	"0 1 +1 1 100644 0 0 0 0 0 0 61",                 /* sign */
	"0 1 0 1 100644 0 0 0 0 0 0 61",                  /* PUT without its new inode */
	"0 1 1 0 100644 0 0 0 0 0 0 61",                  /* an existing entry without its inode */
	"0 0 1 0 100644 0 0 0 0 0 0 61",                  /* nothing existed, yet a mode */
	"2 0 1 0 0 0 0 0 0 0 0 61",                       /* META of nothing */
	"1 0 1 0 0 0 0 0 0 0 0 61",                       /* DELETE of nothing */
	"0 1 1 1 100644 0 0 0 0 0 0 -",                   /* the root is only ever META */
	"0 1 1 1 100644 0 0 x 0 0 0 61",                  /* not a number */
};

static void test_hostile(void **state)
{
	(void)state;
	char buf[512];
	for (size_t i = 0; i < sizeof HOSTILE_OPS / sizeof *HOSTILE_OPS; i++) {
		int n = snprintf(buf, sizeof buf, "txbox-journal 2 trusted\n%s\n", HOSTILE_OPS[i]);
		plan p;
		if (parse(buf, (size_t)n, &p) != -EINVAL)
			fail_msg("accepted: %s", HOSTILE_OPS[i]);
	}
	static const char *const whole[] = {
		"",
		"txbox-journal 1\n",
		"txbox-journal 2 trusted", /* no newline */
		"txbox-journal 2 other\n",
		"txbox-journal 2 trusted\n0 1 1 1 100644 0 0 0 0 0 0 61", /* last line cut */
		"txbox-journal 2 trusted\n\n",
	};
	for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
		plan p;
		if (parse(whole[i], strlen(whole[i]), &p) >= 0)
			fail_msg("accepted journal %zu", i);
	}
}

/* Whatever a mutation produces, what parses is within the rules. */
static void check_sane(const plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const plan_op *o = &p->ops[i];
		assert_true(o->kind <= PLAN_KIND_MAX && (int)o->kind != 3);
		assert_true(o->path[0] != '/');
		assert_null(strstr(o->path, "//"));
		size_t l = strlen(o->path);
		assert_true(l == 0 || o->path[l - 1] != '/');
		assert_true(strcmp(o->path, "..") && strncmp(o->path, "../", 3) && !strstr(o->path, "/../") &&
			    (l < 3 || strcmp(o->path + l - 3, "/..")));
		assert_true(l > 0 || o->kind == PLAN_META);
		mode_t t = o->old_st.st_mode & S_IFMT;
		assert_true(!o->existed || t == S_IFREG || t == S_IFDIR || t == S_IFLNK || t == S_IFIFO);
		assert_true(o->old_st.st_mtim.tv_nsec >= 0 && o->old_st.st_mtim.tv_nsec < 1000000000);
	}
}

static void test_mutations(void **state)
{
	(void)state;
	srand(12345);
	size_t vl = strlen(VALID);
	char *buf = malloc(vl * 2 + 64);
	assert_non_null(buf);
	unsigned accepted = 0;
	for (int round = 0; round < 20000; round++) {
		memcpy(buf, VALID, vl);
		size_t len = vl;
		int edits = 1 + rand() % 4;
		for (int k = 0; k < edits; k++) {
			size_t at = (size_t)rand() % (len ? len : 1);
			static const char alphabet[] = "0123456789abcdef -/.\n\0xA";
			switch (rand() % 5) {
			case 0: /* replace a byte */
				buf[at] = alphabet[rand() % (int)(sizeof alphabet - 1)];
				break;
			case 1: /* insert one */
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = alphabet[rand() % (int)(sizeof alphabet - 1)];
				len++;
				break;
			case 2: /* delete one */
				if (len) {
					memmove(buf + at, buf + at + 1, len - at - 1);
					len--;
				}
				break;
			case 3: /* cut */
				len = at;
				break;
			default: /* random byte */
				buf[at] = (char)(rand() & 0xff);
			}
		}
		plan p;
		if (parse(buf, len, &p) == 0) {
			check_sane(&p);
			accepted++;
			plan_free(&p);
		}
	}
	free(buf);
	assert_true(accepted > 0); /* some mutations stay valid (e.g. a digit of a time) */
}

/* A reversal restores owner and mode only from the file saved at commit
 * time: a journal claiming setuid root for a workspace file changes neither. */
static void test_reverse_ignores_claims(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char root[] = "/var/tmp/txbox-journal-XXXXXX";
	assert_non_null(mkdtemp(root));
	int r = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(mkdirat(r, "ws", 0755), 0);
	assert_int_equal(mkdirat(r, "up", 0755), 0);
	assert_int_equal(mkdirat(r, "disp", 0700), 0);
	int ws = openat(r, "ws", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int up = openat(r, "up", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int disp = openat(r, "disp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = openat(ws, "victim", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, 1234, 1234), 0);
	assert_int_equal(fchmod(fd, 0755), 0);
	close(fd);
	struct stat st;
	assert_int_equal(fstatat(ws, "victim", &st, 0), 0);
	char j[256];
	int n = snprintf(j, sizeof j, "txbox-journal 2 trusted\n2 1 %llu %llu 104755 0 0 0 0 0 0 %s\n",
			 (unsigned long long)st.st_ino, (unsigned long long)st.st_ino, "76696374696d");
	plan p;
	assert_int_equal(parse(j, (size_t)n, &p), 0);
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(commit_reverse(ws, up, disp, &p, p.n, &e), 0);
	assert_int_equal(fstatat(ws, "victim", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_uid, 1234);
	plan_free(&p);
	txbox_error_clear(&e);
	close(ws);
	close(up);
	close(disp);
	close(r);
	int parent = open("/var/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fs_remove_tree_at(parent, root + strlen("/var/tmp/"), &e);
	close(parent);
	txbox_error_clear(&e);
}

/* The writer refuses what the reader would not accept, and the reader
 * accepts everything the writer writes: the longest allowed path (in a
 * line with every number at its widest) round-trips, one byte more is
 * refused before anything is written. */
static void test_write_read_bounds(void **state)
{
	(void)state;
	char dir[] = "/var/tmp/txbox-jbound.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	char *path = malloc(JOURNAL_PATH_MAX + 2);
	assert_non_null(path);
	for (size_t i = 0; i < JOURNAL_PATH_MAX + 1; i++)
		path[i] = i % 256 == 128 ? '/' : (char)(0x80 | (i & 0x3f)); /* any byte, components of 255 */
	path[JOURNAL_PATH_MAX] = '\0';
	plan_op op = {.kind = PLAN_META, .existed = true, .new_ino = (ino_t)-1, .old_ino = (ino_t)-1, .path = path};
	op.old_st.st_mode = S_IFDIR | 07777;
	op.old_st.st_uid = op.old_st.st_gid = (uid_t)-2;
	op.old_st.st_atim = (struct timespec){.tv_sec = LLONG_MIN + 1, .tv_nsec = 999999999};
	op.old_st.st_mtim = (struct timespec){.tv_sec = LLONG_MAX, .tv_nsec = 999999999};
	plan p = {.ops = &op, .n = 1, .userxattr = true};
	txbox_error e = TXBOX_ERROR_INIT;
	assert_int_equal(journal_write(dfd, &p, &e), 0);
	plan back;
	assert_int_equal(journal_read(dfd, &back, &e), 0);
	assert_int_equal(back.n, 1);
	assert_string_equal(back.ops[0].path, path);
	assert_int_equal(back.ops[0].old_st.st_atim.tv_sec, LLONG_MIN + 1);
	plan_free(&back);
	assert_int_equal(unlinkat(dfd, "journal", 0), 0);

	path[JOURNAL_PATH_MAX] = 'x'; /* one byte longer */
	path[JOURNAL_PATH_MAX + 1] = '\0';
	assert_int_equal(journal_write(dfd, &p, &e), -ENAMETOOLONG);
	assert_non_null(e.message);
	txbox_error_clear(&e);
	assert_int_equal(faccessat(dfd, "journal", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	free(path);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_reverse_ignores_claims),
		cmocka_unit_test(test_write_read_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
