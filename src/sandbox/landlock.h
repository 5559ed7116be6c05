/* sandbox/landlock: filesystem write confinement with Landlock. */
#pragma once

#include "util/error.h"

#include <stdbool.h>

/* Restrict the calling thread (requires NO_NEW_PRIVS or CAP_SYS_ADMIN):
 * write-type filesystem rights only beneath workspace and the NULL-terminated
 * writable list (missing entries are skipped); reading and executing stay
 * unrestricted. abi is landlock_probe_abi()'s answer (> 0). With ABI >= 6,
 * abstract unix sockets and signals are scoped to the sandbox. */
int harden_landlock_apply(int abi, const char *workspace, const char *const *writable,
			  bool network, txbox_error *err);

/* Fail-closed reading (secrets.c): a ruleset handling read_file and
 * execute (and refer, ABI >= 2), and rules granting them beneath one
 * O_PATH fd (dir: a directory). Return an fd / 0, or -errno. */
int landlock_read_ruleset(int abi);
int landlock_grant_read(int ruleset_fd, int fd, bool dir, int abi);
