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

void
modf_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *fr = args[1], *in = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], fr += steps[1], in += steps[2]) {
        float ip;
        float f = std::modf(bf16_to_f32(ld(a)), &ip);
        st(fr, f32_to_bf16(f));
        st(in, f32_to_bf16(ip));
    }
}

void
frexp_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *)
{
    char *a = args[0], *m = args[1], *e = args[2];
    for (npy_intp i = 0; i < dims[0]; i++, a += steps[0], m += steps[1], e += steps[2]) {
        int ex = 0;
        float mant = std::frexp(bf16_to_f32(ld(a)), &ex);
        st(m, f32_to_bf16(mant));
        npy_int ei = (npy_int)ex;
        memcpy(e, &ei, sizeof ei);
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
        long long clamped = (long long)ex;
        if (clamped > 400) clamped = 400;
        if (clamped < -400) clamped = -400;
        double d = std::ldexp((double)bf16_to_f32(ld(a)), (int)clamped); /* exact in double */
        bf16_t h = f64_to_bf16(d);
        ovf |= bf16_isinf(h) && !bf16_isinf(ld(a));
        st(o, h);
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
ldexp_longlong_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    ldexp_loop<npy_longlong>(args, dims, steps, data);
}

} /* namespace umath */
