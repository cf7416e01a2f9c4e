/* attnsweep/cost.h: the cost model of a sweep (cost.c): what a trial costs, in work units,
 * seconds and bytes; used by the scheduler (longest first), `attnsweep plan` (core-hours,
 * output size, ranks, walltime) and the sweep.
 *
 * Work of a trial (a pure function of it; in units of AS_COST_DEFAULT_A seconds of one core of
 * the reference machine, docs/performance.md "Cost model"): the operations of its phases, each
 * weighted by the measured speed of the code that runs it (AS_COST_NS_*, nanoseconds):
 *     integration  steps * stages * rhs, and a guard of 4 n d dense operations per step
 *     rhs          H n^2 pairs (exponential or hardmax comparison and bookkeeping) at the
 *                  path's ns (as_cost_path_of); dense multiply-adds H (2 n^2 d + 2 n d^2)
 *                  (+ sphere 4 n d, ffn inside n d^2 + n d E, block 2 n d w + n w E with
 *                  E = AS_COST_EXP_OPS; z variables d^3) at AS_COST_NS_DENSE; Sinkhorn
 *                  H I n^2 entries at AS_COST_NS_SINKHORN and, up to
 *                  AS_ATTENTION_SINKHORN_NEWTON_N tokens, H (I - 1) n^3 of Newton steps at
 *                  AS_COST_NS_NEWTON (I = as_cost_sinkhorn_iters, below; sinkhorn_fixed:
 *                  I = sinkhorn_iters, no Newton steps)
 *     steps        as_cost_steps (fixed step T / dt; dopri5 from T and V; landing steps),
 *                  T the horizon the trial runs to: with T_decide > 0 the one as_trial_run
 *                  raises it to (pipeline.h as_trial_horizon, from the trial's own triple)
 *     stages       of the tableau (RK4 4, DOPRI5 6, Euler and layers 1; +1 on the sphere with
 *                  FSAL), dopri5 with AS_COST_DOPRI5_REJECTED more for rejected steps
 *     set-up       AS_COST_NS_SPECTRAL d^3 per triple (every head of every per-layer block)
 *                  + AS_COST_NS_TRIAL
 *     classifier   AS_COST_NS_CLASSIFY * as_classify_work(n, d) (classify.h) and, for the
 *                  blocks field, 4/3 n^3 per head (each head's P rank)
 *     output       AS_COST_NS_BYTE per bulk byte stored
 * plus the reference run of ref_w1 (reference_n tokens). A trial over several ranks
 * (ranks_per_trial, streamed) has the same total work, split between them.
 * Seconds: seconds(trial) = a * work + b (as_cost_model): a per unit of work, b per trial.
 * The default (AS_COST_DEFAULT_A, _B) turns units into seconds of the reference machine;
 * as_cost_calibrate fits (a, b) to the spec's own trials on this machine (and the fit can be
 * saved: as_cost_model_save / _load). A one-rank run also costs AS_COST_RANK_START_S (start,
 * MPI, the results file) per rank.
 * Bytes: the record plus the bulk data the trial's output options store (the file layout of
 * outset.h, 8 bytes per double).
 *
 * Nothing here is collective or uses MPI. as_cost_calibrate runs trials (it reads matrix and
 * token files like `run`); as_cost_model_save / _load write and read the calibration file;
 * as_cost_steps builds a controlled dopri5 trial's triple (no file) for the rate of V, and
 * a T_decide trial's triple and its spectral analysis (d <= AS_COST_HORIZON_DMAX) for its
 * horizon;
 * everything else is arithmetic on the spec.
 */
#ifndef ATTNSWEEP_COST_H
#define ATTNSWEEP_COST_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/spec.h"
#include "attnsweep/status.h"
#include "attnsweep/trial.h"

#define AS_COST_DEFAULT_A 2.0e-9 /* seconds per unit of work (the unit: 2 ns of the reference) */
#define AS_COST_DEFAULT_B 0.0    /* seconds per trial (its fixed costs are in the work) */

/* The code path a trial runs through, each with its own speed per operation (ns, measured on
 * the reference machine: docs/performance.md, "Cost model", with the commands). Refit them
 * when a kernel gets faster (bench/plan_accuracy.sh shows the effect on every example). */
typedef enum as_cost_path {
  AS_COST_PATH_BATCH,  /* base model, small, no bulk output: batches of AS_BATCH_LANES */
  AS_COST_PATH_SMALL,  /* base model, small, alone (bulk output or file input) */
  AS_COST_PATH_MODEL,  /* variants (Sinkhorn, mask, sphere, hardmax, inside ffn, snapshots) */
  AS_COST_PATH_BLOCKS, /* heads, block feed-forward, per-layer weights, layers (blocks.h) */
  AS_COST_PATH_STREAM, /* above AS_ATTENTION_STREAM_N tokens: the streamed kernel */
  AS_COST_PATH_COUNT
} as_cost_path;
/* Fitted by bench/plan_accuracy.sh --fit on the reference machine (docs/performance.md, "Cost
 * model"): one-rank CPU times of every jobs/examples spec (the mean of 2-5 runs at load
 * average 6-20), least squares in log(predicted / measured), then all figures times 0.92 to
 * sit between the loaded and the quiet machine; AS_COST_RANK_START_S, AS_COST_NS_SMALL and
 * _MODEL refitted alone (FIT_FREE, the others kept) to the mean of two runs at load average
 * 1-4, where the 0.92 figures overestimated the small examples up to 2.1 times (issue 37);
 * then, once the kernels' exponential and maxima got faster, AS_COST_RANK_START_S,
 * AS_COST_NS_BATCH, _SMALL and _MODEL refitted alone (FIT_FREE) on a quiet core, where the
 * figures before gave up to 1.55 (docs/performance.md); then, once a rank's start and close
 * got cheaper (a one-trial run 0.055-0.06 s of CPU instead of 0.15-0.19), the same four
 * refitted again on a quiet core, where the figures before gave up to 2.92; then
 * AS_COST_NS_DENSE, _CLASSIFY, _SMALL and AS_COST_RANK_START_S chosen between two runs of
 * the 27 examples, one with OpenBLAS's Haswell kernels (OPENBLAS_CORETYPE=Haswell) and one
 * with those it picks itself on this AVX-512 machine (Cooperlake: dense products and the
 * large-n classifier up to 1.5 times faster), where the figures before gave 0.71-1.41 and
 * 0.73-1.92 (docs/performance.md); the dopri5 figures from the step counts
 * of identity triples (rtol 1e-6 and 1e-9, T 5 and 20, v_scale 0.5 to 4); the Sinkhorn figures from
 * the iterations and CPU time per evaluation (as_dyn_sinkhorn_stats_of) of
 * jobs/examples/sinkhorn.yaml at n = 10 to 100 on a quiet core (docs/performance.md). */
#define AS_COST_NS_BATCH 0.88 /* ns per pair (n^2 per head and evaluation) of each path */
#define AS_COST_NS_SMALL 2.3
#define AS_COST_NS_MODEL 3.2
#define AS_COST_NS_BLOCKS 5.9
#define AS_COST_NS_STREAM 1.75
#define AS_COST_NS_DENSE 0.033   /* ns per multiply-add of the dense products */
#define AS_COST_NS_SINKHORN 7.2  /* ns per n^2 entry of a Sinkhorn iteration */
#define AS_COST_NS_NEWTON 3.0    /* ns per n^3 of a Sinkhorn iteration's Newton step */
#define AS_COST_EXP_OPS 8.0      /* multiply-adds of one feed-forward activation */
#define AS_COST_NS_SPECTRAL 19.0 /* ns per d^3 of a triple's build and spectral analysis */
#define AS_COST_NS_CLASSIFY 0.85 /* ns per unit of as_classify_work: refit with the classifier */
#define AS_COST_NS_TRIAL 4600.0  /* ns per trial: tokens, record, scheduling */
#define AS_COST_NS_BYTE 1.0      /* ns per byte of bulk output */
#define AS_COST_SINKHORN_PER_DECADE 20.0 /* Sinkhorn iterations per decade of sinkhorn_tol */
#define AS_COST_SINKHORN_ITERS0 2.6      /* ... with Newton steps: ITERS0 + ITERS_PER_N n */
#define AS_COST_SINKHORN_ITERS_PER_N 0.066
#define AS_COST_DOPRI5_STEPS0 20.0  /* dopri5 steps: (STEPS0 + PER_RATE T rate) (rtol/1e-6)^-1/5 */
#define AS_COST_DOPRI5_PER_RATE 0.5 /*   rate: row-sum norm of V (sum over heads) */
#define AS_COST_DOPRI5_REJECTED 0.1 /* rejected steps per accepted one */
/* CPU seconds of a rank's start and end (MPI, HDF5, the results file): a one-trial run takes
 * 0.052-0.064 s on a quiet core (bench/run_vs_inprocess.sh, docs/performance.md), more under
 * load; 0.040 chosen with the figures above on a quiet core (0.14 before the start and the
 * close got cheaper). */
#define AS_COST_RANK_START_S 0.040

/* The path of t (above). Pure. */
as_cost_path as_cost_path_of(const as_trial *t);
/* Expected integration steps of t (accepted + landing; the step limit applies) up to its
 * horizon: T, or for T_decide > 0 pipeline.h as_trial_horizon of t (what as_trial_run
 * integrates to) where d <= AS_COST_HORIZON_DMAX and the triple can be built without files;
 * T otherwise (a file family, or a d whose O(d^3) analysis would cost the plan about what the
 * trial's own set-up costs: `--calibrate` prices those). Pure. */
#define AS_COST_HORIZON_DMAX 64
double as_cost_steps(const as_trial *t);
/* Expected Sinkhorn iterations per attention evaluation (0 for softmax; sinkhorn_fixed:
 * sinkhorn_iters, exactly), at most the cap sinkhorn_iters (all of it for sinkhorn_tol 0):
 * attention sinkhorn up to AS_ATTENTION_SINKHORN_NEWTON_N tokens
 * (warm starts and Newton steps, attention.h) AS_COST_SINKHORN_ITERS0 + _PER_N n; above,
 * AS_COST_SINKHORN_PER_DECADE per decade of sinkhorn_tol (plain iterations converge
 * linearly; in the saturated regime they stall at the cap). Pure. */
double as_cost_sinkhorn_iters(const as_trial *t);

/* The operation counts of trial t by kind (above), in the order of the AS_COST_NS_* figures:
 * pair operations of each path (AS_COST_PATH_COUNT), dense operations, Sinkhorn entries,
 * Sinkhorn's Newton n^3, d^3 of the triples, classifier units, trials (1), bulk bytes.
 * as_cost_work is their sum weighted by those figures; `plan --cost-kinds` prints a spec's totals
 * to refit them (bench/plan_accuracy.sh --fit). Pure. */
#define AS_COST_KINDS (AS_COST_PATH_COUNT + 7)
void as_cost_kinds(const as_trial *t, double k[AS_COST_KINDS]);

/* Work units of trial t (above). Pure function of t; the scheduler's longest-first key. */
double as_cost_work(const as_trial *t);
/* Bytes written to the results file for trial t: sizeof(as_record) plus 8 per stored double. */
double as_cost_bytes(const as_trial *t);

/* Memory of a trial (bytes): the workspaces as_trial_run allocates for its shape
 * (as_pipeline_bytes: dynamics, classifier, tokens, triple) plus its bulk output buffers
 * (the counts of outset.h). Pure function of t. A rank holds one trial's workspaces at a time,
 * plus about AS_COST_RANK_BASE_BYTES for the process itself (MPI, HDF5, libraries). */
double as_cost_memory(const as_trial *t);
#define AS_COST_RANK_BASE_BYTES 64e6

/* The default memory limit per rank: MemAvailable of /proc/meminfo divided by the ranks on
 * the node (ranks_on_node >= 1); 0 when it cannot be read (then nothing is checked). */
double as_cost_memory_available(int ranks_on_node);

/* The largest trial of a spec, and the trials over a limit. */
typedef struct as_cost_memory_info {
  double limit;        /* bytes per rank checked against (0: none) */
  double min_bytes;    /* smallest as_cost_memory of a trial (0: no trial) */
  double max_bytes;    /* largest as_cost_memory of a trial */
  uint64_t max_trial;  /* a trial with that memory */
  uint64_t over;       /* points (of one replicate) whose memory + base exceeds the limit */
  uint64_t first_over; /* the first of them (UINT64_MAX: none) */
  uint64_t over_p;     /* points above AS_ATTENTION_STREAM_N tokens asking for the final P */
  uint64_t first_p;    /* the first of them (UINT64_MAX: none) */
} as_cost_memory_info;

/* Scan the points of spec (one replicate; large cases sampled as in the estimate) for
 * memory. With limit > 0, a trial whose as_cost_memory + AS_COST_RANK_BASE_BYTES exceeds it
 * makes the result AS_ERR_SPEC (exit 2) with a message naming the first such trial, its case
 * and shape; so does a trial above AS_ATTENTION_STREAM_N tokens (attention.h: P is never
 * formed) that asks for `output: attention` (reported first). *out is filled in any case.
 * AS_ERR_ARG for NULL. Not collective. */
as_status as_cost_memory_scan(const as_spec *spec, double limit, as_cost_memory_info *out);

/* Ranks of one trial (the sweep key ranks_per_trial; docs/meanfield.md, "Scaling"):
 *   ranks_per_trial >= 1  that many (it may exceed job_ranks: `run` records the trial as
 *                         failed, `plan --ranks` refuses the spec);
 *   0 (auto)              1 up to AS_ATTENTION_STREAM_N tokens; above,
 *                         min(job_ranks, ceil(n / AS_COST_GROUP_ROWS)): every rank at least
 *                         AS_COST_GROUP_ROWS rows, which keeps the gathered n x d tokens below
 *                         about 1% of a stage's arithmetic (the projection of meanfield.md).
 * Depends on job_ranks only where the record cannot (the streamed kernel gives the same bits
 * for any split). job_ranks >= 1. Pure. */
#define AS_COST_GROUP_ROWS 4096
int as_cost_trial_ranks(const as_trial *t, int job_ranks);

/* The first trial of spec whose ranks_per_trial exceeds job_ranks: AS_ERR_SPEC with a message
 * naming it (index, case, the value) for `plan --ranks N`; AS_OK when none. Scans the points of
 * one replicate (the key does not depend on the seed). Not collective. */
as_status as_cost_ranks_check(const as_spec *spec, int job_ranks);

/* The largest ranks_per_trial of spec (the points of one replicate; 0 when every trial says
 * auto): a job needs at least that many ranks (`plan --sbatch` sizes --ntasks with it). */
int as_cost_max_ranks_per_trial(const as_spec *spec);

/* `merge` throughput for the merge job's walltime (`plan --sbatch --array`), measured with
 * the commands in docs/slurm.md ("Merge time"): rows per second (checksums verified, rows
 * read and written) and bulk bytes per second; the walltime allows half these rates. */
#define AS_COST_MERGE_ROWS_PER_S 50000.0
/* The fixed part of a results file (types, labels, attributes, /spec; docs/slurm.md). */
#define AS_COST_FILE_FIXED_BYTES 65536.0
#define AS_COST_MERGE_BYTES_PER_S 17e6

/* seconds = a * work + b. */
typedef struct as_cost_model {
  double a; /* seconds per unit of work, > 0 */
  double b; /* seconds per trial, >= 0 */
} as_cost_model;

/* The default model (AS_COST_DEFAULT_A, AS_COST_DEFAULT_B). */
void as_cost_model_default(as_cost_model *m);
/* Seconds of a trial of the given work under m. */
double as_cost_seconds(const as_cost_model *m, double work);

/* Least-squares fit of (a, b) to m samples (work x[i], seconds y[i]). When the works are all
 * alike (or the fit gives a <= 0, noise) the model is proportional: a = sum y / sum x, b = 0
 * (a = AS_COST_DEFAULT_A if every work is 0); b < 0 is clamped to 0. m = 0 leaves model as it
 * is. */
void as_cost_fit(const double *x, const double *y, int m, as_cost_model *model);

/* What a calibration did. */
typedef struct as_cost_calibration {
  int trials; /* trials timed (the fit's samples) */
  int failed; /* ... of which failed to set up (a data problem: recorded as failed by `run`) */
} as_cost_calibration;

/* Time (CPU time) min(samples, trial count) distinct trials of spec spread evenly over the sweep
 * (all cases, small and large; an untimed warm-up trial first), each as a worker of `run`
 * runs it (its matrix and token files loaded, the same pipeline, LAPACK for the spectral
 * analysis), and fit model to them (as_cost_fit). samples >= 1. info may be NULL. Statuses:
 * AS_ERR_ARG; what stops a run (AS_ERR_INTERNAL naming the trial, AS_ERR_NOMEM): the trial's
 * own data problems are counted in info->failed, not returned. Not collective. */
as_status as_cost_calibrate(const as_spec *spec, int samples, as_cost_model *model,
                            as_cost_calibration *info);

/* A saved calibration (the file `attnsweep plan --calibrate` writes; docs/scheduling.md,
 * "Walltime"): text lines "attnsweep-cost 1", "a A", "b B", "trials N", "machine TEXT",
 * "spec_sha256 HEX"; '#' starts a comment. */
#define AS_COST_SAVED_MAGIC "attnsweep-cost"
#define AS_COST_SAVED_VERSION 1
typedef struct as_cost_saved {
  int trials;           /* calibration trials */
  char machine[320];    /* where it was fitted: host name, CPU model (as_cost_machine) */
  char spec_sha256[72]; /* the spec it was fitted on */
} as_cost_saved;
/* This machine's description (host name, CPU model of /proc/cpuinfo), one line. */
void as_cost_machine(char *buf, size_t cap);
/* Write m and info to path. AS_ERR_IO naming the file. */
as_status as_cost_model_save(const char *path, const as_cost_model *m, const as_cost_saved *info);
/* Read path into *m and *info. AS_ERR_DATA naming the file (and the line) of what is wrong:
 * it cannot be opened, is not a calibration, lacks a or b, has a value that is not a number
 * > 0 (b >= 0) or an unknown entry; *m is untouched on failure. */
as_status as_cost_model_load(const char *path, as_cost_model *m, as_cost_saved *info);

/* Totals of one case (over its points, one replicate). */
typedef struct as_cost_case {
  double work;      /* sum of the points' work */
  double bytes;     /* sum of their bytes */
  double max_work;  /* largest work of one point */
  uint64_t visited; /* points evaluated (all of them unless sampled) */
} as_cost_case;

/* The estimate of a whole sweep under a model. */
typedef struct as_cost_estimate {
  int n_cases;         /* as_spec_case_count */
  as_cost_case *cases; /* n_cases entries (owned; as_cost_estimate_free) */
  int sampled;         /* 1: some case has more than AS_COST_MAX_POINTS / n_cases points and
                          was evaluated on an even sample, scaled up */
  double seconds;      /* core-seconds of every trial (replicates included) */
  double bytes;        /* output bytes of every trial */
  double max_seconds;  /* the longest single trial */
  uint64_t trials;     /* trial count */
  /* The large-d phase (d >= the spec's spectral_threshold): analysed on the spec's
   * spectral_grid before the sweep (pspectral.h), priced by as_cost_spectral_seconds. */
  double large_trials;         /* trials with d >= threshold (replicates included) */
  double large_seconds;        /* their grid seconds, summed (replicates included) */
  double large_max;            /* the longest single analysis [s] */
  double kinds[AS_COST_KINDS]; /* as_cost_kinds summed over every trial (replicates included) */
} as_cost_estimate;

/* Wall seconds of one large-d spectral analysis on an nprow x npcol grid: the operation count
 * of its phases (pdgehrd 10/3 d^3, pdhseqr with the Schur form about 10 d^3, pdsyev 4/3 d^3,
 * inverse iteration 2/3 d^3, AS_COST_SIGN_STEPS Newton steps of 2 d^3 for the sign
 * iteration) at AS_COST_GRID_FLOPS per process and a parallel efficiency of
 * 1 / (1 + 0.15 (P Q - 1)). Measured figures: docs/matrices.md. Pure function. */
#define AS_COST_GRID_FLOPS 1.6e10
#define AS_COST_SIGN_STEPS 14
double as_cost_spectral_seconds(int d, int nprow, int npcol);

/* Points evaluated exactly per sweep before cases are sampled. */
#define AS_COST_MAX_POINTS 4000000u

/* Estimate spec under m (work and bytes do not depend on the replicate: the sum over the
 * points times R). *out filled on success (free with as_cost_estimate_free). AS_ERR_NOMEM. */
as_status as_cost_estimate_spec(const as_spec *spec, const as_cost_model *m, as_cost_estimate *out);
/* Seconds of case c of e under m (all replicates). */
double as_cost_case_seconds(const as_cost_estimate *e, const as_spec *spec, const as_cost_model *m,
                            int c);
/* Free what e owns and zero it; accepts a zeroed estimate. */
void as_cost_estimate_free(as_cost_estimate *e);

#endif /* ATTNSWEEP_COST_H */
