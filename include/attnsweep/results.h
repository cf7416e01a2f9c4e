/* attnsweep/results.h: the parallel HDF5 results file (docs/results.md is the schema).
 *
 * Life of a file:
 *   as_results_create   collective: writes every dataset at its final size (rows from the
 *                       plan, bulk datasets from per-trial counts), fill values (outcome and
 *                       verdict "pending"), root attributes, /spec, and flushes, so a reader
 *                       sees the whole structure at once.
 *   as_results_write_records / as_results_write_bulk
 *                       independent: any rank writes any rows/slabs, no metadata changes.
 *                       A record is in the file (visible to `attnsweep status` and any reader)
 *                       when the call returns; durability against a crash is the journal's job.
 *   as_results_close    collective: ends the segment (end time, trials done), end_time.
 *   as_results_open     reopen for resume (read-write, collective) or for reading (read-only;
 *                       with comm = MPI_COMM_NULL no MPI is used at all, sec2 driver).
 * Each create or read-write open appends a row to /segments (one per Slurm segment: job id
 * from SLURM_JOB_ID, restart count from SLURM_RESTART_COUNT); close completes it.
 *
 * HDF5 1.10 APIs only. Errors carry the HDF5 error stack (iocheck.h).
 */
#ifndef ATTNSWEEP_RESULTS_H
#define ATTNSWEEP_RESULTS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "attnsweep/enums.h"
#include "attnsweep/record.h"
#include "attnsweep/status.h"

/* 2: every sweep key recorded (from params.h), case_name (LABEL), content hashes, /labels,
 *    field descriptions as attributes of /trials.
 * 3: reason, t_decide, near_reason, near_t_decide, n_clusters_all.
 * 4: the enum `reason` gains precision_vars_x: a build of version 4 writes that value, which a
 *    file of version 3 cannot hold (it is refused for resume, merge and repair, not misread). */
#define AS_RESULTS_SCHEMA_VERSION 4

/* Kinds of optional bulk data (datasets /bulk/<name>, offsets /bulk/<name>_offset). */
#define AS_BULK_LIST(X)                                                          \
  X(AS_BULK_INITIAL, "initial_tokens", "initial tokens, n x d row-major")        \
  X(AS_BULK_FINAL, "final_tokens", "final tokens (integrated variables), n x d") \
  X(AS_BULK_ATTENTION, "final_attention", "final attention matrix P, n x n")     \
  X(AS_BULK_V, "V", "value matrix V, d x d")                                     \
  X(AS_BULK_M, "M", "M = Q^T K, d x d")                                          \
  X(AS_BULK_SNAPSHOTS, "snapshots", "trajectory snapshots, n_snapshots x n x d") \
  X(AS_BULK_SNAP_CLUSTERS, "snapshot_clusters", "cluster count at each snapshot time, n_snapshots")

#define AS_X_BULK_ENUM(name, label, doc) name,
typedef enum as_bulk_kind { AS_BULK_LIST(AS_X_BULK_ENUM) AS_BULK_COUNT } as_bulk_kind;
#undef AS_X_BULK_ENUM

/* Dataset name of a bulk kind ("?" out of range). */
const char *as_bulk_name(as_bulk_kind kind);

#define AS_RESULTS_MAX_LABELS 8

/* The names of one LABEL field of the record (case_name, file, ...): names[i] is the label
 * of value i. */
typedef struct as_label_set {
  const char *field;        /* record field name */
  int count;                /* names */
  const char *const *names; /* unique, non-empty */
  const char *const *paths; /* input files (file, init_file): names resolved, else NULL */
} as_label_set;

/* What as_results_create needs. Pointers are borrowed for the duration of the call and must
 * hold the same values on every rank. */
typedef struct as_results_info {
  uint64_t n_trials;       /* rows of /trials (>= 1) */
  uint64_t master_seed;    /* the spec's seed */
  const char *spec_sha256; /* 64 hex digits of the spec text's SHA-256 (or "" if unknown) */
  const char *spec_text;   /* the spec text (NULL: empty; the built-in sweep's text) */
  const char *spec_name;   /* the spec file name as given (NULL: "") */
  const char *common_keys; /* the spec's `common:` keys, "T,attention" (NULL: "") */
  int overwrite;           /* 0: fail with AS_ERR_IO if the file exists; 1: replace it */
  /* Per-trial number of doubles of each bulk kind (n_trials entries), NULL = kind not stored.
   * Offsets are their prefix sums: trial i occupies [off[i], off[i] + count[i]). */
  const uint64_t *bulk_counts[AS_BULK_COUNT];
  /* The times of the snapshots (output.snapshots), stored as the attribute `times` of
   * /bulk/snapshots when that dataset is created; NULL / 0: none. */
  const double *snapshot_times;
  int n_snapshot_times;
  /* Names of the LABEL fields (n_labels sets); a field without a set has only "-". */
  as_label_set labels[AS_RESULTS_MAX_LABELS];
  int n_labels;
  /* A sparse file (a shard's, shard.h): only the rows of these trials (strictly increasing,
   * n_rows of them, 0 allowed) are in /trials, bulk and checksums; /trial_index records the
   * trial of each row. NULL: every trial (row i = trial i). bulk_counts stay per trial. */
  const uint64_t *rows;
  uint64_t n_rows;
  /* The root attribute input_sha256 as recorded before (a merge carries its shards'); NULL:
   * computed now by hashing the input files (as_results_input_hashes). */
  const char *input_sha256;
  /* 1: no journal backs this file's rows (a merge's output): a failed write says so instead
   * of pointing at the journals. */
  int no_journal;
} as_results_info;

/* The provenance of the input files of info (the labels of `file` and `init_file`): one line
 * "<sha256>  <path>" each ("unreadable: <reason>" for a file that cannot be read), as the
 * root attribute input_sha256 holds. *out allocated (caller frees). Not collective. */
as_status as_results_input_hashes(const as_results_info *info, char **out);

/* The LABEL fields of the record (case_name, file, ...): their count, names into *fields. */
int as_results_label_fields(const char *const **fields);

typedef enum as_results_mode {
  AS_RESULTS_READ = 0, /* read-only */
  AS_RESULTS_WRITE = 1 /* read-write: resume a sweep, repair */
} as_results_mode;

typedef struct as_results as_results;

/* Create the results file at path on every rank of comm (collective). Gathers host names,
 * writes the root attributes, /spec, /types, /trials (fill: pending), /bulk, /segments, and
 * flushes. Statuses: AS_OK, AS_ERR_ARG, AS_ERR_IO (file exists and !overwrite, unwritable
 * directory: message names the path), AS_ERR_HDF5, AS_ERR_MPI, AS_ERR_NOMEM. *out set on
 * success only; on failure every rank returns the same status. */
as_status as_results_create(MPI_Comm comm, const char *path, const as_results_info *info,
                            as_results **out);

/* Open an existing results file. comm = MPI_COMM_NULL: this process alone, without MPI (may
 * be called before MPI_Init or without MPI at all), read-only or read-write; otherwise
 * collective on comm (MPI-IO). A read-write open appends a segment. HDF5 file locking is off
 * for the open so a file being written by a running sweep can be read. Statuses: AS_OK,
 * AS_ERR_DATA ("PATH: no such file", "PATH is not an attnsweep results file"),
 * AS_ERR_MISMATCH (schema version or record layout this build cannot read), AS_ERR_HDF5,
 * AS_ERR_MPI, AS_ERR_NOMEM. *out set on success only. */
as_status as_results_open(MPI_Comm comm, const char *path, as_results_mode mode, as_results **out);

/* Close; collective on the communicator it was opened with. For a writable file: completes
 * the current segment (end time, trials done, counted collectively) and sets the root
 * attribute end_time. Accepts NULL and *rf == NULL; sets *rf to NULL. Returns the first
 * failure (the file is closed either way). */
as_status as_results_close(as_results **rf);

/* Trials of the sweep: the range of every trial index below (the rows of /trials, unless the
 * file is sparse). Not collective. */
uint64_t as_results_n_trials(const as_results *rf);

/* Rows actually in /trials (as_results_n_trials unless the file is sparse), and whether it is.
 * Every function below takes trial indices: a trial a sparse file does not hold reads as the
 * fill record (pending, no bulk data), counts as pending, and cannot be written. */
uint64_t as_results_n_rows(const as_results *rf);
int as_results_is_sparse(const as_results *rf);

/* The rows held for trials [first, first + count), in increasing trial order: their records
 * into out[0 .. *n) and their trial indices into trials (each at most count entries). One
 * read; what a streaming reader (merge) uses. Independent. */
as_status as_results_read_held(as_results *rf, uint64_t first, size_t count, as_record *out,
                               uint64_t *trials, size_t *n);

/* Write count records into their rows: row = recs[i].trial (any order, no duplicates).
 * Independent (not collective): any rank, any time between create/open and close. The rows
 * are in the file when it returns. Statuses: AS_OK, AS_ERR_ARG (a trial index out of range,
 * a read-only file), AS_ERR_HDF5, AS_ERR_NOMEM. */
as_status as_results_write_records(as_results *rf, const as_record *recs, size_t count);

/* Read rows [first, first + count) into out (count records). Rows not written yet read as
 * the fill record: as_record_init(NULL) (NaN numbers, zeros, outcome and verdict pending).
 * Padding bytes of out are zeroed, so records compare bytewise. Independent. */
as_status as_results_read_records(as_results *rf, uint64_t first, size_t count, as_record *out);

/* Where bulk kind `kind` of trial `trial` lives: *offset (element index into /bulk/<name>)
 * and *count (doubles; 0 if the kind is not stored). Not collective. */
as_status as_results_bulk_extent(const as_results *rf, as_bulk_kind kind, uint64_t trial,
                                 uint64_t *offset, uint64_t *count);

/* Write the bulk data of one trial: exactly the count given at create. Independent. Statuses:
 * AS_OK, AS_ERR_ARG (kind not stored, wrong count, trial out of range), AS_ERR_HDF5. */
as_status as_results_write_bulk(as_results *rf, as_bulk_kind kind, uint64_t trial,
                                const double *data, uint64_t count);

/* Read the bulk data of one trial (count must be its count). Independent. */
as_status as_results_read_bulk(as_results *rf, as_bulk_kind kind, uint64_t trial, double *out,
                               uint64_t count);

/* Progress of a file: counts over all rows. */
typedef struct as_results_counts {
  uint64_t total;                     /* rows */
  uint64_t done;                      /* rows whose outcome is not pending */
  uint64_t outcome[AS_OUT_COUNT];     /* rows per outcome (pending included) */
  uint64_t verdict[AS_VERDICT_COUNT]; /* rows per verdict (pending included) */
} as_results_counts;

/* Count rows by outcome and verdict (reads two columns in blocks). Independent; a row being
 * written concurrently counts as either state. done, if not NULL, receives n_trials flags:
 * done[i] = 1 when row i has a non-pending outcome (what --resume skips). */
as_status as_results_count(as_results *rf, as_results_counts *c, uint8_t *done);

/* as_results_close, and the counts of the rows it made to end the segment: for a writable file
 * closed without a failure, every row of the file (the ranks' counts summed, on every rank);
 * otherwise all zero (counts->total 0: not counted). counts may be NULL. */
as_status as_results_close_counted(as_results **rf, as_results_counts *counts);

/* ---------------------------------------------------------------- checksums
 * Every row of /trials has a CRC-32 in /checksums/trials and every stored bulk slab one in
 * /checksums/<bulk name> (docs/results.md), written by as_results_write_records and
 * as_results_write_bulk together with the data. A file written before they existed has no
 * /checksums group: it reads as "unverified" (nothing is checked, nothing is refused). */

/* Flags of one row after as_results_verify. */
#define AS_VERIFY_ROW                                                                        \
  1                      /* the row's bytes do not match its checksum (or a done row's trial \
                            field is not its row) */
#define AS_VERIFY_BULK 2 /* the row is intact and done, a bulk slab of it does not match */

typedef struct as_results_verify_counts {
  int verified;      /* 1: the file carries checksums; 0: an older file, nothing checked */
  uint64_t rows;     /* rows checked */
  uint64_t rows_bad; /* rows flagged AS_VERIFY_ROW */
  uint64_t slabs;    /* bulk slabs checked (done rows that store bulk data) */
  uint64_t bulk_bad; /* rows flagged AS_VERIFY_BULK */
} as_results_verify_counts;

/* Check rows [first, first + count) against their checksums, and the bulk slabs of those
 * that are intact and done (outcome neither pending, interrupted nor failed: the trials a
 * sweep stores bulk data for) and whose slab checksum is not 0 (the fill: never written). flags
 * (count entries, may be NULL) receives 0, AS_VERIFY_ROW or AS_VERIFY_BULK per row; vc (required)
 * is filled (not added to). Independent; a row being written concurrently by a running sweep may
 * read as damaged for a moment (check it again). Statuses: AS_OK (damage is a result, not an
 * error), AS_ERR_ARG, AS_ERR_HDF5, AS_ERR_NOMEM. */
as_status as_results_verify(as_results *rf, uint64_t first, uint64_t count, uint8_t *flags,
                            as_results_verify_counts *vc);

/* Verify the results file at path by its stored bytes alone (issue 49: the checksum gate of
 * summarize and report, which must not let a file through because this build's reader does
 * not open it): not collective, no MPI, the file opened read-only on its own. Each row of
 * /trials, read in the file's own row type, against /checksums/trials; a done row's `trial`
 * field against its row (its /trial_index entry in a sparse file); the bulk slabs of the done,
 * intact rows against /checksums/<kind> (rules of as_results_verify; a flagged row is read once
 * more before it counts, as a running sweep may be writing it). So a file of another schema
 * version, or one the full reader refuses (no /segments, an attribute of another type), is
 * verified all the same. *n_rows: rows of /trials; *flags: n_rows entries (0, AS_VERIFY_ROW,
 * AS_VERIFY_BULK; allocated, caller frees); *trials: a sparse file's trial of each row
 * (allocated, caller frees), NULL when row r holds trial r; vc->verified = 0 (and nothing
 * flagged) for a file without /checksums. Statuses: AS_OK (damage is a result); AS_ERR_DATA
 * for a missing file, one that is not a regular file (refused before it is opened), not HDF5,
 * without a 1-D compound /trials, or whose checksum or offset datasets do not fit its rows;
 * AS_ERR_HDF5 for a file with the HDF5 signature that HDF5 cannot open (truncated: named with
 * HDF5's cause and repair) or a failed read; AS_ERR_NOMEM, AS_ERR_ARG. */
as_status as_results_verify_file(const char *path, uint64_t *n_rows, uint8_t **flags,
                                 uint64_t **trials, as_results_verify_counts *vc);

/* CRC-32 of a row as /checksums/trials holds it: over the row's fields in record order, each
 * as its little-endian bytes in the file's type (the message: its text up to the first NUL,
 * zero-padded to its size). Pure function. */
uint32_t as_results_row_crc(const as_record *rec);

/* Packed rows, for copying rows between files without converting them (merge): a row in the
 * file's own layout, as_results_row_bytes() bytes, its fields in record order, each as its
 * little-endian bytes (the message as its text, zeros after the NUL): the bytes
 * as_results_row_crc hashes. as_results_row_pack makes one of a record,
 * as_results_row_decode turns one into a record and as_results_row_key reads only its trial
 * index and outcome. Pure. */
size_t as_results_row_bytes(void);
void as_results_row_pack(const as_record *rec, void *row);
void as_results_row_decode(const void *row, as_record *rec);
void as_results_row_key(const void *row, uint64_t *trial, int *outcome);

/* The rows src holds for trials [first, first + count), packed in layout's row type (HDF5
 * converts only where src's type differs), into rows (*n of them), with their trials, their
 * stored checksums in crcs (computed when src has none: *verified 0) and bad[j] = 1 for a row
 * that fails its checksum or holds another trial's record (verified files only for the
 * first). Independent. layout keeps its row type open (one H5Dget_type per open file). */
as_status as_results_read_rows_raw(as_results *src, as_results *layout, uint64_t first,
                                   size_t count, void *rows, uint64_t *trials, uint32_t *crcs,
                                   uint8_t *bad, size_t *n, int *verified);
/* Packed rows (rf's row type) at trials[i], with their checksums crcs[i] as given (the rows'
 * own, verified by the caller: never recomputed). */
as_status as_results_write_rows_raw(as_results *rf, const void *rows, const uint64_t *trials,
                                    const uint32_t *crcs, size_t count);
/* The end of the longest range of trials from first (first < end <= the trial count) whose
 * rows this file holds number at most max_rows (>= 1): a sparse file's next max_rows rows.
 * Pure. */
uint64_t as_results_span(const as_results *rf, uint64_t first, uint64_t max_rows);
/* 1 when the file has a bulk dataset. */
int as_results_stores_bulk(const as_results *rf);

/* One row of /segments. */
typedef struct as_results_segment {
  int32_t segment;      /* 0, 1, ... in order of opening */
  char job_id[64];      /* SLURM_JOB_ID, or "local-<pid>" */
  int32_t restart;      /* SLURM_RESTART_COUNT (0 if unset) */
  int32_t ranks;        /* size of the communicator */
  char start[32];       /* ISO 8601 UTC */
  char end[32];         /* ISO 8601 UTC, "" while the segment runs or if it was killed */
  uint64_t trials_done; /* rows done at the end of the segment (0 while it runs) */
} as_results_segment;

/* Number of segments and up to max of them into out (out may be NULL with max 0).
 * Independent. */
as_status as_results_segments(as_results *rf, as_results_segment *out, size_t max, size_t *n);

/* A root attribute (string) into buf; AS_ERR_DATA when it does not exist. Independent. */
as_status as_results_attr_string(as_results *rf, const char *name, char *buf, size_t len);
/* The same for provenance that is compared and copied, never parsed (merge's build check):
 * also a variable-length string (as h5py writes one) is read. AS_ERR_DATA when the attribute
 * is absent or not a string. */
as_status as_results_attr_text(as_results *rf, const char *name, char *buf, size_t len);
/* Replace the spec the results file at path records: the /spec dataset by text, the root
 * attributes spec_sha256 by sha and spec_name by name (a run resumed with --allow-spec-change
 * stores the spec that ran once it has closed the file, so that a later resume, repair or
 * reproduce reads it). Not collective: one process, while no process has the file open (the
 * holder of its lock). AS_ERR_IO and HDF5 failures naming the file. */
as_status as_results_store_spec(const char *path, const char *text, const char *sha,
                                const char *name);
/* A root attribute (unsigned integer). */
as_status as_results_attr_u64(as_results *rf, const char *name, uint64_t *value);

/* Set a root attribute (string, or unsigned integer) of a writable file, replacing an existing
 * one of that name: provenance such as the shard of a sweep (shard.h) or the inputs of a
 * merge. Collective on the communicator the file was opened with (the same value on every
 * rank). AS_ERR_ARG for a read-only file, AS_ERR_HDF5. */
as_status as_results_set_attr_string(as_results *rf, const char *name, const char *value);
as_status as_results_set_attr_u64(as_results *rf, const char *name, uint64_t value);

/* The spec text stored in /spec (allocated, NUL terminated; caller frees). Independent. */
as_status as_results_spec_text(as_results *rf, char **text);

#endif /* ATTNSWEEP_RESULTS_H */
