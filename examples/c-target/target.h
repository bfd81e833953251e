/* rx-oracle C example target: shared declarations.
 *
 * The target speaks protocol 1 of conformance/PROTOCOL.md.  Each component turns a
 * scenario (a cJSON object) into its observables, or fails with a message that the
 * main loop sends back as an `error` answer.
 */
#ifndef RXO_TARGET_H
#define RXO_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define RXO_ERRLEN 256

/* --- JSON helpers (json_util.c) ------------------------------------------------------- */

/* Copy of `text` in which every integer literal that a double cannot hold exactly
 * (more than 15 digits) is turned into a tagged string, so cJSON does not round it.
 * The ju_get_* readers below understand the tag.  Returns NULL when out of memory. */
char *ju_protect_big_ints(const char *text, size_t len);

/* Read an integer-valued item (plain JSON number or tagged big literal).
 * Return 0 on success, -1 if the item is not an exactly representable integer. */
int ju_get_i64(const cJSON *item, int64_t *out);
int ju_get_u64(const cJSON *item, uint64_t *out);

/* Integer members, written with our own formatter (exact for every int64/uint64). */
cJSON *ju_i64(int64_t value);
cJSON *ju_u64(uint64_t value);

/* Decode a hex string into a malloc'd buffer.  Return 0 or -1 (bad hex / no memory). */
int ju_hex_decode(const char *hex, uint8_t **out, size_t *out_len);

/* Print `msg` on one line of stdout and flush. */
void ju_emit(const cJSON *msg);

/* --- components --------------------------------------------------------------------- */

/* Both return the observables object, or NULL with a message in err[RXO_ERRLEN]. */
cJSON *rss_run(const cJSON *scenario, char *err);
cJSON *kfunc_run(const cJSON *scenario, char *err);

#endif
