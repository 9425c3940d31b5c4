/*
 * parse.c - decimal text -> bfloat16 with one rounding (see parse.h).
 *
 * The digits are collected exactly (the first 800 significant digits and a sticky digit for
 * any nonzero digit after them: every double and every bfloat16 midpoint has fewer
 * significant digits, so no comparison with either changes). strtod then rounds that decimal
 * to the nearest double, written as "<digits>e<exp>" so no locale's decimal point is involved.
 * Rounding that double to bfloat16 can only differ from rounding the decimal itself when the
 * double is exactly a midpoint between two bfloat16 neighbours (every such midpoint is a
 * double, so no midpoint lies strictly between the decimal and its double); in that case the
 * decimal is compared with the midpoint exactly, digit by digit.
 */
#include "parse.h"

#include <stdint.h>
#include <stdlib.h>

#define MAX_DIGITS 800
#define TOKEN_MAX 121 /* at most 120 characters per number read from a file, as NumPy reads */

typedef struct {
    unsigned char digit[MAX_DIGITS + 1]; /* significant digits, digit[0] != 0 */
    int n;
    int64_t exp10;                       /* value = 0.digit[0]digit[1]... x 10^exp10 */
} decimal_t;

static inline char
peek(const char *p, const char *lim)
{
    return (lim == NULL || p < lim) ? *p : '\0';
}

static inline int
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline int
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline int
is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
match_word(const char *p, const char *lim, const char *word)
{
    for (; *word != '\0'; p++, word++) {
        char c = peek(p, lim);
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        }
        if (c != *word) {
            return 0;
        }
    }
    return 1;
}

/* Exact decimal expansion of the positive double `m` (a bfloat16 midpoint: at most 9
 * significant bits, exponent within [-134, 128]) compared with `x`: -1, 0 or 1. */
static int
compare_with_double(const decimal_t *x, double m)
{
    int e;
    uint64_t mant = (uint64_t)ldexp(frexp(m, &e), 53);
    int p = e - 53;
    while ((mant & 1u) == 0) {
        mant >>= 1;
        p++;
    }
    unsigned char a[200]; /* little-endian decimal digits of mant * 2^p or mant * 5^-p */
    int len = 0;
    while (mant > 0) {
        a[len++] = (unsigned char)(mant % 10u);
        mant /= 10u;
    }
    int factor = p >= 0 ? 2 : 5;
    int64_t dexp = p >= 0 ? 0 : p;
    for (int i = 0; i < (p >= 0 ? p : -p); i++) {
        int carry = 0;
        for (int j = 0; j < len; j++) {
            int v = a[j] * factor + carry;
            a[j] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        while (carry > 0) {
            a[len++] = (unsigned char)(carry % 10);
            carry /= 10;
        }
    }
    int64_t mexp = dexp + len; /* m = 0.a[len-1]a[len-2]... x 10^mexp */
    if (x->exp10 != mexp) {
        return x->exp10 > mexp ? 1 : -1;
    }
    int count = x->n > len ? x->n : len;
    for (int i = 0; i < count; i++) {
        int dx = i < x->n ? x->digit[i] : 0;
        int dm = i < len ? a[len - 1 - i] : 0;
        if (dx != dm) {
            return dx > dm ? 1 : -1;
        }
    }
    return 0;
}

/* The magnitude of a nonzero decimal, rounded once to bfloat16. */
static bf16_t
decimal_to_bf16(const decimal_t *x)
{
    if (x->exp10 >= 40) { /* >= 10^39, past the overflow threshold 3.3961776e38 */
        return BF16_INF;
    }
    if (x->exp10 <= -45) { /* < 10^-45, below half the smallest subnormal (4.6e-41) */
        return 0;
    }
    char buf[MAX_DIGITS + 16];
    int k = 0;
    for (int i = 0; i < x->n; i++) {
        buf[k++] = (char)('0' + x->digit[i]);
    }
    int exp = (int)(x->exp10 - x->n);
    buf[k++] = 'e';
    if (exp < 0) {
        buf[k++] = '-';
        exp = -exp;
    }
    char rev[8];
    int r = 0;
    do {
        rev[r++] = (char)('0' + exp % 10);
        exp /= 10;
    } while (exp > 0);
    while (r > 0) {
        buf[k++] = rev[--r];
    }
    buf[k] = '\0';
    double d = strtod(buf, NULL);
    if (!(d < 3.4e38)) { /* beyond every midpoint: f64_to_bf16 gives inf */
        return BF16_INF;
    }
    bf16_t h = f64_to_bf16(d);
    /* Is d halfway between two bfloat16 values? Then round the decimal, not d. */
    if (d == 0.0) {
        return h;
    }
    int e;
    uint64_t mant = (uint64_t)ldexp(frexp(d, &e), 53); /* d = mant * 2^(e-53) */
    int quantum = e - 8 > -133 ? e - 8 : -133;           /* bfloat16 spacing 2^quantum */
    int shift = quantum - 1 - (e - 53);                  /* the half-spacing bit of mant */
    if (shift < 0 || shift > 52 || (mant & ((2ull << shift) - 1)) != (1ull << shift)) {
        return h;
    }
    int cmp = compare_with_double(x, d);
    int h_is_lower = bf16_to_f64(h) < d;
    if (cmp > 0 && h_is_lower) {
        return (bf16_t)(h + 1);
    }
    if (cmp < 0 && !h_is_lower) {
        return (bf16_t)(h - 1);
    }
    return h;
}

/*
 * One number at p (no whitespace skipping). `python` selects float()'s dialect (underscores
 * between digits, NaN keeps its sign) over NumPy's (nan(chars), NaN always positive).
 * Returns the end of the number, or NULL if there is none.
 */
static const char *
scan_number(const char *p, const char *lim, int python, bf16_t *out)
{
    int neg = 0;
    char c = peek(p, lim);
    if (c == '+' || c == '-') {
        neg = c == '-';
        p++;
    }
    bf16_t sign = neg ? BF16_SIGN : 0;
    if (match_word(p, lim, "inf")) {
        p += 3;
        if (match_word(p, lim, "inity")) {
            p += 5;
        }
        *out = (bf16_t)(sign | BF16_INF);
        return p;
    }
    if (match_word(p, lim, "nan")) {
        p += 3;
        if (python) {
            *out = (bf16_t)(sign | BF16_QNAN);
            return p;
        }
        if (peek(p, lim) == '(') {
            const char *q = p + 1;
            while (is_alnum(peek(q, lim)) || peek(q, lim) == '_') {
                q++;
            }
            p = peek(q, lim) == ')' ? q + 1 : q;
        }
        *out = BF16_QNAN;
        return p;
    }

    decimal_t x;
    x.n = 0;
    int any_digit = 0, sticky = 0;
    int64_t exp10 = 0;
    for (int frac = 0; frac < 2; frac++) {
        int in_run = 0;
        for (;;) {
            c = peek(p, lim);
            if (c == '_' && python && in_run && is_digit(peek(p + 1, lim))) {
                p++;
                continue;
            }
            if (!is_digit(c)) {
                break;
            }
            int d = c - '0';
            in_run = any_digit = 1;
            if (x.n == 0 && d == 0) {
                if (frac && exp10 > -((int64_t)1 << 60)) {
                    exp10--; /* a leading zero after the point */
                }
            }
            else {
                if (!frac && exp10 < ((int64_t)1 << 60)) {
                    exp10++; /* one more integer digit */
                }
                if (x.n < MAX_DIGITS) {
                    x.digit[x.n++] = (unsigned char)d;
                }
                else if (d != 0) {
                    sticky = 1;
                }
            }
            p++;
        }
        if (frac || peek(p, lim) != '.') {
            break;
        }
        p++;
    }
    if (!any_digit) {
        return NULL;
    }
    c = peek(p, lim);
    if (c == 'e' || c == 'E') {
        const char *q = p + 1;
        int eneg = 0;
        if (peek(q, lim) == '+' || peek(q, lim) == '-') {
            eneg = peek(q, lim) == '-';
            q++;
        }
        if (is_digit(peek(q, lim))) {
            int64_t e = 0;
            for (;;) {
                c = peek(q, lim);
                if (c == '_' && python && is_digit(peek(q + 1, lim))) {
                    q++;
                    continue;
                }
                if (!is_digit(c)) {
                    break;
                }
                if (e < 1000000000) {
                    e = e * 10 + (c - '0');
                }
                q++;
            }
            exp10 += eneg ? -e : e;
            p = q;
        }
    }
    if (sticky) {
        x.digit[x.n++] = 1;
    }
    while (x.n > 0 && x.digit[x.n - 1] == 0) {
        x.n--;
    }
    x.exp10 = exp10;
    *out = (bf16_t)(sign | (x.n == 0 ? 0 : decimal_to_bf16(&x)));
    return p;
}

int
bf16_parse_text(const char *text, size_t len, bf16_t *out)
{
    const char *p = text, *last = text + len;
    while (p < last && is_space(*p)) {
        p++;
    }
    while (last > p && is_space(last[-1])) {
        last--;
    }
    if (p == last) {
        return -1;
    }
    bf16_t h;
    const char *end = scan_number(p, last, 1, &h);
    if (end != last) {
        return -1;
    }
    *out = h;
    return 0;
}

int
bf16_parse_prefix(const char *str, const char **end, bf16_t *out)
{
    const char *p = str;
    while (is_space(*p)) {
        p++;
    }
    const char *e = scan_number(p, NULL, 0, out);
    *end = e == NULL ? str : e;
    return e == NULL ? -1 : 0;
}

/* Append c to the token and read the next character; false when the token is full. */
static int
take(FILE *fp, char *buf, int *k, int *c)
{
    if (*c == EOF || *k >= TOKEN_MAX - 1) {
        return 0;
    }
    buf[(*k)++] = (char)*c;
    *c = getc(fp);
    return 1;
}

static int
take_word(FILE *fp, char *buf, int *k, int *c, const char *word)
{
    for (; *word != '\0'; word++) {
        int lower = (*c >= 'A' && *c <= 'Z') ? *c - 'A' + 'a' : *c;
        if (lower != *word || !take(fp, buf, k, c)) {
            return 0;
        }
    }
    return 1;
}

int
bf16_scan_stream(FILE *fp, bf16_t *out)
{
    char buf[TOKEN_MAX];
    int k = 0;
    int c = getc(fp);
    if (c == EOF) {
        return EOF;
    }
    while (c != EOF && is_space((char)c)) {
        c = getc(fp);
    }
    /* The characters that can start or continue a number, the way NumPy's reader takes them:
     * [+-]? (nan(\([alnum_]*\))? | inf(inity)? | [0-9]*(\.[0-9]+)?([eE][+-]?[0-9]+)?) */
    if (c == '+' || c == '-') {
        take(fp, buf, &k, &c);
    }
    if (c == 'n' || c == 'N') {
        if (take(fp, buf, &k, &c) && take_word(fp, buf, &k, &c, "an") && c == '(' &&
                take(fp, buf, &k, &c)) {
            int full = 0;
            while (c != EOF && (is_alnum((char)c) || c == '_')) {
                if (!take(fp, buf, &k, &c)) {
                    full = 1;
                    break;
                }
            }
            if (!full && c == ')') {
                take(fp, buf, &k, &c);
            }
        }
    }
    else if (c == 'i' || c == 'I') {
        if (take(fp, buf, &k, &c)) {
            take_word(fp, buf, &k, &c, "nfinity");
        }
    }
    else {
        int ok = 1;
        while (ok && c != EOF && is_digit((char)c)) {
            ok = take(fp, buf, &k, &c);
        }
        if (ok && c == '.') {
            ok = take(fp, buf, &k, &c);
            int any = 0;
            while (ok && c != EOF && is_digit((char)c)) {
                ok = take(fp, buf, &k, &c);
                any = 1;
            }
            ok = ok && any;
        }
        if (ok && (c == 'e' || c == 'E')) {
            ok = take(fp, buf, &k, &c);
            if (ok && (c == '+' || c == '-')) {
                ok = take(fp, buf, &k, &c);
            }
            while (ok && c != EOF && is_digit((char)c)) {
                ok = take(fp, buf, &k, &c);
            }
        }
    }
    if (c != EOF) {
        ungetc(c, fp);
    }
    buf[k] = '\0';
    if (k == 0) {
        return 0;
    }
    const char *end;
    bf16_t h;
    if (bf16_parse_prefix(buf, &end, &h) < 0) {
        return 0;
    }
    *out = h;
    return 1;
}
