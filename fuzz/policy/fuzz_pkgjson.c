/* libFuzzer target: the package.json reader of the effect check
 * (pkgjson_scripts) on arbitrary bytes — the new package.json is the
 * sandboxed command's. It must return an error or scripts, never crash,
 * leak or hang; every script has a name and a command; scripts compared
 * with themselves change no hook. The bytes up to a NUL are also taken as
 * the old version and the rest as the new one, and compared. */
#include "policy/effects.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int parse(const uint8_t *p, size_t n, gitconfig_entry **v, size_t *nv)
{
	*v = NULL;
	*nv = 0;
	int r = pkgjson_scripts((const char *)p, n, v, nv);
	if (r < 0 && r != -EINVAL && r != -E2BIG && r != -ENOMEM)
		abort();
	for (size_t i = 0; r == 0 && i < *nv; i++)
		if (!(*v)[i].key || !(*v)[i].value)
			abort();
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gitconfig_entry *a, *b;
	size_t na, nb;
	const char *name = NULL;
	if (parse(data, size, &a, &na) == 0 && pkgjson_hook_changed(a, na, a, na, &name) != 0)
		abort(); /* nothing changed */
	const uint8_t *nul = memchr(data, 0, size);
	if (nul && parse(nul + 1, size - (size_t)(nul + 1 - data), &b, &nb) == 0) {
		gitconfig_entry *old;
		size_t nold;
		if (parse(data, (size_t)(nul - data), &old, &nold) == 0) {
			pkgjson_hook_changed(old, nold, b, nb, &name);
			gitconfig_free(old, nold);
		}
		gitconfig_free(b, nb);
	}
	gitconfig_free(a, na);
	return 0;
}
