/* JSON helpers: exact integers on top of cJSON, hex strings, line output.
 *
 * cJSON stores every number as a double, which holds integers exactly only up to 2^53.
 * The protocol carries u64 values (kfunc timestamps), so the target never lets cJSON
 * convert a long integer literal:
 *
 *   input:  before parsing, ju_protect_big_ints() rewrites each integer literal of more
 *           than 15 digits (outside strings) as a string "\u0001<digits>".  The readers
 *           ju_get_i64/ju_get_u64 accept either a plain number (at most 15 digits, so
 *           exact as a double) or such a tagged string, which they convert with
 *           strtoll/strtoull from the original digits.
 *   output: every integer is added with cJSON_CreateRaw() from our own "%lld"/"%llu"
 *           formatting, so cJSON never prints it through a double either.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

#define BIG_TAG '\001'
#define BIG_TAG_JSON "\\u0001"
/* 15 decimal digits always fit a double's 53-bit mantissa exactly. */
#define MAX_EXACT_DIGITS 15
#define EXACT_LIMIT 9007199254740992.0 /* 2^53 */

char *ju_protect_big_ints(const char *text, size_t len)
{
    /* Each rewritten token has >= 16 characters and grows by 8 ("\u0001" and quotes). */
    char *out = malloc(len + len / 2 + 16);
    size_t o = 0, i = 0;

    if (out == NULL)
        return NULL;
    while (i < len) {
        char c = text[i];
        if (c == '"') { /* copy a string verbatim, honouring escapes */
            out[o++] = text[i++];
            while (i < len && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < len)
                    out[o++] = text[i++];
                out[o++] = text[i++];
            }
            if (i < len)
                out[o++] = text[i++];
            continue;
        }
        if (c == '-' || isdigit((unsigned char)c)) {
            size_t start = i, digits = 0;
            int integer = 1;
            while (i < len && (isdigit((unsigned char)text[i]) || strchr("+-.eE", text[i]) != NULL)) {
                if (isdigit((unsigned char)text[i]))
                    digits++;
                else if (!(text[i] == '-' && i == start))
                    integer = 0;
                i++;
            }
            if (integer && digits > MAX_EXACT_DIGITS) {
                memcpy(out + o, "\"" BIG_TAG_JSON, 7);
                o += 7;
                memcpy(out + o, text + start, i - start);
                o += i - start;
                out[o++] = '"';
            } else {
                memcpy(out + o, text + start, i - start);
                o += i - start;
            }
            continue;
        }
        out[o++] = text[i++];
    }
    out[o] = '\0';
    return out;
}

static int tagged(const cJSON *item)
{
    return cJSON_IsString(item) && item->valuestring != NULL && item->valuestring[0] == BIG_TAG;
}

int ju_get_i64(const cJSON *item, int64_t *out)
{
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (d != floor(d) || fabs(d) > EXACT_LIMIT)
            return -1;
        *out = (int64_t)d;
        return 0;
    }
    if (tagged(item)) {
        const char *digits = item->valuestring + 1;
        char *end;
        long long v;
        errno = 0;
        v = strtoll(digits, &end, 10);
        if (errno != 0 || end == digits || *end != '\0')
            return -1;
        *out = (int64_t)v;
        return 0;
    }
    return -1;
}

int ju_get_u64(const cJSON *item, uint64_t *out)
{
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        if (d != floor(d) || d < 0 || d > EXACT_LIMIT)
            return -1;
        *out = (uint64_t)d;
        return 0;
    }
    if (tagged(item)) {
        const char *digits = item->valuestring + 1;
        char *end;
        unsigned long long v;
        if (digits[0] == '-')
            return -1;
        errno = 0;
        v = strtoull(digits, &end, 10);
        if (errno != 0 || end == digits || *end != '\0')
            return -1;
        *out = (uint64_t)v;
        return 0;
    }
    return -1;
}

cJSON *ju_i64(int64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, value);
    return cJSON_CreateRaw(buf);
}

cJSON *ju_u64(uint64_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, value);
    return cJSON_CreateRaw(buf);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ju_hex_decode(const char *hex, uint8_t **out, size_t *out_len)
{
    size_t n = strlen(hex), i;
    uint8_t *buf;

    if (n % 2 != 0)
        return -1;
    buf = malloc(n / 2 + 1);
    if (buf == NULL)
        return -1;
    for (i = 0; i < n / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(buf);
            return -1;
        }
        buf[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = buf;
    *out_len = n / 2;
    return 0;
}

void ju_emit(const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (text == NULL) {
        fputs("{\"type\":\"error\",\"id\":null,\"message\":\"out of memory\"}\n", stdout);
    } else {
        fputs(text, stdout);
        fputc('\n', stdout);
        free(text);
    }
    fflush(stdout);
}
