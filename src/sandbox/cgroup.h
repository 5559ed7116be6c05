/* sandbox/cgroup: internals of the cgroup limits (limits.c) shared with the
 * unit tests. */
#pragma once

#include "sandbox/harden.h"

#include <time.h>

/* limits_cgroup_reap_stale with an explicit minimum age: only txbox-*
 * cgroups that are empty and were created at least min_age_sec ago are
 * removed (a younger empty one may belong to a txbox that has created it
 * and not attached its sandbox yet). */
int limits_cgroup_reap_stale_older_than(time_t min_age_sec, txbox_error *err);

/* Directory of the cgroup; for v1 the memory (else pids) hierarchy's. */
const char *limits_cgroup_path(const limits_cgroup *cg);
