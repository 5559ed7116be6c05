/* libFuzzer target for the journal parser (snapshot/journal.c): a journal
 * read back is hostile input. Any bytes must parse or fail cleanly, and
 * what parses must be within the rules the reversal relies on. */
#include "snapshot/snapshot.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	plan p;
	txbox_error err = TXBOX_ERROR_INIT;
	if (journal_parse((const char *)data, size, &p, &err) == 0) {
		for (size_t i = 0; i < p.n; i++) {
			const plan_op *o = &p.ops[i];
			size_t l = strlen(o->path);
			mode_t t = o->old_st.st_mode & S_IFMT;
			if (o->kind > PLAN_KIND_MAX || o->path[0] == '/' || strstr(o->path, "//") ||
			    (l && o->path[l - 1] == '/') || !strcmp(o->path, "..") || !strncmp(o->path, "../", 3) ||
			    strstr(o->path, "/../") || (l >= 3 && !strcmp(o->path + l - 3, "/..")) ||
			    (!l && o->kind != PLAN_META) || t == S_IFCHR || t == S_IFBLK || t == S_IFSOCK)
				__builtin_trap();
		}
		plan_free(&p);
	} else if (!err.message) {
		__builtin_trap(); /* errors must name the problem */
	}
	txbox_error_clear(&err);
	return 0;
}
