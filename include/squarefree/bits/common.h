/* squarefree/bits/common.h: what every public header shares. Not for direct use.
 *
 * Primitive state is one or more 32-bit words held in the user's memory.
 * In C the words are `_Atomic uint32_t`, and the uncontended fast paths are
 * `static inline` functions in the headers.  In C++ (which has no `_Atomic`
 * before C++23) the same words are plain `uint32_t` of identical size and
 * alignment, and every call goes to the out-of-line function of the same
 * name in the library.  Define SQF_NO_INLINE to get the out-of-line calls in
 * C too (the library itself builds that way, and so does a schedule-exploring
 * test build, so that every atomic step passes through src/atomic.h).
 */
#ifndef SQUAREFREE_BITS_COMMON_H
#define SQUAREFREE_BITS_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
#define SQF_WORD             uint32_t
#define SQF_WORD64           uint64_t
#define SQF_INLINE_FAST_PATH 0
#define SQF_BEGIN_DECLS      extern "C" {
#define SQF_END_DECLS        }
#else
#include <stdatomic.h>
#define SQF_WORD   _Atomic uint32_t
#define SQF_WORD64 _Atomic uint64_t
#if defined(SQF_NO_INLINE)
#define SQF_INLINE_FAST_PATH 0
#else
#define SQF_INLINE_FAST_PATH 1
#endif
#define SQF_BEGIN_DECLS
#define SQF_END_DECLS
#endif

#if defined(__GNUC__)
#define SQF_API         __attribute__((visibility("default")))
#define SQF_LIKELY(x)   __builtin_expect(!!(x), 1)
#define SQF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SQF_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define SQF_API
#define SQF_LIKELY(x)   (x)
#define SQF_UNLIKELY(x) (x)
#define SQF_WARN_UNUSED
#endif

/* Flags accepted by the *_init functions. */
/** Process-private (the default, and what an all-zero initialiser gives). */
#define SQF_PRIVATE 0u
/** Process-shared: the primitive may live in memory shared between processes
 *  (fork, mmap MAP_SHARED).  Needs the futex wait backend; with the portable
 *  backend the init functions return ENOTSUP. */
#define SQF_SHARED 1u

#endif
