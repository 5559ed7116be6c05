/* json: a small streaming JSON writer.
 *
 * Strings are raw bytes: valid UTF-8 is written as is (control characters
 * escaped), each byte of an invalid sequence becomes a lone surrogate
 * \udcXX (Python's "surrogateescape"), so file names round-trip exactly. */
#pragma once

#include "util/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct json_writer {
	strbuf out;
	bool need_comma; /* a value was written at the current nesting level */
} json_writer;

#define JSON_WRITER_INIT {STRBUF_INIT, false}

void json_obj_begin(json_writer *w);
void json_obj_end(json_writer *w);
void json_arr_begin(json_writer *w);
void json_arr_end(json_writer *w);
void json_key(json_writer *w, const char *key);
void json_str(json_writer *w, const char *s);          /* NULL → null */
void json_strn(json_writer *w, const char *s, size_t n);
void json_int(json_writer *w, int64_t v);
void json_uint(json_writer *w, uint64_t v);
void json_double(json_writer *w, double v);
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);

/* Convenience: key + value. */
void json_kv_str(json_writer *w, const char *key, const char *s);
void json_kv_int(json_writer *w, const char *key, int64_t v);
void json_kv_bool(json_writer *w, const char *key, bool v);

/* Escape bytes as a JSON string body (no quotes) into sb. */
void json_escape_into(strbuf *sb, const char *s, size_t n);

char *json_finish(json_writer *w); /* NULL on allocation failure */
