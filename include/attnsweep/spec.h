/* attnsweep/spec.h: sweep specifications (YAML): parse, validate, enumerate trials.
 *
 * A spec is parsed once into an immutable as_spec. Every trial of the sweep is a pure
 * function of (spec, trial index): as_spec_trial resolves index -> as_trial. The schema, the
 * sweep algebra (mappings of axes, product, zip, concat) and the enumeration order are
 * documented in docs/spec.md.
 *
 * Enumeration: the sweep flattens into cases (sub-sweeps of concat); P is the number of
 * parameter points over all cases (case 0's points first), R the number of replicates.
 * trial index = replicate * P + p, so replicates are the slowest axis and raising R only
 * appends trials. Within a case the points are in mixed radix: in a product the first factor
 * varies slowest; within one mapping the axes vary in the fixed order of the schema's key
 * table (docs/spec.md), never in the order they were written.
 *
 * Nothing here is collective: the spec is parsed on every rank (or on one and the text
 * broadcast) and gives the same answers everywhere. No MPI, no HDF5.
 */
#ifndef ATTNSWEEP_SPEC_H
#define ATTNSWEEP_SPEC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "attnsweep/sha256.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

/* One problem found in a spec, at 1-based line and column (0, 0: the spec as a whole). */
typedef struct as_spec_diag {
  int line;
  int col;
  char *message; /* owned by the list */
} as_spec_diag;

/* All problems found by one parse, in the order of their place in the text. */
typedef struct as_spec_diags {
  int count;
  int capacity;
  as_spec_diag *items;
} as_spec_diags;

/* Free the messages of a list and zero it (the struct itself is the caller's). NULL ok. */
void as_spec_diags_free(as_spec_diags *d);

typedef struct as_spec as_spec;

/* Parse and validate a spec from text (len bytes, NUL not required). name is used in
 * messages (SPEC:LINE:COL) and kept (copied). Every problem is appended to diags (may be
 * NULL; the caller zero-initialises it and frees it with as_spec_diags_free).
 * Returns AS_OK and sets *out, or
 *   AS_ERR_SPEC   the spec has problems (diags lists all; the error record names the first
 *                 as "name:line:col: message" and says how many more);
 *   AS_ERR_NOMEM  allocation failed;
 *   AS_ERR_ARG    NULL text or out.
 * Not collective. */
as_status as_spec_parse(const char *text, size_t len, const char *name, as_spec_diags *diags,
                        as_spec **out);

/* Largest spec text any command reads (bytes). */
#define AS_SPEC_MAX_BYTES ((size_t)64 << 20)

/* The one reader of a spec file, for every command: a regular file or the pipe of a command
 * (a process substitution <(...), /dev/stdin of a shell's |); *text allocated and NUL
 * terminated, *len its length (may be NULL). A pipe is waited for in steps of 0.1 s, checking
 * *stop (may be NULL): a stop signal ends the wait with AS_ERR_INTERRUPTED. Refused with
 * AS_ERR_ARG: an empty name, a file that cannot be opened, a named FIFO (mkfifo; issue 49),
 * a directory, a device or socket; AS_ERR_SPEC: more than AS_SPEC_MAX_BYTES;
 * AS_ERR_IO: a read error. Messages name the path, never a source location. */
as_status as_spec_read(const char *path, const volatile sig_atomic_t *stop, char **text,
                       size_t *len);

/* Relative paths of input files (a matrix `file:`, a token file `init: {file: ...}`) resolve
 * against the directory of name, the spec's file name (as_spec_load: its path): a trial's
 * file.text and init.file.text are the resolved paths, while the labels (as_spec_labels, the
 * record's /labels) stay as written. A name whose directory does not exist (e.g.
 * "<built-in default sweep>") leaves them relative to the working directory. Spec text read
 * back from a results file (reproduce, resume) is parsed with name = the file's spec_name
 * attribute when that names an existing file, else the results file's path.
 *
 * Read the file at path and parse it (name = path). Also AS_ERR_IO when it cannot be read. */
as_status as_spec_load(const char *path, as_spec_diags *diags, as_spec **out);

/* The built-in default sweep (the paper's theorems at paper settings, several seeds);
 * its YAML text is as_spec_default_text(). */
as_status as_spec_default(as_spec **out);
/* YAML text of the built-in default sweep (static, NUL terminated). */
const char *as_spec_default_text(void);

/* Free a spec; accepts NULL and *s == NULL; sets *s to NULL. Trials resolved from it keep
 * borrowed pointers into it: destroy it last. */
void as_spec_destroy(as_spec **s);

/* ---------------------------------------------------------------- the sweep */

/* Total number of trials R * P. */
uint64_t as_spec_trial_count(const as_spec *s);
/* Number of parameter points P (all cases, one replicate). */
uint64_t as_spec_point_count(const as_spec *s);
/* Number of replicates R (>= 1). */
uint32_t as_spec_replicates(const as_spec *s);

/* Resolve trial `index` (0 <= index < trial count) into out (every field set; pointers inside
 * borrowed from s). AS_ERR_ARG for an index out of range. */
as_status as_spec_trial(const as_spec *s, uint64_t index, as_trial *out);

/* Where point p (0 <= p < P) takes the value of the sweep key with index key in the key
 * table (as_params, params.h) from: *line and *col the 1-based place of the value's node in
 * the spec text, both 0 for the key's default; *applies whether the key means anything for
 * the point's trials (the table's `applies`); *case_id the point's case. Used to check that a
 * `--set` reaches the trials (override.h). AS_ERR_ARG when p or key is out of range. */
as_status as_spec_point_source(const as_spec *s, uint64_t p, int key, int *line, int *col,
                               int *applies, int *case_id);

/* 1 when a trial of spec b would take other random draws than the same trial of spec a: another
 * seed, other common: keys, another layout (replicates, points), or a point whose stream keys
 * differ (triple_seed); why (len bytes) then says which, e.g. "seed 4 -> 5". 0 when every
 * trial draws alike (points sampled evenly above 2^20). `run --resume --allow-spec-change`
 * refuses a change of the draws. */
int as_spec_draws_differ(const as_spec *a, const as_spec *b, char *why, size_t len);

/* 1 when name is a top-level key of a spec (name, seed, replicates, output, defaults, sweep,
 * common, ...: docs/spec.md "Top level"), else 0. */
int as_spec_top_key(const char *name);

/* Cases (the sub-sweeps of concat; a spec without concat has one case). */
int as_spec_case_count(const as_spec *s);
/* Name of case c (the `case:` key, "/"-joined through nested concats; "case<c>" when
 * unnamed). NULL when c is out of range. Borrowed. */
const char *as_spec_case_name(const as_spec *s, int c);
/* Parameter points of case c (per replicate), and the first point of the case (its offset
 * in 0..P-1). 0 when c is out of range. */
uint64_t as_spec_case_points(const as_spec *s, int c);
uint64_t as_spec_case_offset(const as_spec *s, int c);

/* Axes: the keys that take more than one value, per case (a fixed value is not an axis). */
typedef struct as_spec_axis {
  int case_id;     /* case the axis belongs to */
  const char *key; /* e.g. "d", "vfamily" (borrowed) */
  int line, col;   /* where it is written (1-based) */
  uint64_t values; /* number of values */
  int zipped;      /* 1: varies together with other axes (inside a zip) */
} as_spec_axis;
int as_spec_axis_count(const as_spec *s);
/* Fill *a with axis i (0 <= i < as_spec_axis_count); AS_ERR_ARG when out of range. */
as_status as_spec_axis_get(const as_spec *s, int i, as_spec_axis *a);
/* Text of value j of axis i (a scalar as written, "[r x c matrix]", "{init ...}") into buf. */
void as_spec_axis_value(const as_spec *s, int i, uint64_t j, char *buf, size_t len);

/* Labels of a LABEL field of the record ("case_name": the case names; the record field of a
 * TEXT key, e.g. "file": its distinct values in order of first appearance). Returns the
 * count and sets *names (borrowed; NULL when 0). */
int as_spec_labels(const as_spec *s, const char *field, const char *const **names);

/* ---------------------------------------------------------------- global settings */

/* The absolute directory input files resolve against (NULL: the working directory). */
const char *as_spec_base_dir(const as_spec *s);
/* The keys of `common:` (docs/spec.md, "Enumeration and seeds"): their names in key-table
 * order, comma separated, e.g. "T,attention"; "" when the spec has none. The results file
 * stores it as the root attribute common_keys. Borrowed from s. */
const char *as_spec_common_keys(const as_spec *s);
/* The input files of record field `file` or `init_file`, resolved (paths[i] goes with label i
 * of as_spec_labels); returns their count, 0 and *paths = NULL for other fields. */
int as_spec_input_paths(const as_spec *s, const char *field, const char *const **paths);
const char *as_spec_name(const as_spec *s);             /* the spec's `name` (or the file name) */
uint64_t as_spec_seed(const as_spec *s);                /* master seed */
const as_output_spec *as_spec_output(const as_spec *s); /* bulk data to store */
double as_spec_flush_interval(const as_spec *s);        /* seconds (default 10) */
/* `memory_limit`: bytes per rank a trial may use (cost.h as_cost_memory), 0: not given (the
 * default is MemAvailable / ranks on the node, as_cost_memory_available). */
double as_spec_memory_limit(const as_spec *s);
/* From now on every trial stores every bulk kind (initial and final tokens, attention, V and
 * M) and, when n_snap > 0, snapshots at times[0..n_snap) (sorted, within (0, T] of the trials
 * run; at most AS_MAX_SNAPSHOTS); n_snap = 0 keeps the spec's snapshots. What `attnsweep
 * reproduce --save` regenerates. */
void as_spec_store_all_bulk(as_spec *s, int n_snap, const double *times);
int as_spec_spectral_threshold(const as_spec *s); /* ScaLAPACK from this d (spectral.h) */
/* BLACS grid (rows x columns) of every large-d spectral analysis, whatever the job size: the
 * records depend on it, never on the number of ranks (`spectral_grid`, default 1x1). */
void as_spec_spectral_grid(const as_spec *s, int *nprow, int *npcol);
/* Canonical SHA-256 (64 lowercase hex digits): independent of key order, layout, comments
 * and number spelling (1, 1.0, 1e0 are equal); any change of a value changes it. */
const char *as_spec_sha256(const as_spec *s);
/* The spec text as given (NUL terminated; *len its length if len != NULL). Borrowed. */
const char *as_spec_text(const as_spec *s, size_t *len);

#endif /* ATTNSWEEP_SPEC_H */
