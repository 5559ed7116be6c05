/* sandbox/caps: capability drop and securebits. */
#pragma once

#include "util/error.h"

#include <stdbool.h>

/* Drop the bounding and ambient sets. Unless in_userns, also lock
 * securebits (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE,
 * all locked) and clear the effective, permitted and inheritable sets, so
 * uid 0 can never regain capabilities through execve(). A process that holds
 * no capabilities (unprivileged, no user namespace) has nothing to drop:
 * that is not an error. */
int harden_caps_drop(bool in_userns, txbox_error *err);

/* Root of its own user namespace: keep only the file-ownership and signal
 * capabilities in the bounding set (see caps.c), clear the ambient set. */
int harden_caps_limit_namespaced(txbox_error *err);
