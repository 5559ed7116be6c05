/* Unit tests of what the effect check reads from file content: blob ids
 * and the git index (tx/gitobj.c), package.json scripts (policy/effects.c).
 * Expected ids are git's (`git hash-object`), not this code's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/effects.h"
#include "tx/gitobj.h"

static void hex(const gitobj_oid *o, char out[41])
{
	for (int i = 0; i < 20; i++)
		sprintf(out + 2 * i, "%02x", o->b[i]);
}

static void test_blob_ids(void **state)
{
	(void)state;
	char h[41];
	gitobj_oid o;
	gitobj_blob_id_mem("", 0, &o);
	hex(&o, h);
	assert_string_equal(h, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	gitobj_blob_id_mem("hello\n", 6, &o);
	hex(&o, h);
	assert_string_equal(h, "ce013625030ba8dba906f756967f9e9ca394464a");
	/* a file over several hash blocks and read chunks, as the memory one */
	char path[] = "/tmp/txbox-blob-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t n = 200000;
	char *buf = malloc(n);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(i * 7 + i / 300);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	gitobj_oid a, b;
	assert_int_equal(gitobj_blob_id(fd, n, &a), 0);
	gitobj_blob_id_mem(buf, n, &b);
	assert_memory_equal(a.b, b.b, 20);
	assert_int_equal(gitobj_blob_id(fd, n - 1, &a), -EFBIG);
	free(buf);
	close(fd);
}

typedef struct seen {
	char paths[8][64];
	unsigned stage[8], size[8];
	size_t n;
} seen;

static int collect(void *arg, const gitobj_index_entry *e)
{
	seen *s = arg;
	if (s->n == 8)
		return 1;
	snprintf(s->paths[s->n], 64, "%s", e->path);
	s->stage[s->n] = e->stage;
	s->size[s->n++] = e->size;
	return 0;
}

static size_t put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
	p[3] = (unsigned char)v;
	return 4;
}

/* An entry of a version 2 (pad) or 4 (prefix) index: 40 bytes of stat,
 * the id, flags, the path. */
static size_t put_entry(unsigned char *p, unsigned version, const char *path, const char *v4_suffix, unsigned drop,
			unsigned stage, uint32_t size)
{
	size_t n = 0;
	memset(p, 0, 40);
	put_be32(p + 24, 0100644);
	put_be32(p + 36, size);
	n += 40;
	memset(p + n, 0xab, 20);
	n += 20;
	size_t len = strlen(path);
	p[n++] = (unsigned char)((stage << 4) | (len >> 8));
	p[n++] = (unsigned char)len;
	if (version == 4) {
		p[n++] = (unsigned char)drop;
		memcpy(p + n, v4_suffix, strlen(v4_suffix) + 1);
		return n + strlen(v4_suffix) + 1;
	}
	memcpy(p + n, path, len);
	n += len;
	size_t padded = (62 + len + 8) & ~(size_t)7;
	memset(p + n, 0, padded - n);
	return padded;
}

static void test_index(void **state)
{
	(void)state;
	unsigned char buf[1024];
	for (unsigned version = 2; version <= 4; version += 2) {
		size_t n = 0;
		memcpy(buf, "DIRC", 4);
		put_be32(buf + 4, version);
		put_be32(buf + 8, 3);
		n = 12;
		n += put_entry(buf + n, version, "src/a.c", "src/a.c", 0, 0, 11);
		n += put_entry(buf + n, version, "src/b.c", "b.c", 3, 0, 22);
		n += put_entry(buf + n, version, "x", "x", 7, 2, 33);
		seen s = {0};
		assert_int_equal(gitobj_index_each(buf, n, 20, collect, &s), 0);
		assert_int_equal(s.n, 3);
		assert_string_equal(s.paths[0], "src/a.c");
		assert_string_equal(s.paths[1], "src/b.c");
		assert_string_equal(s.paths[2], "x");
		assert_int_equal(s.stage[2], 2);
		assert_int_equal(s.size[1], 22);
		/* cut anywhere inside the entries: refused, never read beyond */
		for (size_t cut = 12; cut < n; cut++) {
			seen t = {0};
			assert_int_equal(gitobj_index_each(buf, cut, 20, collect, &t), -EBADMSG);
		}
	}
	/* a v4 prefix longer than the previous path */
	size_t n = 12;
	put_be32(buf + 4, 4);
	put_be32(buf + 8, 1);
	n += put_entry(buf + n, 4, "a", "a", 9, 0, 1);
	seen s = {0};
	assert_int_equal(gitobj_index_each(buf, n, 20, collect, &s), -EBADMSG);
	assert_int_equal(gitobj_index_each((const unsigned char *)"DIRX", 4, 20, collect, &s), -EBADMSG);
}

static const char *script(const gitconfig_entry *e, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].key, key))
			return e[i].value;
	return NULL;
}

static void test_pkgjson(void **state)
{
	(void)state;
	gitconfig_entry *a, *b;
	size_t na, nb;
	const char *name;
	const char *old = "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\",\"postinstall\":\"node s.js\"}}";
	assert_int_equal(pkgjson_scripts(old, strlen(old), &a, &na), 0);
	assert_int_equal(na, 2);
	assert_string_equal(script(a, na, "postinstall"), "node s.js");
	/* escapes decoded, the last duplicate wins, nested "scripts" ignored */
	const char *now = "\xef\xbb\xbf{\"scripts\":{\"x\":1},\"deps\":{\"scripts\":{\"prepare\":\"a\"}},"
			  "\"scripts\":{\"test\":\"jest\",\"p\\u006fstinstall\":\"no\",\"postinstall\":\"touch \\\"P\\\"\","
			  "\"arr\":[1,{\"a\":[true,null,-1.5e3]}],\"prettier\":\"prettier .\"}}";
	assert_int_equal(pkgjson_scripts(now, strlen(now), &b, &nb), 0);
	assert_int_equal(nb, 3);
	assert_string_equal(script(b, nb, "postinstall"), "touch \"P\"");
	assert_null(script(b, nb, "prepare"));
	assert_int_equal(pkgjson_hook_changed(a, na, b, nb, &name), 1);
	assert_string_equal(name, "postinstall");
	/* "prettier" is no hook (no script "ttier"); unchanged hooks pass */
	assert_int_equal(pkgjson_hook_changed(b, nb, b, nb, &name), 0);
	gitconfig_free(b, nb);
	const char *pre = "{\"scripts\":{\"prettier\":\"p\",\"lint\":\"l\",\"prelint\":\"x\"}}";
	assert_int_equal(pkgjson_scripts(pre, strlen(pre), &b, &nb), 0);
	assert_int_equal(pkgjson_hook_changed(a, na, b, nb, &name), 1);
	assert_string_equal(name, "prelint");
	gitconfig_free(b, nb);
	gitconfig_free(a, na);
	/* not JSON, trailing bytes, too deep: refused */
	static const char *const bad[] = {"", "[]", "{\"a\":}", "{\"a\":1} x", "{\"a\":\"\\q\"}", "{\"a\":01x}", NULL};
	for (size_t i = 0; bad[i]; i++) {
		assert_true(pkgjson_scripts(bad[i], strlen(bad[i]), &b, &nb) < 0);
		assert_null(b);
	}
	char deep[600];
	memset(deep, '[', sizeof deep);
	memcpy(deep, "{\"a\":", 5);
	assert_int_equal(pkgjson_scripts(deep, sizeof deep, &b, &nb), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blob_ids),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_pkgjson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
