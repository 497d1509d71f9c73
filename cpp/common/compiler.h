// Compiler helpers shared by the engine. Header-only; no state.
#pragma once

#define PK_LIKELY(x) __builtin_expect(!!(x), 1)
#define PK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PK_NOINLINE __attribute__((noinline))
#define PK_ALWAYS_INLINE inline __attribute__((always_inline))
// The per-event hot path. Between two events a framework runs far more code
// than L1i holds, so each cache line of ours an event executes is a likely
// instruction-cache miss: GCC and Clang put `hot` functions in .text.hot,
// which the linker gathers in one place, so the few functions every event
// runs share lines and pages instead of being spread through the library;
// each starts a cache line, so that it spans as few as its size allows.
#define PK_HOT __attribute__((hot, aligned(64)))
// The rare slow paths the hot ones call (a new chunk, a new thread, a new
// window): GCC moves the blocks that call them out of the hot functions'
// lines too (into .text.unlikely).
#define PK_COLD __attribute__((cold))

// Thread-locals of the hot path: __thread (constant-initialized, so no C++
// TLS wrapper call). The engine is compiled with TLS descriptors
// (-mtls-dialect=gnu2, see cpp/CMakeLists.txt): when glibc can place the
// library's small TLS block in static TLS — the usual case — an access is a
// call to a two-instruction resolver; when it cannot (many other libraries
// loaded first) it still works, unlike the initial-exec model, which makes
// dlopen fail with "cannot allocate memory in static TLS block".
#define PK_TLS_FAST __thread
