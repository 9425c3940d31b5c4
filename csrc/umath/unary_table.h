/*
 * umath/unary_table.h - a unary function of one bfloat16 has only 65,536 possible inputs.
 * For large arrays its results come from a table of all of them, built on first use with the
 * very computation the direct loop does (so results are identical), together with the IEEE
 * flags each input raises, which the loop raises again so np.errstate sees the same warnings.
 * (tests/test_ufuncs.py::test_large_array_table_path_matches_direct_loop)
 */
#ifndef BF16_UMATH_UNARY_TABLE_H
#define BF16_UMATH_UNARY_TABLE_H

#include "module.h"

#include <atomic>

namespace umath {

struct UnaryTable {
    bf16_t out[65536];
    uint8_t flags[65536]; /* UNARY_FLAG_* raised by each input */
};

enum { UNARY_FLAG_OVERFLOW = 1, UNARY_FLAG_INVALID = 2, UNARY_FLAG_DIVBYZERO = 4,
       UNARY_FLAG_UNDERFLOW = 8 };

/* One slot per functor: published once, never freed. */
template <class Op> inline std::atomic<UnaryTable *> unary_table_slot{nullptr};

/* Elements the functor has computed directly in calls that could use its table (n >= 64) while
 * none existed. Once this count reaches UNARY_TABLE_BUILD_AFTER the next such call builds the
 * table, so repeated calls on arrays of 10^3-10^4 elements stop paying the scalar functor (np.sinh
 * of 10^4 elements: ~110 us directly, ~4 us from the table). The build took 0.4-0.7 ms for
 * functions that raise no flag over most inputs (tan, cbrt, arcsinh) and 3-4 ms for those that
 * raise one over half of them (sinh, cosh, arcsin, arccosh), about what 2^18 direct evaluations
 * cost (AMD EPYC Zen 5), so the count waits for that much: such a workload pays at most about
 * twice its direct cost before the table serves it. */
template <class Op> inline std::atomic<int64_t> unary_direct_count{0};
constexpr int64_t UNARY_TABLE_BUILD_AFTER = (int64_t)1 << 18;

/* The table of `f` in `slot`; when it does not exist yet, built now if `build`, else nullptr
 * (also nullptr when memory runs out: the caller computes directly). Thread-safe, no GIL. */
const UnaryTable *unary_table_get(std::atomic<UnaryTable *> &slot, float (*f)(float), bool build);

/* The table of Op for a call of n elements: the existing one, or one built now when the call
 * has 32,768 elements or more, or brings the elements computed directly (in calls of 64 or more)
 * to UNARY_TABLE_BUILD_AFTER; nullptr while none exists. */
template <class Op>
const UnaryTable *unary_table_for_call(npy_intp n)
{
    const UnaryTable *table = unary_table_get(unary_table_slot<Op>, Op::f, false);
    if (table == nullptr && n >= 64) {
        int64_t direct = unary_direct_count<Op>.fetch_add(n, std::memory_order_relaxed) + n;
        table = unary_table_get(unary_table_slot<Op>, Op::f,
                                n >= 32768 || direct >= UNARY_TABLE_BUILD_AFTER);
    }
    return table;
}

/* o[i] = table result of a[i] for n strided elements, then raise the inputs' flags. */
void unary_table_apply(const UnaryTable *t, const char *a, npy_intp sa, char *o, npy_intp so,
                       npy_intp n);

/* Raise the IEEE flags a set of UNARY_FLAG_* bits stands for. */
void unary_table_raise(unsigned flags);

} /* namespace umath */

#endif
