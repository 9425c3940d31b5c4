/*
 * umath/order_scan.h - the hot loops of the order kernels in loops.h (maximum/minimum/fmax/fmin
 * reductions, comparisons with a scalar) and of the other integer-only loops on the bits
 * (isnan & co., copysign, logical_and/or/xor). No include guard on purpose: loops.h includes it in
 * namespace portable_order, and each loops_<tier>.cpp includes it again under its target options,
 * so the same integer-only code is vectorised for every tier. Written with masks instead of
 * branches or selects: GCC vectorises these loops only so.
 */

/* best: the largest (IsMax) or smallest order key among the non-NaN elements, or the `none` key
 * if there is none; any_nan: nonzero if an element is a NaN; any_snan: 0x40 if one is signalling */
template <bool IsMax>
static void minmax_scan_masked(const char *in, npy_intp n, int16_t *best_out, uint16_t *any_nan_out,
                        uint16_t *any_snan_out)
{
    const uint16_t none = IsMax ? 0x8000u : 0x7fffu;
    int16_t best = (int16_t)none;
    uint16_t any_nan = 0, any_snan = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t h;
        memcpy(&h, in + 2 * i, 2);
        uint16_t nan = nan_mask(h);
        any_nan |= nan;
        any_snan |= nan & (uint16_t)~h; /* bit 6 clear: signalling */
        int16_t k = (int16_t)(uint16_t)(((uint16_t)order_key(h) & (uint16_t)~nan) | (none & nan));
        best = IsMax ? (k > best ? k : best) : (k < best ? k : best);
    }
    *best_out = best;
    *any_nan_out = any_nan;
    *any_snan_out = any_snan & 0x0040u;
}

/* minmax_scan_masked's results, by blocks: a first pass takes the extreme key of all of a block's
 * elements and their largest magnitude bits (half the work per element: no NaN masking), and only
 * a block whose largest magnitude is a NaN's is scanned again with the masks (in cache by then).
 * (umath_tier_checks.py::test_minmax_reductions_match_the_sequential_definition, with and
 * without NaNs, at every tier.) */
template <bool IsMax>
static void minmax_scan(const char *in, npy_intp n, int16_t *best_out, uint16_t *any_nan_out,
                        uint16_t *any_snan_out)
{
    const npy_intp block = 8192;
    int16_t best = (int16_t)(IsMax ? 0x8000u : 0x7fffu);
    uint16_t any_nan = 0, any_snan = 0;
    for (npy_intp b0 = 0; b0 < n; b0 += block) {
        const char *p = in + 2 * b0;
        npy_intp m = n - b0 < block ? n - b0 : block;
        int16_t kb = (int16_t)(IsMax ? 0x8000u : 0x7fffu);
        uint16_t mag = 0;
        for (npy_intp i = 0; i < m; i++) {
            bf16_t h;
            memcpy(&h, p + 2 * i, 2);
            int16_t k = order_key(h);
            kb = IsMax ? (k > kb ? k : kb) : (k < kb ? k : kb);
            uint16_t a = (uint16_t)(h & 0x7fffu);
            mag = a > mag ? a : mag;
        }
        if (mag > 0x7f80u) { /* a NaN in the block */
            uint16_t an, as;
            minmax_scan_masked<IsMax>(p, m, &kb, &an, &as);
            any_nan |= an;
            any_snan |= as;
        }
        best = IsMax ? (kb > best ? kb : best) : (kb < best ? kb : best);
    }
    *best_out = best;
    *any_nan_out = any_nan;
    *any_snan_out = any_snan;
}

template <class Op, bool ScalarFirst>
static uint16_t compare_keys_as(const char *arr, int16_t ks, npy_bool *o, npy_intp n)
{
    const uint16_t when_nan = std::is_same<Op, NotEqual>::value ? 1u : 0u;
    uint16_t any_snan = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t h;
        memcpy(&h, arr + 2 * i, 2);
        uint16_t nan = nan_mask(h);
        any_snan |= nan & (uint16_t)~h;
        /* value_key: -0 as +0 */
        int16_t k = order_key((bf16_t)(h & (uint16_t)(0u - (unsigned)(h != 0x8000u))));
        uint16_t r = ScalarFirst ? Ordering<Op>::f(ks, k) : Ordering<Op>::f(k, ks);
        o[i] = (npy_bool)((r & (uint16_t)~nan) | (when_nan & nan));
    }
    return any_snan & 0x0040u;
}

/* maximum/minimum (Propagates: a NaN operand wins) and fmax/fmin (a NaN loses) of two
 * contiguous runs, or of a run and one value (Scalar 1: a is the value, 2: b is), with the
 * functors' bits: a is kept on a tie (-0 and +0 tie), a NaN result is quiet. Returns 0x40 if an
 * operand was a signalling NaN (the functors' quiet comparisons raise "invalid" then). */
template <bool IsMax, bool Propagates, int Scalar>
static uint16_t minmax_pairs(const char *a, const char *b, char *o, npy_intp n)
{
    uint16_t any_snan = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t x, y;
        memcpy(&x, a + (Scalar == 1 ? 0 : 2 * i), 2);
        memcpy(&y, b + (Scalar == 2 ? 0 : 2 * i), 2);
        uint16_t nx = nan_mask(x), ny = nan_mask(y);
        any_snan |= (uint16_t)((nx & (uint16_t)~x) | (ny & (uint16_t)~y));
        int16_t kx = order_key((bf16_t)(x & (uint16_t)(0u - (unsigned)(x != 0x8000u))));
        int16_t ky = order_key((bf16_t)(y & (uint16_t)(0u - (unsigned)(y != 0x8000u))));
        uint16_t keep = (uint16_t)(0u - (unsigned)(IsMax ? kx >= ky : kx <= ky));
        keep = (uint16_t)((keep & (uint16_t)~(nx | ny)) | (Propagates ? nx : ny));
        uint16_t r = (uint16_t)((x & keep) | (y & (uint16_t)~keep));
        r = (uint16_t)(r | (nan_mask(r) & 0x0040u));
        memcpy(o + 2 * i, &r, 2);
    }
    return any_snan & 0x0040u;
}

/* The comparison of each element with a non-NaN scalar of value_key ks (`scalar_first`: the
 * scalar is the left operand); a NaN element compares unordered. Returns 0x40 if an element
 * was a signalling NaN. */
template <class Op>
static uint16_t compare_keys(const char *arr, int16_t ks, bool scalar_first, npy_bool *o, npy_intp n)
{
    return scalar_first ? compare_keys_as<Op, true>(arr, ks, o, n)
                        : compare_keys_as<Op, false>(arr, ks, o, n);
}

/* clip(x, lo, hi) for a contiguous run of x and o, the bounds contiguous runs too (Step 2) or
 * single values that are not NaN (Step 0): clip_loop's sequential rule on order keys. A NaN x passes through,
 * then a NaN lo, then a NaN hi is the result; otherwise x below lo takes lo, then a value above
 * hi takes hi (so lo > hi gives hi); -0 and +0 compare equal and x keeps its own zero. */
template <int Step>
static void clip_keys_step(const char *x, const char *lo, const char *hi, char *o, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        bf16_t h, l, u;
        memcpy(&h, x + 2 * i, 2);
        memcpy(&l, lo + Step * i, 2);
        memcpy(&u, hi + Step * i, 2);
        int16_t k = order_key((bf16_t)(h & (uint16_t)(0u - (unsigned)(h != 0x8000u))));
        int16_t kl = order_key((bf16_t)(l & (uint16_t)(0u - (unsigned)(l != 0x8000u))));
        int16_t kh = order_key((bf16_t)(u & (uint16_t)(0u - (unsigned)(u != 0x8000u))));
        uint16_t below = (uint16_t)(0u - (unsigned)(k < kl));
        int16_t kv = (int16_t)(uint16_t)(((uint16_t)kl & below) | ((uint16_t)k & (uint16_t)~below));
        uint16_t above = (uint16_t)(0u - (unsigned)(kv > kh));
        uint16_t r = (uint16_t)((l & below) | (h & (uint16_t)~below));
        r = (uint16_t)((u & above) | (r & (uint16_t)~above));
        if constexpr (Step != 0) { /* single bounds are not NaN (clip_loop checks) */
            uint16_t bn = nan_mask(u);
            r = (uint16_t)((u & bn) | (r & (uint16_t)~bn));
            bn = nan_mask(l);
            r = (uint16_t)((l & bn) | (r & (uint16_t)~bn));
        }
        uint16_t nan = nan_mask(h);
        r = (uint16_t)((h & nan) | (r & (uint16_t)~nan));
        memcpy(o + 2 * i, &r, 2);
    }
}

static void clip_keys(const char *x, bf16_t lo, bf16_t hi, char *o, npy_intp n)
{
    char l[2], u[2];
    memcpy(l, &lo, 2);
    memcpy(u, &hi, 2);
    clip_keys_step<0>(x, l, u, o, n);
}

static void clip_keys_runs(const char *x, const char *lo, const char *hi, char *o, npy_intp n)
{
    clip_keys_step<2>(x, lo, hi, o, n);
}

/* A test of the bits of each element of a contiguous run (isnan, isinf, isfinite, signbit,
 * logical_not): integer work, no flag. */
template <class Op>
static void predicate_scan(const char *in, npy_bool *o, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        bf16_t h;
        memcpy(&h, in + 2 * i, 2);
        o[i] = (npy_bool)Op::f(h);
    }
}

/* copysign over contiguous runs: the magnitude bits of a, the sign bit of b. Written as the
 * sequential loop (no block is read before an earlier one is written), so overlapping operands
 * give the sequential result: the compiler vectorises only where the runs do not overlap. */
static void copysign_scan(const char *a, const char *b, char *o, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) {
        bf16_t x, y;
        memcpy(&x, a + 2 * i, 2);
        memcpy(&y, b + 2 * i, 2);
        bf16_t r = (bf16_t)((x & 0x7fffu) | (y & 0x8000u));
        memcpy(o + 2 * i, &r, 2);
    }
}

/* heaviside over contiguous runs, on the bits: 0 below zero, 1 above, h0 at either zero, x
 * itself (quiet) for a NaN x, a NaN h0 quiet too: Heaviside::bits (ops.h) of each pair. Returns
 * 0x40 if an x was a signalling NaN ("invalid", as the float comparison x != x raises it). */
static uint16_t heaviside_scan(const char *a, const char *b, char *o, npy_intp n)
{
    uint16_t any_snan = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t x, h0;
        memcpy(&x, a + 2 * i, 2);
        memcpy(&h0, b + 2 * i, 2);
        uint16_t xnan = nan_mask(x), zero = (uint16_t)(0u - (unsigned)((x & 0x7fffu) == 0));
        any_snan |= xnan & (uint16_t)~x;
        uint16_t step = (uint16_t)(0x3f80u & (uint16_t)((x >> 15) - 1u)); /* 1.0 unless negative */
        uint16_t h = (uint16_t)(h0 | (nan_mask(h0) & 0x40u));
        uint16_t r = (uint16_t)((zero & h) | (~zero & step));
        r = (uint16_t)((xnan & (x | 0x40u)) | (~xnan & r));
        memcpy(o + 2 * i, &r, 2);
    }
    return any_snan & 0x0040u;
}

/* logical_and/or/xor of contiguous runs on "is nonzero" (NaN included). Returns 0x40 if an
 * element of either operand was a signalling NaN. */
template <class Op>
static uint16_t logical_scan(const char *a, const char *b, npy_bool *o, npy_intp n)
{
    uint16_t any_snan = 0;
    for (npy_intp i = 0; i < n; i++) {
        bf16_t x, y;
        memcpy(&x, a + 2 * i, 2);
        memcpy(&y, b + 2 * i, 2);
        any_snan |= (nan_mask(x) & (uint16_t)~x) | (nan_mask(y) & (uint16_t)~y);
        uint16_t nx = (uint16_t)((x & 0x7fffu) != 0), ny = (uint16_t)((y & 0x7fffu) != 0);
        o[i] = (npy_bool)LogicalBits<Op>::f(nx, ny);
    }
    return any_snan & 0x0040u;
}
