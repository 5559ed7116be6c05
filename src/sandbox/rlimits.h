/* sandbox/rlimits: per-process resource limits (limits.c). */
#pragma once

#include "sandbox/harden.h"

/* Lower the RLIMIT_* named in o (0 = leave as is); never raises a hard
 * limit. RLIMIT_CPU gets soft = cpu_seconds, hard = soft + 1 (SIGXCPU, then
 * SIGKILL a second later). */
int harden_rlimits_apply(const harden_opts *o, txbox_error *err);
