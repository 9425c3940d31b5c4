/*
 * umath/unary_table.cpp - the 65,536-entry result tables of unary ufuncs, with flag replay.
 */
#include "umath/unary_table.h"

#include <cfenv>
#include <cstdlib>

namespace umath {

const UnaryTable *
unary_table_get(std::atomic<UnaryTable *> &slot, float (*f)(float), bool build)
{
    UnaryTable *t = slot.load(std::memory_order_acquire);
    if (t != nullptr || !build) {
        return t;
    }
    UnaryTable *fresh = (UnaryTable *)malloc(sizeof(UnaryTable));
    if (fresh == nullptr) {
        return nullptr;
    }
    fenv_t saved;
    feholdexcept(&saved); /* the caller's pending flags are restored below */
    for (uint32_t i = 0; i < 65536; i++) {
        feclearexcept(FE_ALL_EXCEPT);
        volatile float r = f(bf16_to_f32((bf16_t)i)); /* volatile: computed before the test */
        int raised = fetestexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO | FE_UNDERFLOW);
        float rv = r;
        bf16_t h = f32_to_bf16(rv);
        fresh->out[i] = h;
        fresh->flags[i] = (uint8_t)(
                (((raised & FE_OVERFLOW) || bf16_overflowed(rv, h)) ? UNARY_FLAG_OVERFLOW : 0) |
                ((raised & FE_INVALID) ? UNARY_FLAG_INVALID : 0) |
                ((raised & FE_DIVBYZERO) ? UNARY_FLAG_DIVBYZERO : 0) |
                ((raised & FE_UNDERFLOW) ? UNARY_FLAG_UNDERFLOW : 0));
    }
    fesetenv(&saved);
    UnaryTable *expected = nullptr;
    if (!slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
        free(fresh); /* another thread published first */
        return expected;
    }
    return fresh;
}

void
unary_table_raise(unsigned fl)
{
    int ex = ((fl & UNARY_FLAG_OVERFLOW) ? FE_OVERFLOW : 0) |
             ((fl & UNARY_FLAG_INVALID) ? FE_INVALID : 0) |
             ((fl & UNARY_FLAG_DIVBYZERO) ? FE_DIVBYZERO : 0) |
             ((fl & UNARY_FLAG_UNDERFLOW) ? FE_UNDERFLOW : 0);
    if (ex) {
        feraiseexcept(ex);
    }
}

void
unary_table_apply(const UnaryTable *t, const char *a, npy_intp sa, char *o, npy_intp so,
                  npy_intp n)
{
    unsigned fl = 0;
    for (npy_intp i = 0; i < n; i++, a += sa, o += so) {
        bf16_t x;
        memcpy(&x, a, 2);
        fl |= t->flags[x];
        memcpy(o, &t->out[x], 2);
    }
    unary_table_raise(fl);
}

} /* namespace umath */
