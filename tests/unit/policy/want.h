/* Table-driven checks of the default policy: a line, the decision, rule
 * and a part of the reason wanted. */
#pragma once

#include "policy/policy.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	const char *line;
	policy_decision dec;
	const char *rule;
	const char *reason; /* a part of the reason, or NULL */
} want;

/* Fails the test listing every line judged otherwise. */
void expect_all(const policy *p, const policy_ctx *c, const want *t, size_t n);
policy *load_default(void);

#define EXPECT_ALL(p, c, table) expect_all(p, c, table, sizeof(table) / sizeof(*(table)))
