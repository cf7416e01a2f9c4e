/* crc32.c: table-driven CRC-32 (reflected, polynomial 0xEDB88320). The table is computed
 * at compile time's equivalent: once, from the polynomial, on first use. */
#include "crc32.h"

#include <pthread.h>

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t as_crc32_update(uint32_t crc, const void *p, size_t len) {
  pthread_once(&crc_once, crc_table_init);
  const unsigned char *b = p;
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < len; i++) c = crc_table[(c ^ b[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t as_crc32(const void *p, size_t len) {
  return as_crc32_update(0, p, len);
}
