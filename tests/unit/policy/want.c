/* See want.h. */
#include "want.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Is the verdict, its rule and (a part of) its reason as expected? Every
 * line is checked and printed when it is not, so a run lists them all. */
static bool expect(const policy *p, const policy_ctx *c, const want *w)
{
	policy_verdict v;
	txbox_error err = TXBOX_ERROR_INIT;
	const char *argv[] = {w->line};
	if (policy_decide(p, c, argv, 1, &v, &err) < 0)
		fail_msg("%s", err.message);
	bool ok = v.decision == w->dec && strcmp(v.rule, w->rule) == 0 &&
		  (!w->reason || strstr(v.reason, w->reason));
	if (!ok)
		print_error("%s (network %d): got %s/%s (%s), want %s/%s (%s)\n", w->line, c->network,
			    policy_decision_name(v.decision), v.rule, v.reason,
			    policy_decision_name(w->dec), w->rule, w->reason ? w->reason : "");
	policy_verdict_free(&v);
	return ok;
}

void expect_all(const policy *p, const policy_ctx *c, const want *t, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += !expect(p, c, &t[i]);
	if (bad)
		fail_msg("%zu of %zu lines judged otherwise", bad, n);
}

policy *load_default(void)
{
	policy *p = NULL;
	txbox_error err = TXBOX_ERROR_INIT;
	if (policy_load_default(&p, &err) < 0)
		fail_msg("%s", err.message);
	return p;
}
