/* hostsockets: the host's bound pathname Unix sockets (/proc/net/unix of
 * txbox's network namespace), which the sandbox must not reach. */
#pragma once

#include <stddef.h>

/* NULL-terminated list of absolute socket paths (at most max), excluding
 * those under the trees the sandbox replaces anyway (/run, /var/run, /tmp,
 * /var/tmp, /dev/shm). Never fails: an unreadable /proc/net/unix gives an
 * empty list. Free with hostsockets_free. */
char **hostsockets_list(size_t max);
void hostsockets_free(char **list);
