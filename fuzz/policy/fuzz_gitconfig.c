/* libFuzzer target: the git config reader of the effect check
 * (gitconfig_parse) on arbitrary bytes — the new version of .git/config is
 * the sandboxed command's. It must return an error or entries, never crash,
 * leak or hang; a config compared with a second parse of itself changes
 * no key, and compared with nothing, changes at most one key per entry.
 * The bytes up to a NUL are also taken as the old version and the rest as
 * the new one, and judged for redirection in each role (gitconfig_redirect);
 * a config judged against itself redirects nothing. */
#include "policy/effects.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

static void judge(gitconfig_entry *a, size_t na, gitconfig_entry *b, size_t nb, bool same)
{
	char **keys;
	size_t nk;
	if (gitconfig_changed_keys(a, na, b, nb, &keys, &nk) < 0)
		return;
	static const enum gitconfig_role roles[] = {GITCONFIG_REPO, GITCONFIG_NEW_REPO, GITCONFIG_OVERLAY};
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
		char *what = NULL;
		int r = gitconfig_redirect(a, na, b, nb, (const char *const *)keys, nk, roles[i], &what);
		if (r < 0 && r != -ENOMEM)
			abort();
		if (same && roles[i] == GITCONFIG_REPO && r != 0)
			abort(); /* nothing changed, nothing redirected */
		if (r == 1 && !what)
			abort();
		free(what);
	}
	free_keys(keys, nk);
}

/* Old version before the first NUL, new version after it. */
static void redirect_both(gitconfig_entry *whole, size_t nwhole, const char *data, size_t size)
{
	judge(whole, nwhole, whole, nwhole, true);
	const char *nul = memchr(data, '\0', size);
	if (!nul)
		return;
	gitconfig_entry *a, *b;
	size_t na, nb;
	if (gitconfig_parse(data, (size_t)(nul - data), &a, &na) < 0)
		return;
	if (gitconfig_parse(nul + 1, size - (size_t)(nul - data) - 1, &b, &nb) == 0) {
		judge(a, na, b, nb, false);
		gitconfig_free(b, nb);
	}
	gitconfig_free(a, na);
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
	redirect_both(a, na, (const char *)data, size);
	gitconfig_free(a, na);
	gitconfig_free(b, nb);
	return 0;
}
