/* The journal: CRC-32 check value; append, close, reopen and append more; batching and the
 * maximum delay; a torn tail is skipped and then cut on reopen; a corrupted entry is detected
 * and skipped; a damaged header or another layout is refused; a full disk is a clear I/O
 * error. (The run lock is the set's: test_outset.c.) */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/journal.h"
#include "crc32.h"

typedef struct seen {
  int count;
  uint64_t trials[64];
  int mismatches; /* records that differ from make_record(trial) */
  int disorder;   /* entries not after the previous one's trial */
  uint64_t last;
} seen;

static void make_record(uint64_t i, as_record *r) {
  as_record_init(r, NULL);
  r->trial = i;
  r->d = 3;
  r->n = (int32_t)(10 + i);
  r->outcome = AS_OUT_SETTLED;
  r->verdict = AS_VERDICT_CONSISTENT;
  r->settle_time = 1.5 * (double)i;
  snprintf(r->message, sizeof r->message, "trial %llu", (unsigned long long)i);
}

static as_status visit(const as_record *rec, void *ctx) {
  seen *s = ctx;
  as_record want;
  make_record(rec->trial, &want);
  if (memcmp(&want, rec, sizeof want) != 0) s->mismatches++;
  if (s->count < 64) s->trials[s->count] = rec->trial;
  if (s->count && rec->trial <= s->last) s->disorder++;
  s->last = rec->trial;
  s->count++;
  return AS_OK;
}

static as_status scan(const char *path, seen *s, as_journal_scan *sc) {
  memset(s, 0, sizeof *s);
  return as_journal_read(path, visit, s, sc);
}

static off_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? sb.st_size : -1;
}

static void append_range(as_journal *j, uint64_t from, uint64_t to) {
  for (uint64_t i = from; i < to; i++) {
    as_record r;
    make_record(i, &r);
    AS_EXPECT(as_journal_append(j, &r) == AS_OK, "append %llu: %s", (unsigned long long)i,
              as_error_get()->message);
  }
}

/* Flip one byte at offset off. */
static void corrupt(const char *path, off_t off) {
  int fd = open(path, O_RDWR);
  unsigned char b = 0;
  if (fd >= 0 && pread(fd, &b, 1, off) == 1) {
    b ^= 0x5a;
    if (pwrite(fd, &b, 1, off) != 1) perror("pwrite");
  }
  if (fd >= 0) close(fd);
}

int main(void) {
  AS_EXPECT(as_crc32("123456789", 9) == 0xCBF43926u, "CRC-32 check value: %08x",
            (unsigned)as_crc32("123456789", 9));
  AS_EXPECT(as_crc32("", 0) == 0, "CRC of nothing");
  AS_EXPECT(as_crc32_update(as_crc32("1234", 4), "56789", 5) == 0xCBF43926u, "incremental CRC");
  { /* eight bytes per step against the definition, bit by bit: every length, offset, split */
    unsigned char buf[300];
    uint32_t x = 12345u;
    for (size_t i = 0; i < sizeof buf; i++)
      buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    int bad = 0;
    for (size_t off = 0; off < 8; off++)
      for (size_t len = 0; off + len <= sizeof buf; len += 7) {
        uint32_t c = 0xFFFFFFFFu;
        for (size_t i = 0; i < len; i++) {
          c ^= buf[off + i];
          for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        c ^= 0xFFFFFFFFu;
        const size_t cut = len / 3;
        bad += as_crc32(buf + off, len) != c ||
               as_crc32_update(as_crc32(buf + off, cut), buf + off + cut, len - cut) != c;
      }
    AS_EXPECT(bad == 0, "CRC-32 against the bitwise definition: %d mismatches", bad);
  }

  char dir[] = "/tmp/as_journal_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char path[4200];
  snprintf(path, sizeof path, "%s/out.h5.journal.0", dir);

  /* Batches of 4 with no delay limit: entries reach the file 4 at a time. */
  as_journal *j = NULL;
  AS_EXPECT(as_journal_open(path, 0, 4, 1e9, &j) == AS_OK, "open: %s", as_error_get()->message);
  append_range(j, 0, 3);
  seen s;
  as_journal_scan sc;
  AS_EXPECT(as_journal_pending(j) == 3 && scan(path, &s, &sc) == AS_OK && s.count == 0,
            "3 buffered, none in the file (%d)", s.count);
  append_range(j, 3, 10);
  AS_EXPECT(as_journal_pending(j) == 2 && scan(path, &s, &sc) == AS_OK && s.count == 8,
            "two batches written (%d)", s.count);
  AS_EXPECT(as_journal_close(&j) == AS_OK && j == NULL, "close flushes");
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 10 && s.mismatches == 0 &&
                sc.entries_bad == 0 && sc.torn_bytes == 0 && sc.rank == 0,
            "10 entries back intact (%d, %d mismatches)", s.count, s.mismatches);
  for (int i = 0; i < 10; i++) AS_EXPECT(s.trials[i] == (uint64_t)i, "order %d", i);
  AS_EXPECT(file_size(path) == (off_t)(AS_JOURNAL_HEADER_BYTES + 10 * AS_JOURNAL_ENTRY_BYTES),
            "file size");

  /* Zero delay: every append is durable at once. Reopening appends after the old entries. */
  AS_EXPECT(as_journal_open(path, 0, 100, 0.0, &j) == AS_OK, "reopen");
  append_range(j, 10, 12);
  AS_EXPECT(as_journal_pending(j) == 0, "delay 0 flushes each append");
  as_journal_close(&j);
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 12 && s.trials[11] == 11, "12 entries");

  /* Torn tail: a crash in the middle of the last entry. */
  off_t full = file_size(path);
  AS_EXPECT(truncate(path, full - 100) == 0, "truncate");
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 11 &&
                sc.torn_bytes == AS_JOURNAL_ENTRY_BYTES - 100 && s.mismatches == 0,
            "torn tail skipped: %d entries, %llu torn bytes", s.count,
            (unsigned long long)sc.torn_bytes);
  AS_EXPECT(as_journal_open(path, 0, 1, 0.0, &j) == AS_OK, "reopen after a torn tail");
  append_range(j, 11, 12);
  as_journal_close(&j);
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 12 && sc.torn_bytes == 0 &&
                sc.entries_bad == 0 && s.trials[11] == 11 && s.mismatches == 0,
            "torn tail cut, new entry aligned (%d)", s.count);

  /* A flipped byte inside entry 3's record: detected, skipped, the others still read. */
  corrupt(path, (off_t)(AS_JOURNAL_HEADER_BYTES + 3 * AS_JOURNAL_ENTRY_BYTES + 40));
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 11 && sc.entries_bad == 1 &&
                s.mismatches == 0,
            "bad checksum detected: %d ok, %llu bad", s.count, (unsigned long long)sc.entries_bad);
  int has3 = 0;
  for (int i = 0; i < s.count; i++) has3 |= s.trials[i] == 3;
  AS_EXPECT(!has3, "the corrupted entry is not delivered");
  /* A flipped byte in the CRC itself is also caught. */
  corrupt(path,
          (off_t)(AS_JOURNAL_HEADER_BYTES + 5 * AS_JOURNAL_ENTRY_BYTES + 16 + sizeof(as_record)));
  AS_EXPECT(scan(path, &s, &sc) == AS_OK && s.count == 10 && sc.entries_bad == 2, "bad CRC");
  /* The header alone: its rank, no entry read (not even the two bad ones counted). */
  memset(&sc, 0xff, sizeof sc);
  AS_EXPECT(as_journal_read_header(path, &sc) == AS_OK && sc.rank == 0 && sc.entries_ok == 0 &&
                sc.entries_bad == 0 && sc.torn_bytes == 0 && sc.spec[0] == '\0',
            "header only: rank %d, %llu ok, %llu bad", sc.rank, (unsigned long long)sc.entries_ok,
            (unsigned long long)sc.entries_bad);

  /* A damaged header: not a journal. */
  corrupt(path, 20);
  as_error_clear();
  AS_EXPECT(scan(path, &s, &sc) == AS_ERR_DATA && strstr(as_error_get()->message, "damaged"),
            "damaged header: %s", as_error_get()->message);
  as_error_clear();
  AS_EXPECT(as_journal_read_header(path, &sc) == AS_ERR_DATA &&
                strstr(as_error_get()->message, "damaged"),
            "damaged header, header only: %s", as_error_get()->message);
  as_error_clear();
  AS_EXPECT(as_journal_open(path, 0, 1, 0.0, &j) == AS_ERR_DATA && j == NULL,
            "append refuses a damaged journal");
  as_error_clear();
  char other[4300];
  snprintf(other, sizeof other, "%s/notes.txt", dir);
  FILE *f = fopen(other, "w");
  fputs("hello\n", f);
  fclose(f);
  AS_EXPECT(as_journal_read(other, NULL, NULL, NULL) == AS_ERR_DATA, "a text file");
  as_error_clear();
  AS_EXPECT(as_journal_read("/nonexistent/j", NULL, NULL, NULL) == AS_ERR_IO, "missing file");
  as_error_clear();
  AS_EXPECT(as_journal_open(path, 0, 0, 0.0, &j) == AS_ERR_ARG, "batch 0 refused");
  as_error_clear();

  /* Full disk: a clear I/O error naming the file and the reason. */
  if (access("/dev/full", W_OK) == 0) {
    as_status st = as_journal_open("/dev/full", 0, 1, 0.0, &j);
    AS_EXPECT(st == AS_ERR_IO && strstr(as_error_get()->message, "/dev/full") &&
                  strstr(as_error_get()->message, strerror(ENOSPC)),
              "full disk: %s", as_error_get()->message);
    as_error_clear();
  }

  /* Many entries: the reader takes them in chunks (64 per read): 150 entries cross two chunk
   * borders; a torn tail and a damaged first entry of the second chunk are still found. */
  char many[4300];
  snprintf(many, sizeof many, "%s/many.journal.0", dir);
  AS_EXPECT(as_journal_open(many, 0, 16, 1e9, &j) == AS_OK, "open many");
  append_range(j, 0, 150);
  as_journal_close(&j);
  AS_EXPECT(scan(many, &s, &sc) == AS_OK && s.count == 150 && s.disorder == 0 &&
                s.mismatches == 0 && sc.torn_bytes == 0 && sc.entries_bad == 0,
            "150 entries in order (%d, %d out of order)", s.count, s.disorder);
  AS_EXPECT(truncate(many, file_size(many) - 100) == 0, "truncate many");
  corrupt(many, (off_t)(AS_JOURNAL_HEADER_BYTES + 64 * AS_JOURNAL_ENTRY_BYTES + 40));
  AS_EXPECT(
      scan(many, &s, &sc) == AS_OK && s.count == 148 && sc.entries_bad == 1 &&
          sc.torn_bytes == AS_JOURNAL_ENTRY_BYTES - 100 && s.disorder == 0 && s.mismatches == 0 &&
          sc.valid_bytes == (uint64_t)(AS_JOURNAL_HEADER_BYTES + 149 * AS_JOURNAL_ENTRY_BYTES),
      "chunks: %d ok, %llu bad, %llu torn bytes", s.count, (unsigned long long)sc.entries_bad,
      (unsigned long long)sc.torn_bytes);
  unlink(many);

  unlink(path);
  unlink(other);
  rmdir(dir);
  return as_test_finish("test_journal");
}
