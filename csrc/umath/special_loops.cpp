/*
 * umath/special_loops.cpp - loops that are not one functor on bfloat16 operands: divmod and
 * modf (two outputs), frexp and ldexp (an integer operand), clip (three inputs).
 */
#include "umath/loops.h"
#include "umath/umath.h"

namespace umath {

void
divmod_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *b = args[1], *q = args[2], *r = args[3];
    for (npy_intp i = 0; i < dims[0];
         i++, a += steps[0], b += steps[1], q += steps[2], r += steps[3]) {
        float mod;
        float div = py_fmod_div(bf16_to_f32(ld(a)), bf16_to_f32(ld(b)), &mod);
        st(q, f32_to_bf16(div));
        st(r, f32_to_bf16(mod));
    }
}

/*
 * modf, frexp and ldexp on the bits (no libm call per element): each result is exact in
 * bfloat16 (ldexp's rounding aside, which goes through float64 once), so the field arithmetic
 * gives the same bits as the float64 functions rounded once (tests/test_ufuncs.py::
 * test_modf_exhaustive, ::test_frexp_exhaustive, ::test_ldexp).
 */
static inline bf16_t quiet(bf16_t h) { return (bf16_t)(h | 0x0040u); }

static inline void
modf_bits(bf16_t h, bf16_t *frac_out, bf16_t *whole_out)
{
    uint32_t sign = h & BF16_SIGN, mag = h & BF16_ABS;
    /* fraction bits: 134 - exponent field, none from 2**7 up, all of them below 1 (selects by
     * masks, not branches: random data mispredicted them) */
    int fbits = 134 - (int)(mag >> 7);
    fbits = fbits < 0 ? 0 : fbits;
    uint32_t drop = fbits > 7 ? 0x7fffu : (1u << fbits) - 1u;
    uint32_t whole = h & ~drop;
    /* the dropped bits alone have at most 7 significant bits: the difference is exact (inf and
     * NaN are replaced by zero first, so no flag is raised) */
    uint32_t finite = 0u - (uint32_t)(mag < BF16_INF);
    float f = bf16_to_f32((bf16_t)(h & finite)) - bf16_to_f32((bf16_t)(whole & finite));
    uint32_t none = 0u - (uint32_t)((h & drop) == 0u); /* an integer: +-0 */
    uint32_t frac = (sign & none) | ((f32_bits(f) >> 16) & ~none);
    uint32_t nan = 0u - (uint32_t)(mag > BF16_INF);
    *whole_out = (bf16_t)((quiet(h) & nan) | (whole & ~nan));
    *frac_out = (bf16_t)((quiet(h) & nan) | (frac & ~nan));
}

void
modf_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *fr = args[1], *in = args[2];
    npy_intp n = dims[0];
    if (steps[0] == 2 && steps[1] == 2 && steps[2] == 2) { /* a form the compiler vectorises */
        for (npy_intp i = 0; i < n; i++) {
            bf16_t f, w;
            modf_bits(ld(a + 2 * i), &f, &w);
            st(fr + 2 * i, f);
            st(in + 2 * i, w);
        }
        return;
    }
    for (npy_intp i = 0; i < n; i++, a += steps[0], fr += steps[1], in += steps[2]) {
        bf16_t f, w;
        modf_bits(ld(a), &f, &w);
        st(fr, f);
        st(in, w);
    }
}

void
frexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *m = args[1], *e = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], m += steps[1], e += steps[2]) {
        bf16_t h = ld(a), sign = (bf16_t)(h & BF16_SIGN);
        unsigned mag = h & BF16_ABS, field = mag >> 7;
        bf16_t mant = h;
        npy_int ex = 0;
        if (mag > BF16_INF) {
            mant = quiet(h);
        }
        else if (field >= 1u && field <= 254u) { /* normal: exponent field of 0.5 */
            mant = (bf16_t)(sign | (126u << 7) | (mag & 0x7fu));
            ex = (npy_int)field - 126;
        }
        else if (field == 0u && mag != 0u) { /* subnormal m * 2**-133, m < 2**7 */
            int width = 32 - __builtin_clz(mag); /* bits of m: m / 2**width is in [0.5, 1) */
            mant = (bf16_t)(sign | (126u << 7) | ((mag << (8 - width)) & 0x7fu));
            ex = (npy_int)(width - 133);
        }
        st(m, mant);
        memcpy(e, &ex, sizeof ex);
    }
}

template <class IntT>
static void
ldexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *e = args[1], *o = args[2];
    int ovf = 0;
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], e += steps[1], o += steps[2]) {
        IntT ex;
        memcpy(&ex, e, sizeof ex);
        bf16_t h = ld(a);
        /* |x| >= 2**-133 and < 2**128: any |exponent| > 400 saturates like 400 */
        long long n = (long long)ex < -400 ? -400 : (long long)ex > 400 ? 400 : (long long)ex;
        long long field = (h >> 7) & 0xffu;
        if (field >= 1 && field <= 254 && field + n >= 1 && field + n <= 254) {
            st(o, (bf16_t)(h + n * 128)); /* normal to normal: the exponent field moves */
            continue;
        }
        /* zero, inf, NaN, subnormals and results outside the normals: one rounding from the
         * exact float64 product (2**n is a normal float64) */
        double d = bf16_to_f64(h) * f64_from_bits((uint64_t)(n + 1023) << 52);
        bf16_t r = f64_to_bf16(d);
        ovf |= bf16_isinf(r) && !bf16_isinf(h);
        st(o, r);
    }
    report_overflow(ovf);
}

void
clip_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *x = args[0], *lo = args[1], *hi = args[2], *o = args[3];
    if (steps[0] == 2 && steps[1] == 0 && steps[2] == 0 && steps[3] == 2 && !bf16_isnan(ld(lo)) &&
        !bf16_isnan(ld(hi)) && !straddles(o, x, dims[0])) {
        clip_keys(x, ld(lo), ld(hi), o, dims[0]); /* scalar bounds: the vectorised rule */
        return;
    }
    if (steps[0] == 2 && steps[1] == 2 && steps[2] == 2 && steps[3] == 2 &&
        !straddles(o, x, dims[0]) && !straddles(o, lo, dims[0]) && !straddles(o, hi, dims[0])) {
        clip_keys_runs(x, lo, hi, o, dims[0]); /* bounds per element: the same rule */
        return;
    }
    for (npy_intp i = 0; i < dims[0];
         i++, x += steps[0], lo += steps[1], hi += steps[2], o += steps[3]) {
        bf16_t hx = ld(x), hl = ld(lo), hh = ld(hi);
        /* numpy: minimum(maximum(x, lo), hi), NaN in any operand propagates */
        float v = bf16_to_f32(hx), l = bf16_to_f32(hl), h = bf16_to_f32(hh);
        bf16_t r = hx;
        if (bf16_isnan(hx)) r = hx;
        else if (bf16_isnan(hl)) r = hl;
        else if (bf16_isnan(hh)) r = hh;
        else {
            if (v < l) { r = hl; v = l; }
            if (v > h) { r = hh; }
        }
        st(o, r);
    }
}
void
ldexp_int_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    ldexp_loop<npy_int>(args, dims, steps, data);
}

void
ldexp_int64_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    ldexp_loop<npy_int64>(args, dims, steps, data);
}

} /* namespace umath */
