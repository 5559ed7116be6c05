#pragma once
/* Phase tracer for speed work: TXBOX_TRACE=1 in the environment makes
 * trace_mark() record (time, pid, label) into a shared anonymous page that
 * forked and cloned children inherit, and trace_dump() print the timeline
 * to a file descriptor. Off (one branch per mark) otherwise. Labels must be
 * string literals: their addresses are valid in every forked child. */
void trace_init(void);
void trace_mark(const char *label);
void trace_dump(int fd);
