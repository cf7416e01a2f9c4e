/* attnsweep/repair.h: rebuilding a results file from its journals after a hard kill.
 *
 * Ground truth (docs/robustness.md):
 *   OUT.h5.journal.<rank>   every finished record, durable (journal.h); a row of /trials is
 *                           written only after its journal entry is on disk.
 *   OUT.h5.spec             the spec text, written (atomically: temporary file, fsync, rename)
 *                           by the run that creates OUT.h5, before OUT.h5 itself. The same
 *                           text as the /spec dataset, kept outside the HDF5 file so that a
 *                           file damaged beyond reading can still be rebuilt.
 * Every name and rule of these files is the set's (outset.h); repair uses them like `run`.
 *
 * as_repair_run handles both states a SIGKILL can leave:
 *   readable file   every journaled record is put into its row when the row is pending,
 *                   fails its checksum (results.h) or holds something else (timing fields
 *                   aside); a done row that fails its checksum or is not internally
 *                   consistent and has no journal entry is reset to pending, and so is a row
 *                   whose bulk data fail their checksums; everything else is kept. Bulk data were
 * written before the journal entry, so they are valid for every journaled trial. unreadable or
 * (truncated, no HDF5 signature, HDF5 cannot open it or read /trials, or missing file    missing
 * while its journals or spec side file exist) a fresh file is built from the spec (OUT.h5.spec, or
 * the one given) and the journaled records are written into it, except those of trials that store
 * bulk data: their data went down with the old file, so they stay pending and `run --resume`
 * computes them again. The damaged file is kept as OUT.h5.damaged and the old journals as
 * OUT.h5.damaged.journal.<rank>; a new OUT.h5.journal.0 holds exactly the records put into the new
 * file. Afterwards `attnsweep run SPEC -o OUT.h5 --resume` completes the sweep.
 *
 * Nothing here is collective: repair runs in one process (MPI must be initialised; the new
 * file is created on MPI_COMM_SELF). It claims the set (outset.h: the run lock) while it works, so
 * it refuses a file that a running sweep is writing (AS_ERR_BUSY).
 */
#ifndef ATTNSWEEP_REPAIR_H
#define ATTNSWEEP_REPAIR_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/record.h"
#include "attnsweep/status.h"

/* ---------------------------------------------------------------- repair */

typedef struct as_repair_report {
  int rebuilt;                 /* 1: the file was missing or unreadable and was rebuilt */
  char reason[AS_ERRMSG_MAX];  /* rebuilt: why the old file could not be used */
  uint64_t n_trials;           /* rows of the repaired file */
  uint64_t journals;           /* journal files read */
  uint64_t journal_entries;    /* valid journal entries (all files; duplicates included) */
  uint64_t journal_bad;        /* damaged entries skipped (bad CRC or magic) */
  uint64_t journal_torn_bytes; /* bytes of torn tails skipped */
  uint64_t journal_outside;    /* entries for trials outside the plan (ignored) */
  uint64_t journaled;          /* distinct trials with a usable journal entry */
  uint64_t restored;           /* pending (or new) rows filled from the journal */
  uint64_t corrected;          /* done rows that differed from their journal entry, replaced */
  uint64_t cleared;            /* inconsistent done rows without journal entry, reset to pending */
  uint64_t unjournaled;        /* done, consistent rows without journal entry, kept */
  uint64_t bulk_lost;          /* rebuilt: journaled trials left pending (bulk data lost) */
  uint64_t done;               /* rows done after the repair */
  uint64_t journal_damaged_headers; /* journals read entry by entry (damaged header) */
  uint64_t damaged;          /* rows failing their checksum: restored from a valid journal entry,
                                else reset to pending (never kept) */
  uint64_t damaged_restored; /* ... of which restored from their journal entry */
  uint64_t damaged_bulk;     /* rows whose bulk data fail their checksum: reset to pending (a
                                journal holds no bulk data; resume runs them again) */
  int unverified;            /* 1: the file has no checksums (an older file): nothing verified */
} as_repair_report;

/* Repair the results file `path` (see the top of this header). spec_path: a spec file to
 * rebuild from instead of "<path>.spec" (NULL: the side file); used only when rebuilding.
 * dry_run: 1 = only report what would be done (nothing is written, no file is moved).
 * rep (required) is filled, also on failure as far as the repair got. Statuses: AS_OK;
 * AS_ERR_BUSY (a run holds the lock); AS_ERR_DATA (nothing to repair from: no file, no journal
 * and no spec; or the file is unreadable and no spec is available: the message says to pass
 * --spec); AS_ERR_SPEC (the spec does not parse); AS_ERR_MISMATCH (a journal of another record
 * layout or of another sweep (its header's spec SHA-256), or a file of another schema version);
 * AS_ERR_ARG (path is not an attnsweep results file and no journal, spec copy or lock of it
 * exists: it is left untouched); AS_ERR_IO, AS_ERR_HDF5, AS_ERR_NOMEM.
 * Not collective (MPI_COMM_SELF). */
as_status as_repair_run(const char *path, const char *spec_path, int dry_run,
                        as_repair_report *rep);

/* 1 when a done row is internally consistent: row index = trial field, outcome and verdict
 * inside their enumerations and not pending, message NUL terminated. */
int as_repair_row_consistent(const as_record *r, uint64_t row);

#endif /* ATTNSWEEP_REPAIR_H */
