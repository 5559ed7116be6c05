#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

static int set_message(txbox_error *err, int code, char *msg)
{
	if (!err) {
		free(msg);
		return code;
	}
	if (err->code != 0) { /* first error wins; keep the root cause */
		free(msg);
		return code;
	}
	err->code = code ? code : -EIO;
	err->message = msg ? msg : strdup("out of memory while formatting an error");
	return code;
}

int txbox_fail(txbox_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	return set_message(err, code, msg);
}

int txbox_fail_errno(txbox_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *msg = NULL;
	if (head && asprintf(&msg, "%s: %s", head, strerror(code < 0 ? -code : code)) < 0)
		msg = NULL;
	free(head);
	return set_message(err, code, msg);
}

int txbox_error_prefix(txbox_error *err, const char *fmt, ...)
{
	if (!err || err->code == 0)
		return err ? err->code : 0;
	va_list ap;
	va_start(ap, fmt);
	char *head = vformat(fmt, ap);
	va_end(ap);
	char *msg = NULL;
	if (head && asprintf(&msg, "%s: %s", head, err->message ? err->message : "") >= 0) {
		free(err->message);
		err->message = msg;
	}
	free(head);
	return err->code;
}

void txbox_error_clear(txbox_error *err)
{
	if (!err)
		return;
	free(err->message);
	err->message = NULL;
	err->code = 0;
}

void txbox_error_move(txbox_error *dst, txbox_error *src)
{
	*dst = *src;
	src->code = 0;
	src->message = NULL;
}
