/* cost.c: the cost model of a sweep (cost.h). */
#define _POSIX_C_SOURCE 200809L /* gethostname */
#include "attnsweep/cost.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/blocks.h"
#include "attnsweep/classify.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/matfile.h"
#include "attnsweep/outset.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/tableau.h"
#include "attnsweep/triple.h"

/* ---- the work of a trial: operation counts of its phases, each weighted by the speed of the
 * code path that runs it (cost.h, "Work"). */

/* Work units per nanosecond of one core of the reference machine. */
#define UNITS_PER_NS (1e-9 / AS_COST_DEFAULT_A)

as_cost_path as_cost_path_of(const as_trial *t) {
  if (as_blocks_kind_of(t) == AS_BLOCKS_FIELD) return AS_COST_PATH_BLOCKS;
  if (t->n > AS_ATTENTION_STREAM_N) return AS_COST_PATH_STREAM;
  if (!as_attn_is_base(&t->attn, t->triple.beta == INFINITY) || t->output.n_snapshots > 0 ||
      as_blocks_kind_of(t) != AS_BLOCKS_OFF)
    return AS_COST_PATH_MODEL;
  if (t->n > AS_SMALL_NMAX || t->d > AS_SMALL_DMAX) return AS_COST_PATH_MODEL;
  /* Batches: what sweep.c runs together (no bulk output, no file input). */
  uint64_t counts[AS_BULK_COUNT];
  as_outset_bulk_counts(t, counts);
  int bulk = 0;
  for (int k = 0; k < AS_BULK_COUNT; k++) bulk |= counts[k] != 0;
  if (!bulk && as_trial_batchable(t) && t->triple.vfamily != AS_V_FILE &&
      t->triple.mfamily != AS_M_FILE && t->init.kind != AS_INIT_FILE)
    return AS_COST_PATH_BATCH;
  return AS_COST_PATH_SMALL;
}

/* The rate of the dynamics for dopri5's step count: the row-sum norm of V (sum over heads),
 * 1 when the triple cannot be built here (file families: plan does not read the files). */
static double dynamics_rate(const as_trial *t) {
  as_triple *tr = NULL;
  double rate = 0.0;
  const int m = t->triple.m_rows > 0 ? t->triple.m_rows : t->d;
  if (as_triple_create(t->d, m, &tr) == AS_OK) {
    for (int h = 0; h < t->blocks.heads || h == 0; h++) {
      if (as_triple_build_at(t, h, 0, tr) != AS_OK) {
        rate = 0.0;
        break;
      }
      double most = 0.0;
      for (int i = 0; i < t->d; i++) {
        double row = 0.0;
        for (int j = 0; j < t->d; j++) row += fabs(tr->V[(size_t)i * t->d + j]);
        most = row > most ? row : most;
      }
      rate += most;
    }
  }
  as_triple_destroy(&tr);
  as_error_clear();
  return rate > 0.0 && isfinite(rate) ? rate : 1.0;
}

/* The horizon t integrates to: pipeline.h as_trial_horizon (T raised by T_decide from the
 * trial's own triple, the function the pipeline decides it with); T where the triple cannot be
 * built here (file families: plan does not read the files) or d > AS_COST_HORIZON_DMAX. */
static double horizon_of(const as_trial *t) {
  double T = t->integ.T; /* as_trial_horizon leaves it where it fails */
  if (t->integ.T_decide > 0.0 && t->d <= AS_COST_HORIZON_DMAX && as_trial_horizon(t, &T) != AS_OK)
    as_error_clear();
  return T;
}

double as_cost_steps(const as_trial *t) {
  const double T = horizon_of(t), dt = t->integ.dt;
  double steps;
  const int controlled =
      t->integ.method == AS_METHOD_DOPRI5 && (t->integ.rtol > 0.0 || t->integ.atol > 0.0);
  if (controlled) {
    /* Local error ~ (h rate)^5 against rtol: h ~ rtol^(1/5) / rate, so the steps grow as
     * T rate rtol^(-1/5), after a start-up of some steps that scales alike; the constants were
     * measured (docs/performance.md, "Cost model"). Stiff attention (a Gaussian M, fast
     * growth) can take far more steps, up to max_steps: --calibrate on such a spec. */
    const double tol = t->integ.rtol > 0.0 ? t->integ.rtol : 1e-6;
    steps = (AS_COST_DOPRI5_STEPS0 + AS_COST_DOPRI5_PER_RATE * T * dynamics_rate(t)) *
            pow(tol / 1e-6, -0.2);
  } else {
    steps = dt > 0 ? ceil(T / dt - 1e-9) : 1.0;
  }
  steps += t->output.n_snapshots; /* a landing step at each snapshot (at most one each) */
  if (steps < 1) steps = 1;
  if (steps > (double)t->integ.max_steps) steps = (double)t->integ.max_steps;
  return steps;
}

double as_cost_sinkhorn_iters(const as_trial *t) {
  if (t->attn.attention == AS_ATTN_SINKHORN_FIXED) return t->attn.sinkhorn_iters; /* exactly */
  if (t->attn.attention != AS_ATTN_SINKHORN) return 0.0;
  const double cap = t->attn.sinkhorn_iters, tol = t->attn.sinkhorn_tol;
  double it = cap; /* tol 0: never met, every evaluation runs to the cap */
  if (tol > 0.0 && t->n <= AS_ATTENTION_SINKHORN_NEWTON_N)
    it = AS_COST_SINKHORN_ITERS0 + AS_COST_SINKHORN_ITERS_PER_N * t->n; /* warm, Newton */
  else if (tol > 0.0) /* linear convergence: iterations per decade of the tolerance */
    it = AS_COST_SINKHORN_PER_DECADE * fmax(1.0, -log10(tol));
  return it < cap ? it : cap;
}

/* The operations of a trial by kind (cost.h, "Work"): the pair terms of the attention (per
 * path), the dense products, the Sinkhorn entries, the triples' d^3, the classifier's units,
 * the trials and the bulk bytes. as_cost_work weights them with the AS_COST_NS_* figures. */
enum {
  K_PAIR,
  K_DENSE = AS_COST_PATH_COUNT,
  K_SINKHORN,
  K_NEWTON,
  K_CUBE,
  K_CLASSIFY,
  K_TRIAL,
  K_BYTE,
  K_N
};
_Static_assert(K_N == AS_COST_KINDS, "cost.h: AS_COST_KINDS is the number of kinds");

/* One evaluation of the right-hand side on n tokens, added to k[] times `times`. */
static void rhs_ops(const as_trial *t, double n, as_cost_path path, double times, double *k) {
  const double d = t->d, H = t->blocks.heads > 1 ? t->blocks.heads : 1, nn = n * n;
  /* Per head: n^2 pairs (the score's exponential or, for hardmax, comparison, and its
   * bookkeeping: the path's cost), the scores and P Z (n^2 d multiply-adds each) and M x and
   * V (n d^2 each), dense. */
  k[K_PAIR + path] += times * H * nn;
  k[K_DENSE] += times * H * (2.0 * nn * d + 2.0 * n * d * d);
  /* Sinkhorn: n^2 entries per iteration (three log-sum-exp passes and the normalisation);
   * up to AS_ATTENTION_SINKHORN_NEWTON_N tokens a Newton step of n^3 in every iteration after
   * the first (the row softmax); sinkhorn_fixed takes no Newton step. */
  const double sk = as_cost_sinkhorn_iters(t);
  k[K_SINKHORN] += times * H * sk * nn;
  if (t->attn.attention == AS_ATTN_SINKHORN && sk > 1.0 && n <= AS_ATTENTION_SINKHORN_NEWTON_N)
    k[K_NEWTON] += times * H * (sk - 1.0) * nn * n;
  if (t->attn.norm == AS_NORM_SPHERE) k[K_DENSE] += times * 4.0 * n * d;
  if (t->blocks.ffn != AS_FFN_NONE) {
    if (t->blocks.ffn_form == AS_FFN_INSIDE) {
      k[K_DENSE] += times * (n * d * d + n * d * AS_COST_EXP_OPS);
    } else {
      const double w = t->blocks.ffn_width > 0 ? t->blocks.ffn_width : d;
      k[K_DENSE] += times * (2.0 * n * d * w + n * w * AS_COST_EXP_OPS);
    }
  }
}

/* One trial's integration on n tokens. */
static void integration_ops(const as_trial *t, int n, double *k) {
  const double d = t->d;
  double stages = as_method_stages(t->integ.method); /* from the method's tableau */
  if (t->attn.norm == AS_NORM_SPHERE && as_tableau_of(t->integ.method) &&
      as_tableau_of(t->integ.method)->fsal)
    stages += 1; /* the derivative again at the state put back on the sphere */
  double steps = as_cost_steps(t);
  if (t->integ.method == AS_METHOD_DOPRI5 && (t->integ.rtol > 0.0 || t->integ.atol > 0.0))
    steps *= 1.0 + AS_COST_DOPRI5_REJECTED;
  const as_cost_path path = as_cost_path_of(t);
  rhs_ops(t, n, path, steps * stages, k);
  k[K_DENSE] += steps * 4.0 * n * d; /* the step's guard: speeds and radius */
  /* In the z variables every evaluation also works on d x d matrices (the basis of e^{tV} and
   * the scores' matrix at the stage's time): measured about d^3 (23 us at d = 64, whatever n,
   * docs/performance.md). */
  if (t->integ.vars == AS_VARS_Z && t->attn.norm != AS_NORM_SPHERE)
    k[K_DENSE] += steps * stages * d * d * d;
  /* On the sphere the metastability tracker counts the clusters after every step (meta.h):
   * pair operations of the token distances. */
  if (t->attn.norm == AS_NORM_SPHERE) {
    k[K_PAIR + path] += steps * (double)n * n;
    k[K_DENSE] += steps * (double)n * n * d;
  }
}

void as_cost_kinds(const as_trial *t, double k[AS_COST_KINDS]) {
  const double d = t->d, H = t->blocks.heads > 1 ? t->blocks.heads : 1;
  const int field = as_blocks_kind_of(t) == AS_BLOCKS_FIELD;
  const double blocks = as_blocks_kind_of(t) == AS_BLOCKS_OFF ? 1.0 : (double)as_blocks_count(t);
  for (int i = 0; i < K_N; i++) k[i] = 0.0;
  integration_ops(t, t->n, k);
  /* The triple (each head of each block) and its spectral analysis. */
  k[K_CUBE] += blocks * H * d * d * d;
  k[K_TRIAL] += 1.0;
  /* The classification of the end state (classify.h) and, for the blocks field, each head's
   * P rank (a full SVD). */
  k[K_CLASSIFY] += as_classify_work(t->n, t->d);
  if (field && t->n <= AS_ATTENTION_STREAM_N)
    k[K_CLASSIFY] += H * 4.0 / 3.0 * (double)t->n * t->n * t->n;
  k[K_BYTE] += as_cost_bytes(t) - (double)sizeof(as_record);
  if (t->reference_n > 0) { /* ref_w1: the trial once more at reference_n tokens (pipeline.c) */
    as_trial r = *t;
    r.n = t->reference_n;
    r.reference_n = 0;
    integration_ops(&r, r.n, k);
  }
}

/* Work units of the operation counts k (as_cost_kinds). */
static double work_of_kinds(const double k[K_N]) {
  static const double ns[K_N] = {AS_COST_NS_BATCH,    AS_COST_NS_SMALL,  AS_COST_NS_MODEL,
                                 AS_COST_NS_BLOCKS,   AS_COST_NS_STREAM, AS_COST_NS_DENSE,
                                 AS_COST_NS_SINKHORN, AS_COST_NS_NEWTON, AS_COST_NS_SPECTRAL,
                                 AS_COST_NS_CLASSIFY, AS_COST_NS_TRIAL,  AS_COST_NS_BYTE};
  double sum = 0.0;
  for (int i = 0; i < K_N; i++) sum += ns[i] * k[i];
  return sum * UNITS_PER_NS;
}

double as_cost_work(const as_trial *t) {
  double k[K_N];
  as_cost_kinds(t, k);
  return work_of_kinds(k);
}

int as_cost_trial_ranks(const as_trial *t, int job_ranks) {
  if (t->ranks_per_trial >= 1) return t->ranks_per_trial;
  if (t->n <= AS_ATTENTION_STREAM_N || job_ranks <= 1) return 1;
  const int want = (t->n + AS_COST_GROUP_ROWS - 1) / AS_COST_GROUP_ROWS;
  return want < job_ranks ? want : job_ranks;
}

as_status as_cost_ranks_check(const as_spec *spec, int job_ranks) {
  as_status st = AS_OK;
  AS_CHECK(spec != NULL && job_ranks >= 1, AS_ERR_ARG, "as_cost_ranks_check: bad arguments");
  const uint64_t points = as_spec_point_count(spec);
  for (uint64_t i = 0; i < points; i++) {
    as_trial t;
    AS_TRY(as_spec_trial(spec, i, &t));
    AS_CHECK(t.ranks_per_trial <= job_ranks, AS_ERR_SPEC,
             "case '%s': trial %" PRIu64 " asks for ranks_per_trial = %d, more than the %d "
             "ranks of the job: run it with at least %d ranks (mpiexec -n), or lower "
             "ranks_per_trial",
             t.case_name ? t.case_name : "?", i, t.ranks_per_trial, job_ranks, t.ranks_per_trial);
  }
cleanup:
  return st;
}

int as_cost_max_ranks_per_trial(const as_spec *spec) {
  int most = 0;
  const uint64_t points = spec ? as_spec_point_count(spec) : 0;
  for (uint64_t i = 0; i < points; i++) {
    as_trial t;
    if (as_spec_trial(spec, i, &t) != AS_OK) continue; /* run reports it */
    if (t.ranks_per_trial > most) most = t.ranks_per_trial;
  }
  as_error_clear();
  return most;
}

double as_cost_bytes(const as_trial *t) {
  uint64_t counts[AS_BULK_COUNT];
  as_outset_bulk_counts(t, counts);
  double b = (double)sizeof(as_record);
  for (int k = 0; k < AS_BULK_COUNT; k++) b += 8.0 * (double)counts[k];
  return b;
}

double as_cost_memory(const as_trial *t) {
  uint64_t counts[AS_BULK_COUNT];
  as_outset_bulk_counts(t, counts);
  const int m = t->triple.m_rows > 0 ? t->triple.m_rows : t->d;
  double b = as_pipeline_bytes(t->n, t->d, m);
  if (t->reference_n > 0) b += as_pipeline_bytes(t->reference_n, t->d, m); /* ref_w1's run */
  /* Sinkhorn's scratch (3 n^2 + 8 n doubles, dyn_model.c; both kinds), which the pipeline's
   * estimate of a softmax trial leaves out: 1.5 times its S and P. */
  if (as_attn_is_sinkhorn(t->attn.attention)) {
    b += 8.0 * (double)as_attention_sinkhorn_doubles(t->n);
    if (t->reference_n > 0) b += 8.0 * (double)as_attention_sinkhorn_doubles(t->reference_n);
  }
  for (int k = 0; k < AS_BULK_COUNT; k++) b += 8.0 * (double)counts[k];
  return b;
}

double as_cost_memory_available(int ranks_on_node) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0.0;
  char line[256];
  double kb = 0.0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024.0 / (ranks_on_node > 0 ? ranks_on_node : 1);
}

#define GIB 1073741824.0

as_status as_cost_memory_scan(const as_spec *spec, double limit, as_cost_memory_info *out) {
  as_status st = AS_OK;
  as_cost_memory_info mi;
  memset(&mi, 0, sizeof mi);
  AS_CHECK(spec && out, AS_ERR_ARG, "as_cost_memory_scan: NULL argument");
  mi.limit = limit;
  mi.first_over = mi.first_p = UINT64_MAX;
  /* Memory does not depend on the replicate: the points of replicate 0 are enough. Very
   * large cases are sampled like the estimate (AS_COST_MAX_POINTS in all). */
  const int nc = as_spec_case_count(spec);
  const uint64_t per_case = AS_COST_MAX_POINTS / (uint64_t)(nc > 0 ? nc : 1);
  for (int c = 0; c < nc; c++) {
    uint64_t L = as_spec_case_points(spec, c), off = as_spec_case_offset(spec, c);
    uint64_t step = L > per_case ? L / per_case : 1;
    for (uint64_t q = 0; q < L; q += step) {
      as_trial t;
      if (as_spec_trial(spec, off + q, &t) != AS_OK) continue;
      if (t.n > AS_ATTENTION_STREAM_N && t.output.attention && mi.over_p == 0) {
        mi.first_p = off + q;
        mi.over_p++;
      } else if (t.n > AS_ATTENTION_STREAM_N && t.output.attention) {
        mi.over_p++;
      }
      double b = as_cost_memory(&t);
      if (mi.min_bytes == 0.0 || b < mi.min_bytes) mi.min_bytes = b;
      if (b > mi.max_bytes) {
        mi.max_bytes = b;
        mi.max_trial = off + q;
      }
      if (limit > 0.0 && b + AS_COST_RANK_BASE_BYTES > limit) {
        if (mi.over == 0) mi.first_over = off + q;
        mi.over++;
      }
    }
  }
  if (mi.over_p > 0) {
    as_trial t;
    AS_TRY(as_spec_trial(spec, mi.first_p, &t));
    st = as_error_set(AS_ERR_SPEC, __FILE__, __LINE__, __func__,
                      "trial %" PRIu64 " (case '%s', n = %d): `output: attention` needs the whole "
                      "final P, which is never formed above %d tokens (streamed attention); "
                      "%" PRIu64 " point%s of the sweep ask%s for it",
                      mi.first_p, t.case_name ? t.case_name : "?", t.n, AS_ATTENTION_STREAM_N,
                      mi.over_p, mi.over_p == 1 ? "" : "s", mi.over_p == 1 ? "s" : "");
  } else if (mi.over > 0) {
    as_trial t;
    AS_TRY(as_spec_trial(spec, mi.first_over, &t));
    st = as_error_set(AS_ERR_SPEC, __FILE__, __LINE__, __func__,
                      "trial %" PRIu64 " (case '%s', n = %d, d = %d) needs about %.3g GiB per rank "
                      "(%.3g GiB of workspace and output + %.3g GiB for the process), above the "
                      "limit of %.3g GiB per rank (memory_limit, or MemAvailable / ranks on the "
                      "node); %" PRIu64 " point%s of the sweep do%s not fit",
                      mi.first_over, t.case_name ? t.case_name : "?", t.n, t.d,
                      (as_cost_memory(&t) + AS_COST_RANK_BASE_BYTES) / GIB,
                      as_cost_memory(&t) / GIB, AS_COST_RANK_BASE_BYTES / GIB, limit / GIB, mi.over,
                      mi.over == 1 ? "" : "s", mi.over == 1 ? "es" : "");
  }
cleanup:
  *out = mi;
  return st;
}

void as_cost_model_default(as_cost_model *m) {
  m->a = AS_COST_DEFAULT_A;
  m->b = AS_COST_DEFAULT_B;
}

double as_cost_seconds(const as_cost_model *m, double work) {
  return m->a * work + m->b;
}

void as_cost_fit(const double *x, const double *y, int m, as_cost_model *model) {
  if (m <= 0) return;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < m; i++) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  double den = m * sxx - sx * sx;
  double a = 0, b = model->b;
  if (m >= 2 && den > 1e-12 * m * sxx) {
    a = (m * sxy - sx * sy) / den;
    b = (sy - a * sx) / m;
  }
  if (!(a > 0)) { /* all trials alike, or noisy: a pure proportional model */
    a = sx > 0 ? sy / sx : AS_COST_DEFAULT_A;
    b = 0;
  } else if (b < 0) {
    /* A negative time per trial is no model: the least squares fit through the origin, not
     * the slope of the line with its intercept clipped (which overestimates every trial by
     * the intercept it dropped; plan --calibrate gave 11 s for a 0.8 s sweep of two shapes) */
    a = sxx > 0 ? sxy / sxx : AS_COST_DEFAULT_A;
    b = 0;
  }
  model->a = a;
  model->b = b;
}

/* CPU time of the process: what a trial costs on a core of its own (a Slurm allocation), not
 * distorted by other work on a shared machine. */
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

as_status as_cost_calibrate(const as_spec *spec, int samples, as_cost_model *model,
                            as_cost_calibration *info) {
  as_status st = AS_OK;
  as_pipeline *pl = NULL;
  as_matfile *mf = NULL;
  double *x = NULL, *y = NULL;
  as_cost_calibration ci = {0, 0};
  AS_CHECK(spec && model && samples >= 1, AS_ERR_ARG, "as_cost_calibrate: bad arguments");
  const uint64_t N = as_spec_trial_count(spec);
  const uint64_t S = (uint64_t)samples < N ? (uint64_t)samples : N;
  x = malloc((S ? S : 1) * sizeof *x);
  y = malloc((S ? S : 1) * sizeof *y);
  AS_CHECK_ALLOC(x);
  AS_CHECK_ALLOC(y);
  AS_TRY(as_pipeline_create(NULL, NULL, &pl));
  for (uint64_t k = 0; k <= S && N > 0; k++) {
    /* Distinct trials spread over the whole sweep; k = 0 warms the workspaces up untimed. */
    uint64_t idx = k == 0 ? 0 : (uint64_t)((double)(k - 1) * (double)N / (double)S);
    as_trial t;
    as_record rec;
    AS_TRY(as_spec_trial(spec, idx, &t));
    double t0 = now_seconds();
    /* Matrices and tokens from files are part of a trial's cost, as in `run`; a file that
     * cannot be read is the trial's failure there, and here. */
    as_status ls = as_matfile_load(&t, &mf);
    if (ls == AS_OK)
      AS_TRY(as_trial_run(pl, &t, NULL, &rec, NULL));
    else
      AS_TRY(as_trial_failure(&t, ls, 1, &rec));
    as_matfile_destroy(&mf);
    double t1 = now_seconds();
    if (k == 0) continue;
    if (rec.outcome == AS_OUT_FAILED) ci.failed++;
    x[ci.trials] = as_cost_work(&t);
    y[ci.trials] = t1 - t0;
    ci.trials++;
  }
  as_cost_fit(x, y, ci.trials, model);
cleanup:
  if (info) *info = ci;
  as_matfile_destroy(&mf);
  as_pipeline_destroy(&pl);
  free(x);
  free(y);
  return st;
}

void as_cost_estimate_free(as_cost_estimate *e) {
  if (!e) return;
  free(e->cases);
  memset(e, 0, sizeof *e);
}

double as_cost_case_seconds(const as_cost_estimate *e, const as_spec *spec, const as_cost_model *m,
                            int c) {
  if (c < 0 || c >= e->n_cases) return 0;
  double R = (double)as_spec_replicates(spec), P = (double)as_spec_case_points(spec, c);
  return R * (m->a * e->cases[c].work + m->b * P);
}

double as_cost_spectral_seconds(int d, int nprow, int npcol) {
  double n = d, pq = (double)nprow * npcol;
  double flops = (10.0 / 3 + 10.0 + 4.0 / 3 + 2.0 / 3 + 2.0 * AS_COST_SIGN_STEPS) * n * n * n;
  return flops * (1.0 + 0.15 * (pq - 1)) / (AS_COST_GRID_FLOPS * pq);
}

as_status as_cost_estimate_spec(const as_spec *spec, const as_cost_model *m,
                                as_cost_estimate *out) {
  as_status st = AS_OK;
  as_cost_estimate e;
  memset(&e, 0, sizeof e);
  AS_CHECK(spec && m && out, AS_ERR_ARG, "as_cost_estimate_spec: NULL argument");
  e.n_cases = as_spec_case_count(spec);
  e.trials = as_spec_trial_count(spec);
  e.cases = calloc((size_t)(e.n_cases > 0 ? e.n_cases : 1), sizeof *e.cases);
  AS_CHECK_ALLOC(e.cases);
  const uint64_t per_case = AS_COST_MAX_POINTS / (uint64_t)(e.n_cases > 0 ? e.n_cases : 1);
  double max_work = 0;
  const double R = (double)as_spec_replicates(spec);
  int thr = as_spec_spectral_threshold(spec), gp = 1, gq = 1;
  as_spec_spectral_grid(spec, &gp, &gq);
  for (int c = 0; c < e.n_cases; c++) {
    as_cost_case *pc = &e.cases[c];
    uint64_t L = as_spec_case_points(spec, c), off = as_spec_case_offset(spec, c);
    /* Very large cases are sampled evenly and scaled up. */
    uint64_t step = L > per_case ? L / per_case : 1;
    if (step > 1) e.sampled = 1;
    for (uint64_t q = 0; q < L; q += step) {
      as_trial t;
      if (as_spec_trial(spec, off + q, &t) != AS_OK) continue;
      double k[AS_COST_KINDS];
      as_cost_kinds(&t, k); /* once: a T_decide trial's horizon analyses its triple */
      double w = work_of_kinds(k);
      if (t.d >= thr) { /* the spectral analysis is the pre-pass's (below), not the trial's */
        w -= AS_COST_NS_SPECTRAL * k[K_CUBE] * UNITS_PER_NS;
        k[K_CUBE] = 0.0;
      }
      for (int i = 0; i < AS_COST_KINDS; i++) e.kinds[i] += R * (double)step * k[i];
      pc->work += w;
      pc->bytes += as_cost_bytes(&t);
      if (w > pc->max_work) pc->max_work = w;
      pc->visited++;
      if (t.d >= thr) {
        double g = as_cost_spectral_seconds(t.d, gp, gq);
        e.large_trials += R * (double)step;
        e.large_seconds += R * g * (double)step;
        if (g > e.large_max) e.large_max = g;
      }
    }
    double scale = pc->visited ? (double)L / (double)pc->visited : 0;
    pc->work *= scale;
    pc->bytes *= scale;
    e.seconds += as_cost_case_seconds(&e, spec, m, c);
    e.bytes += (double)as_spec_replicates(spec) * pc->bytes;
    if (pc->max_work > max_work) max_work = pc->max_work;
  }
  e.max_seconds = as_cost_seconds(m, max_work);
  *out = e;
  memset(&e, 0, sizeof e);
cleanup:
  as_cost_estimate_free(&e);
  return st;
}

/* ---- the saved calibration (cost.h) */

void as_cost_machine(char *buf, size_t cap) {
  char host[256] = "?", model[256] = "";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    const char *c = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && c) {
      snprintf(model, sizeof model, "%s", c + 1 + (c[1] == ' '));
      model[strcspn(model, "\n")] = '\0';
      break;
    }
  }
  if (f) fclose(f);
  snprintf(buf, cap, "%s, %s", host, model[0] ? model : "unknown CPU");
  for (char *p = buf; *p; p++)
    if ((unsigned char)*p < ' ') *p = ' '; /* one line */
}

as_status as_cost_model_save(const char *path, const as_cost_model *m, const as_cost_saved *info) {
  as_status st = AS_OK;
  FILE *f = NULL;
  AS_CHECK(path && m && info, AS_ERR_ARG, "as_cost_model_save: NULL argument");
  AS_TRY(as_path_check(path, "the calibration", 0)); /* a FIFO would block the open */
  f = fopen(path, "w");
  AS_CHECK(f != NULL, AS_ERR_IO, "%s: cannot write the calibration: %s", path, strerror(errno));
  fprintf(f,
          "# attnsweep cost calibration, written by `attnsweep plan --calibrate` (cost.h):\n"
          "# seconds of a trial = a * work + b; read by `attnsweep plan` (and --sbatch, --array)\n"
          "%s %d\na %.17g\nb %.17g\ntrials %d\nmachine %s\nspec_sha256 %s\n",
          AS_COST_SAVED_MAGIC, AS_COST_SAVED_VERSION, m->a, m->b, info->trials, info->machine,
          info->spec_sha256);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  f = NULL;
  AS_CHECK(!bad, AS_ERR_IO, "%s: cannot write the calibration", path);
cleanup:
  if (f) fclose(f);
  return st;
}

/* A number > 0 (or >= 0 with zero_ok), finite, and nothing after it. */
static int parse_positive(const char *v, int zero_ok, double *out) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end || !isfinite(x) || x < 0 || (!zero_ok && x == 0)) return 0;
  *out = x;
  return 1;
}

as_status as_cost_model_load(const char *path, as_cost_model *m, as_cost_saved *info) {
  as_status st = AS_OK;
  FILE *f = NULL;
  as_cost_saved s;
  memset(&s, 0, sizeof s);
  AS_CHECK(path && m && info, AS_ERR_ARG, "as_cost_model_load: NULL argument");
  AS_TRY(as_path_check(path, "the calibration", 0)); /* a FIFO would block the open */
  f = fopen(path, "r");
  AS_CHECK(f != NULL, AS_ERR_DATA, "%s: cannot read the calibration: %s", path, strerror(errno));
  char line[1024];
  int ln = 0, have = 0;
  double a = 0, b = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    size_t len = strcspn(line, "\n");
    AS_CHECK(line[len] == '\n' || feof(f), AS_ERR_DATA, "%s:%d: line too long", path, ln);
    line[len] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    char *v = strchr(line, ' ');
    if (v) *v++ = '\0';
    if (ln > 0 && !(have & 1)) {
      AS_CHECK(strcmp(line, AS_COST_SAVED_MAGIC) == 0 && v && atoi(v) == AS_COST_SAVED_VERSION,
               AS_ERR_DATA,
               "%s:%d: not an attnsweep calibration (version %d; it starts with '%s %d'): run "
               "`attnsweep plan SPEC --calibrate` again",
               path, ln, AS_COST_SAVED_VERSION, AS_COST_SAVED_MAGIC, AS_COST_SAVED_VERSION);
      have |= 1;
    } else if (strcmp(line, "a") == 0) {
      AS_CHECK(v && parse_positive(v, 0, &a), AS_ERR_DATA,
               "%s:%d: a (seconds per unit of work) must be a number > 0", path, ln);
      have |= 2;
    } else if (strcmp(line, "b") == 0) {
      AS_CHECK(v && parse_positive(v, 1, &b), AS_ERR_DATA,
               "%s:%d: b (seconds per trial) must be a number >= 0", path, ln);
      have |= 4;
    } else if (strcmp(line, "trials") == 0) {
      double k = 0;
      AS_CHECK(v && parse_positive(v, 0, &k) && k == floor(k) && k <= 1e9, AS_ERR_DATA,
               "%s:%d: trials must be a whole number > 0", path, ln);
      s.trials = (int)k;
    } else if (strcmp(line, "machine") == 0) {
      snprintf(s.machine, sizeof s.machine, "%s", v ? v : "");
    } else if (strcmp(line, "spec_sha256") == 0) {
      snprintf(s.spec_sha256, sizeof s.spec_sha256, "%s", v ? v : "");
    } else {
      AS_CHECK(0, AS_ERR_DATA, "%s:%d: unknown entry '%s' (a, b, trials, machine, spec_sha256)",
               path, ln, line);
    }
  }
  AS_CHECK(!ferror(f), AS_ERR_IO, "%s: read error", path);
  AS_CHECK(have == 7, AS_ERR_DATA, "%s: %s: run `attnsweep plan SPEC --calibrate` again", path,
           !(have & 1) ? "empty, not an attnsweep calibration" : "incomplete (it needs a and b)");
  m->a = a;
  m->b = b;
  *info = s;
cleanup:
  if (f) fclose(f);
  return st;
}
