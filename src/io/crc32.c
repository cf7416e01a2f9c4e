/* crc32.c: CRC-32 (reflected, polynomial 0xEDB88320, the one of zlib and PNG), so checksums of
 * records and bulk slabs cost little next to writing them. Two paths, the same values:
 *
 *  * eight bytes per step ("slicing by 8": eight tables, table k the CRC of a byte followed by
 *    k zero bytes), on every host and for inputs shorter than CRC_FOLD_MIN;
 *  * on x86-64 with PCLMULQDQ and SSE4.1, carry-less multiplication ("folding", the method of
 *    Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 *    Instruction", Intel, 2009): four 128-bit lanes folded 512 bits ahead per step, then
 *    folded into one lane, then 128 bits at a time, then reduced to 32 bits by two folds and
 *    a Barrett reduction; the bytes after the last whole 16 go through the tables.
 *
 * The tables and the folding constants are computed once, from the polynomial, on first use
 * (pthread_once), which also picks the path: the folding one where the CPU has both
 * instruction sets and ATTNSWEEP_ISA is not "baseline" (the kernels' cap, as_isa_cap). */
#include "crc32.h"

#include "attnsweep/attention.h"

#include <pthread.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* The generator polynomial P(x) = x^32 + x^26 + ... + x + 1 in the natural order (bit j the
 * coefficient of x^j, 33 bits), and its 32 low bits reflected (bit 31 - j the coefficient of
 * x^j): the shift-register form of the tables. */
#define CRC_POLY 0x104C11DB7ull
#define CRC_POLY_REFLECTED 0xEDB88320u

/* Shortest input the folding path takes: four 16-byte lanes to start from. */
#define CRC_FOLD_MIN 64

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_fold_on; /* set once in crc_init: the folding path is used */

/* Four bytes as a little-endian word, whatever the host's order. */
static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The shift register c (the reflected remainder, before the final xor) after len more bytes. */
static uint32_t crc_tables_update(uint32_t c, const unsigned char *b, size_t len) {
  for (; len >= 8; len -= 8, b += 8) {
    const uint32_t lo = c ^ le32(b), hi = le32(b + 4);
    c = crc_table[7][lo & 0xFFu] ^ crc_table[6][(lo >> 8) & 0xFFu] ^
        crc_table[5][(lo >> 16) & 0xFFu] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFFu] ^
        crc_table[2][(hi >> 8) & 0xFFu] ^ crc_table[1][(hi >> 16) & 0xFFu] ^ crc_table[0][hi >> 24];
  }
  for (; len > 0; len--, b++) c = crc_table[0][(c ^ *b) & 0xFFu] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
/* Polynomials over GF(2) in the natural order (bit j the coefficient of x^j), in software. */

/* x^n mod P, degree < 32. */
static uint64_t poly_xpow_mod(unsigned n) {
  uint64_t r = 1;
  for (unsigned i = 0; i < n; i++) {
    r <<= 1;
    if (r >> 32) r ^= CRC_POLY;
  }
  return r;
}

/* floor(x^64 / P), degree 32: long division, one quotient bit per degree from 64 down to 32.
 * The first step (x^64 - x^32 P) leaves a remainder of degree < 64, held in 64 bits. */
static uint64_t poly_barrett_mu(void) {
  uint64_t q = 1ull << 32;
  uint64_t r = (CRC_POLY & 0xFFFFFFFFull) << 32;
  for (int d = 63; d >= 32; d--)
    if ((r >> d) & 1u) {
      q |= 1ull << (d - 32);
      r ^= CRC_POLY << (d - 32);
    }
  return q;
}

/* A polynomial S of degree <= 32 as a 64-bit operand of the carry-less multiply: x^j at bit
 * 32 - j (S x^31, bit-reflected into 64 bits). A qword of data holds a polynomial A with x^j at
 * bit 63 - j (the stream's first bit is its highest power), and the 127-bit product of the two
 * then holds A S x^32 with x^j at bit 127 - j of the 128-bit result. */
static uint64_t fold_operand(uint64_t s) {
  uint64_t r = 0;
  for (int j = 0; j <= 32; j++)
    if ((s >> j) & 1u) r |= 1ull << (32 - j);
  return r;
}

/* The constants, each a fold_operand. A 128-bit lane holds the polynomial A x^64 + B (A the
 * low 8 bytes, the first in the stream). Folding it F bits ahead (onto the data F bits
 * further on) multiplies by x^F: A x^(64+F) + B x^F, which is A * (x^(32+F) mod P) * x^32 +
 * B * (x^(F-32) mod P) * x^32 modulo P, of degree < 128. */
static struct {
  uint64_t k544, k480; /* F = 512 (four lanes ahead): x^544 mod P (A), x^480 mod P (B) */
  uint64_t k160, k96;  /* F = 128 (one lane ahead): x^160 mod P (A), x^96 mod P (B) */
  uint64_t k64;        /* x^64 mod P: the 32 highest bits of a 96-bit remainder, down to 64 */
  uint64_t mu;         /* floor(x^64 / P), the Barrett quotient's multiplier */
  uint64_t poly;       /* P itself */
} fk;

static void fold_constants_init(void) {
  fk.k544 = fold_operand(poly_xpow_mod(544));
  fk.k480 = fold_operand(poly_xpow_mod(480));
  fk.k160 = fold_operand(poly_xpow_mod(160));
  fk.k96 = fold_operand(poly_xpow_mod(96));
  fk.k64 = fold_operand(poly_xpow_mod(64));
  fk.mu = fold_operand(poly_barrett_mu());
  fk.poly = fold_operand(CRC_POLY);
}

#define CRC_TARGET __attribute__((target("pclmul,sse4.1")))

/* x folded F bits ahead (F = 512 or 128): k holds in its low qword the operand for x's low
 * qword A, in its high qword the one for x's high qword B (see fk). */
CRC_TARGET static inline __m128i fold128(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

CRC_TARGET static inline __m128i load128(const unsigned char *b) {
  return _mm_loadu_si128((const __m128i *)(const void *)b);
}

/* The shift register c after the len bytes at b, len >= CRC_FOLD_MIN and a multiple of 16. */
CRC_TARGET static uint32_t crc_fold_update(uint32_t c, const unsigned char *b, size_t len) {
  const __m128i k4 = _mm_set_epi64x((long long)fk.k480, (long long)fk.k544);
  const __m128i k1 = _mm_set_epi64x((long long)fk.k96, (long long)fk.k160);
  /* The register enters as the first 32 bits of the stream (xored onto them). */
  __m128i x0 = _mm_xor_si128(load128(b), _mm_cvtsi32_si128((int)c));
  __m128i x1 = load128(b + 16), x2 = load128(b + 32), x3 = load128(b + 48);
  for (b += 64, len -= 64; len >= 64; b += 64, len -= 64) {
    x0 = _mm_xor_si128(fold128(x0, k4), load128(b));
    x1 = _mm_xor_si128(fold128(x1, k4), load128(b + 16));
    x2 = _mm_xor_si128(fold128(x2, k4), load128(b + 32));
    x3 = _mm_xor_si128(fold128(x3, k4), load128(b + 48));
  }
  __m128i x = _mm_xor_si128(fold128(x0, k1), x1);
  x = _mm_xor_si128(fold128(x, k1), x2);
  x = _mm_xor_si128(fold128(x, k1), x3);
  for (; len >= 16; b += 16, len -= 16) x = _mm_xor_si128(fold128(x, k1), load128(b));

  /* x holds X = A x^64 + B, congruent modulo P to the whole stream; the register to return is
   * X x^32 mod P. Below, a 128-bit value "holds" Y when its bit 127 - j is Y's x^j. */
  const __m128i lo32 = _mm_set_epi32(0, 0, 0, -1);
  /* 128 -> 96 bits: A (x^96 mod P) x^32 + B x^64, congruent to X x^64, holds x^32 Z with
   * Z = C x^64 + D of degree < 96 (C in bits 0..31, D in bits 32..95). */
  __m128i y = _mm_xor_si128(_mm_clmulepi64_si128(x, _mm_cvtsi64_si128((long long)fk.k96), 0x00),
                            _mm_srli_si128(x, 8));
  /* 96 -> 64 bits: C (x^64 mod P) x^64 + D x^64 holds R x^64, R congruent to Z, degree < 64
   * (the low qword reflects R: its high half R1 in bits 0..31, its low half R0 in 32..63). */
  y = _mm_xor_si128(
      _mm_clmulepi64_si128(_mm_and_si128(y, lo32), _mm_cvtsi64_si128((long long)fk.k64), 0x00),
      _mm_srli_si128(y, 4));
  /* Barrett: R mod P = R0 + (q P mod x^32) with q = floor(R1 mu / x^32), the quotient of R by
   * P. R1 mu x^64 puts q in bits 0..31; q P x^64 puts q P mod x^32 in bits 32..63, onto R0. */
  __m128i t =
      _mm_clmulepi64_si128(_mm_and_si128(y, lo32), _mm_cvtsi64_si128((long long)fk.mu), 0x00);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, lo32), _mm_cvtsi64_si128((long long)fk.poly), 0x00);
  return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, y), 1);
}
#endif

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1u) ? CRC_POLY_REFLECTED ^ (c >> 1) : c >> 1;
    crc_table[0][i] = c;
  }
  for (int t = 1; t < 8; t++)
    for (uint32_t i = 0; i < 256; i++) {
      const uint32_t c = crc_table[t - 1][i];
      crc_table[t][i] = (c >> 8) ^ crc_table[0][c & 0xFFu];
    }
#if defined(__x86_64__)
  fold_constants_init();
  __builtin_cpu_init();
  crc_fold_on =
      __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") && as_isa_cap() > 0;
#endif
}

int as_crc32_accelerated(void) {
  pthread_once(&crc_once, crc_init);
  return crc_fold_on;
}

uint32_t as_crc32_update(uint32_t crc, const void *p, size_t len) {
  pthread_once(&crc_once, crc_init);
  const unsigned char *b = p;
  uint32_t c = crc ^ 0xFFFFFFFFu;
#if defined(__x86_64__)
  if (crc_fold_on && len >= CRC_FOLD_MIN) {
    const size_t whole = len & ~(size_t)15;
    c = crc_fold_update(c, b, whole);
    b += whole;
    len -= whole;
  }
#endif
  return crc_tables_update(c, b, len) ^ 0xFFFFFFFFu;
}

uint32_t as_crc32(const void *p, size_t len) {
  return as_crc32_update(0, p, len);
}
