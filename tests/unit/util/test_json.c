/* util/json: escaping, invalid UTF-8 as lone surrogates, structure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/strbuf.h"

static char *esc(const char *s, size_t n)
{
	strbuf sb = STRBUF_INIT;
	json_escape_into(&sb, s, n);
	return strbuf_steal(&sb, NULL);
}

static void test_escape_ascii(void **state)
{
	(void)state;
	char *e = esc("a\"b\\c\n\t\x01\x7f", 9);
	assert_string_equal(e, "a\\\"b\\\\c\\n\\t\\u0001\\u007f");
	free(e);
}

static void test_valid_utf8_passes(void **state)
{
	(void)state;
	const char *s = "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80";
	char *e = esc(s, strlen(s));
	assert_string_equal(e, s);
	free(e);
}

static void test_invalid_utf8_surrogates(void **state)
{
	(void)state;
	/* lone continuation, truncated sequence, overlong, surrogate code point, 0xff */
	char *e = esc("\x80", 1);
	assert_string_equal(e, "\\udc80");
	free(e);
	e = esc("a\xe2\x80", 3);
	assert_string_equal(e, "a\\udce2\\udc80");
	free(e);
	e = esc("\xc0\xaf", 2);
	assert_string_equal(e, "\\udcc0\\udcaf");
	free(e);
	e = esc("\xed\xa0\x80", 3);
	assert_string_equal(e, "\\udced\\udca0\\udc80");
	free(e);
	e = esc("\xff\xfe", 2);
	assert_string_equal(e, "\\udcff\\udcfe");
	free(e);
}

static void test_embedded_nul(void **state)
{
	(void)state;
	char *e = esc("a\0b", 3);
	assert_string_equal(e, "a\\u0000b");
	free(e);
}

static void test_structure(void **state)
{
	(void)state;
	json_writer w = JSON_WRITER_INIT;
	json_obj_begin(&w);
	json_kv_str(&w, "a", "x");
	json_kv_int(&w, "n", -3);
	json_key(&w, "arr");
	json_arr_begin(&w);
	json_int(&w, 1);
	json_null(&w);
	json_bool(&w, true);
	json_double(&w, 1.5);
	json_arr_end(&w);
	json_kv_str(&w, "nul", NULL);
	json_obj_end(&w);
	char *s = json_finish(&w);
	assert_string_equal(s, "{\"a\":\"x\",\"n\":-3,\"arr\":[1,null,true,1.500],\"nul\":null}");
	free(s);
}

static void test_strbuf_growth(void **state)
{
	(void)state;
	strbuf sb = STRBUF_INIT;
	for (int i = 0; i < 10000; i++)
		assert_true(strbuf_appendf(&sb, "%d,", i));
	size_t len;
	char *s = strbuf_steal(&sb, &len);
	assert_int_equal(len, strlen(s));
	assert_true(strncmp(s, "0,1,2,", 6) == 0);
	assert_non_null(strstr(s, ",9999,"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_ascii),
		cmocka_unit_test(test_valid_utf8_passes),
		cmocka_unit_test(test_invalid_utf8_surrogates),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_strbuf_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
