/*
 * kernels/sort.c - sorting bfloat16 arrays in numpy order (see kernels.h).
 *
 * numpy order: ascending, NaNs last, -0.0 == +0.0. The comparison key is bf16_sort_key() from
 * bf16.h (NaNs all map to 0xffff, both zeros to the same key).
 *
 * Values (numpy calls this once per row of an axis sort, so short rows matter):
 *  - rows are relabelled with order keys (order_key: one-to-one and increasing) and sorted as
 *    plain 16-bit integers: AVX-512 bitonic network (5 <= n <= 256), bitonic merges of 256-key
 *    blocks (n <= 1024, or up to 16384 when n fills 3/4 of a power of two; stack buffer up to
 *    8192), at the AVX2 tier a bitonic network in ymm registers (5 <= n <= 256), else tiny n
 *    (<= 48) insertion sort and a two-pass LSD radix sort of the keys (n <= 16384; stack
 *    buffer up to 8192);
 *  - a row holding both zeros or several NaN patterns ("ambiguous": a key sort would not keep
 *    their input order) takes the stable radix sort on bf16_sort_key below 8192, and, for the
 *    stable variant, the counting sort from 8192 on;
 *  - larger n: counting sort over the 65,536 raw bit patterns. The sorted array is
 *    regenerated from the counts, so equal-comparing patterns (the two zeros, the NaN payloads)
 *    come out grouped by pattern; the stable variant first copies those special elements in
 *    input order and puts them back. The key sort gives the same grouping (order_key);
 *  - argsort: AVX-512 or AVX2 network of (key << 16 | position) words (n <= 256; AVX2: 128),
 *    insertion sort (n <= 32, baseline tier), then a stable LSD radix sort of (key << 48 | index) words, in a stack buffer
 *    up to 2048 and with software write-combining beyond, or of separate key/index arrays if an
 *    index does not fit in 48 bits.
 * If a buffer cannot be allocated the value sorts fall back to an in-place O(n log n) path.
 */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise / MADV_HUGEPAGE */
#endif

#include "kernels.h"
#include "kernels/internal.h"
#include "bf16.h"
#include "cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(BF16K_X86)
#include <immintrin.h>
#elif defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define INSERTION_MAX 48          /* n up to this: insertion sort */
#define COUNTING_MIN 8192         /* n from this: counting sort (values) */
#define KEYSORT_MAX 16384         /* n up to this: sort of order keys */
#define STACK_ELEMS 8192          /* radix buffer on the stack up to this n (16 KiB) */
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

/* (kernels.h) */
void *bf16_alloc_huge(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < 2 * huge) return malloc(bytes == 0 ? 1 : bytes);
    if (bytes > SIZE_MAX - huge) return NULL;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    void *p = aligned_alloc(huge, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p != NULL) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice: failure is harmless */
#endif
    return p;
}

/*
 * Work buffers of the radix passes (bf16_alloc_huge: a fresh 128 MiB buffer in 4 KiB pages costs
 * 32k page faults, a sizeable share of a radix pass).
 *
 * The block of the last call is kept for the next one (one block of at most WORK_CACHE_MAX
 * bytes, as the GEMM's workspace: matmul/gemm.c ws_acquire): the C library handed a buffer of a
 * few hundred KiB back to the system at every free, and the next call's page faults were most
 * of an argsort of 2^15 elements (96 faults a call, 0.38 ms; AMD EPYC Zen 5 VM). A call takes
 * the block with one atomic exchange (a concurrent call finds none and allocates its own) and
 * puts it back with another, freeing whatever block it displaces. The block's capacity is
 * stored in its first bytes, the buffer starts WORK_HEADER bytes in.
 */
#define WORK_CACHE_MAX ((size_t)32 << 20)
#define WORK_HEADER 64
static _Atomic(unsigned char *) g_work_cache;

static void *alloc_work(size_t bytes)
{
    unsigned char *blk = atomic_exchange_explicit(&g_work_cache, NULL, memory_order_acquire);
    if (blk != NULL) {
        size_t cap;
        memcpy(&cap, blk, sizeof cap);
        if (bytes <= cap) return blk + WORK_HEADER;
        free(blk);
    }
    if (bytes > SIZE_MAX - WORK_HEADER) return NULL;
    blk = (unsigned char *)bf16_alloc_huge(bytes + WORK_HEADER);
    if (blk == NULL) return NULL;
    memcpy(blk, &bytes, sizeof bytes);
    return blk + WORK_HEADER;
}

/* Back to the cache (or freed if larger than WORK_CACHE_MAX); NULL is ignored. */
static void free_work(void *buf)
{
    if (buf == NULL) return;
    unsigned char *blk = (unsigned char *)buf - WORK_HEADER;
    size_t cap;
    memcpy(&cap, blk, sizeof cap);
    if (cap > WORK_CACHE_MAX) {
        free(blk);
        return;
    }
    free(atomic_exchange_explicit(&g_work_cache, blk, memory_order_acq_rel));
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
/* LSD radix sort of values (stable), two 8-bit passes on sort_key; used for rows that hold   */
/* both zeros or several NaN patterns, whose input order the order-key sort would not keep    */

/* The bounds of the 256 buckets of a counting-sort pass with counts cnt: bucket b fills
 * [lo[b], hi[b]). */
static inline void bucket_bounds(const uint32_t *cnt, uint32_t *lo, uint32_t *hi)
{
    uint32_t s = 0;
    for (int b = 0; b < 256; b++) {
        lo[b] = s;
        s += cnt[b];
        hi[b] = s;
    }
}

/*
 * One counting-sort pass from src to dst (element offsets, 2-byte elements) by the digit
 * (digit_of(element) >> shift) & 0xff. Two independent chains: one walks forwards from the
 * start, filling each bucket from its start, the other walks backwards from the end, filling
 * each bucket from its end. That keeps the pass stable and halves the store-to-load chain
 * through the bucket offsets when consecutive elements share a bucket (skewed data).
 */
#define SCATTER2(src, dst, n, cnt, DIGIT, OUT)                                               \
    do {                                                                                     \
        uint32_t lo_[256], hi_[256];                                                         \
        bucket_bounds((cnt), lo_, hi_);                                                      \
        ptrdiff_t i_ = 0, j_ = (n) - 1;                                                      \
        for (; i_ < j_; i_++, j_--) {                                                        \
            uint16_t a_ = ld16((src) + 2 * i_), z_ = ld16((src) + 2 * j_);                   \
            st16((dst) + 2 * (ptrdiff_t)lo_[DIGIT(a_)]++, OUT(a_));                          \
            st16((dst) + 2 * (ptrdiff_t)--hi_[DIGIT(z_)], OUT(z_));                          \
        }                                                                                    \
        if (i_ == j_) {                                                                      \
            uint16_t a_ = ld16((src) + 2 * i_);                                              \
            st16((dst) + 2 * (ptrdiff_t)lo_[DIGIT(a_)], OUT(a_));                            \
        }                                                                                    \
    } while (0)

#define SAME(v) (v)
#define SKEY_LO(v) (sort_key(v) & 0xffu)
#define SKEY_HI(v) (sort_key(v) >> 8)

/* 1 if one bucket holds all n elements (the pass would be the identity) */
static int one_bucket(const uint32_t *c, ptrdiff_t n)
{
    for (int b = 0; b < 256; b++)
        if ((ptrdiff_t)c[b] == n) return 1;
    return 0;
}

/* tmp: room for n elements; n < 2^32 */
static void radix_sort_values(char *d, ptrdiff_t n, char *tmp)
{
    uint32_t c0[256] = {0}, c1[256] = {0};
    for (ptrdiff_t i = 0; i < n; i++) {
        uint16_t k = sort_key(ld16(d + 2 * i));
        c0[k & 0xff]++;
        c1[k >> 8]++;
    }
    char *src = d, *dst = tmp;
    if (!one_bucket(c0, n)) {
        SCATTER2(src, dst, n, c0, SKEY_LO, SAME);
        src = tmp;
        dst = d;
    }
    if (!one_bucket(c1, n)) {
        SCATTER2(src, dst, n, c1, SKEY_HI, SAME);
        src = dst;
    }
    if (src != d) memcpy(d, src, (size_t)n * 2);
}

/* ------------------------------------------------------------------------------------------ */
/* order keys: a sort of plain 16-bit integers                                                */

/*
 * order_key is a bijection of the 65,536 patterns onto 0..65535, increasing in numpy order:
 * -inf -> 0, ..., -0.0 -> 0x7f80, +0.0 -> 0x7f81, ..., +inf -> 0xff01, then the NaNs in the
 * order the counting sort writes them (0x7f81..0x7fff, then 0xff81..0xffff). Sorting the keys
 * as integers and mapping them back with order_val therefore gives counting_sort_values's
 * unstable output; and when a row has no two distinct patterns that compare equal (not both
 * zeros, at most one NaN pattern), equal keys are equal patterns and every sort of the row,
 * stable or not, gives the same bits. tests/test_kernels_sort.py checks all 65,536 patterns
 * and rows with both zeros and several NaN payloads in every tier.
 */
KINLINE uint16_t order_key(uint16_t h)
{
    uint16_t mag = (uint16_t)(h & BF16_ABS), neg = (uint16_t)(0u - (unsigned)(h >> 15));
    uint16_t nan = (uint16_t)(0u - (uint16_t)(mag > BF16_INF));
    uint16_t kn = (uint16_t)((h ^ (neg | BF16_SIGN)) - 0x7fu);
    uint16_t kq = (uint16_t)(mag + 0x7f81u + (neg & 127u));
    return (uint16_t)((kn & ~nan) | (kq & nan));
}

KINLINE uint16_t order_val(uint16_t k)
{
    uint16_t nan = (uint16_t)(0u - (uint16_t)(k >= 0xff02u));
    uint16_t t = (uint16_t)(k + 0x7fu);
    uint16_t hn = (uint16_t)(t ^ ((uint16_t)((unsigned)(t >> 15) - 1u) | BF16_SIGN));
    uint16_t r = (uint16_t)(k - 0xff02u);
    uint16_t hq = (uint16_t)(r + 0x7f81u + ((uint16_t)(0u - (uint16_t)(r >= 127u)) & 0x7f81u));
    return (uint16_t)((hn & ~nan) | (hq & nan));
}

/*
 * Replace d[0..n) by its order keys; returns nonzero if the row is "ambiguous": it holds both
 * -0.0 and +0.0, or two different NaN patterns (then a key sort loses their input order).
 * Branch-free so that the compiler vectorises it for each tier.
 */
#define DEFINE_TO_KEYS(tier, attr)                                                           \
    attr static int to_keys_##tier(char *d, ptrdiff_t n)                                     \
    {                                                                                        \
        uint16_t negz = 0, posz = 0, nor = 0, nand = 0xffffu;                                \
        for (ptrdiff_t i = 0; i < n; i++) {                                                  \
            uint16_t h = ld16(d + 2 * i);                                                    \
            uint16_t nanm = (uint16_t)(0u - (uint16_t)((h & BF16_ABS) > BF16_INF));          \
            negz |= (uint16_t)(0u - (uint16_t)(h == 0x8000u));                               \
            posz |= (uint16_t)(0u - (uint16_t)(h == 0u));                                    \
            nor |= (uint16_t)(h & nanm);                                                     \
            nand &= (uint16_t)(h | ~nanm);                                                   \
            st16(d + 2 * i, order_key(h));                                                   \
        }                                                                                    \
        return ((negz & posz) | (nor & ~nand)) != 0;                                         \
    }

DEFINE_TO_KEYS(baseline, )
#if defined(BF16K_X86)
DEFINE_TO_KEYS(avx2, KTARGET_AVX2)
DEFINE_TO_KEYS(avx512, KTARGET_AVX512)
#endif

static int to_keys(char *d, ptrdiff_t n, bf16_tier tier)
{
#if defined(BF16K_X86)
    if (tier >= BF16_TIER_AVX512) return to_keys_avx512(d, n);
    if (tier >= BF16_TIER_AVX2) return to_keys_avx2(d, n);
#endif
    (void)tier;
    return to_keys_baseline(d, n);
}

#define DEFINE_FROM_KEYS(tier, attr)                                                         \
    attr static void from_keys_##tier(char *d, ptrdiff_t n)                                  \
    {                                                                                        \
        for (ptrdiff_t i = 0; i < n; i++) st16(d + 2 * i, order_val(ld16(d + 2 * i)));       \
    }

DEFINE_FROM_KEYS(baseline, )
#if defined(BF16K_X86)
DEFINE_FROM_KEYS(avx2, KTARGET_AVX2)
DEFINE_FROM_KEYS(avx512, KTARGET_AVX512)
#endif

static void from_keys(char *d, ptrdiff_t n, bf16_tier tier)
{
#if defined(BF16K_X86)
    if (tier >= BF16_TIER_AVX512) { from_keys_avx512(d, n); return; }
    if (tier >= BF16_TIER_AVX2) { from_keys_avx2(d, n); return; }
#endif
    (void)tier;
    from_keys_baseline(d, n);
}

#define KEY_LO(v) ((v) & 0xffu)
#define KEY_HI(v) ((unsigned)(v) >> 8)

/* d holds n order keys; sorts them and writes back the values. tmp: room for n elements. */
static void radix_sort_keys(char *d, ptrdiff_t n, char *tmp, bf16_tier tier)
{
    /* two tables per digit (even/odd elements): consecutive increments of one counter would
     * otherwise wait for each other */
    uint32_t c[4][256];
    memset(c, 0, sizeof c);
    ptrdiff_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint16_t a = ld16(d + 2 * i), b = ld16(d + 2 * i + 2);
        c[0][a & 0xff]++;
        c[1][b & 0xff]++;
        c[2][a >> 8]++;
        c[3][b >> 8]++;
    }
    if (i < n) {
        uint16_t a = ld16(d + 2 * i);
        c[0][a & 0xff]++;
        c[2][a >> 8]++;
    }
    for (int b = 0; b < 256; b++) {
        c[0][b] += c[1][b];
        c[2][b] += c[3][b];
    }
    int skip0 = one_bucket(c[0], n), skip1 = one_bucket(c[2], n);
    if (!skip0 && !skip1) {
        SCATTER2(d, tmp, n, c[0], KEY_LO, SAME);
        SCATTER2(tmp, d, n, c[2], KEY_HI, SAME);
    } else if (!skip0 || !skip1) {
        if (skip0) SCATTER2(d, tmp, n, c[2], KEY_HI, SAME);
        else SCATTER2(d, tmp, n, c[0], KEY_LO, SAME);
        memcpy(d, tmp, (size_t)n * 2);
    }
    from_keys(d, n, tier);
}

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 sorting network for n <= NET_MAX: order keys in 1, 2, 4 or 8 zmm registers         */

#if defined(BF16K_X86)
#define NET_MIN 5 /* shorter rows: insertion sort is faster */
#define NET_MAX 256

/* lanes of a 32 x 16-bit register whose lane index has bit j clear */
#define LANES_CLEAR(j)                                                                       \
    ((j) == 1 ? 0x55555555u : (j) == 2 ? 0x33333333u : (j) == 4 ? 0x0f0f0f0fu              \
     : (j) == 8 ? 0x00ff00ffu : 0x0000ffffu)

/* the register with lane i and lane i ^ j exchanged (j = 1, 2, 4, 8, 16) */
KTARGET_AVX512 static inline __m512i net_partner(__m512i x, int j)
{
    switch (j) {
    case 1: return _mm512_rol_epi32(x, 16);
    case 2: return _mm512_shuffle_epi32(x, _MM_PERM_CDAB);
    case 4: return _mm512_shuffle_epi32(x, _MM_PERM_BADC);
    case 8: return _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(2, 3, 0, 1));
    default: return _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(1, 0, 3, 2));
    }
}

/* compare-exchange of lanes i and i ^ j; lanes in `lomask` keep the smaller one */
KTARGET_AVX512 static inline __m512i net_stage(__m512i x, int j, __mmask32 lomask)
{
    __m512i y = net_partner(x, j);
    return _mm512_mask_blend_epi16(lomask, _mm512_max_epu16(x, y), _mm512_min_epu16(x, y));
}

/* Bitonic sort of the 32 * R keys in v[0..R) (element r * 32 + lane), ascending; with
 * kmax < 32 * R, each run of kmax keys is sorted, alternately ascending and descending. */
KTARGET_AVX512 static inline __attribute__((always_inline)) void net_sort(__m512i *v, int R,
                                                                          int kmax)
{
#pragma GCC unroll 8
    for (int k = 2; k <= kmax; k <<= 1) {
#pragma GCC unroll 8
        for (int j = k >> 1; j > 0; j >>= 1) {
            if (j >= 32) {
                int jr = j >> 5;
#pragma GCC unroll 8
                for (int r = 0; r < R; r++) {
                    if (r & jr) continue;
                    int p = r | jr;
                    __m512i mn = _mm512_min_epu16(v[r], v[p]), mx = _mm512_max_epu16(v[r], v[p]);
                    int asc = ((r * 32) & k) == 0;
                    v[r] = asc ? mn : mx;
                    v[p] = asc ? mx : mn;
                }
            } else {
#pragma GCC unroll 8
                for (int r = 0; r < R; r++) {
                    __mmask32 lo;
                    if (k <= 16) lo = (__mmask32)~(LANES_CLEAR(j) ^ LANES_CLEAR(k));
                    else lo = (((r * 32) & k) == 0) ? LANES_CLEAR(j) : ~LANES_CLEAR(j);
                    v[r] = net_stage(v[r], j, lo);
                }
            }
        }
    }
}

/* order_key / order_val on 32 lanes */
KTARGET_AVX512 static inline __m512i order_key32(__m512i h)
{
    __m512i mag = _mm512_and_si512(h, _mm512_set1_epi16((short)BF16_ABS));
    __m512i neg = _mm512_srai_epi16(h, 15);
    __mmask32 nan = _mm512_cmpgt_epu16_mask(mag, _mm512_set1_epi16((short)BF16_INF));
    __m512i kn = _mm512_sub_epi16(
        _mm512_xor_si512(h, _mm512_or_si512(neg, _mm512_set1_epi16((short)BF16_SIGN))),
        _mm512_set1_epi16(0x7f));
    __m512i kq = _mm512_add_epi16(
        mag, _mm512_add_epi16(_mm512_set1_epi16((short)0x7f81),
                              _mm512_and_si512(neg, _mm512_set1_epi16(127))));
    return _mm512_mask_blend_epi16(nan, kn, kq);
}

KTARGET_AVX512 static inline __m512i order_val32(__m512i k)
{
    __mmask32 nan = _mm512_cmpge_epu16_mask(k, _mm512_set1_epi16((short)0xff02));
    __m512i t = _mm512_add_epi16(k, _mm512_set1_epi16(0x7f));
    __m512i flip = _mm512_or_si512(_mm512_andnot_si512(_mm512_srai_epi16(t, 15),
                                                       _mm512_set1_epi16(-1)),
                                   _mm512_set1_epi16((short)BF16_SIGN));
    __m512i hn = _mm512_xor_si512(t, flip);
    __m512i r = _mm512_sub_epi16(k, _mm512_set1_epi16((short)0xff02));
    __m512i hq = _mm512_add_epi16(r, _mm512_set1_epi16((short)0x7f81));
    hq = _mm512_mask_add_epi16(hq, _mm512_cmpge_epu16_mask(r, _mm512_set1_epi16(127)), hq,
                               _mm512_set1_epi16((short)0x7f81));
    return _mm512_mask_blend_epi16(nan, hn, hq);
}

/* Ambiguity (see to_keys) accumulated over registers of raw patterns. */
typedef struct {
    __mmask32 negz, posz, nan;
    __m512i nor, nand;
} amb_acc;

KTARGET_AVX512 static inline void amb_init(amb_acc *a)
{
    a->negz = a->posz = a->nan = 0;
    a->nor = _mm512_setzero_si512();
    a->nand = _mm512_set1_epi16(-1);
}

KTARGET_AVX512 static inline int amb_found(const amb_acc *a)
{
    if (a->negz && a->posz) return 1;
    if (!a->nan) return 0;
    uint32_t o = (uint32_t)_mm512_reduce_or_epi32(a->nor);
    uint32_t n = (uint32_t)_mm512_reduce_and_epi32(a->nand);
    o = (o | (o >> 16)) & 0xffffu;
    n = n & (n >> 16);
    return (o & ~n & 0xffffu) != 0;
}

KTARGET_AVX512 static inline __mmask32 first_lanes(ptrdiff_t m)
{
    return m >= 32 ? ~(__mmask32)0 : m <= 0 ? 0 : (((__mmask32)1 << m) - 1);
}

/*
 * Store the first m lanes of x (m >= 1) with plain stores of exactly 2m bytes. A masked
 * 64-byte store would do, but the next row's load overlaps its 64 bytes and waits for it to
 * retire (a row sort of n = 16 took three times as long).
 */
KTARGET_AVX512 static inline void store_lanes(char *dst, __m512i x, ptrdiff_t m)
{
    if (m >= 32) {
        _mm512_storeu_si512(dst, x);
        return;
    }
    uint16_t t[32] __attribute__((aligned(64)));
    _mm512_store_si512(t, x);
    const char *s = (const char *)t;
    size_t bytes = (size_t)m * 2;
    /* two overlapping pieces of the largest power of two <= bytes cover them exactly */
    if (bytes >= 32) {
        memcpy(dst, s, 32);
        memcpy(dst + bytes - 32, s + bytes - 32, 32);
    } else if (bytes >= 16) {
        memcpy(dst, s, 16);
        memcpy(dst + bytes - 16, s + bytes - 16, 16);
    } else if (bytes >= 8) {
        memcpy(dst, s, 8);
        memcpy(dst + bytes - 8, s + bytes - 8, 8);
    } else if (bytes >= 4) {
        memcpy(dst, s, 4);
        memcpy(dst + bytes - 4, s + bytes - 4, 4);
    } else {
        memcpy(dst, s, 2);
    }
}

/* The order keys of the `valid` lanes at p; the other lanes get 0xffff (sorted last). */
#define FILLER 0x3f80 /* lanes past the end: not a zero, not a NaN */

KTARGET_AVX512 static inline __m512i keys_of32(__m512i h, __mmask32 valid, amb_acc *a)
{
    __mmask32 nan = _mm512_cmpgt_epu16_mask(
        _mm512_and_si512(h, _mm512_set1_epi16((short)BF16_ABS)), _mm512_set1_epi16((short)BF16_INF));
    a->negz |= _mm512_cmpeq_epi16_mask(h, _mm512_set1_epi16((short)BF16_SIGN));
    a->posz |= _mm512_cmpeq_epi16_mask(h, _mm512_setzero_si512());
    a->nan |= nan;
    a->nor = _mm512_or_si512(a->nor, _mm512_maskz_mov_epi16(nan, h));
    a->nand = _mm512_and_si512(a->nand, _mm512_mask_mov_epi16(_mm512_set1_epi16(-1), nan, h));
    return _mm512_mask_blend_epi16(valid, _mm512_set1_epi16(-1), order_key32(h));
}

KTARGET_AVX512 static inline __m512i load_keys32(const char *p, __mmask32 valid, amb_acc *a)
{
    return keys_of32(_mm512_mask_loadu_epi16(_mm512_set1_epi16(FILLER), valid, p), valid, a);
}

/* kmax: see net_sort (16 when n <= 16: the first 16 lanes alone). The keys go through a small
 * buffer: loaded straight into v[], GCC kept v[] in memory and the network as loops. */
KTARGET_AVX512 static inline __attribute__((always_inline)) int net_sort_n(char *d, ptrdiff_t n,
                                                                            int R, int kmax)
{
    uint16_t kb[NET_MAX] __attribute__((aligned(64)));
    __m512i v[8];
    amb_acc a;
    amb_init(&a);
    for (int r = 0; r < R; r++)
        _mm512_store_si512(kb + 32 * r, load_keys32(d + 64 * r, first_lanes(n - 32 * r), &a));
    if (amb_found(&a)) return 0;
    for (int r = 0; r < R; r++) v[r] = _mm512_load_si512(kb + 32 * r);
    net_sort(v, R, kmax);
    for (int r = 0; r < R; r++) _mm512_store_si512(kb + 32 * r, order_val32(v[r]));
    for (ptrdiff_t i = 0; i < n; i += 32) store_lanes(d + 2 * i, _mm512_load_si512(kb + i), n - i);
    return 1;
}

/* one function per size: inlined into one, the larger networks were left as loops with the
 * registers in memory (twice as slow) */
#define DEFINE_NET_ROWS(R, kmax)                                                             \
    KTARGET_AVX512 __attribute__((noinline)) static int net_rows##kmax(char *d, ptrdiff_t n) \
    {                                                                                        \
        return net_sort_n(d, n, R, kmax);                                                    \
    }
DEFINE_NET_ROWS(1, 16)
DEFINE_NET_ROWS(1, 32)
DEFINE_NET_ROWS(2, 64)
DEFINE_NET_ROWS(4, 128)
DEFINE_NET_ROWS(8, 256)

/* returns 0 (d untouched) if the row is ambiguous (see to_keys) */
KTARGET_AVX512 static int net_sort_avx512(char *d, ptrdiff_t n)
{
    if (n <= 16) return net_rows16(d, n);
    if (n <= 32) return net_rows32(d, n);
    if (n <= 64) return net_rows64(d, n);
    if (n <= 128) return net_rows128(d, n);
    return net_rows256(d, n);
}

/*
 * NET_MAX < n <= BITONIC_MAX: the keys, padded with 0xffff to a power of two, in a buffer
 * (on the stack up to BITONIC_STACK); blocks of 256 sorted in registers, then merged by a bitonic merger (the second run
 * reversed against the first, then half-cleaners); the stages within a block of 256 run in
 * registers, the wider ones as passes over the buffer (it stays in L1).
 */
#define BITONIC_MAX 16384
#define BITONIC_STACK 8192 /* buffer on the stack up to this n (16 KiB) */

/* half-cleaners of distance 128 .. 1 on the 256 keys in v[0..8), all ascending */
KTARGET_AVX512 static inline __attribute__((always_inline)) void net_merge256(__m512i *v)
{
#pragma GCC unroll 4
    for (int jr = 4; jr > 0; jr >>= 1) {
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            if (r & jr) continue;
            __m512i mn = _mm512_min_epu16(v[r], v[r | jr]);
            v[r | jr] = _mm512_max_epu16(v[r], v[r | jr]);
            v[r] = mn;
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
#pragma GCC unroll 5
        for (int j = 16; j > 0; j >>= 1) v[r] = net_stage(v[r], j, LANES_CLEAR(j));
    }
}

/* buf: room for n rounded up to a power of two (at least 512) */
KTARGET_AVX512 static int bitonic_sort_buf(char *d, ptrdiff_t n, uint16_t *buf)
{
    ptrdiff_t p2 = 2 * NET_MAX;
    while (p2 < n) p2 <<= 1;
    amb_acc a;
    amb_init(&a);
    for (ptrdiff_t i = 0; i < p2; i += 32)
        _mm512_storeu_si512(buf + i, load_keys32(d + 2 * i, first_lanes(n - i), &a));
    if (amb_found(&a)) return 0;

    __m512i v[8];
    for (ptrdiff_t b = 0; b < p2; b += 256) {
        for (int r = 0; r < 8; r++) v[r] = _mm512_loadu_si512(buf + b + 32 * r);
        net_sort(v, 8, 256);
        for (int r = 0; r < 8; r++) _mm512_storeu_si512(buf + b + 32 * r, v[r]);
    }
    const __m512i rev = _mm512_set_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                         17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    for (ptrdiff_t L = 256; L < p2; L <<= 1) {
        /* element s + i against element s + 2L - 1 - i */
        for (ptrdiff_t s = 0; s < p2; s += 2 * L) {
            for (ptrdiff_t i = 0; i < L; i += 32) {
                uint16_t *pa = buf + s + i, *pb = buf + s + 2 * L - 32 - i;
                __m512i x = _mm512_loadu_si512(pa);
                __m512i y = _mm512_permutexvar_epi16(rev, _mm512_loadu_si512(pb));
                _mm512_storeu_si512(pa, _mm512_min_epu16(x, y));
                _mm512_storeu_si512(pb, _mm512_permutexvar_epi16(rev, _mm512_max_epu16(x, y)));
            }
        }
        for (ptrdiff_t j = L / 2; j >= 256; j >>= 1) {
            for (ptrdiff_t s = 0; s < p2; s += 2 * j) {
                for (ptrdiff_t i = s; i < s + j; i += 32) {
                    __m512i x = _mm512_loadu_si512(buf + i), y = _mm512_loadu_si512(buf + i + j);
                    _mm512_storeu_si512(buf + i, _mm512_min_epu16(x, y));
                    _mm512_storeu_si512(buf + i + j, _mm512_max_epu16(x, y));
                }
            }
        }
        for (ptrdiff_t b = 0; b < p2; b += 256) {
            for (int r = 0; r < 8; r++) v[r] = _mm512_loadu_si512(buf + b + 32 * r);
            net_merge256(v);
            for (int r = 0; r < 8; r++) _mm512_storeu_si512(buf + b + 32 * r, v[r]);
        }
    }
    for (ptrdiff_t i = 0; i < n; i += 32)
        store_lanes(d + 2 * i, order_val32(_mm512_loadu_si512(buf + i)), n - i);
    return 1;
}
/* Padding to a power of two costs: from 1025 keys on, the radix sort is faster for rows
 * that would fill less than 3/4 of it (measured on an Ice Lake Xeon). */
static int bitonic_pays(ptrdiff_t n)
{
    ptrdiff_t p2 = 2 * NET_MAX;
    while (p2 < n) p2 <<= 1;
    return n <= 1024 || 4 * n >= 3 * p2;
}

/* returns 0 (d untouched) if the row is ambiguous or no buffer could be allocated */
KTARGET_AVX512 static int bitonic_sort_avx512(char *d, ptrdiff_t n)
{
    if (n <= BITONIC_STACK) {
        uint16_t buf[BITONIC_STACK];
        return bitonic_sort_buf(d, n, buf);
    }
    ptrdiff_t p2 = BITONIC_STACK;
    while (p2 < n) p2 <<= 1;
    uint16_t *buf = (uint16_t *)malloc((size_t)p2 * 2);
    if (!buf) return 0;
    int done = bitonic_sort_buf(d, n, buf);
    free(buf);
    return done;
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* AVX2 sorting network for NET_MIN <= n <= NET2_MAX: the keys in 1 to 16 ymm registers of     */
/* 16 lanes, the AVX-512 network's scheme (net_sort) at half the width                        */

#if defined(BF16K_X86)
#define NET2_MAX 256

/* lanes of a 16 x 16-bit register whose lane index has bit j clear (j = 1, 2, 4, 8) */
KTARGET_AVX2 static inline __m256i lanes_clear16(int j)
{
    switch (j) {
    case 1: return _mm256_set1_epi32(0x0000ffff);
    case 2: return _mm256_set1_epi64x(0x00000000ffffffffLL);
    case 4: return _mm256_setr_epi64x(-1, 0, -1, 0);
    default: return _mm256_setr_epi64x(-1, -1, 0, 0);
    }
}

/* the register with lane i and lane i ^ j exchanged */
KTARGET_AVX2 static inline __m256i net2_partner(__m256i x, int j)
{
    switch (j) {
    case 1: return _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(x, 0xB1), 0xB1);
    case 2: return _mm256_shuffle_epi32(x, 0xB1);
    case 4: return _mm256_shuffle_epi32(x, 0x4E);
    default: return _mm256_permute4x64_epi64(x, 0x4E);
    }
}

/* Bitonic sort of the 16 * R keys in v[0..R) (element r * 16 + lane), ascending. */
KTARGET_AVX2 static inline __attribute__((always_inline)) void net2_sort(__m256i *v, int R)
{
    const __m256i ones = _mm256_set1_epi32(-1);
#pragma GCC unroll 8
    for (int k = 2; k <= 16 * R; k <<= 1) {
#pragma GCC unroll 8
        for (int j = k >> 1; j > 0; j >>= 1) {
            if (j >= 16) {
                int jr = j >> 4;
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) {
                    if (r & jr) continue;
                    int p = r | jr;
                    __m256i mn = _mm256_min_epu16(v[r], v[p]), mx = _mm256_max_epu16(v[r], v[p]);
                    int asc = ((r * 16) & k) == 0;
                    v[r] = asc ? mn : mx;
                    v[p] = asc ? mx : mn;
                }
            } else {
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) {
                    /* the lanes that keep the smaller key of the pair */
                    __m256i lo;
                    if (k < 16)
                        lo = _mm256_xor_si256(ones, _mm256_xor_si256(lanes_clear16(j),
                                                                     lanes_clear16(k)));
                    else if (((r * 16) & k) == 0)
                        lo = lanes_clear16(j);
                    else
                        lo = _mm256_xor_si256(ones, lanes_clear16(j));
                    __m256i y = net2_partner(v[r], j);
                    v[r] = _mm256_blendv_epi8(_mm256_max_epu16(v[r], y),
                                              _mm256_min_epu16(v[r], y), lo);
                }
            }
        }
    }
}

/* Sort a row of NET_MIN..NET2_MAX values; 0 (row untouched) if it is ambiguous (to_keys). */
KTARGET_AVX2 static int net_sort_avx2(char *d, ptrdiff_t n)
{
    uint16_t k[NET2_MAX];
    memcpy(k, d, (size_t)n * 2);
    if (to_keys_avx2((char *)k, n)) return 0;
    int R = 1;
    while (16 * R < n) R <<= 1;
    for (ptrdiff_t i = n; i < 16 * R; i++) k[i] = 0xffffu; /* padding sorts last */
    __m256i v[16];
    for (int r = 0; r < R; r++) v[r] = _mm256_loadu_si256((const __m256i *)(k + 16 * r));
    switch (R) { /* a constant R for each unrolled network */
    case 1: net2_sort(v, 1); break;
    case 2: net2_sort(v, 2); break;
    case 4: net2_sort(v, 4); break;
    case 8: net2_sort(v, 8); break;
    default: net2_sort(v, 16); break;
    }
    for (int r = 0; r < R; r++) _mm256_storeu_si256((__m256i *)(k + 16 * r), v[r]);
    from_keys_avx2((char *)k, n);
    memcpy(d, k, (size_t)n * 2);
    return 1;
}
#endif

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
    bf16_tier tier = bf16_cpu_tier();
#if defined(BF16K_X86)
    if (tier >= BF16_TIER_AVX512 && n >= NET_MIN && n <= BITONIC_MAX &&
        (n <= NET_MAX ? net_sort_avx512(d, n) : bitonic_pays(n) && bitonic_sort_avx512(d, n)))
        return;
    if (tier == BF16_TIER_AVX2 && n >= NET_MIN && n <= NET2_MAX && net_sort_avx2(d, n)) return;
#endif
    if (n <= INSERTION_MAX) {
        insertion_sort_values(d, n);
        return;
    }
    if (n <= KEYSORT_MAX) {
        char stackbuf[2 * STACK_ELEMS];
        char *tmp = n <= STACK_ELEMS ? stackbuf : (char *)malloc((size_t)n * 2);
        if (tmp) {
            int done = 1;
            if (!to_keys(d, n, tier) || (!stable && n >= COUNTING_MIN)) {
                radix_sort_keys(d, n, tmp, tier);
            } else {
                /* ambiguous row: the stable sorts keep the zeros and NaNs in input order */
                from_keys(d, n, tier);
                if (n < COUNTING_MIN) radix_sort_values(d, n, tmp);
                else done = 0;
            }
            if (tmp != stackbuf) free(tmp);
            if (done) return;
        }
    }
    int rc = n >= COUNTING_MIN ? counting_sort_values(d, n, stable) : -1;
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
        free_work(tmp);
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
            free_work(tmp);
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
    free_work(tmp);
    free(w);
    return 0;
}

static int argsort_unpacked(const char *d, int64_t *idx, ptrdiff_t n);

/*
 * Mid n: the same packed words, with the buffer on the stack and plain two-chain scatters
 * (write-combining only pays once the buckets' lines no longer stay in cache).
 */
#define ARG_STACK_MAX 2048

#define SCATTER2_U64(src, dst, n, cnt, shift, mask)                                          \
    do {                                                                                     \
        uint32_t lo_[256], hi_[256];                                                         \
        bucket_bounds((cnt), lo_, hi_);                                                      \
        ptrdiff_t i_ = 0, j_ = (n) - 1;                                                      \
        for (; i_ < j_; i_++, j_--) {                                                        \
            uint64_t a_ = (src)[i_], z_ = (src)[j_];                                         \
            (dst)[lo_[(a_ >> (shift)) & 0xffu]++] = a_ & (mask);                             \
            (dst)[--hi_[(z_ >> (shift)) & 0xffu]] = z_ & (mask);                             \
        }                                                                                    \
        if (i_ == j_) (dst)[lo_[((src)[i_] >> (shift)) & 0xffu]] = (src)[i_] & (mask);       \
    } while (0)

static int argsort_packed_stack(const char *d, int64_t *idx, ptrdiff_t n)
{
    uint64_t tmp[ARG_STACK_MAX];
    uint64_t *u = (uint64_t *)idx;
    uint32_t c[4][256];
    memset(c, 0, sizeof c);
    for (ptrdiff_t i = 0; i < n; i++) {
        uint64_t ix = (uint64_t)idx[i];
        if (ix > PACK_MASK) {
            for (ptrdiff_t j = 0; j < i; j++) u[j] &= PACK_MASK;
            return 1;
        }
        uint16_t k = sort_key(ld16(d + 2 * (ptrdiff_t)ix));
        c[(i & 1)][k & 0xff]++;
        c[2 + (i & 1)][k >> 8]++;
        u[i] = ((uint64_t)k << PACK_SHIFT) | ix;
    }
    for (int b = 0; b < 256; b++) {
        c[0][b] += c[1][b];
        c[2][b] += c[3][b];
    }
    int skip0 = one_bucket(c[0], n), skip1 = one_bucket(c[2], n);
    if (!skip0 && !skip1) {
        SCATTER2_U64(u, tmp, n, c[0], PACK_SHIFT, ~(uint64_t)0);
        SCATTER2_U64(tmp, u, n, c[2], PACK_SHIFT + 8, PACK_MASK);
    } else if (!skip1) {
        SCATTER2_U64(u, tmp, n, c[2], PACK_SHIFT + 8, PACK_MASK);
        memcpy(u, tmp, (size_t)n * sizeof(uint64_t));
    } else if (!skip0) {
        SCATTER2_U64(u, tmp, n, c[0], PACK_SHIFT, PACK_MASK);
        memcpy(u, tmp, (size_t)n * sizeof(uint64_t));
    } else {
        for (ptrdiff_t i = 0; i < n; i++) u[i] &= PACK_MASK;
    }
    return 0;
}


#if defined(BF16K_X86)
/*
 * AVX-512 argsort of n <= ARG_NET_MAX: words (sort_key << 16 | position) are all distinct, so
 * any sort of them (here a bitonic network, 16 words per register) is the stable order.
 */
#define ARG_NET_MAX 256
#define LANES16_CLEAR(j) ((j) == 1 ? 0x5555u : (j) == 2 ? 0x3333u : (j) == 4 ? 0x0f0fu : 0x00ffu)

KTARGET_AVX512 static inline __m512i net32_partner(__m512i x, int j)
{
    switch (j) {
    case 1: return _mm512_shuffle_epi32(x, _MM_PERM_CDAB);
    case 2: return _mm512_shuffle_epi32(x, _MM_PERM_BADC);
    case 4: return _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(2, 3, 0, 1));
    default: return _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(1, 0, 3, 2));
    }
}

KTARGET_AVX512 static inline __attribute__((always_inline)) void net32_sort(__m512i *v, int R)
{
#pragma GCC unroll 8
    for (int k = 2; k <= 16 * R; k <<= 1) {
#pragma GCC unroll 8
        for (int j = k >> 1; j > 0; j >>= 1) {
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                if (j >= 16) {
                    int jr = j >> 4, p = r | jr;
                    if (r & jr) continue;
                    __m512i mn = _mm512_min_epu32(v[r], v[p]), mx = _mm512_max_epu32(v[r], v[p]);
                    int asc = ((r * 16) & k) == 0;
                    v[r] = asc ? mn : mx;
                    v[p] = asc ? mx : mn;
                } else {
                    __mmask16 lo;
                    if (k <= 8) lo = (__mmask16)~(LANES16_CLEAR(j) ^ LANES16_CLEAR(k));
                    else lo = (__mmask16)((((r * 16) & k) == 0) ? LANES16_CLEAR(j) : ~LANES16_CLEAR(j));
                    __m512i y = net32_partner(v[r], j);
                    v[r] = _mm512_mask_blend_epi32(lo, _mm512_max_epu32(v[r], y),
                                                   _mm512_min_epu32(v[r], y));
                }
            }
        }
    }
}

/* sort_key on 16 lanes of 32 bits (the patterns zero-extended), as the scalar form does it */
KTARGET_AVX512 static inline __m512i sort_key16x32(__m512i h)
{
    __m512i mag = _mm512_and_si512(h, _mm512_set1_epi32(BF16_ABS));
    __mmask16 nz = _mm512_test_epi32_mask(mag, mag);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(mag, _mm512_set1_epi32(BF16_INF));
    h = _mm512_maskz_mov_epi32(nz, h);                                  /* -0.0 -> +0.0 */
    __mmask16 neg = _mm512_cmpge_epu32_mask(h, _mm512_set1_epi32(BF16_SIGN));
    __m512i flip = _mm512_mask_blend_epi32(neg, _mm512_set1_epi32(BF16_SIGN), _mm512_set1_epi32(0xffff));
    return _mm512_mask_mov_epi32(_mm512_xor_si512(h, flip), nan, _mm512_set1_epi32(0xffff));
}

/*
 * The usual call (numpy's argsort hands each row's positions 0 .. n-1): words built 16 at a
 * time from the row itself and positions written back from the sorted words; any other idx
 * takes the scalar words below (np.lexsort's second key: tests/test_kernels_sort.py::
 * test_lexsort_is_numpy_float32_lexsort). Rows of 65-256 elements: 0.40-1.51 -> 0.28-1.09 us a
 * row; float32's argsort 0.56-1.44 (AMD EPYC Zen 5).
 */
KTARGET_AVX512 static inline __attribute__((always_inline)) int arg_net_iota(const char *d,
                                                                             int64_t *idx,
                                                                             ptrdiff_t n, int R)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i lane64 = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    for (ptrdiff_t i = 0; i < n; i += 8) {
        __mmask8 m = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1u);
        __m512i got = _mm512_maskz_loadu_epi64(m, idx + i);
        __m512i want = _mm512_add_epi64(lane64, _mm512_set1_epi64(i));
        if (_mm512_mask_cmpneq_epi64_mask(m, got, want)) return 0;
    }
    __m512i v[16];
    for (int r = 0; r < R; r++) {
        ptrdiff_t left = n - 16 * r;
        __mmask16 m = left >= 16 ? (__mmask16)0xffff : left > 0 ? (__mmask16)((1u << left) - 1u) : 0;
        __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, d + 32 * r));
        __m512i word = _mm512_or_si512(_mm512_slli_epi32(sort_key16x32(h), 16),
                                       _mm512_add_epi32(lane, _mm512_set1_epi32(16 * r)));
        v[r] = _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), m, word);
    }
    net32_sort(v, R);
    for (int r = 0; r < R; r++) {
        ptrdiff_t left = n - 16 * r;
        if (left <= 0) break;
        __m512i pos = _mm512_and_si512(v[r], _mm512_set1_epi32(0xffff));
        __mmask8 m0 = left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1u);
        __mmask8 m1 = left >= 16 ? (__mmask8)0xff : left > 8 ? (__mmask8)((1u << (left - 8)) - 1u) : 0;
        _mm512_mask_storeu_epi64(idx + 16 * r, m0, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(pos)));
        _mm512_mask_storeu_epi64(idx + 16 * r + 8, m1, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(pos, 1)));
    }
    return 1;
}

KTARGET_AVX512 static inline __attribute__((always_inline)) void arg_net_n(const char *d,
                                                                           int64_t *idx,
                                                                           ptrdiff_t n, int R)
{
    if (arg_net_iota(d, idx, n, R)) return;
    uint32_t w[ARG_NET_MAX] __attribute__((aligned(64)));
    int64_t saved[ARG_NET_MAX];
    for (ptrdiff_t i = 0; i < n; i++) {
        saved[i] = idx[i];
        w[i] = ((uint32_t)sort_key(ld16(d + 2 * idx[i])) << 16) | (uint32_t)i;
    }
    for (ptrdiff_t i = n; i < 16 * R; i++) w[i] = 0xffffffffu;
    __m512i v[16];
    for (int r = 0; r < R; r++) v[r] = _mm512_load_si512(w + 16 * r);
    net32_sort(v, R);
    for (int r = 0; r < R; r++) _mm512_store_si512(w + 16 * r, v[r]);
    for (ptrdiff_t i = 0; i < n; i++) idx[i] = saved[w[i] & 0xffffu];
}

KTARGET_AVX512 static void argsort_net_avx512(const char *d, int64_t *idx, ptrdiff_t n)
{
    if (n <= 16) arg_net_n(d, idx, n, 1);
    else if (n <= 32) arg_net_n(d, idx, n, 2);
    else if (n <= 64) arg_net_n(d, idx, n, 4);
    else if (n <= 128) arg_net_n(d, idx, n, 8);
    else arg_net_n(d, idx, n, 16);
}
#endif

#if defined(BF16K_X86)
/* The same argsort network at the AVX2 tier: 8 words per ymm register, 1 to 16 registers. */
#define ARG_NET2_MAX 128

/* 32-bit lanes of a ymm register whose lane index has bit j clear (j = 1, 2, 4) */
KTARGET_AVX2 static inline __m256i lanes_clear8(int j)
{
    switch (j) {
    case 1: return _mm256_set1_epi64x(0x00000000ffffffffLL);
    case 2: return _mm256_setr_epi64x(-1, 0, -1, 0);
    default: return _mm256_setr_epi64x(-1, -1, 0, 0);
    }
}

KTARGET_AVX2 static inline __m256i net8_partner(__m256i x, int j)
{
    switch (j) {
    case 1: return _mm256_shuffle_epi32(x, 0xB1);
    case 2: return _mm256_shuffle_epi32(x, 0x4E);
    default: return _mm256_permute4x64_epi64(x, 0x4E);
    }
}

KTARGET_AVX2 static inline __attribute__((always_inline)) void net8_sort(__m256i *v, int R)
{
    const __m256i ones = _mm256_set1_epi32(-1);
#pragma GCC unroll 8
    for (int k = 2; k <= 8 * R; k <<= 1) {
#pragma GCC unroll 8
        for (int j = k >> 1; j > 0; j >>= 1) {
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) {
                if (j >= 8) {
                    int jr = j >> 3, p = r | jr;
                    if (r & jr) continue;
                    __m256i mn = _mm256_min_epu32(v[r], v[p]), mx = _mm256_max_epu32(v[r], v[p]);
                    int asc = ((r * 8) & k) == 0;
                    v[r] = asc ? mn : mx;
                    v[p] = asc ? mx : mn;
                } else {
                    __m256i lo;
                    if (k < 8)
                        lo = _mm256_xor_si256(ones, _mm256_xor_si256(lanes_clear8(j),
                                                                     lanes_clear8(k)));
                    else if (((r * 8) & k) == 0)
                        lo = lanes_clear8(j);
                    else
                        lo = _mm256_xor_si256(ones, lanes_clear8(j));
                    __m256i y = net8_partner(v[r], j);
                    v[r] = _mm256_blendv_epi8(_mm256_max_epu32(v[r], y),
                                              _mm256_min_epu32(v[r], y), lo);
                }
            }
        }
    }
}

/* sort_key on 8 lanes of 32 bits (the patterns zero-extended) */
KTARGET_AVX2 static inline __m256i sort_key8x32(__m256i h)
{
    const __m256i sign = _mm256_set1_epi32(BF16_SIGN), ffff = _mm256_set1_epi32(0xffff);
    __m256i mag = _mm256_and_si256(h, _mm256_set1_epi32(BF16_ABS));
    __m256i zero = _mm256_cmpeq_epi32(mag, _mm256_setzero_si256());
    __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(BF16_INF)); /* lanes < 2^16: signed ok */
    h = _mm256_andnot_si256(zero, h);                                    /* -0.0 -> +0.0 */
    __m256i neg = _mm256_cmpgt_epi32(h, _mm256_set1_epi32(BF16_ABS));
    __m256i flip = _mm256_blendv_epi8(sign, ffff, neg);
    return _mm256_or_si256(_mm256_xor_si256(h, flip), _mm256_and_si256(nan, ffff));
}

/* arg_net_iota at the AVX2 tier, 8 words a register: rows of 48-64 elements 0.27-0.31 -> 0.17-0.19
 * us, of 65-128 0.74-0.92 -> 0.61-0.69 (the 16 registers of the network then spill; AMD EPYC
 * Zen 5 with the tier forced) */
KTARGET_AVX2 static inline __attribute__((always_inline)) int arg_net2_iota(const char *d,
                                                                            int64_t *idx,
                                                                            ptrdiff_t n, int R)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lane64 = _mm256_setr_epi64x(0, 1, 2, 3);
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i got = _mm256_loadu_si256((const __m256i *)(const void *)(idx + i));
        __m256i want = _mm256_add_epi64(lane64, _mm256_set1_epi64x(i));
        if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(got, want)) != -1) return 0;
    }
    for (; i < n; i++)
        if (idx[i] != i) return 0;
    __m256i v[16];
    for (int r = 0; r < R; r++) {
        ptrdiff_t left = n - 8 * r;
        __m256i h;
        if (left >= 8) {
            h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(d + 16 * r)));
        } else {
            uint16_t t[8] = {0};
            if (left > 0) memcpy(t, d + 16 * r, (size_t)left * 2);
            h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)t));
        }
        __m256i word = _mm256_or_si256(_mm256_slli_epi32(sort_key8x32(h), 16),
                                       _mm256_add_epi32(lane, _mm256_set1_epi32(8 * r)));
        /* lanes past n: all ones, sorted last */
        __m256i past = _mm256_cmpgt_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(8 * r)),
                                          _mm256_set1_epi32((int)n - 1));
        v[r] = _mm256_or_si256(word, past);
    }
    net8_sort(v, R);
    for (int r = 0; r < R; r++) {
        ptrdiff_t left = n - 8 * r;
        if (left <= 0) break;
        __m256i pos = _mm256_and_si256(v[r], _mm256_set1_epi32(0xffff));
        int64_t q[8] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)(void *)q, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(pos)));
        _mm256_store_si256((__m256i *)(void *)(q + 4), _mm256_cvtepu32_epi64(_mm256_extracti128_si256(pos, 1)));
        memcpy(idx + 8 * r, q, (size_t)(left >= 8 ? 8 : left) * sizeof(int64_t));
    }
    return 1;
}

KTARGET_AVX2 static inline __attribute__((always_inline)) void arg_net2_n(const char *d,
                                                                          int64_t *idx,
                                                                          ptrdiff_t n, int R)
{
    if (arg_net2_iota(d, idx, n, R)) return;
    uint32_t w[ARG_NET2_MAX];
    int64_t saved[ARG_NET2_MAX];
    for (ptrdiff_t i = 0; i < n; i++) {
        saved[i] = idx[i];
        w[i] = ((uint32_t)sort_key(ld16(d + 2 * idx[i])) << 16) | (uint32_t)i;
    }
    for (ptrdiff_t i = n; i < 8 * R; i++) w[i] = 0xffffffffu;
    __m256i v[16];
    for (int r = 0; r < R; r++) v[r] = _mm256_loadu_si256((const __m256i *)(w + 8 * r));
    net8_sort(v, R);
    for (int r = 0; r < R; r++) _mm256_storeu_si256((__m256i *)(w + 8 * r), v[r]);
    for (ptrdiff_t i = 0; i < n; i++) idx[i] = saved[w[i] & 0xffffu];
}

KTARGET_AVX2 static void argsort_net_avx2(const char *d, int64_t *idx, ptrdiff_t n)
{
    if (n <= 8) arg_net2_n(d, idx, n, 1);
    else if (n <= 16) arg_net2_n(d, idx, n, 2);
    else if (n <= 32) arg_net2_n(d, idx, n, 4);
    else if (n <= 64) arg_net2_n(d, idx, n, 8);
    else arg_net2_n(d, idx, n, 16);
}
#endif

int bf16_argsort_stable(const void *data, int64_t *idx, ptrdiff_t n)
{
    const char *d = (const char *)data;
    if (n < 2) return 0;
#if defined(BF16K_X86)
    if (n <= ARG_NET_MAX && bf16_cpu_tier() >= BF16_TIER_AVX512) {
        argsort_net_avx512(d, idx, n);
        return 0;
    }
    if (n <= ARG_NET2_MAX && bf16_cpu_tier() == BF16_TIER_AVX2) {
        argsort_net_avx2(d, idx, n);
        return 0;
    }
#endif
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
    int rc = n <= ARG_STACK_MAX ? argsort_packed_stack(d, idx, n) : argsort_packed(d, idx, n);
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
    free_work(buf);
    return 0;
}
