/* libFuzzer target: the git config reader of the effect check
 * (gitconfig_parse) on arbitrary bytes — the new version of .git/config is
 * the sandboxed command's. It must return an error or entries, never crash,
 * leak or hang; a config compared with a second parse of itself changes
 * no key, and compared with nothing, changes at most one key per entry. */
#include "policy/effects.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gitconfig_entry *a, *b;
	size_t na, nb, nk;
	char **keys;
	if (gitconfig_parse((const char *)data, size, &a, &na) < 0)
		return 0;
	if (gitconfig_parse((const char *)data, size, &b, &nb) < 0 || nb != na)
		abort(); /* the same bytes read differently */
	if (gitconfig_changed_keys(a, na, b, nb, &keys, &nk) == 0) {
		if (nk)
			abort();
		free_keys(keys, nk);
	}
	if (gitconfig_changed_keys(a, na, NULL, 0, &keys, &nk) == 0) {
		if (nk > na)
			abort();
		free_keys(keys, nk);
	}
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	return 0;
}
