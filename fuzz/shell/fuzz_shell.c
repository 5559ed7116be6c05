/* libFuzzer target for the shell parser: any input must parse or fail
 * cleanly, without crashes, leaks, hangs or undefined behaviour. */
#include "shell/shell.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shell_limits lim = {.max_length = 1 << 16, .max_depth = 6, .max_nodes = 20000};
	shell_analysis a;
	txbox_error err = TXBOX_ERROR_INIT;
	int rc = shell_analyze((const char *)data, size, &lim, &a, &err);
	if (rc == 0) {
		/* touch the result so the fuzzer sees every field */
		for (size_t i = 0; i < a.ncmds; i++) {
			const shell_cmd *c = &a.cmds[i];
			for (size_t k = 0; k < c->argc; k++)
				(void)strlen(c->argv[k]);
			if (c->argv[c->argc] != NULL)
				__builtin_trap();
		}
		shell_analysis_free(&a);
	} else if (!err.message) {
		__builtin_trap(); /* errors must name the problem */
	}
	txbox_error_clear(&err);

	/* the same bytes as an argv split on NUL */
	const char *argv[16];
	size_t argc = 0, st = 0;
	char buf[4096];
	size_t n = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1;
	memcpy(buf, data, n);
	buf[n] = '\0';
	for (size_t i = 0; i <= n && argc < 16; i++)
		if (buf[i] == '\0') {
			argv[argc++] = buf + st;
			st = i + 1;
		}
	if (shell_analyze_argv(argv, argc, &lim, &a, &err) == 0)
		shell_analysis_free(&a);
	txbox_error_clear(&err);
	return 0;
}
