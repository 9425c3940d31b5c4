/*
 * kernels/sort.c - sorting bfloat16 arrays in numpy order (see kernels.h).
 *
 * numpy order: ascending, NaNs last, -0.0 == +0.0. The comparison key is bf16_sort_key() from
 * bf16.h (NaNs all map to 0xffff, both zeros to the same key).
 *
 *  - tiny n (<= 48): stable insertion sort on the key;
 *  - mid n (< 8192): stable LSD radix sort, two passes of 8 bits on the key, via a temp buffer;
 *  - large n (values): counting sort over the 65,536 raw bit patterns. The sorted array is
 *    regenerated from the counts, so equal-comparing patterns (the two zeros, the NaN payloads)
 *    come out grouped by pattern; the stable variant first copies those special elements in
 *    input order and puts them back;
 *  - argsort: stable LSD radix sort of (key << 48 | index) words with software
 *    write-combining, or of separate key/index arrays if an index does not fit in 48 bits.
 * If a buffer cannot be allocated the value sorts fall back to an in-place O(n log n) path.
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise / MADV_HUGEPAGE */
#endif

#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define INSERTION_MAX 48          /* n up to this: insertion sort */
#define COUNTING_MIN 8192         /* n from this: counting sort (values) */
#define NPAT 65536

/*
 * bf16_sort_key() without branches: the bf16.h version compiles to a sign test that random
 * data mispredicts half the time, which doubled the cost of the radix passes. Same mapping
 * (-0.0 -> key of +0.0, every NaN -> 0xffff, negatives bit-inverted, positives offset by the
 * sign bit); tests/test_kernels_sort.py sorts all 65,536 patterns against numpy's float32 order.
 */
KINLINE uint16_t sort_key(uint16_t h)
{
    uint16_t mag = (uint16_t)(h & BF16_ABS);
    uint16_t nonzero = (uint16_t)(0u - (uint16_t)(mag != 0));       /* 0xffff unless +-0 */
    uint16_t nan = (uint16_t)(0u - (uint16_t)(mag > BF16_INF));      /* 0xffff if NaN */
    h = (uint16_t)(h & nonzero);                                     /* -0.0 -> +0.0 */
    uint16_t flip = (uint16_t)((0u - (unsigned)(h >> 15)) | BF16_SIGN);
    return (uint16_t)((h ^ flip) | nan);
}

/*
 * malloc for big work buffers. On Linux, ask for transparent huge pages (as numpy does for its
 * own large arrays): a fresh 128 MiB buffer otherwise costs 32k page faults, a sizeable share
 * of a radix pass. Best effort; failure of madvise is harmless.
 */
static void *alloc_work(size_t bytes)
{
    void *p = malloc(bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)1 << 21;
    if (p && bytes >= 2 * huge) {
        uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
        uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);
        if (e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
    }
#endif
    return p;
}

/* zeros and NaNs: the patterns that compare equal to a different pattern */
KINLINE int is_special(uint16_t h) { return bf16_iszero(h) | bf16_isnan(h); }

/* ------------------------------------------------------------------------------------------ */
/* small helpers: insertion sort, reversal, rotation, stable partition                        */

static void insertion_sort_values(char *d, ptrdiff_t n)
{
    for (ptrdiff_t i = 1; i < n; i++) {
        uint16_t v = ld16(d + 2 * i);
        uint16_t k = bf16_sort_key(v);
        ptrdiff_t j = i;
        while (j > 0) {
            uint16_t w = ld16(d + 2 * (j - 1));
            if (bf16_sort_key(w) <= k) break;
            st16(d + 2 * j, w);
            j--;
        }
        st16(d + 2 * j, v);
    }
}

static void reverse16(char *d, ptrdiff_t lo, ptrdiff_t hi) /* [lo, hi) */
{
    for (hi--; lo < hi; lo++, hi--) {
        uint16_t a = ld16(d + 2 * lo), b = ld16(d + 2 * hi);
        st16(d + 2 * lo, b);
        st16(d + 2 * hi, a);
    }
}

/* Rotate [lo, hi) so that the element at mid comes first (order within each part kept). */
static void rotate16(char *d, ptrdiff_t lo, ptrdiff_t mid, ptrdiff_t hi)
{
    if (lo == mid || mid == hi) return;
    reverse16(d, lo, mid);
    reverse16(d, mid, hi);
    reverse16(d, lo, hi);
}

/* In-place stable partition of [lo, hi): zeros first, others after. Returns the zero count.
 * Divide and conquer with rotations: O(len log len), recursion depth log2(len). */
static ptrdiff_t stable_partition_zeros(char *d, ptrdiff_t lo, ptrdiff_t hi)
{
    ptrdiff_t len = hi - lo;
    if (len <= 16) {
        /* small: insertion by the 0/1 predicate (stable) */
        ptrdiff_t z = 0;
        for (ptrdiff_t i = lo; i < hi; i++) {
            uint16_t v = ld16(d + 2 * i);
            if (!bf16_iszero(v)) continue;
            for (ptrdiff_t j = i; j > lo + z; j--) st16(d + 2 * j, ld16(d + 2 * (j - 1)));
            st16(d + 2 * (lo + z), v);
            z++;
        }
        return z;
    }
    ptrdiff_t mid = lo + len / 2;
    ptrdiff_t a = stable_partition_zeros(d, lo, mid);
    ptrdiff_t b = stable_partition_zeros(d, mid, hi);
    rotate16(d, lo + a, mid, mid + b);
    return a + b;
}

/* ------------------------------------------------------------------------------------------ */
/* in-place fallback (no allocation): specials kept in input order                            */

/* strict total order for non-special values: the sort key (no ties between distinct patterns) */
static void sift_down(char *d, ptrdiff_t root, ptrdiff_t n)
{
    uint16_t v = ld16(d + 2 * root);
    uint16_t kv = bf16_sort_key(v);
    for (;;) {
        ptrdiff_t c = 2 * root + 1;
        if (c >= n) break;
        uint16_t kc = bf16_sort_key(ld16(d + 2 * c));
        if (c + 1 < n) {
            uint16_t k2 = bf16_sort_key(ld16(d + 2 * (c + 1)));
            if (k2 > kc) { c++; kc = k2; }
        }
        if (kc <= kv) break;
        st16(d + 2 * root, ld16(d + 2 * c));
        root = c;
    }
    st16(d + 2 * root, v);
}

static void heapsort_values(char *d, ptrdiff_t n)
{
    for (ptrdiff_t i = n / 2; i-- > 0;) sift_down(d, i, n);
    for (ptrdiff_t end = n - 1; end > 0; end--) {
        uint16_t t = ld16(d);
        st16(d, ld16(d + 2 * end));
        st16(d + 2 * end, t);
        sift_down(d, 0, end);
    }
}

static void sort_inplace_fallback(char *d, ptrdiff_t n)
{
    /* 1. specials to the front in input order (swapping; the others' order does not matter) */
    ptrdiff_t ns = 0, nneg = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        uint16_t v = ld16(d + 2 * i);
        if (is_special(v)) {
            st16(d + 2 * i, ld16(d + 2 * ns));
            st16(d + 2 * ns, v);
            ns++;
        } else if (bf16_signbit(v)) {
            nneg++;
        }
    }
    /* 2. sort the ordinary values: all distinct keys for distinct patterns, stability moot */
    heapsort_values(d + 2 * ns, n - ns);
    /* 3. [Z][N][neg][pos]: split the specials stably, then rotate into [neg][Z][pos][N] */
    ptrdiff_t nz = stable_partition_zeros(d, 0, ns);
    rotate16(d, nz, ns, n);               /* [Z][neg][pos][N] */
    rotate16(d, 0, nz, nz + nneg);        /* [neg][Z][pos][N] */
}

/* ------------------------------------------------------------------------------------------ */
/* LSD radix sort of values (stable), two 8-bit passes on bf16_sort_key                       */

static int radix_sort_values(char *d, ptrdiff_t n)
{
    char *tmp = (char *)malloc((size_t)n * 2);
    if (!tmp) return -1;
    ptrdiff_t c0[256] = {0}, c1[256] = {0};
    for (ptrdiff_t i = 0; i < n; i++) {
        uint16_t k = sort_key(ld16(d + 2 * i));
        c0[k & 0xff]++;
        c1[k >> 8]++;
    }
    char *src = d, *dst = tmp;
    for (int pass = 0; pass < 2; pass++) {
        ptrdiff_t *c = pass ? c1 : c0;
        int shift = pass ? 8 : 0;
        ptrdiff_t off[256], s = 0, maxc = 0;
        for (int b = 0; b < 256; b++) {
            off[b] = s;
            s += c[b];
            if (c[b] > maxc) maxc = c[b];
        }
        if (maxc == n) continue; /* all in one bucket: this pass is the identity */
        for (ptrdiff_t i = 0; i < n; i++) {
            uint16_t v = ld16(src + 2 * i);
            unsigned b = (unsigned)(sort_key(v) >> shift) & 0xffu;
            st16(dst + 2 * off[b]++, v);
        }
        char *t = src; src = dst; dst = t;
    }
    if (src != d) memcpy(d, src, (size_t)n * 2);
    free(tmp);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* counting sort over the 65,536 bit patterns                                                 */

/* Write `c` copies of pattern p at element offset *o. */
static void fill16(char *d, ptrdiff_t *o, uint16_t p, uint64_t c)
{
    ptrdiff_t k = *o, e = k + (ptrdiff_t)c;
    for (; k < e; k++) st16(d + 2 * k, p);
    *o = e;
}

/* counts are uint32 (n <= UINT32_MAX) or uint64 */
KINLINE uint64_t cnt_at(const void *cnt, int wide, unsigned p)
{
    return wide ? ((const uint64_t *)cnt)[p] : ((const uint32_t *)cnt)[p];
}

static void histogram32(const char *d, ptrdiff_t n, uint32_t *cnt)
{
    /* unrolled by four; a single table stays in L2 (256 KiB), which beats several tables */
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint16_t a = ld16(d + 2 * i), b = ld16(d + 2 * i + 2);
        uint16_t c = ld16(d + 2 * i + 4), e = ld16(d + 2 * i + 6);
        cnt[a]++;
        cnt[b]++;
        cnt[c]++;
        cnt[e]++;
    }
    for (; i < n; i++) cnt[ld16(d + 2 * i)]++;
}

static void histogram64(const char *d, ptrdiff_t n, uint64_t *cnt)
{
    for (ptrdiff_t i = 0; i < n; i++) cnt[ld16(d + 2 * i)]++;
}

/* returns -1 on allocation failure (data untouched) */
static int counting_sort_values(char *d, ptrdiff_t n, int stable)
{
    int wide = (uint64_t)n > 0xffffffffu;
    void *cnt = calloc(NPAT, wide ? sizeof(uint64_t) : sizeof(uint32_t));
    if (!cnt) return -1;
    if (wide) histogram64(d, n, (uint64_t *)cnt);
    else histogram32(d, n, (uint32_t *)cnt);

    uint64_t cpz = cnt_at(cnt, wide, 0x0000u), cmz = cnt_at(cnt, wide, 0x8000u);
    uint64_t nz = cpz + cmz, nn = 0, nneg = 0;
    int nan_patterns = 0;
    for (unsigned p = 0x7f81u; p <= 0x7fffu; p++) {
        uint64_t a = cnt_at(cnt, wide, p), b = cnt_at(cnt, wide, p | 0x8000u);
        nn += a + b;
        nan_patterns += (a != 0) + (b != 0);
    }
    for (unsigned p = 0x8001u; p <= 0xff80u; p++) nneg += cnt_at(cnt, wide, p);

    ptrdiff_t zbase = (ptrdiff_t)nneg;                 /* first zero in the output */
    ptrdiff_t nbase = n - (ptrdiff_t)nn;               /* first NaN in the output */
    int keep_zero_order = stable && cpz && cmz;
    int keep_nan_order = stable && nan_patterns > 1;

    uint16_t *spec = NULL;
    if (keep_zero_order || keep_nan_order)
        spec = (uint16_t *)malloc(((size_t)nz + (size_t)nn + 1) * sizeof(uint16_t));
    if (spec) {
        /* Collect the zeros and NaNs in input order (branch-free: always store, advance on a
         * special) and put them straight into their output ranges. */
        ptrdiff_t j = 0;
        for (ptrdiff_t i = 0; i < n; i++) {
            uint16_t v = ld16(d + 2 * i);
            spec[j] = v;
            j += is_special(v);
        }
        ptrdiff_t zi = zbase, ni = nbase;
        for (ptrdiff_t k = 0; k < j; k++) {
            uint16_t v = spec[k];
            if (bf16_iszero(v)) st16(d + 2 * zi++, v);
            else st16(d + 2 * ni++, v);
        }
        free(spec);
        keep_zero_order = keep_nan_order = 1;
    } else if (keep_zero_order || keep_nan_order) {
        /* No memory for the list: do it in place. NaNs alone: compact them backwards to the
         * end of the array, which only overwrites visited elements. Zeros (and NaNs): compact
         * them forwards to the front, split the two kinds stably, move the blocks into
         * place. The other elements are regenerated from the counts afterwards. */
        if (!keep_zero_order) {
            /* branch-free compaction: always store, advance only for a NaN; slot k-1 is
             * never below i, so only visited elements are overwritten */
            ptrdiff_t k = n;
            for (ptrdiff_t i = n; i-- > 0;) {
                uint16_t v = ld16(d + 2 * i);
                st16(d + 2 * (k - 1), v);
                k -= bf16_isnan(v);
            }
        } else {
            ptrdiff_t j = 0;
            int both = keep_nan_order;
            for (ptrdiff_t i = 0; i < n; i++) { /* branch-free, slot j never above i */
                uint16_t v = ld16(d + 2 * i);
                st16(d + 2 * j, v);
                j += bf16_iszero(v) | (both & bf16_isnan(v));
            }
            if (both) {
                /* [0, nz + nn) holds zeros and NaNs interleaved, in input order */
                stable_partition_zeros(d, 0, j);
                memmove(d + 2 * nbase, d + 2 * nz, (size_t)nn * 2);
            }
            memmove(d + 2 * zbase, d, (size_t)nz * 2);
        }
    }

    ptrdiff_t o = 0;
    for (unsigned p = 0xff80u; p >= 0x8001u; p--) {
        uint64_t c = cnt_at(cnt, wide, p);
        if (c) fill16(d, &o, (uint16_t)p, c);
    }
    if (keep_zero_order) {
        o += (ptrdiff_t)nz;
    } else {
        fill16(d, &o, 0x8000u, cmz);
        fill16(d, &o, 0x0000u, cpz);
    }
    for (unsigned p = 0x0001u; p <= 0x7f80u; p++) {
        uint64_t c = cnt_at(cnt, wide, p);
        if (c) fill16(d, &o, (uint16_t)p, c);
    }
    if (!keep_nan_order) {
        for (unsigned p = 0x7f81u; p <= 0x7fffu; p++) {
            uint64_t c = cnt_at(cnt, wide, p);
            if (c) fill16(d, &o, (uint16_t)p, c);
        }
        for (unsigned p = 0xff81u; p <= 0xffffu; p++) {
            uint64_t c = cnt_at(cnt, wide, p);
            if (c) fill16(d, &o, (uint16_t)p, c);
        }
    }
    free(cnt);
    return 0;
}

static void sort_values_impl(void *data, ptrdiff_t n, int stable)
{
    char *d = (char *)data;
    if (n < 2) return;
    if (n <= INSERTION_MAX) {
        insertion_sort_values(d, n);
        return;
    }
    int rc = n >= COUNTING_MIN ? counting_sort_values(d, n, stable) : radix_sort_values(d, n);
    if (rc != 0) sort_inplace_fallback(d, n);
}

void bf16_sort_values(void *data, ptrdiff_t n) { sort_values_impl(data, n, 0); }
void bf16_sort_values_stable(void *data, ptrdiff_t n) { sort_values_impl(data, n, 1); }

/* ------------------------------------------------------------------------------------------ */
/* stable argsort                                                                             */

#define ARG_INSERTION_MAX 32

/*
 * Scatter with software write-combining: each of the 256 buckets collects one 64-byte line of
 * entries, aligned like its destination line, before writing it out. Full lines go out with
 * non-temporal stores on x86-64 (no read-for-ownership, and buckets whose starts lie a power
 * of two apart do not fight over one cache set); partial first/last lines use memcpy.
 * Requires an 8-byte aligned destination (true for uint64_t arrays).
 */
#define WC_LINE 8 /* uint64 entries per 64-byte line */

typedef struct {
    uint64_t line[256][WC_LINE];
    ptrdiff_t off[256];  /* destination index of slot start[b] of the current line */
    unsigned fill[256];  /* next free slot */
    unsigned start[256]; /* first valid slot (nonzero only on a bucket's first line) */
} wc_state;

KINLINE void wc_write_line(uint64_t *dst, const uint64_t *line)
{
#if defined(__x86_64__) && defined(__SSE2__)
    for (int q = 0; q < WC_LINE; q += 2)
        _mm_stream_si128((__m128i *)(void *)(dst + q),
                         _mm_loadu_si128((const __m128i *)(const void *)(line + q)));
#else
    memcpy(dst, line, WC_LINE * sizeof(uint64_t));
#endif
}

KINLINE void wc_put(wc_state *w, uint64_t *dst, unsigned b, uint64_t v)
{
    unsigned f = w->fill[b];
    w->line[b][f] = v;
    if (++f == WC_LINE) {
        unsigned st = w->start[b];
        if (st == 0) wc_write_line(dst + w->off[b], w->line[b]);
        else memcpy(dst + w->off[b], w->line[b] + st, (WC_LINE - st) * sizeof(uint64_t));
        w->off[b] += WC_LINE - st;
        w->start[b] = 0;
        f = 0;
    }
    w->fill[b] = f;
}

static void wc_flush(wc_state *w, uint64_t *dst)
{
    for (unsigned b = 0; b < 256; b++) {
        unsigned st = w->start[b], f = w->fill[b];
        if (f > st) memcpy(dst + w->off[b], w->line[b] + st, (f - st) * sizeof(uint64_t));
    }
#if defined(__x86_64__) && defined(__SSE2__)
    _mm_sfence(); /* order the streamed lines before anything that follows */
#endif
}

/* Prepare a pass into dst; returns 1 if one bucket holds everything (the pass is the
 * identity and is skipped). */
static int wc_begin(wc_state *w, const ptrdiff_t *c, ptrdiff_t n, const uint64_t *dst)
{
    ptrdiff_t s = 0;
    for (int b = 0; b < 256; b++)
        if (c[b] == n) return 1;
    for (int b = 0; b < 256; b++) {
        w->off[b] = s;
        w->start[b] = w->fill[b] = (unsigned)(((uintptr_t)(dst + s) / sizeof(uint64_t)) % WC_LINE);
        s += c[b];
    }
    return 0;
}

#define PACK_SHIFT 48
#define PACK_MASK (((uint64_t)1 << PACK_SHIFT) - 1)

/*
 * Fast path: pack (key << 48 | index) into one uint64 per entry, in place in idx (int64_t and
 * uint64_t may alias). Returns 0 on success, -1 on allocation failure, and 1 (idx untouched)
 * if some index does not fit in 48 bits, in which case the caller uses the general path.
 */
static int argsort_packed(const char *d, int64_t *idx, ptrdiff_t n)
{
    uint64_t *tmp = (uint64_t *)alloc_work((size_t)n * sizeof(uint64_t));
    wc_state *w = (wc_state *)malloc(sizeof(wc_state));
    if (!tmp || !w) {
        free(tmp);
        free(w);
        return -1;
    }
    uint64_t *u = (uint64_t *)idx;
    ptrdiff_t c0[256] = {0}, c1[256] = {0};
    for (ptrdiff_t i = 0; i < n; i++) {
        uint64_t ix = (uint64_t)idx[i];
        if (ix > PACK_MASK) {
            /* does not fit: undo the packing done so far and let the caller take the
             * general path */
            for (ptrdiff_t j = 0; j < i; j++) u[j] &= PACK_MASK;
            free(tmp);
            free(w);
            return 1;
        }
        uint16_t k = sort_key(ld16(d + 2 * (ptrdiff_t)ix));
        c0[k & 0xff]++;
        c1[k >> 8]++;
        u[i] = ((uint64_t)k << PACK_SHIFT) | ix;
    }
    uint64_t *src = u, *dst = tmp;
    if (!wc_begin(w, c0, n, dst)) {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint64_t v = src[i];
            wc_put(w, dst, (unsigned)(v >> PACK_SHIFT) & 0xffu, v);
        }
        wc_flush(w, dst);
        src = tmp;
        dst = u;
    }
    if (!wc_begin(w, c1, n, dst)) {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint64_t v = src[i];
            wc_put(w, dst, (unsigned)(v >> (PACK_SHIFT + 8)), v & PACK_MASK);
        }
        wc_flush(w, dst);
        src = dst;
    } else {
        for (ptrdiff_t i = 0; i < n; i++) src[i] &= PACK_MASK;
    }
    if (src != u) memcpy(u, src, (size_t)n * sizeof(uint64_t));
    free(tmp);
    free(w);
    return 0;
}

static int argsort_unpacked(const char *d, int64_t *idx, ptrdiff_t n);


int bf16_argsort_stable(const void *data, int64_t *idx, ptrdiff_t n)
{
    const char *d = (const char *)data;
    if (n < 2) return 0;
    if (n <= ARG_INSERTION_MAX) {
        uint16_t key[ARG_INSERTION_MAX];
        for (ptrdiff_t i = 0; i < n; i++) key[i] = sort_key(ld16(d + 2 * idx[i]));
        for (ptrdiff_t i = 1; i < n; i++) {
            uint16_t k = key[i];
            int64_t v = idx[i];
            ptrdiff_t j = i;
            for (; j > 0 && key[j - 1] > k; j--) {
                key[j] = key[j - 1];
                idx[j] = idx[j - 1];
            }
            key[j] = k;
            idx[j] = v;
        }
        return 0;
    }
    if ((size_t)n > (size_t)PTRDIFF_MAX / 16) return -1;
    int rc = argsort_packed(d, idx, n);
    if (rc != 1) return rc;
    return argsort_unpacked(d, idx, n);
}

/* General path: keys and indices in separate arrays (any int64 index values). */
static int argsort_unpacked(const char *d, int64_t *idx, ptrdiff_t n)
{
    /* one block: tidx (8n), key (2n), tkey (2n) */
    char *buf = (char *)alloc_work((size_t)n * 12);
    if (!buf) return -1;
    int64_t *tidx = (int64_t *)(void *)buf;
    uint16_t *key = (uint16_t *)(void *)(buf + (size_t)n * 8);
    uint16_t *tkey = key + n;

    ptrdiff_t c0[256] = {0}, c1[256] = {0};
    for (ptrdiff_t i = 0; i < n; i++) {
        uint16_t k = sort_key(ld16(d + 2 * idx[i]));
        key[i] = k;
        c0[k & 0xff]++;
        c1[k >> 8]++;
    }
    ptrdiff_t off[256], s, maxc;
    int64_t *src_i = idx;
    uint16_t *src_k = key;

    /* pass 1: low byte, (key, idx) -> (tkey, tidx) */
    s = 0; maxc = 0;
    for (int b = 0; b < 256; b++) { off[b] = s; s += c0[b]; if (c0[b] > maxc) maxc = c0[b]; }
    if (maxc != n) {
        for (ptrdiff_t i = 0; i < n; i++) {
            uint16_t k = key[i];
            ptrdiff_t o = off[k & 0xff]++;
            tkey[o] = k;
            tidx[o] = idx[i];
        }
        src_i = tidx;
        src_k = tkey;
    }
    /* pass 2: high byte, into idx (or into tidx then back if pass 1 was skipped) */
    s = 0; maxc = 0;
    for (int b = 0; b < 256; b++) { off[b] = s; s += c1[b]; if (c1[b] > maxc) maxc = c1[b]; }
    if (maxc != n) {
        int64_t *dst = src_i == idx ? tidx : idx;
        for (ptrdiff_t i = 0; i < n; i++) dst[off[src_k[i] >> 8]++] = src_i[i];
        src_i = dst;
    }
    if (src_i != idx) memcpy(idx, src_i, (size_t)n * sizeof(int64_t));
    free(buf);
    return 0;
}
