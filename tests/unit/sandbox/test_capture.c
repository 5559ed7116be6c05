/* Unit tests for sandbox/capture's terminal filter: what the command
 * writes reaches the user's terminal only as text and SGR colours, and a
 * sequence split across reads is recognised all the same. */
#include "sandbox/capture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Run s through a fresh filter in pieces of `step` bytes; the result in out. */
static void filter_in_steps(const char *s, size_t step, char *out, size_t outsz)
{
	term_filter f = {0};
	size_t n = strlen(s), o = 0;
	char piece[256];
	for (size_t i = 0; i < n; i += step) {
		size_t k = n - i < step ? n - i : step;
		size_t w = term_filter_run(&f, s + i, k, piece);
		assert_true(o + w < outsz);
		memcpy(out + o, piece, w);
		o += w;
	}
	out[o] = '\0';
}

static void expect_filtered(const char *in, const char *want)
{
	for (size_t step = 1; step <= strlen(in) + 1; step++) {
		char out[1024];
		filter_in_steps(in, step, out, sizeof out);
		if (strcmp(out, want) != 0)
			fail_msg("step %zu: got \"%s\", want \"%s\"", step, out, want);
	}
}

static void test_text_and_colours_pass(void **state)
{
	(void)state;
	expect_filtered("plain\ttext\r\nback\bspace", "plain\ttext\r\nback\bspace");
	expect_filtered("\033[1;31mred\033[0m \033[38:5:208mo\033[m", "\033[1;31mred\033[0m \033[38:5:208mo\033[m");
	expect_filtered("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
}

static void test_strings_dropped(void **state)
{
	(void)state;
	/* OSC 52 (clipboard), BEL- and ST-terminated; OSC 8; title set */
	expect_filtered("a\033]52;c;Y3VybCBldmlsfHNoCg==\007b", "ab");
	expect_filtered("a\033]52;c;Y3VybA==\033\\b", "ab");
	expect_filtered("\033]8;;http://x/\033\\link\033]8;;\033\\", "link");
	expect_filtered("\033]0;;rm -rf ~ #\007x", "x");
	/* DCS (DECRQSS), APC, PM, SOS */
	expect_filtered("\033P$q\"p\033\\y\033_apc\033\\\033^pm\007\033Xsos\033\\z", "yz");
	/* a string aborted by CAN, and one cut short by another ESC sequence */
	expect_filtered("\033]52;c;AAAA\030ok", "ok");
	expect_filtered("\033]52;c;AAAA\033[21tok", "ok");
}

static void test_other_sequences_dropped(void **state)
{
	(void)state;
	/* reports (title, cursor position, device attributes), modes, cursor */
	expect_filtered("a\033[21tb\033[6nc\033[cd\033[>0ce", "abcde");
	expect_filtered("\033[?1049h\033[2J\033[H\033[?2004lx", "x");
	/* SGR look-alikes with private markers or intermediates */
	expect_filtered("\033[?1m\033[1 m\033[>4;2mx", "x");
	/* two-byte ESC sequences, charset designations, keypad mode */
	expect_filtered("\033c\033(0\033#8\033=\033Zx", "x");
	/* C0 controls other than \t \n \r \b; DEL */
	expect_filtered("\a\x05\x0e\x0f\x7fx", "x");
}

static void test_c1_controls_dropped(void **state)
{
	(void)state;
	/* 8-bit CSI/OSC raw, and as UTF-8 (U+009B, U+009D) */
	expect_filtered("a\x9b" "21tb", "a21tb");
	expect_filtered("a\xc2\x9b" "6nb\xc2\x9d" "0;t\x07" "c", "a6nb0;tc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_and_colours_pass),
		cmocka_unit_test(test_strings_dropped),
		cmocka_unit_test(test_other_sequences_dropped),
		cmocka_unit_test(test_c1_controls_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
