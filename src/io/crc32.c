/* crc32.c: CRC-32 (reflected, polynomial 0xEDB88320, the one of zlib and PNG), eight bytes per
 * step ("slicing by 8": eight tables, table k the CRC of a byte followed by k zero bytes), so
 * checksums of records and bulk slabs cost little next to writing them. The tables are computed
 * once, from the polynomial, on first use. */
#include "crc32.h"

#include <pthread.h>

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[0][i] = c;
  }
  for (int t = 1; t < 8; t++)
    for (uint32_t i = 0; i < 256; i++) {
      const uint32_t c = crc_table[t - 1][i];
      crc_table[t][i] = (c >> 8) ^ crc_table[0][c & 0xFFu];
    }
}

/* Four bytes as a little-endian word, whatever the host's order. */
static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

uint32_t as_crc32_update(uint32_t crc, const void *p, size_t len) {
  pthread_once(&crc_once, crc_table_init);
  const unsigned char *b = p;
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (; len >= 8; len -= 8, b += 8) {
    const uint32_t lo = c ^ le32(b), hi = le32(b + 4);
    c = crc_table[7][lo & 0xFFu] ^ crc_table[6][(lo >> 8) & 0xFFu] ^
        crc_table[5][(lo >> 16) & 0xFFu] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFFu] ^
        crc_table[2][(hi >> 8) & 0xFFu] ^ crc_table[1][(hi >> 16) & 0xFFu] ^ crc_table[0][hi >> 24];
  }
  for (; len > 0; len--, b++) c = crc_table[0][(c ^ *b) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t as_crc32(const void *p, size_t len) {
  return as_crc32_update(0, p, len);
}
