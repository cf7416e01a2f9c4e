/* attnsweep/sha256.h: SHA-256 (FIPS 180-4), used for the canonical hash of a sweep spec.
 *
 * Streaming use: as_sha256_init, any number of as_sha256_update, as_sha256_final.
 * No allocation, no errors; not collective; a context is used by one thread at a time.
 */
#ifndef ATTNSWEEP_SHA256_H
#define ATTNSWEEP_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define AS_SHA256_BYTES 32
#define AS_SHA256_HEX 65 /* 64 hex digits and the NUL */

typedef struct as_sha256 {
  uint32_t h[8];     /* chaining state */
  uint64_t bytes;    /* message length so far [bytes] */
  uint8_t block[64]; /* pending partial block */
  size_t fill;       /* bytes pending in block (0..63) */
} as_sha256;

/* Start a new hash. */
void as_sha256_init(as_sha256 *c);
/* Append len bytes of data (data may be NULL when len is 0). */
void as_sha256_update(as_sha256 *c, const void *data, size_t len);
/* Finish: the 32-byte digest into out. The context must be re-initialised before reuse. */
void as_sha256_final(as_sha256 *c, uint8_t out[AS_SHA256_BYTES]);
/* One call: lowercase hex digest of data into hex (64 digits and a NUL). */
void as_sha256_hex(const void *data, size_t len, char hex[AS_SHA256_HEX]);

#endif /* ATTNSWEEP_SHA256_H */
