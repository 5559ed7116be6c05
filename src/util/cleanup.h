/* Scope-bound cleanup helpers (__attribute__((cleanup))) and ownership
 * transfer. Use `_cleanup_free_ char *p = ...;` and hand ownership over with
 * `steal_ptr(p)` / `steal_fd(fd)`. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_fclose_ _cleanup_(fclosep)

#define steal_ptr(p)                         \
	({                                   \
		__typeof__(p) _tmp_ = (p);   \
		(p) = NULL;                  \
		_tmp_;                       \
	})
#define steal_fd(fd)                 \
	({                           \
		int _tmp_ = (fd);    \
		(fd) = -1;           \
		_tmp_;               \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
