/* attnsweep/outset.h: the set of files of one results file (outset.c).
 *
 * A results file OUT.h5 never travels alone. Its side files are named from its path by one
 * table, AS_SIDE_LIST (the only place these names are made):
 *
 *   OUT.h5.lock                       run lock: a POSIX fcntl write lock held by the one
 *                                     process that writes the set (rank 0 of a run, or repair);
 *                                     the file holds "pid P host H" of the holder
 *   OUT.h5.spec                       the spec text, written durably before OUT.h5 exists
 *   OUT.h5.journal.<rank>             the journal of each writing rank (journal.h): the ground
 *                                     truth of the records
 *   OUT.h5.damaged[.k]                an unreadable results file that repair set aside
 *   OUT.h5.damaged.journal.<rank>[.k] its journals
 *   OUT.h5.rebuild, .rebuild-journal  repair: the new file and its journal while they are built
 *
 * The rules every command follows (`run`, `run --resume`, `repair`; docs/robustness.md):
 *   claim     one writer per set: the lock is taken first and held to the end
 *             (as_outset_claim); a new or replacing run also removes every journal of an
 *             earlier sweep of that name, so no record of a replaced file can come back;
 *   spec      the spec copy is written (atomically) before OUT.h5 is created, and given to a
 *             file that lacks it on resume (as_outset_spec_*);
 *   layout    the file's rows and bulk extents are a pure function of the spec
 *             (as_outset_layout, as_outset_bulk_counts);
 *   records   a finished record is journaled and made durable before its row is written, and
 *             a record that is not a result (pending, interrupted) is neither (as_outset_store);
 *   resume    journaled records whose rows are pending go back into the file first
 *             (as_outset_recover);
 *   rebuild   the damaged file and its journals are set aside under fresh names, then the
 *             rebuilt ones take their names (as_outset_set_aside, as_outset_swap_in).
 *
 * Nothing here is collective or uses MPI itself (as_results_* calls on a file opened on a
 * communicator are independent). Paths are borrowed for the call only.
 */
#ifndef ATTNSWEEP_OUTSET_H
#define ATTNSWEEP_OUTSET_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/journal.h"
#include "attnsweep/record.h"
#include "attnsweep/results.h"
#include "attnsweep/spec.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* Longest side-file path the module builds (bytes, NUL included). */
#define AS_OUTSET_PATH_MAX 4400

/* X(name, suffix appended to the results path, per rank: 1 = "<suffix><rank>", doc) */
#define AS_SIDE_LIST(X)                                                                          \
  X(AS_SIDE_LOCK, ".lock", 0, "run lock (fcntl), text 'pid P host H'")                           \
  X(AS_SIDE_SPEC, ".spec", 0, "the spec text, the same as /spec")                                \
  X(AS_SIDE_JOURNAL, ".journal.", 1, "journal of one writing rank")                              \
  X(AS_SIDE_DAMAGED, ".damaged", 0, "an unreadable results file set aside by repair")            \
  X(AS_SIDE_DAMAGED_JOURNAL, ".damaged.journal.", 1, "a journal of the set-aside file")          \
  X(AS_SIDE_REBUILD, ".rebuild", 0, "repair: the new results file while it is built")            \
  X(AS_SIDE_REBUILD_JOURNAL, ".rebuild-journal", 0, "repair: the new journal while it is built") \
  X(AS_SIDE_MERGING, ".merging", 0, "merge: the new results file while it is built")

#define AS_X_SIDE_ENUM(name, suffix, per_rank, doc) name,
typedef enum as_side { AS_SIDE_LIST(AS_X_SIDE_ENUM) AS_SIDE_COUNT } as_side;
#undef AS_X_SIDE_ENUM

/* The name of side file `side` of results into buf (len bytes): "<results><suffix>", and
 * "<results><suffix><rank>" for the per-rank kinds (rank >= 0; ignored otherwise).
 * AS_ERR_ARG for a NULL path, a bad side or rank, or a name that does not fit. */
as_status as_outset_name(const char *results, as_side side, int rank, char *buf, size_t len);

/* fsync of the directory holding path, so that a rename in it is durable (best effort: some
 * file systems refuse). Not collective. */
void as_outset_sync_dir(const char *path);

/* Every existing file of a per-rank kind (AS_SIDE_JOURNAL or AS_SIDE_DAMAGED_JOURNAL) of
 * results, as full paths ("<dir>/<name>"), in directory order. *paths: allocated array of
 * allocated strings (free with as_outset_list_free), *n their number (0: *paths may be NULL).
 * AS_ERR_IO when the directory cannot be listed, AS_ERR_NOMEM, AS_ERR_ARG. */
as_status as_outset_list(const char *results, as_side side, char ***paths, size_t *n);
/* Free a list of as_outset_list; accepts NULL; sets *paths to NULL. */
void as_outset_list_free(char ***paths, size_t n);

/* ---------------------------------------------------------------- claim and lock */

typedef enum as_outset_mode {
  AS_OUTSET_NEW = 0,     /* a new sweep: OUT.h5 must not exist */
  AS_OUTSET_REPLACE = 1, /* a new sweep replacing OUT.h5 (--force) if it exists */
  AS_OUTSET_RESUME = 2,  /* continue OUT.h5: it must exist */
  AS_OUTSET_REPAIR = 3   /* repair: any state (the file may be missing or unreadable) */
} as_outset_mode;

typedef struct as_outset as_outset;

/* Claim the set of results for writing (one process: rank 0 of a run, or repair):
 *   NEW     AS_ERR_ARG "OUT.h5 already exists: pass --resume ... or --force ..." if it exists;
 *   RESUME  AS_ERR_ARG "OUT.h5 does not exist: nothing to resume" if it does not;
 * then takes the run lock (AS_ERR_BUSY "OUT.h5 is in use by another run (pid P on host H)";
 * AS_ERR_IO when the lock file cannot be created, e.g. an unwritable directory); NEW and
 * REPLACE then delete every journal and set-aside journal of results (AS_ERR_IO naming the one
 * that cannot be removed). *out set on success only; the lock is held until
 * as_outset_release (or the process ends: the kernel drops it). */
as_status as_outset_claim(const char *results, as_outset_mode mode, as_outset **out);
/* Hold results itself (device and inode, whatever its name): an open-file-description lock on
 * one byte far beyond its data. as_outset_claim does it for a file that exists; a run that
 * creates the file calls it right after. A second claim through a hard link or another path
 * meets it: AS_ERR_BUSY. No-op when results is not a regular file or is already held. */
as_status as_outset_hold(as_outset *os, const char *results);
/* Release the lock (the lock file stays); accepts NULL and *os == NULL; sets *os to NULL. */
void as_outset_release(as_outset **os);

/* Whether another process holds the lock of results: *held = 1 with its pid and host (from
 * the lock file; host may be "?"), or *held = 0 (also without a lock file). pid, host may be
 * NULL. AS_ERR_IO only when an existing lock file cannot be opened. A lock held by the calling
 * process itself is not reported (POSIX locks). */
as_status as_outset_probe(const char *results, int *held, long *pid, char *host, size_t hostlen);

/* The name under which results is used: a last component that is a symbolic link is replaced
 * by its target (chains followed; relative targets joined to the link's directory), so a
 * symlink and its target are one set of side files and one lock. Other names are kept as
 * given. AS_ERR_ARG for an empty or too long name. */
as_status as_outset_resolve(const char *given, char *buf, size_t len);

/* No command writes to one of its inputs: AS_ERR_ARG ("refusing to write OUTPUT over what
 * INPUT, which this command reads (the same file) ...") when output and input both exist and
 * are one file (device and inode: a hard link or a symbolic link is the same file). A missing
 * output or input, or NULL, is not the same file: AS_OK. what (may be NULL) says what the input
 * is ("the spec", "the checkpoint"). For every command with -o, before it creates anything. */
as_status as_outset_guard_output(const char *output, const char *input, const char *what);

/* Before a run claims results: refuse (AS_ERR_ARG, naming both) when the file, its lock file
 * or (without resume) its spec copy is the same file (device and inode) as spec_path (may be
 * NULL) or an input file of spec (matrix and token files). Rank 0, before the claim. */
as_status as_outset_guard_inputs(const char *results, const as_spec *spec, const char *spec_path,
                                 int resume);

/* ---------------------------------------------------------------- inputs of a resume */

/* Resume, rank 0: every input file recorded in the provenance of rf (input_sha256, "<sha256>
 * <resolved path>" per line, one line per input label of the spec) must have the same content
 * now, or the records of two segments would come from different inputs. A line is matched to
 * the spec's input by its label (the same place in the list, its resolved path ending in the
 * label), wherever the spec lives and whatever directory it resolves against, else by the
 * same resolved path; an input the spec no longer has is not compared, nor one that was
 * unreadable when the sweep started. AS_ERR_MISMATCH naming the file (and both paths when the
 * spec resolves the label elsewhere), unless allow. A file without provenance: AS_OK. */
as_status as_outset_inputs_check(as_results *rf, const as_spec *spec, const char *path, int allow);

/* The directory the first run resolved the relative input labels of spec against, from the
 * provenance of the results file (read-only, no MPI), into dir (len bytes): "" when no
 * relative input label was recorded. A spec-less resume parses the stored spec as if it
 * lived there, so its inputs are the first run's. Statuses of as_results_open. */
as_status as_outset_inputs_base(const char *results, const as_spec *spec, char *dir, size_t len);

/* ---------------------------------------------------------------- the spec copy */

/* Write text (len bytes) to OUT.h5.spec durably and atomically (a temporary file in the same
 * directory, fdatasync, rename, fsync of the directory); replaces an existing copy.
 * AS_ERR_IO naming the path and errno. */
as_status as_outset_spec_save(const char *results, const char *text, size_t len);
/* Read OUT.h5.spec: *text allocated, NUL terminated (caller frees), *len its length (len may
 * be NULL). AS_ERR_DATA "... no such file" when it does not exist; AS_ERR_ARG when it is not a
 * regular file (a FIFO, device or directory: refused by type, never opened); AS_ERR_IO,
 * AS_ERR_NOMEM. */
as_status as_outset_spec_load(const char *results, char **text, size_t *len);
/* Give results a spec copy from its /spec dataset when it has none (a file written before the
 * copy existed). rf: results open (any mode). AS_OK when the copy exists or was written. */
as_status as_outset_spec_ensure(const char *results, as_results *rf);

/* ---------------------------------------------------------------- layout from the plan */

/* Doubles of each bulk kind that trial t stores (0: not stored). Pure function of t. */
void as_outset_bulk_counts(const as_trial *t, uint64_t counts[AS_BULK_COUNT]);

/* Fill info for as_results_create from spec: n_trials, seed, SHA-256, text, name and the bulk
 * counts per trial. bulk[k] receive arrays owned by the caller (NULL for kinds not stored):
 * free them with as_outset_layout_free. overwrite is 0. AS_ERR_NOMEM. Identical on every rank
 * that parsed the same spec. */
as_status as_outset_layout(const as_spec *spec, as_results_info *info,
                           uint64_t *bulk[AS_BULK_COUNT]);
/* Free the arrays of as_outset_layout and set them to NULL. */
void as_outset_layout_free(uint64_t *bulk[AS_BULK_COUNT]);

/* ---------------------------------------------------------------- records and journals */

/* Open (creating or appending) this rank's journal OUT.h5.journal.<rank>; batch and
 * max_delay_s as as_journal_open, whose statuses it returns. */
as_status as_outset_journal_open(const char *results, int rank, int batch, double max_delay_s,
                                 as_journal **out);

/* The same, with the journal's header recording spec_sha256 (hex, may be NULL), and a damaged
 * header (AS_ERR_DATA from as_journal_open) not a dead end: that journal is renamed
 * "<journal>.damaged-header[.k]" (still read, entry by entry, by as_outset_journals_read) and a
 * new one begun; aside (aside_len bytes, may be NULL) receives the new name, or "". */
as_status as_outset_journal_open_spec(const char *results, int rank, int batch, double max_delay_s,
                                      const char *spec_sha256, char *aside, size_t aside_len,
                                      as_journal **out);

/* 1 when rec is a result that belongs in the file (its outcome is neither pending nor
 * interrupted: an interrupted trial stays pending and is run again by a resume). */
int as_outset_is_result(const as_record *rec);

/* 1 when rec is a result that `run --resume --retry-failed` runs again: outcome failed or
 * nonfinite. Such an entry in a journal is superseded by another entry of the same trial that
 * is not retryable (as_outset_recover, repair), whatever the order they are read in. */
int as_outset_is_retryable(const as_record *rec);

/* The one path of finished records into the set: every result among recs[0..count) is
 * appended to journal j (may be NULL: no journal), the journal is made durable, and only
 * then are their rows written into rf; other records are dropped. Not collective (any rank,
 * its own journal). Statuses of as_journal_append/flush (AS_ERR_IO: nothing written to rf)
 * and as_results_write_records (AS_ERR_ARG for a trial beyond the rows). */
as_status as_outset_store(as_results *rf, as_journal *j, const as_record *recs, size_t count);

/* Totals of a scan of several journals. */
typedef struct as_outset_scan {
  uint64_t files;           /* journal files read */
  uint64_t entries_ok;      /* valid entries (passed to the visitor) */
  uint64_t entries_bad;     /* damaged entries skipped */
  uint64_t torn_bytes;      /* bytes of torn tails skipped */
  uint64_t damaged_headers; /* journals whose header was damaged: salvaged entry by entry */
} as_outset_scan;

/* Read every journal of kind side (AS_SIDE_JOURNAL or AS_SIDE_DAMAGED_JOURNAL) of results,
 * calling visit for each valid entry (as_journal_read). sum (may be NULL) receives the totals.
 * Statuses of as_outset_list and as_journal_read (AS_ERR_MISMATCH for another record layout)
 * or what visit returned. */
as_status as_outset_journals_read(const char *results, as_side side, as_journal_visit_fn visit,
                                  void *ctx, as_outset_scan *sum);
/* The same, refusing (AS_ERR_MISMATCH, naming the journal) a journal whose header records
 * another spec SHA-256 than spec_sha256 (NULL: no check; a journal that records none is
 * accepted; "A,B": either of two). A journal whose header is damaged is read entry by entry
 * (as_journal_salvage) and counted in damaged_headers; as_outset_recover and as_outset_tidy check
 * against the file's spec_sha256 attribute. */
as_status as_outset_journals_read_for(const char *results, as_side side, const char *spec_sha256,
                                      as_journal_visit_fn visit, void *ctx, as_outset_scan *sum);

/* Resume: write into rf every journaled result whose row is not done yet (done[i] == 0 for
 * the n_trials rows), and mark it done; the first journal entry read for a trial wins, as the
 * file's own row would (entries of one trial are identical: a trial is a pure function of
 * its index). *recovered: rows written. rf open for writing. */
as_status as_outset_recover(const char *results, as_results *rf, uint8_t *done, uint64_t n_trials,
                            uint64_t *recovered);
/* The same, also taking journals tagged with spec_sha256 (NULL: none): a resume with
 * --allow-spec-change, whose store of the new spec (as_outset_retag first, then the file) may
 * have been interrupted, reads journals of either spec. */
as_status as_outset_recover_also(const char *results, as_results *rf, const char *spec_sha256,
                                 uint8_t *done, uint64_t n_trials, uint64_t *recovered);
/* Tag every journal of results (and every journal a repair set aside) with spec_sha256: the
 * sweep's spec changed (`run --resume --allow-spec-change`) and the file is about to record
 * the new one. By the holder of the lock, while no journal is open. Statuses of
 * as_outset_list and as_journal_retag. */
as_status as_outset_retag(const char *results, const char *spec_sha256);

/* ---------------------------------------------------------------- tidy after a clean close */

/* After a clean close of a complete sweep, by the process that still holds the lock (rank 0):
 * compare every entry of every journal of results with its /trials row (opened read-only
 * without MPI-IO); when each is equal (bytes of the record), or is a retryable entry
 * superseded by its row (as_outset_is_retryable), remove the journals, the spec copy (the
 * file's /spec holds the same text; a resume writes the copy again) and the lock file, so
 * only OUT.h5 remains. Otherwise nothing is removed and *differing receives the number of
 * entries that differ (0 when tidied). A lock file is only removed by its holder, and
 * as_outset_claim checks that the file it locked is still the one at the path. Statuses of
 * as_results_open/read, as_outset_journals_read; AS_ERR_IO for a removal that failed. */
as_status as_outset_tidy(const char *results, uint64_t *differing);

/* ---------------------------------------------------------------- rebuild (repair) */

/* Move the results file (if it exists) to OUT.h5.damaged and each journal
 * OUT.h5.journal.<rank> to OUT.h5.damaged.journal.<rank>, each under a fresh name (".1",
 * ".2"... appended when the name is taken). AS_ERR_IO naming the rename that failed. */
as_status as_outset_set_aside(const char *results);
/* Put the rebuilt set in place: OUT.h5.rebuild-journal becomes OUT.h5.journal.0, then
 * OUT.h5.rebuild becomes OUT.h5, and the directory is synced. AS_ERR_IO. */
as_status as_outset_swap_in(const char *results);

/* ---------------------------------------------------------------- damage refused */

/* For a command that reads results (summarize, reproduce): verify the checksums of rows
 * [first, first + count) of rf and of their bulk slabs (as_results_verify) and refuse damage:
 * AS_ERR_IO (exit 3) naming path, the damaged rows (their trials, the first 8) and
 * `attnsweep repair`. A file without checksums is not refused. Rows beyond the file are
 * ignored. Statuses of as_results_verify. */
as_status as_outset_refuse_damage(as_results *rf, const char *path, uint64_t first, uint64_t count);

/* The checksum gate of a command that hands results files to a script (summarize, report):
 * path is verified by its stored bytes (as_results_verify_file), so a file this build's reader
 * cannot open is verified all the same, and a file the gate cannot open or read is refused,
 * never passed on. AS_OK for an intact file or one without checksums (an older file,
 * unverified); damage: AS_ERR_IO (exit 3) as as_outset_refuse_damage; a missing file, a FIFO,
 * device or directory (refused by type before it is opened), a file that is not HDF5 or has no
 * /trials: AS_ERR_DATA (exit 2); a damaged file HDF5 cannot open: AS_ERR_HDF5 (exit 3), named
 * with HDF5's cause and `attnsweep repair`. Not collective. */
as_status as_outset_gate(const char *path);

/* ---------------------------------------------------------------- fresh side files */

/* Identity of a file created here (device and inode). */
typedef struct as_outset_file {
  uint64_t dev, ino;
} as_outset_file;

/* Create side file `side` of results (a kind that is not per rank) afresh and empty, its name
 * into path (len bytes): whatever is at the name is removed first (a leftover of an
 * interrupted command, or a symbolic link planted there: unlink removes a link, never its
 * target), then the name is created with O_CREAT | O_EXCL | O_NOFOLLOW, so nothing but this
 * new file is ever written through it. *id receives its identity. AS_ERR_IO. */
as_status as_outset_side_create(const char *results, as_side side, char *path, size_t len,
                                as_outset_file *id);
/* AS_OK when path is still the regular file *id (not replaced, not a link); AS_ERR_IO
 * otherwise. For a library (HDF5) that reopens the name itself after as_outset_side_create. */
as_status as_outset_side_verify(const char *path, const as_outset_file *id);

#endif /* ATTNSWEEP_OUTSET_H */
