#pragma once
#include <stdint.h>
/* Monotonic time in nanoseconds and milliseconds (as double). */
uint64_t clock_now_ns(void);
double clock_ms_since(uint64_t start_ns);
