/*
 * parse.h - decimal text -> bfloat16, rounded once (to nearest, ties to even) from the exact
 * decimal value. Pure C: no Python, no NumPy, no locale, no global state, so it is safe where
 * NumPy has released the GIL (the dtype's fromstr/scanfunc). Checked by tests/test_parse.py.
 */
#ifndef BF16_PARSE_H
#define BF16_PARSE_H

#include <stddef.h>
#include <stdio.h>
#include "bf16.h"

/*
 * The whole of text[0, len) as Python's float() reads it: surrounding ASCII whitespace,
 * an optional sign, digits with an optional point and exponent, single underscores between
 * digits, "inf"/"infinity"/"nan" in any case (NaN keeps its sign). Returns 0 and sets *out,
 * or -1 if the text is not a number (an embedded NUL makes it invalid).
 */
int bf16_parse_text(const char *text, size_t len, bf16_t *out);

/*
 * The longest number at the start of the NUL-terminated `str`, as NumPy's float16 `fromstr`
 * reads it: leading whitespace skipped, "nan" may carry "(chars)" and is never negative, no
 * underscores. Sets *end past the number and returns 0, or returns -1 with *end = str.
 */
int bf16_parse_prefix(const char *str, const char **end, bf16_t *out);

/*
 * One number from a stream, like NumPy's float16 `scanfunc`: skips whitespace, consumes what
 * looks like a number (at most 119 characters), parses it with bf16_parse_prefix. Returns 1
 * when a number was read, 0 when none, EOF at end of file before anything was read.
 */
int bf16_scan_stream(FILE *fp, bf16_t *out);

#endif /* BF16_PARSE_H */
