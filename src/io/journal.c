/* journal.c: append-only, checksummed journal of finished records (journal.h). */
#include "attnsweep/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32.h"

static const unsigned char header_magic[8] = {'A', 'S', 'J', 'R', 'N', 'L', 0, 1};
static const uint32_t entry_magic = 0x454A5341u; /* "ASJE" little-endian */
enum { JOURNAL_VERSION = 1 };

/* CRC of the record layout: kinds and names of AS_RECORD_FIELDS, message length, size. */
static uint32_t layout_crc(void) {
  static const char layout[] =
#define AS_X_LAYOUT(kind, name, doc) #kind " " #name ";"
      AS_RECORD_FIELDS(AS_X_LAYOUT)
#undef AS_X_LAYOUT
      ;
  uint32_t c = as_crc32(layout, sizeof layout - 1);
  uint32_t extra[2] = {(uint32_t)AS_RECORD_MSG, (uint32_t)sizeof(as_record)};
  return as_crc32_update(c, extra, sizeof extra);
}

typedef struct journal_header {
  unsigned char magic[8];
  uint32_t version;
  uint32_t entry_bytes;
  uint32_t record_bytes;
  uint32_t layout;
  int32_t rank;
  uint32_t reserved;
  int64_t created;                  /* seconds since the epoch */
  char spec[AS_JOURNAL_SPEC_CHARS]; /* first hex digits of the sweep's spec SHA-256; zeros:
                                       not recorded (a journal of an older build) */
  unsigned char pad[AS_JOURNAL_HEADER_BYTES - 44 - AS_JOURNAL_SPEC_CHARS];
  uint32_t crc; /* of the 60 bytes before it */
} journal_header;
_Static_assert(sizeof(journal_header) == AS_JOURNAL_HEADER_BYTES, "journal header is 64 bytes");

struct as_journal {
  int fd;
  char *path;
  int rank;
  int batch;          /* capacity of buf in entries */
  double max_delay;   /* seconds */
  unsigned char *buf; /* batch entries */
  int n_buf;          /* entries in buf */
  double oldest;      /* monotonic time of the first buffered entry */
};

static double now_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static as_status check_header(const journal_header *h, const char *path) {
  as_status st = AS_OK;
  AS_CHECK(memcmp(h->magic, header_magic, sizeof header_magic) == 0, AS_ERR_DATA,
           "%s is not an attnsweep journal (bad magic)", path);
  AS_CHECK(as_crc32(h, offsetof(journal_header, crc)) == h->crc, AS_ERR_DATA,
           "%s: journal header is damaged (checksum mismatch)", path);
  AS_CHECK(h->version == JOURNAL_VERSION, AS_ERR_MISMATCH,
           "%s: journal version %u, this attnsweep reads version %d", path, (unsigned)h->version,
           JOURNAL_VERSION);
  AS_CHECK(h->entry_bytes == AS_JOURNAL_ENTRY_BYTES && h->record_bytes == sizeof(as_record) &&
               h->layout == layout_crc(),
           AS_ERR_MISMATCH,
           "%s: journal written by an attnsweep with another record layout (record %u bytes, "
           "layout %08x; this build: %zu bytes, layout %08x)",
           path, (unsigned)h->record_bytes, (unsigned)h->layout, sizeof(as_record),
           (unsigned)layout_crc());
cleanup:
  return st;
}

/* Writes all len bytes at the end of the file (retrying short writes and EINTR). */
static int write_all(int fd, const unsigned char *p, size_t len) {
  while (len > 0) {
    ssize_t k = write(fd, p, len);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* Reads up to len bytes at offset; returns the count read (short only at end of file), -1. */
static ssize_t read_at(int fd, unsigned char *p, size_t len, off_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t k = pread(fd, p + got, len - got, off + (off_t)got);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) break;
    got += (size_t)k;
  }
  return (ssize_t)got;
}

/* Entries read per pread by scan_fd: one system call per entry was most of the close-time check
 * of a run's journals (`perf`: 7% of a 4,000-trial paper-setting run). */
#define AS_JOURNAL_SCAN_CHUNK 64

/* Scans an open journal file descriptor (header already validated by the caller): whole
 * entries, AS_JOURNAL_SCAN_CHUNK at a time; bytes after the last whole entry are a torn tail. */
static as_status scan_fd(int fd, const char *path, as_journal_visit_fn visit, void *ctx,
                         as_journal_scan *scan) {
  as_status st = AS_OK;
  const size_t E = AS_JOURNAL_ENTRY_BYTES;
  unsigned char *buf = malloc(AS_JOURNAL_SCAN_CHUNK * E);
  as_record *rec = malloc(sizeof *rec);
  AS_CHECK_ALLOC(buf);
  AS_CHECK_ALLOC(rec);
  off_t off = AS_JOURNAL_HEADER_BYTES;
  scan->valid_bytes = (uint64_t)off;
  for (;;) {
    ssize_t k = read_at(fd, buf, AS_JOURNAL_SCAN_CHUNK * E, off);
    AS_CHECK(k >= 0, AS_ERR_IO, "%s: read failed: %s", path, strerror(errno));
    const size_t whole = (size_t)k / E;
    for (size_t i = 0; i < whole; i++) {
      const unsigned char *e = buf + i * E;
      uint32_t magic, crc;
      memcpy(&magic, e, 4);
      memcpy(&crc, e + 16 + sizeof(as_record), 4);
      if (magic != entry_magic || crc != as_crc32(e, 16 + sizeof(as_record))) {
        scan->entries_bad++;
      } else {
        scan->entries_ok++;
        if (visit) {
          memcpy(rec, e + 16, sizeof *rec);
          AS_TRY(visit(rec, ctx));
        }
      }
      off += (off_t)E;
      scan->valid_bytes = (uint64_t)off;
    }
    if ((size_t)k < AS_JOURNAL_SCAN_CHUNK * E) { /* the end of the file */
      if ((size_t)k % E) scan->torn_bytes = (uint64_t)((size_t)k % E);
      break;
    }
  }
cleanup:
  free(buf);
  free(rec);
  return st;
}

static as_status read_header(int fd, const char *path, journal_header *h) {
  as_status st = AS_OK;
  ssize_t k = read_at(fd, (unsigned char *)h, sizeof *h, 0);
  AS_CHECK(k >= 0, AS_ERR_IO, "%s: read failed: %s", path, strerror(errno));
  AS_CHECK((size_t)k == sizeof *h, AS_ERR_DATA,
           "%s is not an attnsweep journal (%zd bytes, shorter than a header)", path, k);
  AS_TRY(check_header(h, path));
cleanup:
  return st;
}

/* A file shorter than a header whose bytes begin the header magic: a journal cut while its
 * header was being written (the header is written and synced before any entry), so nothing
 * durable is in it. Anything else short is not a journal. */
static int torn_header(int fd, off_t size) {
  unsigned char b[sizeof header_magic];
  size_t k = (size_t)size < sizeof b ? (size_t)size : sizeof b;
  if (size < 0 || (size_t)size >= sizeof(journal_header)) return 0;
  if (k == 0) return 1;
  return read_at(fd, b, k, 0) == (ssize_t)k && memcmp(b, header_magic, k) == 0;
}

/* Open a journal (flags: O_RDONLY, or O_RDWR | O_CREAT) without following a symbolic link
 * planted at its name (issue 36: a journal is written, so a link would send its bytes into
 * another file), and only a regular file or a device. *fd >= 0 on success. AS_ERR_ARG for a
 * link, a pipe, a socket; AS_ERR_IO otherwise. */
static as_status open_journal_fd(const char *path, int flags, int *fd) {
  as_status st = AS_OK;
  *fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  AS_CHECK(*fd >= 0 || errno != ELOOP, AS_ERR_ARG,
           "journal %s is a symbolic link: refusing to follow it (move it away)", path);
  AS_CHECK(*fd >= 0, AS_ERR_IO, "cannot open journal %s: %s", path, strerror(errno));
  struct stat sb;
  AS_CHECK(fstat(*fd, &sb) == 0, AS_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
  /* A pipe would block the writer; a device is the administrator's choice (/dev/full is how
   * the tests fill a disk). */
  AS_CHECK(S_ISREG(sb.st_mode) || S_ISCHR(sb.st_mode), AS_ERR_ARG,
           "journal %s is not a regular file: refusing to use it (move it away)", path);
  /* Back to blocking I/O (O_NONBLOCK only kept a planted FIFO from blocking the open). */
  int fl = fcntl(*fd, F_GETFL);
  AS_CHECK(fl >= 0 && fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) == 0, AS_ERR_IO, "%s: fcntl: %s", path,
           strerror(errno));
cleanup:
  if (st != AS_OK && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
  return st;
}

as_status as_journal_open(const char *path, int rank, int batch, double max_delay_s,
                          as_journal **out) {
  return as_journal_open_spec(path, rank, batch, max_delay_s, NULL, out);
}

int as_journal_tag_in(const char *tag, const char *list) {
  for (const char *p = list; p && *p;) {
    if (strncmp(tag, p, AS_JOURNAL_SPEC_CHARS) == 0) return 1;
    p = strchr(p, ',');
    if (p) p++;
  }
  return 0;
}

/* The spec tag of a header as a string (empty when not recorded). */
static void header_spec(const journal_header *h, char out[AS_JOURNAL_SPEC_CHARS + 1]) {
  memcpy(out, h->spec, AS_JOURNAL_SPEC_CHARS);
  out[AS_JOURNAL_SPEC_CHARS] = '\0';
}

as_status as_journal_open_spec(const char *path, int rank, int batch, double max_delay_s,
                               const char *spec_sha256, as_journal **out) {
  as_status st = AS_OK;
  as_journal *j = NULL;
  AS_CHECK(path && out && batch >= 1 && max_delay_s >= 0 && rank >= 0, AS_ERR_ARG,
           "as_journal_open: bad arguments (batch %d, max delay %g s, rank %d)", batch, max_delay_s,
           rank);
  j = calloc(1, sizeof *j);
  AS_CHECK_ALLOC(j);
  j->fd = -1;
  j->rank = rank;
  j->batch = batch;
  j->max_delay = max_delay_s;
  j->path = malloc(strlen(path) + 1);
  AS_CHECK_ALLOC(j->path);
  strcpy(j->path, path);
  j->buf = malloc((size_t)batch * AS_JOURNAL_ENTRY_BYTES);
  AS_CHECK_ALLOC(j->buf);

  AS_TRY(open_journal_fd(path, O_RDWR | O_CREAT, &j->fd));
  struct stat sb;
  AS_CHECK(fstat(j->fd, &sb) == 0, AS_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
  /* Cut while its header was being written: nothing durable is in it, start afresh. */
  if (sb.st_size > 0 && torn_header(j->fd, sb.st_size)) {
    AS_CHECK(ftruncate(j->fd, 0) == 0, AS_ERR_IO, "%s: cannot reset the torn header: %s", path,
             strerror(errno));
    sb.st_size = 0;
  }
  if (sb.st_size == 0) {
    journal_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, header_magic, sizeof header_magic);
    h.version = JOURNAL_VERSION;
    h.entry_bytes = (uint32_t)AS_JOURNAL_ENTRY_BYTES;
    h.record_bytes = (uint32_t)sizeof(as_record);
    h.layout = layout_crc();
    h.rank = rank;
    h.created = (int64_t)time(NULL);
    if (spec_sha256) {
      size_t k = strlen(spec_sha256);
      memcpy(h.spec, spec_sha256, k < AS_JOURNAL_SPEC_CHARS ? k : AS_JOURNAL_SPEC_CHARS);
    }
    h.crc = as_crc32(&h, offsetof(journal_header, crc));
    AS_CHECK(write_all(j->fd, (const unsigned char *)&h, sizeof h) == 0 && fdatasync(j->fd) == 0,
             AS_ERR_IO, "cannot write journal %s: %s", path, strerror(errno));
  } else {
    journal_header h;
    AS_TRY(read_header(j->fd, path, &h));
    char tag[AS_JOURNAL_SPEC_CHARS + 1];
    header_spec(&h, tag);
    AS_CHECK(!spec_sha256 || !tag[0] || as_journal_tag_in(tag, spec_sha256), AS_ERR_MISMATCH,
             "%s belongs to another sweep (spec SHA-256 %s..., this sweep %.*s...): move it away",
             path, tag, AS_JOURNAL_SPEC_CHARS, spec_sha256);
    as_journal_scan scan;
    memset(&scan, 0, sizeof scan);
    AS_TRY(scan_fd(j->fd, path, NULL, NULL, &scan));
    /* A crash mid-write leaves a partial entry: cut it so new entries stay aligned. */
    if (scan.torn_bytes)
      AS_CHECK(ftruncate(j->fd, (off_t)scan.valid_bytes) == 0, AS_ERR_IO,
               "%s: cannot cut the torn tail: %s", path, strerror(errno));
  }
  AS_CHECK(lseek(j->fd, 0, SEEK_END) >= 0, AS_ERR_IO, "%s: seek failed: %s", path, strerror(errno));
  *out = j;
  j = NULL;
cleanup:
  if (j) as_journal_close(&j);
  return st;
}

as_status as_journal_retag(const char *path, const char *spec_sha256) {
  as_status st = AS_OK;
  int fd = -1;
  AS_CHECK(path && spec_sha256, AS_ERR_ARG, "as_journal_retag: NULL argument");
  AS_TRY(open_journal_fd(path, O_RDWR, &fd));
  journal_header h;
  const as_status hst = read_header(fd, path, &h);
  if (hst == AS_ERR_DATA) { /* damaged or torn: salvaged without a tag, nothing to rewrite */
    as_error_clear();
    goto cleanup;
  }
  AS_TRY(hst);
  memset(h.spec, 0, sizeof h.spec);
  const size_t k = strlen(spec_sha256);
  memcpy(h.spec, spec_sha256, k < AS_JOURNAL_SPEC_CHARS ? k : AS_JOURNAL_SPEC_CHARS);
  h.crc = as_crc32(&h, offsetof(journal_header, crc));
  AS_CHECK(pwrite(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && fdatasync(fd) == 0, AS_ERR_IO,
           "cannot rewrite the header of journal %s: %s", path, strerror(errno));
cleanup:
  if (fd >= 0) close(fd);
  return st;
}

as_status as_journal_flush(as_journal *j) {
  as_status st = AS_OK;
  if (!j || j->n_buf == 0) return AS_OK;
  off_t start = lseek(j->fd, 0, SEEK_END);
  AS_CHECK(start >= 0, AS_ERR_IO, "journal %s: seek failed: %s", j->path, strerror(errno));
  if (write_all(j->fd, j->buf, (size_t)j->n_buf * AS_JOURNAL_ENTRY_BYTES) != 0) {
    int err = errno;
    /* Keep the file aligned on whole entries so the retry appends cleanly. */
    if (ftruncate(j->fd, start) != 0) { /* the reader skips the torn tail anyway */
    }
    AS_CHECK(0, AS_ERR_IO, "cannot write journal %s: %s", j->path, strerror(err));
  }
  AS_CHECK(fdatasync(j->fd) == 0, AS_ERR_IO, "cannot sync journal %s: %s", j->path,
           strerror(errno));
  j->n_buf = 0;
cleanup:
  return st;
}

as_status as_journal_append(as_journal *j, const as_record *rec) {
  as_status st = AS_OK;
  AS_CHECK(j && rec, AS_ERR_ARG, "as_journal_append: NULL argument");
  if (j->n_buf == j->batch) AS_TRY(as_journal_flush(j)); /* a previous flush failed */
  unsigned char *e = j->buf + (size_t)j->n_buf * AS_JOURNAL_ENTRY_BYTES;
  memset(e, 0, AS_JOURNAL_ENTRY_BYTES);
  memcpy(e, &entry_magic, 4);
  memcpy(e + 8, &rec->trial, 8);
  memcpy(e + 16, rec, sizeof *rec);
  uint32_t crc = as_crc32(e, 16 + sizeof *rec);
  memcpy(e + 16 + sizeof *rec, &crc, 4);
  if (j->n_buf == 0) j->oldest = now_monotonic();
  j->n_buf++;
  if (j->n_buf >= j->batch || now_monotonic() - j->oldest >= j->max_delay)
    AS_TRY(as_journal_flush(j));
cleanup:
  return st;
}

int as_journal_pending(const as_journal *j) {
  return j ? j->n_buf : 0;
}

as_status as_journal_close(as_journal **jp) {
  if (!jp || !*jp) return AS_OK;
  as_journal *j = *jp;
  as_status st = j->fd >= 0 ? as_journal_flush(j) : AS_OK;
  if (j->fd >= 0) close(j->fd);
  free(j->buf);
  free(j->path);
  free(j);
  *jp = NULL;
  return st;
}

/* The header, then the entries when entries is set. */
static as_status journal_read(const char *path, int entries, as_journal_visit_fn visit, void *ctx,
                              as_journal_scan *scan) {
  as_status st = AS_OK;
  as_journal_scan local;
  memset(&local, 0, sizeof local);
  int fd = -1;
  AS_CHECK(path, AS_ERR_ARG, "as_journal_read: NULL path");
  AS_TRY(open_journal_fd(path, O_RDONLY, &fd));
  /* Cut while its header was being written: an empty journal (see torn_header). */
  struct stat sb;
  AS_CHECK(fstat(fd, &sb) == 0, AS_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
  if (torn_header(fd, sb.st_size)) {
    local.torn_bytes = (uint64_t)sb.st_size;
    goto cleanup;
  }
  journal_header h;
  AS_TRY(read_header(fd, path, &h));
  local.rank = h.rank;
  header_spec(&h, local.spec);
  if (entries) AS_TRY(scan_fd(fd, path, visit, ctx, &local));
cleanup:
  if (fd >= 0) close(fd);
  if (scan) *scan = local;
  return st;
}

as_status as_journal_read(const char *path, as_journal_visit_fn visit, void *ctx,
                          as_journal_scan *scan) {
  return journal_read(path, 1, visit, ctx, scan);
}

as_status as_journal_read_header(const char *path, as_journal_scan *scan) {
  return journal_read(path, 0, NULL, NULL, scan);
}

as_status as_journal_salvage(const char *path, as_journal_visit_fn visit, void *ctx,
                             as_journal_scan *scan) {
  as_status st = AS_OK;
  as_journal_scan local;
  memset(&local, 0, sizeof local);
  local.rank = -1;
  local.header_damaged = 1;
  int fd = -1;
  AS_CHECK(path, AS_ERR_ARG, "as_journal_salvage: NULL path");
  AS_TRY(open_journal_fd(path, O_RDONLY, &fd));
  /* Entries of this build's size after a header of 64 bytes; each is trusted only by its own
   * magic and CRC (which cover the trial index and the record's bytes). */
  AS_TRY(scan_fd(fd, path, visit, ctx, &local));
cleanup:
  if (fd >= 0) close(fd);
  if (scan) *scan = local;
  return st;
}
