/*
 * umath/order_twins.h - the per-tier entry points of the order kernels and comparisons (see
 * loops.h). No include guard: loops_<tier>.cpp includes it once, under its target options, with
 * BF16_ORDER_TIER set to its tier tag; the scans themselves are umath/order_scan.h, compiled here
 * for that tier.
 * twin_predicate and twin_logical are instantiated with every predicate and logical functor.
 * The comparisons' entry points are here too, over the compare_run<Op, Scalar> each tier file
 * defines before including this (float32 compares; Scalar 1: a is one value, 2: b is).
 */
namespace tier_order {
#include "umath/order_scan.h"
}

template <class Tier, bool IsMax>
void twin_minmax_scan(const char *in, npy_intp n, int16_t *best, uint16_t *any_nan,
                      uint16_t *any_snan)
{
    tier_order::minmax_scan<IsMax>(in, n, best, any_nan, any_snan);
}
template void twin_minmax_scan<BF16_ORDER_TIER, true>(const char *, npy_intp, int16_t *,
                                                      uint16_t *, uint16_t *);
template void twin_minmax_scan<BF16_ORDER_TIER, false>(const char *, npy_intp, int16_t *,
                                                       uint16_t *, uint16_t *);

template <class Tier, bool IsMax, bool Propagates, int Scalar>
uint16_t twin_minmax_pairs(const char *a, const char *b, char *o, npy_intp n)
{
    return tier_order::minmax_pairs<IsMax, Propagates, Scalar>(a, b, o, n);
}
#define BF16_INSTANTIATE_MINMAX_(IsMax, Propagates)                                             \
    template uint16_t twin_minmax_pairs<BF16_ORDER_TIER, IsMax, Propagates, 0>(const char *, const char *, \
                                                                               char *, npy_intp); \
    template uint16_t twin_minmax_pairs<BF16_ORDER_TIER, IsMax, Propagates, 1>(const char *, const char *, \
                                                                               char *, npy_intp); \
    template uint16_t twin_minmax_pairs<BF16_ORDER_TIER, IsMax, Propagates, 2>(const char *, const char *, \
                                                                               char *, npy_intp);
BF16_INSTANTIATE_MINMAX_(true, true)
BF16_INSTANTIATE_MINMAX_(false, true)
BF16_INSTANTIATE_MINMAX_(true, false)
BF16_INSTANTIATE_MINMAX_(false, false)
#undef BF16_INSTANTIATE_MINMAX_

template <class Tier>
void twin_clip_keys(const char *x, bf16_t lo, bf16_t hi, char *o, npy_intp n)
{
    tier_order::clip_keys(x, lo, hi, o, n);
}
template void twin_clip_keys<BF16_ORDER_TIER>(const char *, bf16_t, bf16_t, char *, npy_intp);
template <class Tier>
void twin_clip_keys_runs(const char *x, const char *lo, const char *hi, char *o, npy_intp n)
{
    tier_order::clip_keys_runs(x, lo, hi, o, n);
}
template void twin_clip_keys_runs<BF16_ORDER_TIER>(const char *, const char *, const char *,
                                                   char *, npy_intp);

template <class Tier, class Op> void twin_predicate(const char *in, npy_bool *o, npy_intp n)
{
    tier_order::predicate_scan<Op>(in, o, n);
}
#define BF16_INSTANTIATE_PREDICATE_(Op)                                                        \
    template void twin_predicate<BF16_ORDER_TIER, Op>(const char *, npy_bool *, npy_intp);
BF16_PREDICATES(BF16_INSTANTIATE_PREDICATE_)
#undef BF16_INSTANTIATE_PREDICATE_

template <class Tier> void twin_copysign(const char *a, const char *b, char *o, npy_intp n)
{
    tier_order::copysign_scan(a, b, o, n);
}
template void twin_copysign<BF16_ORDER_TIER>(const char *, const char *, char *, npy_intp);

template <class Tier> uint16_t twin_heaviside(const char *a, const char *b, char *o, npy_intp n)
{
    return tier_order::heaviside_scan(a, b, o, n);
}
template uint16_t twin_heaviside<BF16_ORDER_TIER>(const char *, const char *, char *, npy_intp);

template <class Tier, class Op>
uint16_t twin_logical(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    return tier_order::logical_scan<Op>(a, b, o, n);
}
#define BF16_INSTANTIATE_LOGICAL_(Op)                                                          \
    template uint16_t twin_logical<BF16_ORDER_TIER, Op>(const char *, const char *, npy_bool *,  \
                                                        npy_intp);
BF16_LOGICALS(BF16_INSTANTIATE_LOGICAL_)
#undef BF16_INSTANTIATE_LOGICAL_

template <class Tier, class Op>
void twin_compare(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    compare_run<Op, 0>(a, b, o, n);
}

template <class Tier, class Op>
void twin_compare_scalar(const char *arr, bf16_t scalar, bool scalar_first, npy_bool *o, npy_intp n)
{
    const char *s = (const char *)&scalar;
    scalar_first ? compare_run<Op, 1>(s, arr, o, n) : compare_run<Op, 2>(arr, s, o, n);
}
