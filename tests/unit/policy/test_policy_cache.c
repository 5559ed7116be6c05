/* The compiled-policy cache (policy/cache.c): a cached policy decides as
 * the parsed one does; a cache for other text, or damaged in any way, is
 * never used and never crashes. Usage: test-policy-cache CORPUS_DIR */
#include "corpus.h"
#include "policy/internal.h"
#include "policy/policy.h"
#include "util/cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static const char *corpus_dir = "tests/corpus";

static int tmp_dir(char *path, size_t size)
{
	snprintf(path, size, "/tmp/txbox-policy-cache-XXXXXX");
	assert_non_null(mkdtemp(path));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void same_verdicts(const policy *a, const policy *b)
{
	policy_ctx ctx = {.workspace = "/work/ws", .cwd = "/work/ws", .home = "/home/agent"};
	static const char *const files[] = {"high-risk.txt", "benign.txt"};
	txbox_error err = TXBOX_ERROR_INIT;
	for (size_t f = 0; f < 2; f++) {
		char path[4096];
		corpus c;
		snprintf(path, sizeof(path), "%s/%s", corpus_dir, files[f]);
		assert_int_equal(corpus_load(path, &c), 0);
		for (size_t i = 0; i < c.n; i++) {
			policy_verdict va, vb;
			const char *argv[] = {c.lines[i]};
			assert_int_equal(policy_decide(a, &ctx, argv, 1, &va, &err), 0);
			assert_int_equal(policy_decide(b, &ctx, argv, 1, &vb, &err), 0);
			if (va.decision != vb.decision || strcmp(va.rule ? va.rule : "", vb.rule ? vb.rule : "") ||
			    strcmp(va.reason ? va.reason : "", vb.reason ? vb.reason : ""))
				fail_msg("%s:%zu differs between the cached and the parsed policy", files[f], c.lineno[i]);
			policy_verdict_free(&va);
			policy_verdict_free(&vb);
		}
		corpus_free(&c);
	}
}

static void test_roundtrip(void **state)
{
	(void)state;
	char dir[64];
	int dfd = tmp_dir(dir, sizeof dir);
	policy *parsed = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_buffer("default.yaml", policy_default_yaml, policy_default_yaml_len, &parsed, &err), 0);
	assert_null(policy_cache_load(dfd, policy_default_yaml, policy_default_yaml_len)); /* none yet */
	policy_cache_store(dfd, policy_default_yaml, policy_default_yaml_len, parsed);
	policy *cached = policy_cache_load(dfd, policy_default_yaml, policy_default_yaml_len);
	assert_non_null(cached);
	same_verdicts(parsed, cached);
	const policy_sandbox *a = policy_get_sandbox(parsed), *b = policy_get_sandbox(cached);
	assert_int_equal(a->memory_bytes, b->memory_bytes);
	assert_int_equal(a->pids, b->pids);
	assert_string_equal(a->env_deny[0], b->env_deny[0]);
	/* other text (one byte changed, or shorter): not used */
	char *other = malloc(policy_default_yaml_len);
	assert_non_null(other);
	memcpy(other, policy_default_yaml, policy_default_yaml_len);
	other[policy_default_yaml_len / 2] ^= 1;
	assert_null(policy_cache_load(dfd, other, policy_default_yaml_len));
	assert_null(policy_cache_load(dfd, policy_default_yaml, policy_default_yaml_len - 1));
	free(other);
	policy_free(cached);
	policy_free(parsed);
	DIR *d = fdopendir(dup(dfd));
	assert_non_null(d);
	int entries = 0;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] != '.') {
			entries++;
			unlinkat(dfd, de->d_name, 0);
		}
	closedir(d);
	assert_int_equal(entries, 1); /* one entry, named by the text */
	close(dfd);
	rmdir(dir);
}

/* Every truncation and many single-byte corruptions of the serialized
 * policy: decode rejects it or yields a policy (never crashes; ASan runs). */
static void test_damaged(void **state)
{
	(void)state;
	policy *parsed = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_int_equal(policy_load_buffer("default.yaml", policy_default_yaml, policy_default_yaml_len, &parsed, &err), 0);
	char *blob = NULL;
	size_t len = 0;
	assert_int_equal(policy_cache_encode(parsed, &blob, &len), 0);
	policy *ok = policy_cache_decode(blob, len);
	assert_non_null(ok);
	policy_free(ok);
	for (size_t cut = 0; cut < len; cut += 1 + cut / 64)
		assert_null(policy_cache_decode(blob, cut)); /* short: always refused */
	char *copy = malloc(len);
	assert_non_null(copy);
	srand(7);
	for (int round = 0; round < 3000; round++) {
		memcpy(copy, blob, len);
		size_t at = (size_t)rand() % len;
		copy[at] = (char)(rand() & 0xff);
		if (round % 3 == 0) /* a length field blown up */
			memset(copy + (at & ~(size_t)7), 0xfe, at + 8 <= len ? 8 : 1);
		policy *p = policy_cache_decode(copy, len);
		policy_free(p);
	}
	free(copy);
	free(blob);
	policy_free(parsed);
}

/* ---- where the cache may live ------------------------------------------- */

static bool exists(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static void mkdir_in(const char *root, const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0700), 0);
}

static int open_one(int ws_fd, const char *root, const char *rel)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	const char *bases[] = {path};
	return policy_cache_open(ws_fd, bases, 1);
}

/* A cache dir inside the workspace (directly, below it, through a symlink,
 * or not yet existing) or inside any directory holding a .txbox (another
 * workspace) is refused and nothing is created there; one outside is used. */
static void test_cache_location(void **state)
{
	(void)state;
	char root[64];
	_cleanup_close_ int root_fd = tmp_dir(root, sizeof root);
	mkdir_in(root, "ws");
	mkdir_in(root, "ws/deep");
	mkdir_in(root, "other");
	mkdir_in(root, "other/.txbox");
	mkdir_in(root, "out");
	assert_int_equal(symlinkat("ws/deep", root_fd, "link"), 0);
	char ws[PATH_MAX];
	snprintf(ws, sizeof ws, "%s/ws", root);
	_cleanup_close_ int ws_fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ws_fd >= 0);

	static const char *const refused[] = {"ws", "ws/deep", "link", "ws/missing", "link/missing", "other"};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		assert_int_equal(open_one(ws_fd, root, refused[i]), -1);
	assert_false(exists(root, "ws/txbox"));
	assert_false(exists(root, "ws/deep/txbox"));
	assert_false(exists(root, "ws/missing"));
	assert_false(exists(root, "ws/deep/missing"));
	assert_false(exists(root, "other/txbox"));
	assert_int_equal(open_one(-1, root, "out"), -1); /* no workspace: no cache */

	int fd = open_one(ws_fd, root, "out/made");
	assert_true(fd >= 0);
	close(fd);
	assert_true(exists(root, "out/made/txbox"));

	/* the first candidate outside every workspace wins */
	char in[PATH_MAX], out[PATH_MAX];
	snprintf(in, sizeof in, "%s/ws", root);
	snprintf(out, sizeof out, "%s/out", root);
	const char *bases[] = {in, NULL, "relative", out};
	fd = policy_cache_open(ws_fd, bases, ARRAY_SIZE(bases));
	assert_true(fd >= 0);
	close(fd);
	assert_true(exists(root, "out/txbox"));
	assert_false(exists(root, "ws/txbox"));
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "policy_load_file blocked on a FIFO\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(1);
}

/* A policy file that is a FIFO is refused at once, naming its type. */
static void test_fifo_policy(void **state)
{
	(void)state;
	char dir[64], path[PATH_MAX];
	_cleanup_close_ int dir_fd = tmp_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/policy.yaml", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	signal(SIGALRM, on_alarm);
	alarm(10);
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	assert_true(policy_load_file(path, &p, &err) < 0);
	alarm(0);
	assert_null(p);
	assert_non_null(strstr(err.message, "FIFO"));
	txbox_error_clear(&err);
	unlink(path);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		corpus_dir = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_cache_location),
		cmocka_unit_test(test_fifo_policy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
