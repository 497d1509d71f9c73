// The native hook's code layout. What runs on every operator is hot (GCC and
// Clang put it in .text.hot, which the linker gathers, next to the
// callbacks); what runs once per name or per thread is cold (out of those
// cache lines). Between two operators torch's own code evicts most of the
// instruction cache, so every line the per-event path spans is a likely
// miss. See _torch_op_names.cpp.
#pragma once

#define PK_HOOK_HOT __attribute__((hot))
#define PK_HOOK_COLD __attribute__((noinline, cold))
