/* libFuzzer target: the git index reader of the effect check
 * (gitobj_index_each) on arbitrary bytes — .git/index is the sandboxed
 * command's. The first byte picks the object id length (20 or 32), the
 * rest is the index. It must answer or fail with -EBADMSG, never crash or
 * read past the end; every entry it reports has a path of at most 4095
 * bytes, stage 0-3, and stopping at the first entry stops the walk. */
#include "tx/gitobj.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *arg, const gitobj_index_entry *e)
{
	if (!e->path || strlen(e->path) > 4095 || e->stage > 3)
		abort();
	++*(size_t *)arg;
	return 0;
}

static int first(void *arg, const gitobj_index_entry *e)
{
	(void)e;
	++*(size_t *)arg;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t hashlen = data[0] & 1 ? 32 : 20, n = 0, m = 0;
	int r = gitobj_index_each(data + 1, size - 1, hashlen, count, &n);
	if (r < 0 && r != -EBADMSG)
		abort();
	r = gitobj_index_each(data + 1, size - 1, hashlen, first, &m);
	if (r < 0 && r != -EBADMSG)
		abort();
	if (m > 1 || (n > 0 && m != 1))
		abort(); /* a stop is a stop; whatever has entries has a first */
	return 0;
}
