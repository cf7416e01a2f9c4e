/* attnsweep/journal.h: the journal of finished records (one file).
 *
 * The journal is the ground truth of a run: `attnsweep repair` rebuilds /trials from it after
 * a hard kill. Each writer (one per rank) appends to its own file OUT.h5.journal.<rank>, so no
 * two processes ever write the same file (the names, the run lock and the rules of the whole
 * set of files are outset.h's). A journal file is
 *   header (64 bytes): magic "ASJRNL\0\1", version, entry size, record size, a CRC of the
 *                      record layout (AS_RECORD_FIELDS), rank, creation time, header CRC
 *   entries (fixed size): magic "ASJE", trial index, the as_record bytes, CRC-32 of all that
 * Entries are buffered and written with one write() and made durable with fdatasync() per
 * batch: when the batch is full, when the oldest buffered entry is older than the maximum
 * delay, or on as_journal_flush/close. A torn tail (a partial last entry after a crash) is
 * skipped by the reader and cut off when the file is reopened for appending; an entry whose
 * CRC does not match is skipped and counted. A later entry for the same trial supersedes an
 * earlier one. The layout CRC makes a journal written by a build with a different record
 * layout fail with AS_ERR_MISMATCH instead of being misread.
 *
 * None of these functions is collective; none uses MPI.
 */
#ifndef ATTNSWEEP_JOURNAL_H
#define ATTNSWEEP_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/record.h"
#include "attnsweep/status.h"

#define AS_JOURNAL_HEADER_BYTES 64
/* Hex digits of the sweep's spec SHA-256 kept in the header (80 bits: enough to tell sweeps
 * apart; the header has no room for all 64). */
#define AS_JOURNAL_SPEC_CHARS 20
/* Bytes of one journal entry. */
#define AS_JOURNAL_ENTRY_BYTES (16 + sizeof(as_record) + 8)

typedef struct as_journal as_journal;

/* Open (creating if needed) the journal file `path` for appending. An existing file must have
 * a valid header with this build's record layout (AS_ERR_MISMATCH otherwise; AS_ERR_DATA when
 * it is not a journal); a torn tail is cut off. batch: entries per write (>= 1); max_delay_s:
 * an append flushes when the oldest buffered entry is older than this (seconds, >= 0; 0 means
 * every append is flushed). Statuses: AS_OK, AS_ERR_IO (message names the path and errno),
 * AS_ERR_NOMEM, AS_ERR_ARG, AS_ERR_DATA, AS_ERR_MISMATCH. *out is set on success only. */
as_status as_journal_open(const char *path, int rank, int batch, double max_delay_s,
                          as_journal **out);

/* The same, recording the sweep's spec SHA-256 (hex, may be NULL: not recorded) in a new
 * header; an existing journal whose header records another one is refused (AS_ERR_MISMATCH
 * naming both), one that records none is accepted. spec_sha256 may list two, "A,B": a new
 * header records A, an existing one may record either. */
as_status as_journal_open_spec(const char *path, int rank, int batch, double max_delay_s,
                               const char *spec_sha256, as_journal **out);
/* 1 when the spec tag of a journal header (its first AS_JOURNAL_SPEC_CHARS hex digits) is one
 * of the SHA-256s of list ("A" or "A,B"). */
int as_journal_tag_in(const char *tag, const char *list);
/* Rewrite the spec tag in the header of the journal at path (the sweep's spec changed:
 * `run --resume --allow-spec-change`, which stores the new spec), leaving every other byte;
 * made durable (fdatasync) before it returns. A journal whose header is damaged or shorter
 * than a header is left as it is (its entries are salvaged without a tag). AS_ERR_IO,
 * AS_ERR_ARG (a symbolic link, a pipe), AS_ERR_MISMATCH (another record layout). */
as_status as_journal_retag(const char *path, const char *spec_sha256);
/* Buffer one record (entry for rec->trial); flushes when the batch is full or the delay has
 * passed. The record's bytes are copied, padding included: initialise records with
 * as_record_init so padding is zero. AS_ERR_IO on a failed write/fdatasync (the journal keeps
 * what was durable before; the failed batch stays buffered and is retried by the next flush). */
as_status as_journal_append(as_journal *j, const as_record *rec);

/* Write and fdatasync the buffered entries. AS_OK or AS_ERR_IO. */
as_status as_journal_flush(as_journal *j);

/* Entries buffered but not yet durable. */
int as_journal_pending(const as_journal *j);

/* Flush and close; *j set to NULL. Accepts NULL and *j == NULL. Returns the flush status
 * (the file is closed either way). */
as_status as_journal_close(as_journal **j);

/* What a scan of a journal found. */
typedef struct as_journal_scan {
  int rank;                             /* rank recorded in the header */
  uint64_t entries_ok;                  /* entries with a valid CRC (passed to the visitor) */
  uint64_t entries_bad;                 /* whole entries skipped for a bad magic or CRC */
  uint64_t torn_bytes;                  /* bytes of a partial last entry (0 for a clean file) */
  uint64_t valid_bytes;                 /* file offset just after the last whole entry */
  char spec[AS_JOURNAL_SPEC_CHARS + 1]; /* the header's spec tag ("" when not recorded) */
  int header_damaged; /* 1: read by as_journal_salvage (the header was not trusted) */
} as_journal_scan;

/* Called for every valid entry in file order; a non-AS_OK return stops the scan and is
 * returned by as_journal_read. */
typedef as_status (*as_journal_visit_fn)(const as_record *rec, void *ctx);

/* Read the journal `path`, validating the header and every entry's CRC. visit may be NULL
 * (just count). scan may be NULL. Statuses: AS_OK, AS_ERR_IO (cannot open/read),
 * AS_ERR_DATA (not a journal, or a damaged header), AS_ERR_MISMATCH (other record layout),
 * or what visit returned. */
as_status as_journal_read(const char *path, as_journal_visit_fn visit, void *ctx,
                          as_journal_scan *scan);

/* The header of `path` only, validated as by as_journal_read, with the same statuses: scan
 * gets its rank and spec tag (and torn_bytes for a journal cut in its header), no entry is
 * read. */
as_status as_journal_read_header(const char *path, as_journal_scan *scan);

/* Read what can be trusted from a journal whose header is damaged (as_journal_read gave
 * AS_ERR_DATA): every entry after the 64-byte header position whose own magic and CRC are
 * valid, at this build's entry size (a foreign file yields only bad entries). scan gets
 * header_damaged = 1, rank -1, no spec tag. AS_ERR_IO, or what visit returned. */
as_status as_journal_salvage(const char *path, as_journal_visit_fn visit, void *ctx,
                             as_journal_scan *scan);

#endif /* ATTNSWEEP_JOURNAL_H */
