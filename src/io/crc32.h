/* crc32.h: CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, initial value and final xor
 * 0xFFFFFFFF), as used by zlib and PNG: crc("123456789") = 0xCBF43926.
 * Private to the io layer (journal entries). Not collective; thread-safe. */
#ifndef AS_IO_CRC32_H
#define AS_IO_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC of len bytes at p, continuing from crc (pass 0 to start). */
uint32_t as_crc32_update(uint32_t crc, const void *p, size_t len);
/* CRC of len bytes at p. */
uint32_t as_crc32(const void *p, size_t len);
/* 1 when the calls above take the carry-less multiplication path (x86-64 with PCLMULQDQ and
 * SSE4.1, ATTNSWEEP_ISA not "baseline"), 0 when they use the tables only; decided once. */
int as_crc32_accelerated(void);

#endif
