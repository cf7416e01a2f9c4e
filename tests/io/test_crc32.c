/* CRC-32 against its definition: a bit-at-a-time reflected shift register written here, on
 * random buffers of every length 0..600 at every offset 0..15 from a 16-byte boundary, with
 * random initial values; chained updates equal the CRC of the concatenation; 1 MiB buffers;
 * the check value crc("123456789") = 0xCBF43926. The path under test is asserted: the
 * carry-less multiplication one where the CPU has PCLMULQDQ and SSE4.1, the tables alone under
 * ATTNSWEEP_ISA=baseline (the second ctest entry, io_test_crc32_baseline). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "as_test.h"
#include "crc32.h"

/* The definition: the register starts at ~crc, each byte enters at the low end, bit by bit,
 * and leaves through the reflected polynomial; the result is the register inverted. */
static uint32_t crc_reference(uint32_t crc, const unsigned char *b, size_t len) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < len; i++) {
    c ^= b[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* xorshift64*: reproducible random bytes and values. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static void fill(unsigned char *b, size_t len) {
  for (size_t i = 0; i < len; i++) b[i] = (unsigned char)(rng() >> 56);
}

/* The path the dispatch must have taken in this process. */
static int expect_accelerated(void) {
  const char *cap = getenv("ATTNSWEEP_ISA");
  if (cap && strcmp(cap, "baseline") == 0) return 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
  return 0;
#endif
}

int main(void) {
  const int want = expect_accelerated();
  const int got = as_crc32_accelerated();
  AS_EXPECT(got == want, "path %s, expected %s", got ? "folding" : "tables",
            want ? "folding" : "tables");
  printf("crc32 path: %s\n", got ? "carry-less multiplication (PCLMULQDQ)" : "tables");

  AS_EXPECT(as_crc32("123456789", 9) == 0xCBF43926u, "check value %08x",
            (unsigned)as_crc32("123456789", 9));
  AS_EXPECT(as_crc32(NULL, 0) == 0u, "empty input");

  /* Every length 0..600 at every offset 0..15 from an aligned start, random initial crc. */
  enum { MAXLEN = 600 };
  static _Alignas(64) unsigned char buf[MAXLEN + 64];
  int bad = 0;
  for (size_t len = 0; len <= MAXLEN; len++)
    for (size_t off = 0; off < 16; off++) {
      fill(buf + off, len);
      const uint32_t init = (uint32_t)rng();
      const uint32_t want_c = crc_reference(init, buf + off, len);
      const uint32_t got_c = as_crc32_update(init, buf + off, len);
      if (got_c != want_c && bad++ < 10)
        AS_EXPECT(got_c == want_c, "len %zu off %zu init %08x: %08x, reference %08x", len, off,
                  (unsigned)init, (unsigned)got_c, (unsigned)want_c);
      if (as_crc32(buf + off, len) != crc_reference(0, buf + off, len) && bad++ < 10)
        AS_EXPECT(0, "len %zu off %zu: as_crc32 differs from the reference", len, off);
    }
  AS_EXPECT(bad == 0, "%d of %d lengths and offsets differ", bad, (MAXLEN + 1) * 16);

  /* Chained updates: update(update(c, a), b) == update(c, a || b), at every split point. */
  fill(buf, MAXLEN);
  int chain_bad = 0;
  for (size_t total = 0; total <= 300; total += 37)
    for (size_t split = 0; split <= total; split++) {
      const uint32_t init = (uint32_t)rng();
      const uint32_t once = as_crc32_update(init, buf, total);
      const uint32_t twice =
          as_crc32_update(as_crc32_update(init, buf, split), buf + split, total - split);
      if (once != twice || once != crc_reference(init, buf, total)) chain_bad++;
    }
  AS_EXPECT(chain_bad == 0, "%d chained updates differ", chain_bad);

  /* Large buffers: 1 MiB, and 1 MiB + 13 at an odd offset, in one call and in uneven pieces. */
  const size_t big = (1u << 20) + 13;
  unsigned char *lb = malloc(big + 3);
  AS_EXPECT(lb != NULL, "malloc");
  if (lb) {
    fill(lb, big + 3);
    AS_EXPECT(as_crc32(lb, 1u << 20) == crc_reference(0, lb, 1u << 20), "1 MiB");
    const uint32_t ref = crc_reference(0x12345678u, lb + 3, big);
    AS_EXPECT(as_crc32_update(0x12345678u, lb + 3, big) == ref, "1 MiB + 13 at offset 3");
    uint32_t c = 0x12345678u;
    size_t at = 0, piece = 1;
    while (at < big) {
      const size_t n = piece < big - at ? piece : big - at;
      c = as_crc32_update(c, lb + 3 + at, n);
      at += n;
      piece = piece * 3 + 1;
    }
    AS_EXPECT(c == ref, "1 MiB + 13 in pieces: %08x, reference %08x", (unsigned)c, (unsigned)ref);
    free(lb);
  }
  return as_test_finish("test_crc32");
}
