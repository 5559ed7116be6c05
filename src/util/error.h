/* txbox_error: how core code reports failures upward.
 *
 * Core functions return a negative errno-style int (or NULL) and fill a
 * caller-provided txbox_error with a status and an allocated message.
 * Context is prepended on the way up with txbox_error_prefix(). Only
 * front-ends print or exit. */
#pragma once

#include "txbox.h"

#include <stdarg.h>

/* Set err (if non-NULL and not already set) to code/message; returns code
 * (which should be negative) so callers can write `return txbox_fail(...)`. */
int txbox_fail(txbox_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like txbox_fail, with ": strerror(-code)" appended. */
int txbox_fail_errno(txbox_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend "context: " to an existing message; returns err->code. */
int txbox_error_prefix(txbox_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Move src into dst (dst must be clear); src becomes clear. */
void txbox_error_move(txbox_error *dst, txbox_error *src);
