/* quota: how much a transaction's layer holds, for the --disk limit. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Sum of allocated bytes (st_blocks * 512) under dirfd, never following
 * symlinks. Stops early once the sum exceeds stop_above (0: never).
 * Returns the sum (a lower bound when it stopped early), or UINT64_MAX
 * when the tree cannot be measured (fail closed). */
uint64_t quota_usage(int dirfd, uint64_t stop_above);
