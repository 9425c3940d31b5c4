/*
 * umath/reduce_acc.cpp - add and multiply with float32 accumulation in reductions.
 */
#include "kernels.h"
#include "umath/loops.h"
#include "umath/umath.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

namespace umath {

/*
 * Memory of the float32 windows below from bf16_alloc_huge (kernels.h): in 4 KiB pages the
 * window over the 2^21 outputs of np.sum(x, axis=1), x of 2^24 elements in rows of 8, took about
 * 4,500 page faults a call (56.6 ms against float32's 37.8, AMD EPYC Zen 5 VM).
 */
template <class T> struct WindowAlloc {
    using value_type = T;
    WindowAlloc() = default;
    template <class U> WindowAlloc(const WindowAlloc<U> &) {}
    T *allocate(size_t n)
    {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        void *p = bf16_alloc_huge(n * sizeof(T));
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t) { std::free(p); }
};
template <class T, class U> bool operator==(const WindowAlloc<T> &, const WindowAlloc<U> &) { return true; }
template <class T, class U> bool operator!=(const WindowAlloc<T> &, const WindowAlloc<U> &) { return false; }
using FloatWindow = std::vector<float, WindowAlloc<float>>;

/*
 * numpy runs reductions through the ordinary binary loop, and how it calls it depends on the
 * axis. For full and last-axis reductions it passes the whole row with `out` aliasing `in1`
 * at stride 0: we sum the row in float32 (pairwise) and round once. For axis-0 (and other
 * outer-axis) reductions it calls the loop once per slice, adding a slice into the running
 * result, which would round to bfloat16 after every slice. For those calls we keep a float32
 * shadow of the output elements and keep adding into it; a shadow value is trusted only while
 * the stored bfloat16 still equals its rounding, so anything else writing the output is
 * noticed. The shadow is a dense window over the output's address range, owned by the loop's
 * auxdata: it lives for one ufunc call. One-element calls spread far apart (NumPy's per-index
 * ufunc.at) keep their values in a table by address instead (shadow_spread).
 *
 * Every in-place call (out aliasing in1 with the same stride) goes through the shadow, so the
 * first slice of a reduction keeps its float32 value too. The window may grow to
 * shadow_max_slots once the call is known to be a reduction: numpy asked this ArrayMethod for
 * the reduction's initial value just before asking for the loop (same context), or, for
 * reductions given `initial=` (numpy then skips that question), a call writes an output range
 * an earlier call of the same ufunc call already wrote. Until then (elementwise in-place
 * operations such as a += b write each element once) it stays below shadow_probe_slots and
 * starts afresh when a call lies outside it: a reduction given `initial=` whose output spans
 * more than that (in address range) rounds initial + x[0] of the outputs that fell out of the
 * window once more: one ulp of that partial sum, more of the result under cancellation
 * (tests/test_reductions.py, PROBE_SLOTS and
 * test_outer_axis_initial_beyond_the_window_rounds_the_first_step).
 *
 * NumPy before 2.3 may run the first part of a reduction on a copy of the output in its
 * buffer and the rest on the output itself (or the reverse): the loop then sees a new output
 * range holding the rounded copies of the range it has just accumulated. There (only) such a
 * switch moves the float32 values along (shadow_follow_copy); tests/test_reductions.py
 * (test_sum_rounds_once_every_layout_and_option) checks the layouts where NumPy 2.0 does this.
 * Accumulations (cumsum) that numpy passes as one chain (out[i] = out[i-1] + in[i]) keep
 * the running sum in float32 as well.
 *
 * An output NumPy has to buffer (byte-swapped, unaligned, or of another dtype with
 * dtype=bfloat16) is reduced in NumPy's buffer: when the output exceeds the buffer, the same
 * buffer addresses hold different output elements in turn, copied out and back by our casts.
 * The casts tell the reduction in flight on their thread (bf16_reduction_cast): copying out of
 * the window parks the float32 values by the destination's address, copying into the window
 * takes them back where the source's value is still their rounding, and any other value
 * copied into the window replaces the float32 there, so no value follows an address to an
 * element it does not belong to (tests/test_reductions.py::
 * test_reductions_into_buffered_outputs_accumulate_in_float32).
 */

/* float32 values by a non-negative integer key (an index, or an address): open addressing
 * over 1 << bits slots, at most half full, key -1 marking an empty slot. A key and its value
 * share a slot: one cache line a lookup. */
struct KeySlot {
    npy_intp key;
    float val;
};

struct KeyTable {
    std::vector<KeySlot> slots;
    size_t count = 0;
    int bits = 0;
};

static void
kt_clear(KeyTable &t)
{
    std::vector<KeySlot>().swap(t.slots);
    t.count = 0;
    t.bits = 0;
}

/* Empty, keeping up to 2^18 slots (4 MiB) of memory where the call filled at least an eighth
 * of them: the next call of the same kind starts at that size instead of growing the table
 * again (a resize moves every entry). */
static void
kt_empty(KeyTable &t)
{
    if (t.bits > 18 || t.count * 8 < t.slots.size()) {
        kt_clear(t);
    }
    else if (t.count != 0) {
        std::fill(t.slots.begin(), t.slots.end(), KeySlot{-1, 0.0f});
        t.count = 0;
    }
}

static inline size_t
kt_hash(npy_intp k, int bits)
{
    return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* A table of 2^bits slots, the entries moved over; false: no memory. */
static bool
kt_resize(KeyTable &t, int bits)
{
    try {
        std::vector<KeySlot> slots((size_t)1 << bits, KeySlot{-1, 0.0f});
        size_t mask = slots.size() - 1;
        for (const KeySlot &e : t.slots) {
            if (e.key != -1) {
                size_t h = kt_hash(e.key, bits);
                while (slots[h].key != -1) h = (h + 1) & mask;
                slots[h] = e;
            }
        }
        t.slots.swap(slots);
        t.bits = bits;
    }
    catch (const std::exception &) { /* bad_alloc, or length_error past size_t */
        return false;
    }
    return true;
}

/* kt_slot's whole lookup: a full table grows or starts afresh, then the probes from k's home. */
static float *
kt_slot_probe(KeyTable &t, npy_intp k, bool *fresh, int max_bits)
{
    if (2 * (t.count + 1) > t.slots.size() &&
            (t.bits >= max_bits || !kt_resize(t, t.slots.empty() ? 12 : t.bits + 1))) {
        if (t.slots.empty()) {
            return nullptr;
        }
        std::fill(t.slots.begin(), t.slots.end(), KeySlot{-1, 0.0f});
        t.count = 0;
    }
    size_t mask = t.slots.size() - 1, h = kt_hash(k, t.bits);
    while (t.slots[h].key != k) {
        if (t.slots[h].key == -1) {
            t.slots[h].key = k;
            t.count++;
            *fresh = true;
            return &t.slots[h].val;
        }
        h = (h + 1) & mask;
    }
    return &t.slots[h].val;
}

/* k's float32 slot (*fresh: just added, its value not yet set), or nullptr when there is no
 * table. A full table of 2^max_bits slots, or one that cannot grow for want of memory, starts
 * afresh: the keys it held then read as their stored bfloat16. The first probe inline (NumPy's
 * per-index ufunc.at makes a call per element: acc_loop). */
static inline float *
kt_slot(KeyTable &t, npy_intp k, bool *fresh, int max_bits)
{
    if (2 * (t.count + 1) <= t.slots.size()) {
        KeySlot &e = t.slots[kt_hash(k, t.bits)];
        if (e.key == k) {
            return &e.val;
        }
        if (e.key == -1) {
            e.key = k;
            t.count++;
            *fresh = true;
            return &e.val;
        }
    }
    return kt_slot_probe(t, k, fresh, max_bits);
}

/* k's float32 slot, or nullptr when k is not in the table. */
static float *
kt_find(KeyTable &t, npy_intp k)
{
    if (t.count == 0) {
        return nullptr;
    }
    size_t mask = t.slots.size() - 1, h = kt_hash(k, t.bits);
    for (; t.slots[h].key != -1; h = (h + 1) & mask) {
        if (t.slots[h].key == k) {
            return &t.slots[h].val;
        }
    }
    return nullptr;
}

/* The float32 values of a reduction's outputs copied out of its window by a cast, by the byte
 * address they were copied to (a dense window over those addresses). */
struct Park {
    uintptr_t lo = 0;
    FloatWindow value;          /* per byte of the window; meaningful where `has` is set */
    std::vector<uint8_t> has;
};

struct Shadow {
    NpyAuxData base;
    bool reduction = false;      /* known to be a reduction: the window may grow large */
    Park park;                   /* what the casts parked while this was active_reduction */
    char *lo = nullptr;          /* window covers [lo, lo + 2 * value.size()) */
    FloatWindow value;           /* one float32 per 2-byte slot of the window */
    char *seen_lo = nullptr, *seen_hi = nullptr; /* output bytes written before `reduction` */
    /* the output range of the previous in-place call, and its stored values when numpy began
     * writing it (what a copy of it must differ from: see shadow_follow_copy) */
    char *prev_o = nullptr;
    npy_intp prev_so = 0, prev_m = 0;
    std::vector<bf16_t> prev_first;
    size_t calls = 0;            /* in-place calls so far */
    /* NumPy asked for the loop with contiguous fixed strides, as its ufunc.at does, which then
     * calls it once per element at stride 0 (see acc_loop) */
    bool contiguous_fixed = false;
    bool by_address = false;     /* values kept in `table` by address, not in the window */
    KeyTable table;
    /* the range of the addresses put in `table` since it was last empty, and whether they
     * differ in parity (shadow_table_to_window) */
    uintptr_t key_lo = UINTPTR_MAX, key_hi = 0;
    bool key_parities = false;
    bool busy = false;           /* the thread's own Shadow, handed out for a call */
    uint64_t generation = 0;     /* calls this Shadow was handed out for */
    uint64_t serial = 0;         /* the call in hand's generation (0: not handed out) */
    /* A call that began inside a reduction's call on this thread (Python code run by a cast,
     * e.g. an object input's __float__): the outer reduction, made active again when this call
     * ends if it is still running (tests/test_reductions.py::
     * test_reduction_inside_a_cast_of_a_buffered_reduction). Each reduction keeps its own
     * park, so that an outer call that resumes before the inner one ends (a greenlet switch
     * inside __float__) finds its values (::test_greenlets_switching_inside_reductions). */
    bool nested = false;
    Shadow *outer_active = nullptr;
    uint64_t outer_serial = 0;
    /* inner calls that may make this one active again: a Shadow of its own (not the thread's)
     * released while they run is deleted by the last of them */
    int holders = 0;
    bool dead = false;
};

/* The reduction in flight on this thread (its Shadow is a reduction's), set by its loop calls,
 * cleared when its Shadow is released. */
static thread_local Shadow *active_reduction = nullptr;

/* The float32 values of the targets an add.at/multiply.at call updates (acc_indexed_loop):
 * a dense window over an index range, else a table of the indices. */
struct AtValues {
    bool started = false;
    npy_intp lo = 0;
    FloatWindow window;          /* by index - lo; empty: the table */
    double bound = 0;            /* no window value is larger in magnitude (inf: unknown) */
    KeyTable table;
    size_t seen = 0;             /* indices of the call's blocks so far */
};

/* Back to the state before a call's first block. The window's memory (up to 4 MiB) stays for
 * the thread's next call: fresh pages cost more than the loop (np.add.at of 2^20 indices into
 * 10^6 elements 27 -> 16 ms with the memory kept, AMD EPYC Zen 3). */
static void
at_reset(AtValues &t)
{
    t.started = false;
    t.window.clear();
    t.bound = 0;
    if (t.window.capacity() > ((size_t)1 << 20)) {
        FloatWindow().swap(t.window);
    }
    kt_clear(t.table);
    t.seen = 0;
}

/* The call on this thread whose loop NumPy asked for last (its context and Shadow), and the
 * values of its indexed blocks; reset when that Shadow is released. */
struct AtCall {
    const void *context = nullptr;
    const Shadow *owner = nullptr;
    AtValues values;
};
static thread_local AtCall at_call;

/* At most 2^26 float32 slots (256 MiB): outputs spanning more than 128 MiB reduce in bfloat16. */
static const size_t shadow_max_slots = (size_t)1 << 26;
/* Before the call is known to be a reduction: at most 4096 slots (16 KiB), so that an
 * elementwise a += b on a small array stays cheap and a larger one runs the plain loop. */
static const size_t shadow_probe_slots = (size_t)1 << 12;

/*
 * Every add and multiply call gets a Shadow (acc_get_loop) and most of them never use it, so
 * each thread keeps one for its calls: acc_get_loop hands it out and NumPy's free of the
 * auxdata at the end of the call resets it (its vectors keep up to shadow_probe_slots of
 * memory). A malloc, a construction and a free per call were 20-30 of the ~270 ns numpy spends
 * on a small np.add (AMD EPYC Zen 5). A call that starts while the thread's Shadow is still in
 * use (Python code run by a cast inside a call, e.g. an object's __float__, making a call of
 * its own) gets a Shadow of its own, as do clones (test_reductions.py,
 * test_call_inside_a_call_keeps_its_own_shadow).
 */
static void
park_clear(Park &parked)
{
    parked.lo = 0;
    FloatWindow().swap(parked.value);
    std::vector<uint8_t>().swap(parked.has);
}

static void
shadow_keys_reset(Shadow *m)
{
    m->key_lo = UINTPTR_MAX;
    m->key_hi = 0;
    m->key_parities = false;
}

/* Note an address put in m's table. */
static inline void
shadow_key_added(Shadow *m, uintptr_t k)
{
    if (m->key_lo <= m->key_hi && ((k ^ m->key_lo) & 1)) {
        m->key_parities = true;
    }
    m->key_lo = std::min(m->key_lo, k);
    m->key_hi = std::max(m->key_hi, k);
}

/* The end of a call made inside another's (see Shadow::nested). */
static __attribute__((noinline)) void
forget_nested(Shadow *m)
{
    Shadow *outer = m->outer_active;
    if (active_reduction == nullptr && outer->serial == m->outer_serial) {
        active_reduction = outer; /* still running: the call it was made from */
    }
    if (--outer->holders == 0 && outer->dead) {
        delete outer;
    }
    m->outer_active = nullptr;
    m->outer_serial = 0;
    m->nested = false;
}

static void
forget_if_active(Shadow *m)
{
    m->serial = 0;
    if (active_reduction == m) {
        active_reduction = nullptr;
    }
    if (__builtin_expect(!m->park.value.empty(), 0)) {
        park_clear(m->park);
    }
    if (__builtin_expect(m->nested, 0)) {
        forget_nested(m);
    }
    if (at_call.owner == m) {
        at_call.context = nullptr;
        at_call.owner = nullptr;
        if (at_call.values.started) {
            at_reset(at_call.values);
        }
    }
}

static void
shadow_delete(NpyAuxData *aux)
{
    Shadow *m = reinterpret_cast<Shadow *>(aux);
    forget_if_active(m);
    if (m->holders > 0) {
        m->dead = true; /* an inner call still refers to it */
        return;
    }
    delete m;
}

/* The thread's Shadow back to its state between calls. */
static void
shadow_release(NpyAuxData *aux)
{
    Shadow *m = reinterpret_cast<Shadow *>(aux);
    forget_if_active(m);
    m->reduction = false;
    m->lo = nullptr;
    m->seen_lo = m->seen_hi = nullptr;
    m->prev_o = nullptr;
    m->prev_so = m->prev_m = 0;
    m->value.clear();
    m->prev_first.clear();
    m->calls = 0;
    m->by_address = false;
    kt_empty(m->table);
    shadow_keys_reset(m);
    if (m->value.capacity() > shadow_probe_slots) {
        FloatWindow().swap(m->value);
    }
    if (m->prev_first.capacity() > shadow_probe_slots) {
        std::vector<bf16_t>().swap(m->prev_first);
    }
    m->busy = false;
}

static NpyAuxData *shadow_clone(NpyAuxData *aux);

static Shadow *
shadow_init(Shadow *m, bool reduction, NpyAuxData_FreeFunc *release)
{
    memset(&m->base, 0, sizeof m->base);
    m->base.free = release;
    m->base.clone = shadow_clone;
    m->reduction = reduction;
    return m;
}

static NpyAuxData *
shadow_clone(NpyAuxData *aux)
{
    Shadow *m = new (std::nothrow) Shadow();
    if (m == nullptr) {
        return nullptr;
    }
    try {
        *m = *reinterpret_cast<Shadow *>(aux);
    }
    catch (const std::bad_alloc &) { /* copying the vectors */
        delete m;
        return nullptr;
    }
    m->busy = false;
    m->nested = false; /* the original puts the outer reduction back */
    m->outer_active = nullptr;
    m->outer_serial = 0;
    m->serial = 0;
    m->park = Park();
    m->holders = 0;
    m->dead = false;
    return reinterpret_cast<NpyAuxData *>(shadow_init(m, m->reduction, shadow_delete));
}

static Shadow *
shadow_new(bool reduction)
{
    static thread_local Shadow mine;
    if (!mine.busy) {
        mine.busy = true;
        return shadow_init(&mine, reduction, shadow_release);
    }
    Shadow *m = new (std::nothrow) Shadow();
    return m == nullptr ? nullptr : shadow_init(m, reduction, shadow_delete);
}

/* Make the window cover bytes [first, last] (both ends included). When the window together
 * with the new range would exceed the limit but the range alone does not, the window starts
 * afresh at the range (the dropped slots then read as their stored bfloat16). false: too large
 * or no memory (that call then runs without the shadow). */
static bool
shadow_cover(Shadow *m, char *first_p, char *last_p)
{
    /* address arithmetic in integers: the window may extend past the output's memory */
    uintptr_t first = (uintptr_t)first_p, last = (uintptr_t)last_p;
    if (first > last) std::swap(first, last);
    uintptr_t lo = (uintptr_t)m->lo, hi = lo + 2 * m->value.size();
    if (!m->value.empty() && first >= lo && last + 2 <= hi) {
        return true;
    }
    size_t limit = m->reduction ? shadow_max_slots : shadow_probe_slots;
    size_t alone = (size_t)(last + 2 - first + 1) / 2;
    if (alone > limit) {
        return false;
    }
    uintptr_t new_lo = m->value.empty() ? first : std::min(first, lo);
    uintptr_t new_hi = m->value.empty() ? last + 2 : std::max(last + 2, hi);
    size_t want = (size_t)(new_hi - new_lo + 1) / 2;
    if (!m->value.empty() && want < std::min(2 * m->value.size(), limit)) {
        /* amortise growth: at least double, on the side it grows (slices visited upward, or
         * downward as NumPy's per-index ufunc.at may visit rows) */
        size_t more = std::min(2 * m->value.size(), limit) - want;
        if (new_lo == lo) {
            want += more;
        }
        else if (new_hi == hi && new_lo > 2 * more) {
            new_lo -= 2 * more;
            want += more;
        }
    }
    want = std::min(want, limit);
    if ((size_t)(new_hi - new_lo + 1) / 2 > want) {
        m->value.clear(); /* too far apart: start afresh at this range */
        new_lo = first;
        want = alone;
    }
    try {
        FloatWindow grown(want, 0.0f);
        if (!m->value.empty()) {
            std::copy(m->value.begin(), m->value.end(), grown.begin() + (lo - new_lo) / 2);
        }
        m->value.swap(grown);
        m->lo = (char *)new_lo;
    }
    catch (...) {
        m->value.clear();
        return false;
    }
    return true;
}

static inline bool
shadow_covers(const Shadow *m, const char *first, const char *last)
{
    if (first > last) std::swap(first, last);
    uintptr_t lo = (uintptr_t)m->lo, hi = lo + 2 * m->value.size();
    return !m->value.empty() && (uintptr_t)first >= lo && (uintptr_t)last + 2 <= hi;
}

static inline bool
shadow_disjoint(const Shadow *m, const char *first, const char *last)
{
    if (first > last) std::swap(first, last);
    uintptr_t lo = (uintptr_t)m->lo, hi = lo + 2 * m->value.size();
    return m->value.empty() || (uintptr_t)last + 2 <= lo || (uintptr_t)first >= hi;
}

static inline float &
shadow_slot(Shadow *m, const char *p)
{
    return m->value[((uintptr_t)p - (uintptr_t)m->lo) / 2];
}

/* v, a float32 kept for the output at p, while the bfloat16 stored there is still its rounding;
 * else that bfloat16 (something else wrote the output). */
static inline float
kept_or_stored(float v, const char *p)
{
    bf16_t stored = ld(p);
    return f32_to_bf16(v) == stored ? v : bf16_to_f32(stored);
}

/* The float32 standing behind the bfloat16 stored at p (p inside the window). */
static inline float
shadow_get(Shadow *m, const char *p)
{
    return kept_or_stored(shadow_slot(m, p), p);
}

/* The most table slots a call keeps values in by address: 2^24 (256 MiB, as the window). */
static const int shadow_table_bits = 24;

/* A reduction's window goes to the table past this many slots for each call so far
 * (shadow_spread), and the table back to a window within half as many for each entry
 * (shadow_table_to_window): apart, so that the two do not alternate. */
static const size_t shadow_spread_slots = 16;

/*
 * NumPy's ufunc.at on an n-d target (or with several index arrays, or slices) calls the loop
 * once per index, an in-place call of one element. Covering scattered elements, the window
 * would grow over every address between them (reallocated as it grows: 1,000 random updates of
 * a 6000x6000 array took 0.7-1.4 s). Once a one-element call lies so far from the window that
 * covering it would take more than shadow_spread_slots for each call so far (and more than
 * shadow_probe_slots), the call keeps its values by address in a table instead, until the
 * table's addresses lie close enough for a window again (shadow_table_to_window); the window's
 * values move there (tests/test_reductions.py::
 * test_ufunc_at_scattered_over_an_nd_target_like_a_float32_reference). Before the call is
 * known to be a reduction, any one-element call beyond the shadow_probe_slots the window may
 * then cover goes to the table: the window had started afresh there, and rows of an n-d
 * target more than 4096 elements apart rounded at each step (::
 * test_add_at_on_nd_targets_far_apart_accumulates_in_float32).
 */
static bool
shadow_spread(const Shadow *m, const char *o)
{
    if (m->value.empty() || shadow_covers(m, o, o)) {
        return false;
    }
    uintptr_t lo = (uintptr_t)m->lo, hi = lo + 2 * m->value.size(), p = (uintptr_t)o;
    size_t want = (size_t)(std::max(p + 2, hi) - std::min(p, lo)) / 2;
    return want > (m->reduction ? std::max(shadow_probe_slots, shadow_spread_slots * m->calls) : shadow_probe_slots);
}

static void
shadow_to_table(Shadow *m)
{
    for (size_t j = 0; j < m->value.size(); j++) {
        float v = m->value[j];
        if (f32_bits(v) != 0) { /* a slot never written holds +0.0 */
            bool fresh = false;
            npy_intp key = (npy_intp)((uintptr_t)m->lo + 2 * j);
            if (float *slot = kt_slot(m->table, key, &fresh, shadow_table_bits)) {
                *slot = v;
                shadow_key_added(m, (uintptr_t)key);
            }
        }
    }
    m->value.clear();
    m->by_address = true;
}

/*
 * The table of a reduction about to grow (or, full, to start afresh and lose its values) gives
 * way to a window over the addresses it has held and p when that window takes at most
 * shadow_spread_slots / 2 (8) slots
 * an entry (32 bytes, against the table's 32 to 64 grown at half full), half the spread that
 * sends a window to the table (shadow_spread), so the two do not alternate. At 2^23 entries
 * that allows shadow_max_slots: a full table of a range the window can cover is never cleared.
 * NumPy's per-index ufunc.at of 18 M steps into a 287x1441x38 target had filled the table and
 * started afresh: 0.9 M of its elements rounded at steps after that (tests/test_reductions.py::
 * test_ufunc_at_on_an_nd_target_beyond_the_table_accumulates_in_float32); 300 random rows of
 * a 1000x1000 target 6.2 -> 5.3 ms (AMD EPYC Zen 4, avx512bf16). false: the table stays (keys
 * of both parities, too wide a range, no memory).
 */
static bool
shadow_table_to_window(Shadow *m, const char *p)
{
    KeyTable &t = m->table;
    uintptr_t lo = std::min(m->key_lo, (uintptr_t)p), hi = std::max(m->key_hi, (uintptr_t)p);
    if (!m->reduction || t.count == 0 || m->key_parities || ((m->key_lo ^ (uintptr_t)p) & 1)) {
        return false;
    }
    size_t span = (size_t)(hi - lo) / 2 + 1;
    if (span > shadow_max_slots || span > shadow_spread_slots / 2 * (t.count + 1)) {
        return false;
    }
    try {
        FloatWindow w(span, 0.0f);
        for (const KeySlot &e : t.slots) {
            if (e.key != -1) {
                w[((uintptr_t)e.key - lo) / 2] = e.val;
            }
        }
        m->value.swap(w);
    }
    catch (...) {
        return false;
    }
    m->lo = (char *)lo;
    m->by_address = false;
    kt_clear(t);
    shadow_keys_reset(m);
    return true;
}

/* The float32 standing behind the bfloat16 stored at p, from the table; *slot: where p's new
 * value goes (nullptr: nowhere, no memory). */
static inline float
shadow_table_get(Shadow *m, const char *p, float **slot)
{
    bf16_t stored = ld(p); /* first: its cache miss and the table's overlap */
    bool fresh = false;
    *slot = kt_slot(m->table, (npy_intp)(uintptr_t)p, &fresh, shadow_table_bits);
    if (fresh) {
        shadow_key_added(m, (uintptr_t)p);
    }
    if (*slot == nullptr || fresh) {
        return bf16_to_f32(stored);
    }
    return f32_to_bf16(**slot) == stored ? **slot : bf16_to_f32(stored);
}

/* Set at registration: NumPy before 2.3 (C API version 0x14), whose iterator may move a
 * reduction's output between its buffer and the array (see shadow_follow_copy). */
static bool numpy_copies_outputs = false;

/*
 * Called when an in-place call writes m output elements at o (stride so) and the previous one
 * wrote a different range. If the new range lies outside the window and holds, element for
 * element, the rounding of the float32 values of the previous range, while differing from what
 * the previous range held when numpy began writing it, it is numpy's copy of that range (its
 * buffer written back, or the output copied into its buffer): the window restarts there with
 * those float32 values. A fresh output range that merely equals the previous range's rounding
 * (both still hold the reduction's initial value) is not taken for a copy. Without memory for
 * the bookkeeping, copies are no longer followed (the loop may run without the GIL, so it
 * cannot raise).
 */
static void
shadow_follow_copy(Shadow *m, char *o, npy_intp so, npy_intp n_out)
{
    char *q_last = o + (n_out - 1) * so;
    char *p = m->prev_o;
    /* only a reduction revisits outputs: elementwise calls keep what they find */
    bool copy = m->reduction && p != nullptr && m->prev_m == n_out &&
                shadow_disjoint(m, o, q_last) &&
                shadow_covers(m, p, p + (n_out - 1) * m->prev_so);
    if (copy) {
        bool moved = false;
        for (npy_intp i = 0; i < n_out && copy; i++) {
            bf16_t q = ld(o + i * so);
            copy = q == f32_to_bf16(shadow_slot(m, p + i * m->prev_so));
            moved |= q != m->prev_first[i];
        }
        copy = copy && moved;
    }
    if (copy) {
        std::vector<float> carried;
        try {
            carried.resize(n_out);
        }
        catch (...) {
            m->prev_o = nullptr;
            return;
        }
        for (npy_intp i = 0; i < n_out; i++) {
            carried[i] = shadow_slot(m, p + i * m->prev_so);
        }
        m->value.clear();
        if (shadow_cover(m, o, q_last)) {
            for (npy_intp i = 0; i < n_out; i++) {
                shadow_slot(m, o + i * so) = carried[i];
            }
        }
        /* prev_first stays: the copy began from the same values */
    }
    else {
        try {
            m->prev_first.resize(n_out);
        }
        catch (...) {
            m->prev_o = nullptr;
            return;
        }
        if (so == 2) {
            memcpy(m->prev_first.data(), o, 2 * (size_t)n_out);
        }
        else {
            for (npy_intp i = 0; i < n_out; i++) {
                m->prev_first[i] = ld(o + i * so);
            }
        }
    }
    m->prev_o = o;
    m->prev_so = so;
    m->prev_m = n_out;
}

/* Make the park cover bytes [first, last]; false when too large or out of memory. */
static bool
park_cover(Park &parked, uintptr_t first, uintptr_t last)
{
    uintptr_t lo = parked.lo, hi = lo + parked.value.size();
    if (!parked.value.empty() && first >= lo && last < hi) {
        return true;
    }
    uintptr_t new_lo = parked.value.empty() ? first : std::min(first, lo);
    uintptr_t new_hi = parked.value.empty() ? last + 1 : std::max(last + 1, hi);
    if (new_hi - new_lo > shadow_max_slots) { /* bytes: 256 MiB of floats at most */
        return false;
    }
    try {
        FloatWindow v(new_hi - new_lo, 0.0f);
        std::vector<uint8_t> h(new_hi - new_lo, 0);
        if (!parked.value.empty()) {
            std::copy(parked.value.begin(), parked.value.end(), v.begin() + (lo - new_lo));
            std::copy(parked.has.begin(), parked.has.end(), h.begin() + (lo - new_lo));
        }
        parked.value.swap(v);
        parked.has.swap(h);
        parked.lo = new_lo;
    }
    catch (...) {
        return false;
    }
    return true;
}

/*
 * A cast copied n elements from src (stride ss) to dst (stride ds), after writing dst; either
 * side is bfloat16 (src_bf16, dst_bf16) or another type. With a reduction in flight on this
 * thread: values copied out of its window are parked by destination address; every bfloat16
 * written into the window replaces the float32 there, by the parked value of its source
 * where that still rounds to it, else by the bfloat16 itself. Runs without the GIL.
 */
extern "C" void
bf16_reduction_cast(const char *src, npy_intp ss, int src_bf16, char *dst, npy_intp ds,
                    int dst_bf16, npy_intp n)
{
    Shadow *m = active_reduction;
    if (m == nullptr || n <= 0 || (m->value.empty() && m->table.count == 0)) {
        return;
    }
    Park &parked = m->park;
    /* where the reduction keeps the float32 value of the output at p, if it keeps one */
    auto kept = [m](const char *p) -> float * {
        if (m->by_address) {
            return kt_find(m->table, (npy_intp)(uintptr_t)p);
        }
        return shadow_covers(m, p, p) ? &shadow_slot(m, p) : nullptr;
    };
    if (src_bf16 && (m->by_address || !shadow_disjoint(m, src, src + (n - 1) * ss))) {
        bool ready = false;
        for (npy_intp i = 0; i < n; i++) {
            const char *p = src + i * ss;
            float *v = kept(p);
            if (v == nullptr) {
                continue;
            }
            if (!ready) {
                uintptr_t a = (uintptr_t)dst, b = (uintptr_t)(dst + (n - 1) * ds);
                if (!park_cover(parked, std::min(a, b), std::max(a, b))) {
                    park_clear(parked); /* nothing parked is taken back: no stale value either */
                    break;
                }
                ready = true;
            }
            size_t k = (size_t)((uintptr_t)(dst + i * ds) - parked.lo);
            parked.value[k] = kept_or_stored(*v, p);
            parked.has[k] = 1;
        }
    }
    if (dst_bf16 && (m->by_address || !shadow_disjoint(m, dst, dst + (n - 1) * ds))) {
        for (npy_intp i = 0; i < n; i++) {
            char *q = dst + i * ds;
            float *slot = kept(q);
            if (slot == nullptr) {
                continue;
            }
            bf16_t stored = ld(q);
            float v = bf16_to_f32(stored);
            uintptr_t from = (uintptr_t)(src + i * ss);
            if (!parked.value.empty() && from >= parked.lo && from < parked.lo + parked.value.size()) {
                size_t k = (size_t)(from - parked.lo);
                if (parked.has[k] && f32_to_bf16(parked.value[k]) == stored) {
                    v = parked.value[k];
                }
            }
            *slot = v;
        }
    }
}

struct AddAcc {
    using Op = Add;
    static float f(float a, float b) { return a + b; }
    static float reduce(const char *p, npy_intp stride, npy_intp n)
    {
        return bf16_sum_f32(p, (ptrdiff_t)stride, (ptrdiff_t)n);
    }
    static constexpr float identity = 0.0f;
    /* A bound on the magnitude of n steps from values of magnitude at most w (inf: unknown)
     * by operands of at most x: each rounding adds at most 2^-24 of the exact result, and
     * (1 + 2^-24)^n <= 1 + 2^-23 n for n <= 2^24; inf beyond. Raises no IEEE flag (numpy
     * reads them after the loop): the terms are finite or inf, never NaN. */
    static double bound(double w, double x, npy_intp n)
    {
        return n > ((npy_intp)1 << 24) ? INFINITY
                                        : (w + (double)n * x) * (1 + (double)n * 0x1p-23);
    }
};
struct MulAcc {
    using Op = Multiply;
    static float f(float a, float b) { return a * b; }
    static float reduce(const char *p, npy_intp stride, npy_intp n)
    {
        return bf16_prod_f32(p, (ptrdiff_t)stride, (ptrdiff_t)n);
    }
    static constexpr float identity = 1.0f;
    /* (as AddAcc's) only for operands of at most 1 */
    static double bound(double w, double x, npy_intp n)
    {
        return n > ((npy_intp)1 << 24) || x > 1 ? INFINITY : w * (1 + (double)n * 0x1p-23);
    }
};


/* Acc::f(acc, x) where, both being NaN, the running value's NaN (quietened) is the result: the
 * hardware returns one operand's, which one depending on the order the compiler chose, and a
 * reduction gives its first NaN (tests/test_kernels_reduce.py::
 * test_nan_results_agree_across_tiers; the one-element steps of NumPy 2.0's buffered sums had
 * returned the later NaN). */
template <class Acc>
static inline float
acc_step(float acc, float x)
{
    float r = Acc::f(acc, x);
    if (__builtin_expect(r != r, 0) && acc != acc) {
        r = f32_from_bits(f32_bits(acc) | 0x00400000u);
    }
    return r;
}

static thread_local const void *pending_reduction = nullptr;

template <class Acc>
static int
acc_initial(PyArrayMethod_Context *context, npy_bool reduction_is_empty, void *initial)
{
    /* numpy asks this right before it asks for the reduction's loop: remember the context */
    pending_reduction = context;
    (void)reduction_is_empty;
    st((char *)initial, f32_to_bf16(Acc::identity));
    return 1;
}

/* Mark the call a reduction when it writes output an earlier call already wrote. */
static void
shadow_note_writes(Shadow *m, char *o, npy_intp so, npy_intp n)
{
    char *first = o, *last = o + (n - 1) * so;
    if (first > last) std::swap(first, last);
    if (m->seen_lo != nullptr && first <= m->seen_hi && last >= m->seen_lo) {
        m->reduction = true;
    }
    m->seen_lo = (m->seen_lo == nullptr || first < m->seen_lo) ? first : m->seen_lo;
    m->seen_hi = (m->seen_hi == nullptr || last > m->seen_hi) ? last : m->seen_hi;
}

template <class Acc>
static int
acc_loop(PyArrayMethod_Context *, char *const data[], npy_intp const dims[],
         npy_intp const strides[], NpyAuxData *auxdata)
{
    npy_intp n = dims[0];
    char *a = data[0], *b = data[1], *o = data[2];
    npy_intp sa = strides[0], sb = strides[1], so = strides[2];
    Shadow *shadow = reinterpret_cast<Shadow *>(auxdata);
    int ovf = 0;
    if (n <= 0) {
        return 0;
    }
    if (n == 1 && sa == 0 && so == 0 && a == o && shadow != nullptr && shadow->by_address &&
            (2 * (shadow->table.count + 1) <= shadow->table.slots.size() ||
             !shadow_table_to_window(shadow, o))) { /* a full table may become a window first */
        /* NumPy's per-index ufunc.at once its values went into the table: what the branches
         * below come to, in fewer instructions, the target read before the table, so that the
         * core overlaps the cache misses of successive calls. With the table's first probe
         * inline and its memory kept (kt_slot, kt_empty): np.add.at of 2^16 random
         * (row, column) pairs into a 2048x2048 target 3.6 -> 1.8 ms (float32 1.07 ms, AMD
         * EPYC Zen 5) */
        float *slot;
        float start = shadow_table_get(shadow, o, &slot);
        if (!shadow->reduction) {
            shadow_note_writes(shadow, o, 0, 1);
        }
        if (shadow->reduction) {
            active_reduction = shadow;
        }
        shadow->calls++;
        float r = acc_step<Acc>(start, bf16_to_f32(ld(b)));
        bf16_t h = f32_to_bf16(r);
        st(o, h);
        if (slot != nullptr) {
            *slot = r;
        }
        report_overflow(bf16_overflowed(r, h));
        return 0;
    }
    bool use_shadow = false, use_table = false;
    if (shadow != nullptr && a == o && sa == so && shadow->reduction && !shadow->by_address &&
            !numpy_copies_outputs && shadow_covers(shadow, o, o + (so == 0 ? 0 : (n - 1) * so))) {
        /* the usual call of a reduction, its outputs already in the window: the checks below
         * would come to the same (sums of short rows, or of few columns, are a call per row) */
        shadow->calls++;
        use_shadow = true;
    }
    else if (shadow != nullptr && a == o && sa == so) {
        /* in place: a reduction's slice, or an elementwise a += b */
        if (!shadow->reduction) {
            shadow_note_writes(shadow, o, so, n);
        }
        shadow->calls++;
        npy_intp n_out = so == 0 ? 1 : n;
        size_t span = (size_t)((n_out - 1) * (so < 0 ? -so : so)) / 2 + 1;
        size_t limit = shadow->reduction ? shadow_max_slots : shadow_probe_slots;
        bool fits = span <= limit; /* a larger elementwise a += b: the plain loop */
        /* first, as the window follows NumPy's copy of a one-element output between its buffer
         * and the array, which would otherwise look like a spread call */
        /* a step of ufunc.at (the loop asked for at contiguous strides, called at stride 0)
         * writes the target in place: no copy to follow, and one taken for a copy had carried
         * another element's value over (an element holding the rounding of its neighbour's,
         * NumPy 2.0; tests/test_reductions.py::test_add_at_with_a_tuple_index_keeps_each_value) */
        bool at_step = n == 1 && sb == 0 && so == 0 && shadow->contiguous_fixed;
        if (fits && !shadow->by_address && numpy_copies_outputs && !at_step &&
                (o != shadow->prev_o || so != shadow->prev_so || n_out != shadow->prev_m)) {
            shadow_follow_copy(shadow, o, so, n_out);
        }
        if (!shadow->by_address && n_out == 1 && shadow_spread(shadow, o)) {
            shadow_to_table(shadow);
        }
        use_table = shadow->by_address;
        if (!use_table && fits) {
            use_shadow = shadow_cover(shadow, o, o + (n_out - 1) * so);
        }
    }
    if (use_shadow || use_table) {
        /* for the casts between this call and the next; also while the call is not yet known
         * to be a reduction: one given initial= into a buffered output copies its first
         * outputs out of the buffer before it comes back to any (tests/test_reductions.py::
         * test_initial_into_buffered_outputs_over_several_axes) */
        active_reduction = shadow;
    }
    if (a == o && sa == 0 && so == 0) {
        /* reduce form: the whole row folds into one output element */
        float *slot = nullptr;
        float start = use_shadow  ? shadow_get(shadow, o)
                      : use_table ? shadow_table_get(shadow, o, &slot)
                                  : bf16_to_f32(ld(o));
        /* one element (NumPy's ufunc.at calls): the element itself, as the reduction gives */
        float r = acc_step<Acc>(start, n == 1 ? bf16_to_f32(ld(b)) : Acc::reduce(b, sb, n));
        bf16_t h = f32_to_bf16(r);
        ovf |= bf16_overflowed(r, h);
        st(o, h);
        if (use_shadow) {
            shadow_slot(shadow, o) = r;
        }
        else if (slot != nullptr) {
            *slot = r;
        }
    }
    else if (use_shadow && so == 2 && sb == 2) {
        float *v = &shadow_slot(shadow, o);
        ovf = contiguous_shadow_row<typename Acc::Op>(o, b, v, n);
    }
    else if (use_shadow) {
        for (npy_intp i = 0; i < n; i++, b += sb, o += so) {
            float r = acc_step<Acc>(shadow_get(shadow, o), bf16_to_f32(ld(b)));
            bf16_t h = f32_to_bf16(r);
            ovf |= bf16_overflowed(r, h);
            st(o, h);
            shadow_slot(shadow, o) = r;
        }
    }
    else if (use_table) {
        for (npy_intp i = 0; i < n; i++, b += sb, o += so) {
            float *slot;
            float r = acc_step<Acc>(shadow_table_get(shadow, o, &slot), bf16_to_f32(ld(b)));
            bf16_t h = f32_to_bf16(r);
            ovf |= bf16_overflowed(r, h);
            st(o, h);
            if (slot != nullptr) {
                *slot = r;
            }
        }
    }
    else if (sa == so && a + sa == o && sa != 0) {
        /* accumulate chain: out[i] = out[i-1] + in[i] */
        float run = bf16_to_f32(ld(a));
        for (npy_intp i = 0; i < n; i++, b += sb, o += so) {
            run = acc_step<Acc>(run, bf16_to_f32(ld(b)));
            bf16_t h = f32_to_bf16(run);
            ovf |= bf16_overflowed(run, h);
            st(o, h);
        }
    }
    else {
        char *args[3] = {a, b, o};
        npy_intp steps[3] = {sa, sb, so};
        binary_loop<typename Acc::Op>(args, dims, steps, nullptr);
    }
    report_overflow(ovf);
    return 0;
}

template <class Acc>
static int
acc_get_loop(PyArrayMethod_Context *context, int, int, const npy_intp *strides,
             PyArrayMethod_StridedLoop **out_loop, NpyAuxData **out_transferdata,
             NPY_ARRAYMETHOD_FLAGS *flags)
{
    *out_loop = acc_loop<Acc>;
    *flags = (NPY_ARRAYMETHOD_FLAGS)0; /* no GIL needed; check float errors */
    bool reduction = pending_reduction == (const void *)context;
    pending_reduction = nullptr;
    Shadow *m = shadow_new(reduction);
    if (m == nullptr) {
        PyErr_NoMemory();
        return -1;
    }
    m->serial = ++m->generation;
    if (active_reduction != nullptr) {
        /* a call inside a reduction's call: the outer one is made active again at its end */
        m->nested = true;
        m->outer_active = active_reduction;
        m->outer_serial = active_reduction->serial;
        active_reduction->holders++;
        active_reduction = nullptr;
    }
    if (at_call.values.started) {
        at_reset(at_call.values); /* a call inside a call's .at: the outer blocks go alone */
    }
    at_call.context = context;
    at_call.owner = m;
    m->contiguous_fixed = strides != nullptr && strides[0] == 2 && strides[1] == 2 &&
                          strides[2] == 2;
    *out_transferdata = reinterpret_cast<NpyAuxData *>(m);
    return 0;
}

static int
acc_strided_loop_add(PyArrayMethod_Context *c, char *const d[], npy_intp const n[],
                     npy_intp const s[], NpyAuxData *aux)
{
    return acc_loop<AddAcc>(c, d, n, s, aux);
}

static int
acc_strided_loop_mul(PyArrayMethod_Context *c, char *const d[], npy_intp const n[],
                     npy_intp const s[], NpyAuxData *aux)
{
    return acc_loop<MulAcc>(c, d, n, s, aux);
}

/* ---- ufunc.at: the indexed loop -------------------------------------------------------- */

/* No cap on the indexed loop's table: at_place bounds it by the target's size instead. */
static const int at_table_bits = 62;

/* The largest magnitude among w[0..n) (inf if one is inf or NaN). */
static double
largest_magnitude(const float *w, size_t n)
{
    uint32_t m = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t a = f32_bits(w[j]) & 0x7fffffffu;
        m = a > m ? a : m;
    }
    return m >= 0x7f800000u ? INFINITY : (double)f32_from_bits(m);
}

/* Make the window cover target indices [lo, hi], which contain the window's range: the window's
 * values kept, the table's moved in (the table is emptied), the rest read from the target.
 * false: no memory (nothing changed). */
static bool
at_widen(AtValues &t, const char *base, npy_intp sbase, npy_intp lo, npy_intp hi)
{
    try {
        FloatWindow w((size_t)(hi - lo) + 1);
        npy_intp wlo = t.lo, whi = t.lo + (npy_intp)t.window.size() - 1;
        for (npy_intp k = lo; k <= hi; k++) {
            w[(size_t)(k - lo)] = !t.window.empty() && k >= wlo && k <= whi
                    ? t.window[(size_t)(k - wlo)] : bf16_to_f32(ld(base + k * sbase));
        }
        for (const KeySlot &e : t.table.slots) {
            if (e.key != -1) {
                w[(size_t)(e.key - lo)] = e.val;
            }
        }
        t.bound = largest_magnitude(w.data(), w.size());
        t.window.swap(w);
        t.lo = lo;
        kt_clear(t.table);
    }
    catch (const std::bad_alloc &) {
        return false;
    }
    return true;
}

/* Where a block's indices [lo, hi] (n of them) of a target of `shape` elements keep their
 * values. A dense window wherever it takes at most four slots for each index of the call so far
 * (or 4096): the first block's span, then widened over later blocks while that holds; else a
 * table of the indices, which gives way to a window over the whole target once it holds a
 * sixteenth as many entries as the target has elements (at 32-64 bytes an entry, a half to all
 * of the window's 4 bytes a slot). */
static void
at_place(AtValues &t, const char *base, npy_intp sbase, npy_intp lo, npy_intp hi, npy_intp n,
         npy_intp shape)
{
    size_t span = (size_t)(hi - lo) + 1;
    t.seen += (size_t)n;
    size_t room = std::max(t.seen * 4, (size_t)4096);
    if (!t.started) {
        t.started = true;
        if (span <= room) {
            try {
                t.window.resize(span);
                t.lo = lo;
                for (size_t j = 0; j < span; j++) {
                    t.window[j] = bf16_to_f32(ld(base + (lo + (npy_intp)j) * sbase));
                }
                t.bound = largest_magnitude(t.window.data(), span);
            }
            catch (const std::bad_alloc &) {
                t.window.clear();
            }
        }
        if (t.window.empty()) { /* room for the block's indices (up to 2^24 slots) at once */
            int bits = 12;
            while (bits < 24 && ((size_t)1 << bits) < 2 * std::min(span, (size_t)n)) bits++;
            (void)kt_resize(t.table, bits); /* else kt_slot tries again */
        }
        return;
    }
    if (!t.window.empty()) {
        npy_intp whi = t.lo + (npy_intp)t.window.size() - 1;
        if (lo >= t.lo && hi <= whi) {
            return;
        }
        npy_intp new_lo = std::min(lo, t.lo), new_hi = std::max(hi, whi);
        if ((size_t)(new_hi - new_lo) + 1 <= room && at_widen(t, base, sbase, new_lo, new_hi)) {
            return;
        }
        /* into the table: the values the target's bfloat16 does not already hold exactly */
        for (size_t j = 0; j < t.window.size(); j++) {
            npy_intp k = t.lo + (npy_intp)j;
            if (f32_bits(t.window[j]) != (uint32_t)ld(base + k * sbase) << 16) {
                bool fresh = false;
                if (float *slot = kt_slot(t.table, k, &fresh, at_table_bits)) {
                    *slot = t.window[j];
                }
            }
        }
        FloatWindow().swap(t.window);
        return;
    }
    if ((t.table.count + (size_t)n) * 16 >= (size_t)shape) {
        (void)at_widen(t, base, sbase, 0, shape - 1); /* else the table goes on */
    }
}

/* The steps of an indexed block whose targets all lie in the window w (index wlo first):
 * w[idx[i] - wlo] op= v[i] in order. `Check`: also note (in *largest) the largest magnitude a
 * step gave, as float32 bits, and return whether a finite one rounds to inf in bfloat16 (at or
 * above 0x7F7F8000, the half-way point past bfloat16's largest finite value, a tie rounding to
 * even, up). */
template <class Acc, bool Check>
static bool
at_window_steps(float *w, npy_intp wlo, const char *idx, npy_intp sidx, npy_intp shape,
                const char *v, npy_intp sv, npy_intp n, uint32_t *largest)
{
    bool rounds_to_inf = false;
    uint32_t big = 0;
    for (npy_intp i = 0; i < n; i++, idx += sidx, v += sv) {
        npy_intp k;
        memcpy(&k, idx, sizeof k);
        k = k < 0 ? k + shape : k; /* NumPy has checked the bounds */
        float *slot = w + (k - wlo);
        float r = acc_step<Acc>(*slot, bf16_to_f32(ld(v))); /* the target's NaN first */
        *slot = r;
        if (Check) {
            uint32_t a = f32_bits(r) & 0x7fffffffu;
            rounds_to_inf |= a - 0x7f7f8000u < 0x7f800000u - 0x7f7f8000u;
            big = a > big ? a : big;
        }
    }
    if (Check) {
        *largest = big;
    }
    return rounds_to_inf;
}

/* The largest magnitude among a block's n values (inf if an inf or a NaN is among them). */
static float
largest_operand(const char *v, npy_intp sv, npy_intp n)
{
    int16_t m = largest_magnitude_bits(v, sv, n);
    return m >= 0x7f80 ? INFINITY : bf16_to_f32((bf16_t)m);
}

/*
 * ufunc.at with a bfloat16 operand on a 1-d, aligned, native bfloat16 target and one integer
 * index array: NumPy calls this indexed loop, once per block of indices (one block for an
 * intp index array, blocks of its buffer size for others it casts), instead of the strided
 * loop once per index. The float32 value of every target the call updates is kept across its
 * blocks (in at_call, found by the call's context), so repeated indices accumulate in float32
 * as a reduction does (the shadow above does the same for the layouts NumPy runs through the
 * strided loop); by the end of each block the target holds the rounding of every value (the
 * window's at the end, the table's at each step). Should memory for the values run out, they
 * start afresh and an index seen again goes on from its stored bfloat16 value (README
 * "Reductions"; tests/test_reductions.py::
 * test_ufunc_at_accumulates_in_float32_with_a_bfloat16_operand,
 * ::test_ufunc_at_indexed_loop_like_a_float32_reference).
 */
template <class Acc>
static int
acc_indexed_loop(PyArrayMethod_Context *context, char *const *args, npy_intp const *dims,
                 npy_intp const *steps, NpyAuxData *)
{
    char *base = args[0], *idx = args[1], *v = args[2];
    npy_intp sbase = steps[0], sidx = steps[1], sv = steps[2], shape = steps[3], n = dims[0];
    auto index = [&](npy_intp i) {
        npy_intp k;
        memcpy(&k, idx + i * sidx, sizeof k);
        return k < 0 ? k + shape : k; /* NumPy has checked the bounds */
    };
    if (n <= 0) {
        return 0;
    }
    /* a call made inside this one (Python code run by a cast) took at_call: a block of its own */
    AtValues own;
    AtValues &t = at_call.context == (const void *)context ? at_call.values : own;
    /* The block's index range; a target of at most n elements is taken whole instead (its
     * window costs no more than the block, and the pass over the indices was a third of the
     * time of np.add.at of 2^24 indices into 4096 elements: 44 -> 31 ms, float32's 22; AMD EPYC
     * Zen 5) */
    npy_intp lo = 0, hi = shape - 1;
    if (shape > n) {
        lo = hi = index(0);
        for (npy_intp i = 1; i < n; i++) {
            npy_intp k = index(i);
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
        }
    }
    at_place(t, base, sbase, lo, hi, n, shape);
    int ovf = 0;
    if (!t.window.empty()) {
        /* The usual case. The steps update the window only (one store each); then the
         * block's range of the target is brought to the rounding of the window where they
         * differ. A step rounding to inf raises the overflow warning; when a bound on every
         * step's magnitude (the window's bound and the block's largest operand) says no step
         * can, the steps do not look at their results: that test was a quarter of the time of
         * np.add.at of 2^24 indices into 4096 elements (31 -> 24.6 ms, AMD EPYC Zen 5). */
        float *w = t.window.data();
        npy_intp wlo = t.lo;
        double after = Acc::bound(t.bound, largest_operand(v, sv, n), n);
        bool rounds_to_inf = false;
        if (after < 0x1.fep127) { /* 0x7F7F0000: below the half-way point, with room */
            at_window_steps<Acc, false>(w, wlo, idx, sidx, shape, v, sv, n, nullptr);
            t.bound = after;
        }
        else {
            uint32_t largest;
            rounds_to_inf = at_window_steps<Acc, true>(w, wlo, idx, sidx, shape, v, sv, n,
                                                       &largest);
            t.bound = largest >= 0x7f800000u ? INFINITY
                                             : std::max(t.bound, (double)f32_from_bits(largest));
        }
        auto write_back = [&](npy_intp k) {
            char *q = base + k * sbase;
            float r = w[k - wlo];
            if (f32_bits(r) != (uint32_t)ld(q) << 16) {
                st(q, f32_to_bf16(r));
            }
        };
        if ((size_t)(hi - lo) < std::max((size_t)n * 4, (size_t)4096)) {
            for (npy_intp k = lo; k <= hi; k++) {
                write_back(k);
            }
        }
        else { /* a sparse block in a window widened by the others */
            for (npy_intp i = 0; i < n; i++) {
                write_back(index(i));
            }
        }
        report_overflow(rounds_to_inf);
        return 0;
    }
    for (npy_intp i = 0; i < n; i++, v += sv) {
        npy_intp k = index(i);
        char *q = base + k * sbase;
        float alone, *acc = &alone;
        bool fresh = false;
        if (float *slot = kt_slot(t.table, k, &fresh, at_table_bits)) {
            acc = slot;
        }
        else {
            fresh = true; /* no table: this step from the stored value */
        }
        if (fresh) {
            *acc = bf16_to_f32(ld(q));
        }
        *acc = acc_step<Acc>(*acc, bf16_to_f32(ld(v)));
        store_rounded(q, *acc, &ovf);
    }
    report_overflow(ovf);
    return 0;
}

int
add_reducing_binary_loop(PyObject *ufunc, const char *name, PyArray_DTypeMeta **dtypes,
                         PyType_Slot *slots)
{
    PyArrayMethod_Spec spec = {};
    spec.name = name;
    spec.nin = 2;
    spec.nout = 1;
    spec.casting = NPY_NO_CASTING;
    spec.flags = (NPY_ARRAYMETHOD_FLAGS)(NPY_METH_IS_REORDERABLE | NPY_METH_SUPPORTS_UNALIGNED);
    spec.dtypes = dtypes;
    spec.slots = slots;
    return PyUFunc_AddLoopFromSpec(ufunc, &spec);
}

template <class Acc>
static int
add_accumulating_loop(PyObject *numpy, const char *name, PyArrayMethod_StridedLoop *plain)
{
    PyObject *ufunc = PyObject_GetAttrString(numpy, name);
    if (ufunc == NULL) {
        return -1;
    }
    PyArray_DTypeMeta *bf = NPY_DTYPE(bf16_descr);
    PyArray_DTypeMeta *dtypes[3] = {bf, bf, bf};
    PyType_Slot slots[] = {
        {NPY_METH_get_loop, (void *)acc_get_loop<Acc>},
        {NPY_METH_strided_loop, (void *)plain},
        {NPY_METH_get_reduction_initial, (void *)acc_initial<Acc>},
        {NPY_METH_contiguous_indexed_loop, (void *)acc_indexed_loop<Acc>},
        {0, NULL}};
    int r = add_reducing_binary_loop(ufunc, name, dtypes, slots);
    Py_DECREF(ufunc);
    return r;
}

int
register_accumulating_loops(PyObject *numpy)
{
    numpy_copies_outputs = PyArray_RUNTIME_VERSION < 0x00000014;
    if (add_accumulating_loop<AddAcc>(numpy, "add", acc_strided_loop_add) < 0) {
        return -1;
    }
    return add_accumulating_loop<MulAcc>(numpy, "multiply", acc_strided_loop_mul);
}

} /* namespace umath */
