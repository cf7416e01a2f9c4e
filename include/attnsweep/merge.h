/* attnsweep/merge.h: join the shard files of one sweep into one results file (merge.c).
 *
 * The output is the file a single job would have written: /trials row i is the record of
 * trial i taken from the shard that ran it (records read and written through the same types,
 * so the rows are byte for byte those of the shard), and every bulk slab of a done row comes
 * with it. A trial is a pure function of (spec, index), so a row found in several inputs must
 * be the same record there (timing fields aside) and the same bulk data; otherwise the merge
 * is refused. Inputs must carry the same spec (SHA-256 of its text). The shards (shard.h) each
 * input claims must cover every trial: a missing one is named (the file it would be); with
 * partial the merge goes on and the rows of missing or unfinished shards stay pending.
 * A file that is not a shard counts as shard 1 of 1 (a whole run).
 *
 * Before anything is written every input is checked: the checksums of its rows and bulk slabs
 * (results.h; damage is refused, AS_ERR_IO, exit 3, naming the file, the first damaged trials
 * and `attnsweep repair`), and its recorded input_sha256 (the content hashes of the matrix and
 * token files it read): inputs whose hashes differ are refused (AS_ERR_MISMATCH). The merged
 * file carries the first input's input_sha256 as recorded: nothing is hashed again.
 *
 * The output is built as OUT.h5.merging (created with O_EXCL in OUT.h5's directory, under
 * OUT.h5's lock) and renamed over OUT.h5 only when complete: a failed or stopped merge leaves
 * an existing OUT.h5 (--force) untouched and no partial file. It streams: blocks of
 * MERGE_BLOCK (32768) trials, each input's held rows of a block in one read, one write per run of
 * rows; memory is a few bytes per trial (flags and owners) plus the block buffers. A stop
 * flag (opts.stop, e.g. SIGTERM) is checked between blocks: AS_ERR_INTERRUPTED, nothing
 * written; the same command merges again from the start.
 *
 * Inputs must come from one build: the same AS_MERGE_BUILD_ATTRS (tool version, git revision,
 * MPI, HDF5, libyaml, BLAS, RNG); inputs of different builds are refused (AS_ERR_MISMATCH,
 * both files and the differing attributes named) unless allow_mixed_builds.
 *
 * Provenance: the root attribute merged_from lists every input (path, shard, rows taken,
 * its segments: job ids, restarts, ranks, and the build that wrote it: every attribute of
 * AS_MERGE_BUILD_ATTRS), merge_partial is 1 when rows are pending, merge_mixed_builds is 1
 * when the inputs came from more than one build (the merged file's own tool_version and the
 * like name the merging build).
 * Not collective: one process, the output is written on MPI_COMM_SELF (MPI initialised).
 */
#ifndef ATTNSWEEP_MERGE_H
#define ATTNSWEEP_MERGE_H

#include <signal.h>
#include <stdint.h>

#include "attnsweep/status.h"

typedef struct as_merge_opts {
  int partial; /* 1: merge what exists (missing or unfinished shards leave rows pending) */
  int force;   /* 1: replace an existing output file */
  const volatile sig_atomic_t *stop; /* non-zero: stop (checked between blocks); NULL: none */
  int allow_mixed_builds; /* 1: merge inputs written by different builds (AS_MERGE_BUILD_ATTRS) */
} as_merge_opts;

/* The root attributes that name the build that wrote a file (docs/results.md): inputs whose
 * values differ were computed by different code or libraries, so their rows need not agree
 * with what one build computes. */
#define AS_MERGE_BUILD_ATTRS                                                                     \
  "tool_version", "git_revision", "mpi_version", "hdf5_version", "yaml_version", "blas_version", \
      "rng_algorithm"

typedef struct as_merge_report {
  uint64_t n_trials;        /* rows of the sweep */
  uint64_t done;            /* rows done in the output */
  uint64_t overlaps;        /* rows found done in more than one input (all identical) */
  uint32_t inputs;          /* input files */
  uint32_t missing;         /* shards none of the inputs is (named in missing_names) */
  uint32_t unfinished;      /* inputs with rows of their own shard pending */
  char missing_names[1024]; /* "A, B, ..." (truncated with "...") */
  uint64_t rows_checked;    /* input rows whose checksums were verified */
  int unverified;           /* inputs without checksums (older files): not verified */
} as_merge_report;

/* Merge n inputs into out. Statuses: AS_ERR_ARG (out exists without force, out is one of the
 * inputs, a missing or unfinished shard without partial: the file named), AS_ERR_MISMATCH
 * (another spec, other input files, another build without allow_mixed_builds, a disagreeing
 * row: both files and the trial named),
 * AS_ERR_DATA (an input that is not a results file), AS_ERR_IO (an input fails its checksums,
 * or I/O), AS_ERR_BUSY (out in use), AS_ERR_INTERRUPTED (stopped), HDF5 failures. On failure
 * no new output file is left behind and an existing one is untouched. rep may be NULL. */
as_status as_merge_run(const char *out, const char *const *inputs, int n, const as_merge_opts *o,
                       as_merge_report *rep);

#endif /* ATTNSWEEP_MERGE_H */
