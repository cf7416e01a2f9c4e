/* pipeline.c: one trial from its parameters to its record (pipeline.h).
 *
 * Workspaces are sized for the shape (n, d, m) of the last trial and rebuilt only when the
 * shape changes: a sweep of many trials of one shape allocates once.
 * Every failure inside a trial goes through as_trial_failure: the trial's own data problems
 * become its failed record, bugs and machine failures stop the run (status.h).
 */
#include "attnsweep/pipeline.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnsweep/attention.h"
#include "attnsweep/batch.h"
#include "attnsweep/blocks.h"
#include "attnsweep/classify.h"
#include "attnsweep/dynamics.h"
#include "attnsweep/expm.h"
#include "attnsweep/measure.h"
#include "attnsweep/meta.h"
#include "attnsweep/near.h"
#include "attnsweep/theorem.h"
#include "attnsweep/tokens.h"
#include "attnsweep/triple.h"
#include "linalg.h"
#include "linalg_dyn.h"

struct as_pipeline {
  as_spectral_fn spectral; /* analysis hook, NULL: as_spectral_analyze */
  void *spectral_ctx;
  int spectral_below; /* triples with d below this are analysed here (spectral_of) */
  int n, d, m;        /* shape of the workspaces below (0: none yet) */
  as_triple *tr;
  as_spectral *sp;
  as_spectral *sp_near; /* sp with the nearest theorem in place of sp->theorem */
  as_spectral *sp_memo; /* the last analysis (d <= AS_PIPELINE_MEMO_DMAX), of the triple ... */
  double *memo_vm;      /* ... whose V and M are these (2 d x d); memo_ok: it is valid */
  int memo_ok;
  as_dyn *dyn;
  as_classify_ws *cws;
  as_expm_plan *expm; /* z from x when the x variables were integrated */
  double *X0;         /* n x d initial tokens */
  double *X;          /* n x d final x */
  double *Z;          /* n x d final z (x variables only) */
  double *E;          /* d x d e^{-tV} */
  double *PS;         /* n x d P Z for the classifier when P is not formed (else NULL) */
  double *Zp, *Zu;    /* n x d: the positive part of z from x (as_expm_positive_part) and its
                         scratch, for the classifier's precision rule (P formed; else NULL) */
  int *ipiv;          /* d pivots */
  /* The measured approach rates of t_decide (classify.h; n <= AS_CLASSIFY_SVD_NMAX only): */
  double *acc_F, *acc_Z, *acc_A; /* n x d: z' at the end, z + h z', then z'' */
  double *p_keep;                /* n x n: the final P, kept while z'' is evaluated */
  int64_t fault_trial; /* test hook (pipeline.h): trial that meets an injected bug, -1 none */
  int fault_lapack;    /* 1: the injected bug is a LAPACK illegal argument, 0: an invalid
                          argument to a core function */
  as_meta *meta;       /* cluster counts along a run (model variants), for shape (n, d) */
  /* batches (batch.h), allocated for the shape on the first batch: */
  as_dyn *bdyn[AS_BATCH_LANES]; /* one workspace per lane */
  double *bx0;                  /* AS_BATCH_LANES x n x d initial tokens */
  double classify_s;            /* CPU seconds (this thread) in as_classify, both calls per trial,
                                   of the timed trials */
  int64_t classified;           /* trials classified */
  int64_t classify_timed;       /* of them timed: one in AS_PIPELINE_CLASSIFY_SAMPLE */
  int ctx_rank;                 /* rank for the error context of batched trials, -1: none */
  /* This rank's part of a trial over several ranks (parts 1: the whole trial). */
  as_pipeline_group group;
  as_pipeline *ref; /* the reference_n runs of ref_w1 (created on first use), or NULL */
};

/* A trial integrated by a batch: its workspace, statistics and e^{tV} path. */
typedef struct prerun {
  as_dyn *dyn;
  as_dyn_stats ds;
  as_expm path;
  double seconds; /* its share of the batch's integration time */
} prerun;

/* The test hook ATTNSWEEP_TEST_INTERNAL_ERROR=<trial>[:lapack] (pipeline.h). Anything else
 * in the variable leaves the hook off. */
static void read_fault_hook(as_pipeline *pl) {
  pl->fault_trial = -1;
  pl->fault_lapack = 0;
  const char *v = getenv("ATTNSWEEP_TEST_INTERNAL_ERROR");
  if (!v || !*v) return;
  char *end = NULL;
  errno = 0;
  unsigned long long k = strtoull(v, &end, 10);
  if (errno || end == v || k > INT64_MAX) return;
  if (strcmp(end, ":lapack") == 0)
    pl->fault_lapack = 1;
  else if (*end != '\0')
    return;
  pl->fault_trial = (int64_t)k;
}

/* The injected bug: a real one, so it travels the real path (its own file:line). */
static as_status inject_fault(as_pipeline *pl) {
  as_status st = AS_OK;
  if (pl->fault_lapack) {
    /* dgesv with lda = 0 < n: LAPACK reports argument 4 illegal (AS_LAPACK_CHECK). */
    int one = 1, zero = 0, info = 0;
    double a = 1.0, b = 1.0;
    dgesv_(&one, &one, &a, &zero, pl->ipiv, &b, &one, &info);
    AS_LAPACK_CHECK("dgesv (test hook ATTNSWEEP_TEST_INTERNAL_ERROR)", info);
  } else {
    /* A core function called with an invalid argument: AS_ERR_ARG, promoted to internal. */
    AS_TRY(as_tokens_init(NULL, pl->X0));
  }
  AS_CHECK(0, AS_ERR_INTERNAL, "test hook: the injected fault was not detected");
cleanup:
  return st;
}

/* Relative tolerance of the spectral tests (symmetry, simplicity, identity). */
#define AS_PIPELINE_SPECTRAL_TOL 1e-10

/* Up to this d the last spectral analysis is kept for the next trial with the same triple
 * (spectral_of); above it the analysis costs far more than the comparison saves anyway. */
#define AS_PIPELINE_MEMO_DMAX 16

/* as_spectral_analyze of pl->tr into pl->sp. The analysis is a function of V and M alone: the
 * last one is copied when this triple has the same bits (a family with one triple, identity or
 * minus_identity, analyses it once per worker: dgeev, dgesvd and the projector tests were 2.5%
 * of a paper-setting run). */
static as_status spectral_of(as_pipeline *pl) {
  as_status st = AS_OK;
  const size_t dd = (size_t)pl->d * (size_t)pl->d;
  if (pl->memo_ok && memcmp(pl->memo_vm, pl->tr->V, dd * sizeof(double)) == 0 &&
      memcmp(pl->memo_vm + dd, pl->tr->M, dd * sizeof(double)) == 0)
    return as_spectral_copy(pl->sp_memo, pl->sp);
  pl->memo_ok = 0;
  AS_TRY(as_spectral_analyze(pl->tr, AS_PIPELINE_SPECTRAL_TOL, pl->sp));
  if (pl->sp_memo) {
    AS_TRY(as_spectral_copy(pl->sp, pl->sp_memo));
    memcpy(pl->memo_vm, pl->tr->V, dd * sizeof(double));
    memcpy(pl->memo_vm + dd, pl->tr->M, dd * sizeof(double));
    pl->memo_ok = 1;
  }
cleanup:
  return st;
}

static void free_shape(as_pipeline *pl) {
  as_triple_destroy(&pl->tr);
  as_spectral_destroy(&pl->sp);
  as_spectral_destroy(&pl->sp_near);
  as_spectral_destroy(&pl->sp_memo);
  free(pl->memo_vm);
  pl->memo_vm = NULL;
  pl->memo_ok = 0;
  as_dyn_destroy(&pl->dyn);
  as_classify_ws_destroy(&pl->cws);
  as_expm_destroy(&pl->expm);
  as_meta_destroy(&pl->meta);
  for (int l = 0; l < AS_BATCH_LANES; l++) as_dyn_destroy(&pl->bdyn[l]);
  free(pl->bx0);
  pl->bx0 = NULL;
  free(pl->X0);
  free(pl->X);
  free(pl->Z);
  free(pl->E);
  free(pl->PS);
  pl->PS = NULL;
  free(pl->Zp);
  free(pl->Zu);
  pl->Zp = pl->Zu = NULL;
  free(pl->ipiv);
  free(pl->acc_F);
  free(pl->acc_Z);
  free(pl->acc_A);
  free(pl->p_keep);
  pl->acc_F = pl->acc_Z = pl->acc_A = pl->p_keep = NULL;
  pl->X0 = pl->X = pl->Z = pl->E = NULL;
  pl->ipiv = NULL;
  pl->n = pl->d = pl->m = 0;
}

as_status as_pipeline_create(as_spectral_fn spectral, void *spectral_ctx, as_pipeline **out) {
  as_status st = AS_OK;
  as_pipeline *pl = NULL;
  AS_CHECK(out != NULL, AS_ERR_ARG, "as_pipeline_create: out is NULL");
  pl = calloc(1, sizeof *pl);
  AS_CHECK_ALLOC(pl);
  pl->spectral = spectral;
  pl->spectral_ctx = spectral_ctx;
  pl->ctx_rank = -1;
  pl->group.parts = 1;
  read_fault_hook(pl);
  *out = pl;
  pl = NULL;
cleanup:
  free(pl);
  return st;
}

void as_pipeline_set_spectral_below(as_pipeline *pl, int d_below) {
  if (pl) pl->spectral_below = d_below;
}

void as_pipeline_destroy(as_pipeline **p) {
  if (!p || !*p) return;
  free_shape(*p);
  as_pipeline_destroy(&(*p)->ref);
  free(*p);
  *p = NULL;
}

static as_status ensure_shape(as_pipeline *pl, int n, int d, int m) {
  as_status st = AS_OK;
  if (pl->n == n && pl->d == d && pl->m == m) return AS_OK;
  free_shape(pl);
  size_t nd = (size_t)n * (size_t)d;
  AS_TRY(as_triple_create(d, m, &pl->tr));
  AS_TRY(as_spectral_create(d, &pl->sp));
  AS_TRY(as_spectral_create(d, &pl->sp_near));
  if (d <= AS_PIPELINE_MEMO_DMAX) {
    AS_TRY(as_spectral_create(d, &pl->sp_memo));
    pl->memo_vm = malloc(2 * (size_t)d * (size_t)d * sizeof *pl->memo_vm);
    AS_CHECK_ALLOC(pl->memo_vm);
  }
  AS_TRY(as_dyn_create(n, d, &pl->dyn));
  AS_TRY(as_classify_ws_create(n, d, &pl->cws));
  AS_TRY(as_expm_create(d, &pl->expm));
  AS_TRY(as_meta_create(n, d, &pl->meta));
  pl->X0 = malloc(nd * sizeof *pl->X0);
  pl->X = malloc(nd * sizeof *pl->X);
  pl->Z = malloc(nd * sizeof *pl->Z);
  pl->E = malloc((size_t)d * (size_t)d * sizeof *pl->E);
  AS_CHECK_ALLOC(pl->X0);
  AS_CHECK_ALLOC(pl->X);
  AS_CHECK_ALLOC(pl->Z);
  if (n > AS_ATTENTION_STREAM_N) {
    pl->PS = malloc(nd * sizeof *pl->PS);
    AS_CHECK_ALLOC(pl->PS);
  } else {
    pl->Zp = malloc(nd * sizeof *pl->Zp);
    pl->Zu = malloc(nd * sizeof *pl->Zu);
    AS_CHECK_ALLOC(pl->Zp);
    AS_CHECK_ALLOC(pl->Zu);
  }
  pl->ipiv = malloc((size_t)d * sizeof *pl->ipiv);
  if (n <= AS_CLASSIFY_SVD_NMAX) {
    pl->acc_F = malloc(nd * sizeof *pl->acc_F);
    pl->acc_Z = malloc(nd * sizeof *pl->acc_Z);
    pl->acc_A = malloc(nd * sizeof *pl->acc_A);
    pl->p_keep = malloc((size_t)n * (size_t)n * sizeof *pl->p_keep);
    AS_CHECK_ALLOC(pl->acc_F);
    AS_CHECK_ALLOC(pl->acc_Z);
    AS_CHECK_ALLOC(pl->acc_A);
    AS_CHECK_ALLOC(pl->p_keep);
  }
  AS_CHECK_ALLOC(pl->E);
  AS_CHECK_ALLOC(pl->ipiv);
  pl->n = n;
  pl->d = d;
  pl->m = m;
cleanup:
  if (st != AS_OK) free_shape(pl);
  return st;
}

double as_pipeline_bytes(int n, int d, int m) {
  const double nd = (double)n * d, dd = (double)d * d;
  /* X0, X, Z, E, ipiv, and PS (streamed) or Zp, Zu; the triple (V, M, Q, K: m x d) and its
   * spectral analysis (three of them, with both projectors: about 15 d^2 doubles with LAPACK's
   * workspaces); the e^{tV} plan for z from x (16 d^2). */
  double b = 8.0 * ((n > AS_ATTENTION_STREAM_N ? 4.0 : 5.0) * nd + dd) + 4.0 * d;
  if (n <= AS_CLASSIFY_SVD_NMAX) b += 8.0 * (3.0 * nd + (double)n * n); /* approach rates */
  b += 8.0 * (2.0 * dd + 2.0 * (double)m * d) + 8.0 * 15.0 * dd + 8.0 * 16.0 * dd;
  return b + as_dyn_bytes(n, d) + as_classify_ws_bytes(n, d);
}

static void record_failure(as_record *rec, as_status st) {
  const as_error *e = as_error_get();
  rec->outcome = AS_OUT_FAILED;
  rec->verdict = AS_VERDICT_FAILED;
  rec->near_verdict = AS_VERDICT_FAILED;
  rec->observed = AS_GEOM_NONE;
  const char *msg = e->status != AS_OK ? e->message : as_status_message(st);
  size_t len = strlen(msg);
  if (len >= sizeof rec->message) len = sizeof rec->message - 1;
  memcpy(rec->message, msg, len);
  rec->message[len] = '\0';
  as_error_clear();
}

static const char *label(const as_enum_table *tab, int v) {
  const char *l = as_enum_label(tab, v);
  return l ? l : "?";
}

/* The trial's index and parameters, for the message of an error that stops the run. */
static void describe_trial(const as_trial *t, char *buf, size_t len) {
  snprintf(buf, len,
           "trial %" PRIu64 " (case '%s', replicate %" PRIu32 ", d %d, n %d, V %s, M %s, "
           "init %s, method %s, vars %s, T %g, dt %g)",
           t->index, t->case_name ? t->case_name : "?", t->replicate, t->d, t->n,
           label(&as_vfamily_table, (int)t->triple.vfamily),
           label(&as_mfamily_table, (int)t->triple.mfamily),
           label(&as_init_table, (int)t->init.kind), label(&as_method_table, (int)t->integ.method),
           label(&as_vars_table, (int)t->integ.vars), t->integ.T, t->integ.dt);
}

as_status as_trial_failure(const as_trial *t, as_status st, int reading_input, as_record *rec) {
  if (st == AS_OK) return AS_OK;
  /* A matrix or token file that HDF5 cannot read is the trial's input, not the machine. */
  if (reading_input && (st == AS_ERR_HDF5 || st == AS_ERR_IO)) st = as_error_promote(AS_ERR_DATA);
  if (as_status_is_trial_problem(st) && t && rec) {
    as_record_init(rec, t);
    record_failure(rec, st);
    return AS_OK;
  }
  /* An invalid argument inside a trial is a bug of the caller: internal, like LAPACK's. */
  if (st == AS_ERR_ARG) st = as_error_promote(AS_ERR_INTERNAL);
  if (t) {
    char what[400];
    describe_trial(t, what, sizeof what);
    as_error_append("; in %s", what);
  }
  return st;
}

static void copy_spectral(const as_spectral *sp, as_expm path, as_record *rec) {
  rec->flags = (int32_t)sp->flags;
  rec->theorem = (int32_t)sp->theorem;
  rec->predicted = (int32_t)sp->predicted;
  rec->expm = (int32_t)path;
  rec->lambda1_re = sp->lambda1_re;
  rec->lambda1_im = sp->lambda1_im;
  rec->lambda2_abs = sp->lambda2_abs;
  rec->gap = sp->gap;
  rec->margin = sp->margin;
  rec->m_min_sym_eig = sp->m_min_sym_eig;
  rec->m_asym = sp->m_asym;
  rec->angle_l1_phi1 = sp->angle_l1_phi1;
  rec->kpos = sp->kpos;
  rec->dim_f = sp->dim_f;
  rec->eig_cond = sp->eig_cond;
}

static void copy_near(const as_near *nr, as_record *rec) {
  rec->near_theorem = (int32_t)nr->theorem;
  rec->near_predicted = (int32_t)nr->predicted;
  rec->near_dist = nr->dist;
#define AS_X_NEAR_COPY(h) rec->dist_##h = nr->h;
  AS_NEAR_HYPOTHESES(AS_X_NEAR_COPY)
#undef AS_X_NEAR_COPY
}

/* Every one of the len entries of x within 2^500 in magnitude: an integration of x to this
 * state keeps its squares (and scores) finite, as the classifier's own range check. */
static int x_in_range(const double *x, size_t len) {
  for (size_t e = 0; e < len; e++)
    if (!(fabs(x[e]) <= 0x1p500)) return 0;
  return 1;
}

/* z'' at the end state (t, Z) by a forward difference of z' along itself, for the measured
 * approach rates of t_decide (classify.h): A = (f(t + h, Z + h f(t, Z)) - f(t, Z)) / h with
 * h = AS_PIPELINE_ACCEL_H. The z right-hand side leaves its P in the workspace, so the final P
 * is kept first and *P points at the copy afterwards. Pure of the run: the same bits for any
 * rank. */
#define AS_PIPELINE_ACCEL_H 1e-6
static as_status end_acceleration(as_pipeline *pl, as_dyn *dyn, double t, const double *Z,
                                  const double **P) {
  as_status st = AS_OK;
  const size_t nd = (size_t)pl->n * (size_t)pl->d, nn = (size_t)pl->n * (size_t)pl->n;
  const double h = AS_PIPELINE_ACCEL_H;
  memcpy(pl->p_keep, *P, nn * sizeof **P);
  *P = pl->p_keep;
  AS_TRY(as_dyn_rhs(dyn, AS_VARS_Z, t, Z, pl->acc_F));
  for (size_t e = 0; e < nd; e++) pl->acc_Z[e] = Z[e] + h * pl->acc_F[e];
  AS_TRY(as_dyn_rhs(dyn, AS_VARS_Z, t + h, pl->acc_Z, pl->acc_A));
  for (size_t e = 0; e < nd; e++) pl->acc_A[e] = (pl->acc_A[e] - pl->acc_F[e]) / h;
cleanup:
  return st;
}

/* The verdict against the nearest theorem (classify.h): the verdict itself when it is the
 * theorem that holds, none without one, else the end state classified once more with the
 * nearest theorem in place of the analysis' theorem, into a scratch record. Runs before the
 * main classification so that the workspace keeps the latter's per-token results. */
static as_status near_verdict(as_pipeline *pl, const as_near *nr, const as_classify_input *in,
                              as_record *rec) {
  as_status st = AS_OK;
  if (nr->theorem == pl->sp->theorem || nr->theorem == AS_THM_NONE) return AS_OK;
  AS_TRY(as_spectral_copy(pl->sp, pl->sp_near));
  pl->sp_near->theorem = nr->theorem;
  pl->sp_near->predicted = nr->predicted;
  as_classify_input nin = *in;
  nin.sp = pl->sp_near;
  as_record scratch = *rec;
  as_status cs = as_classify(&nin, pl->cws, &scratch);
  if (cs != AS_OK && as_status_is_trial_problem(cs)) {
    /* The nearest theorem's coordinates could not be read on this end state: that verdict
     * failed, the trial's own verdict still stands. */
    as_error_clear();
    rec->near_verdict = AS_VERDICT_FAILED;
    return AS_OK;
  }
  AS_TRY(cs);
  rec->near_verdict = scratch.verdict;
  rec->near_reason = scratch.reason;
  rec->near_t_decide = scratch.t_decide;
cleanup:
  return st;
}

typedef struct snap_ctx {
  double *out;   /* n_snapshots x n x d, or NULL */
  size_t stride; /* n * d */
  int next;      /* snapshots delivered so far */
  int max;
  double *clusters; /* n_snapshots cluster counts (as_meta_count), or NULL */
  as_meta *meta;
} snap_ctx;

static void on_snapshot(double t, const double *Z, void *ctx) {
  (void)t;
  snap_ctx *s = ctx;
  if (s->out && s->next < s->max)
    memcpy(s->out + (size_t)s->next * s->stride, Z, s->stride * sizeof *Z);
  if (s->clusters && s->next < s->max) s->clusters[s->next] = (double)as_meta_count(s->meta, Z);
  s->next++;
}

/* Step hook of the dynamics: the cluster count after every step (metastability). */
static void on_step(double t, const double *Z, void *ctx) {
  as_meta_step(ctx, t, Z);
}

/* CPU time of the calling thread: the classifier's cost, not distorted by a busy machine. */
/* Trials per timed classification (as_pipeline_classify_seconds). */
#define AS_PIPELINE_CLASSIFY_SAMPLE 16

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void as_pipeline_set_group(as_pipeline *pl, const as_pipeline_group *g) {
  if (!pl) return;
  if (g && g->parts > 1 && g->part >= 0 && g->part < g->parts && g->exchange) {
    pl->group = *g;
  } else {
    memset(&pl->group, 0, sizeof pl->group);
    pl->group.parts = 1;
  }
}

/* ref_w1 (docs/meanfield.md): trial t once more with reference_n tokens, the first
 * reference_n of t's token stream (tokens.c: a larger n extends a smaller one; explicit and
 * file tokens: the first rows, so reference_n <= n), on a pipeline of its own; then W1 between
 * its cluster measure and the one pl->cws holds from t's classification (measure.h). Sets
 * *interrupted when the stop flag ended the reference run. */
static as_status reference_distance(as_pipeline *pl, const as_trial *t,
                                    const volatile sig_atomic_t *stop, as_record *rec,
                                    int *interrupted) {
  as_status st = AS_OK;
  double *w = NULL;
  int ka = 0, kb = 0;
  const double *ca = NULL, *cb = NULL;
  const int *sa = NULL, *sb = NULL;
  if ((t->init.kind == AS_INIT_EXPLICIT || t->init.kind == AS_INIT_FILE) && t->reference_n > t->n) {
    st = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                      "trial %llu: reference_n = %d exceeds the n = %d tokens given by init",
                      (unsigned long long)t->index, t->reference_n, t->n);
    goto cleanup;
  }
  if (!pl->ref) {
    AS_TRY(as_pipeline_create(pl->spectral, pl->spectral_ctx, &pl->ref));
    pl->ref->spectral_below = pl->spectral_below;
  }
  as_trial rt = *t;
  rt.n = t->reference_n;
  rt.reference_n = 0;
  memset(&rt.output, 0, sizeof rt.output);
  as_record rr;
  AS_TRY(as_trial_run(pl->ref, &rt, stop, &rr, NULL));
  if (rr.outcome == AS_OUT_INTERRUPTED) {
    *interrupted = 1;
    goto cleanup;
  }
  if (rr.outcome == AS_OUT_FAILED || rr.verdict == AS_VERDICT_FAILED) goto cleanup;
  rec->ref_n_clusters = rr.n_clusters;
  const int ma = as_classify_clusters(pl->cws, &ka, &ca, &sa);
  const int mb = as_classify_clusters(pl->ref->cws, &kb, &cb, &sb);
  if (ma == 0 || mb == 0 || ka != kb) goto cleanup; /* no cluster measure: ref_w1 NaN */
  w = malloc((size_t)(ma + mb) * sizeof *w);
  AS_CHECK_ALLOC(w);
  for (int j = 0; j < ma; j++) w[j] = sa[j];
  for (int j = 0; j < mb; j++) w[ma + j] = sb[j];
  AS_TRY(as_measure_w1(ka, ma, ca, w, mb, cb, w + ma, &rec->ref_w1));
cleanup:
  free(w);
  return st;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The triple of trial t into tr (created for t's d and m) and, for transformer blocks, every
 * head and block into *blk (left NULL for the base model): a field trial is analysed and
 * recorded through its effective V = sum_h V_h of block 0 and M_0 (blocks.h). A status other
 * than AS_OK is the trial's own problem (or what stops a run, as_trial_run decides). */
static as_status trial_triple(const as_trial *t, as_triple *tr, as_blocks **blk) {
  as_status ts = as_triple_build(t, tr);
  const as_blocks_kind bkind = as_blocks_kind_of(t);
  if (ts != AS_OK || bkind == AS_BLOCKS_OFF) return ts;
  ts = as_blocks_create(t, blk);
  if (ts == AS_OK && bkind == AS_BLOCKS_FIELD)
    memcpy(tr->V, as_blocks_veff(*blk, 0), (size_t)t->d * (size_t)t->d * sizeof(double));
  return ts;
}

/* The theorems of trial t on its analysed triple (tr, sp): the model this trial's dynamics is
 * (theorem.h; the analysis selected the base model's theorem, a variant's theorem is its
 * model's row of the table, or none) into sp->theorem and sp->predicted, and the nearest
 * theorem among the model's own into nr (near.h; the distances describe the triple). */
static as_status trial_theorems(const as_trial *t, const as_triple *tr, as_spectral *sp,
                                as_near *nr) {
  const as_thm_model model = as_theorem_model_of(&t->attn, t->triple.beta == INFINITY,
                                                 as_blocks_kind_of(t) == AS_BLOCKS_FIELD);
  if (model != AS_THM_MODEL_BASE)
    sp->theorem = as_theorem_select(model, tr, sp, AS_PIPELINE_SPECTRAL_TOL, &sp->predicted);
  return as_near_analyze(tr, sp, AS_PIPELINE_SPECTRAL_TOL, model, nr);
}

/* The horizon trial t integrates to (as_trial_horizon): T, or with T_decide > 0 the horizon
 * that decides the metastability rule, T_decide times the later separation time of its
 * theorem (sp->theorem) and the nearest one, when that is later than T. */
static double decided_horizon(const as_trial *t, const as_spectral *sp, as_theorem nearest) {
  const double T = t->integ.T, f = t->integ.T_decide;
  if (!(f > 0.0)) return T;
  const double h = fmax(as_theorem_horizon(sp->theorem, sp), as_theorem_horizon(nearest, sp));
  return isfinite(h) && f * h > T ? f * h : T;
}

/* as_trial_run; with pre, the integration was done by a batch (as_trial_run_batch): the
 * workspace pre->dyn holds its final state and pre->ds its statistics, and every other step
 * runs here as for a trial alone. */
static as_status trial_run(as_pipeline *pl, const as_trial *t, const volatile sig_atomic_t *stop,
                           as_record *rec, as_bulk *bulk, const prerun *pre) {
  as_status st = AS_OK;
  as_status ts = AS_OK;  /* status of a step that may fail because of the trial's data */
  as_blocks *blk = NULL; /* transformer blocks (blocks.h), NULL: the base model */
  as_dyn *dyn = NULL;    /* the workspace of the integration: pl->dyn, or the batch's */
  double t0 = now_seconds();
  AS_CHECK(pl && t && rec, AS_ERR_ARG, "as_trial_run: NULL argument");
  as_record_init(rec, t);
  rec->rank_p_head_min = rec->rank_p_head_max = -1;
  rec->ref_n_clusters = -1;
  rec->sinkhorn_missed = -1;
  as_error_clear();
  const int n = t->n, d = t->d;
  const int m = t->triple.m_rows > 0 ? t->triple.m_rows : d;
  if (n < 1 || d < 1) {
    ts = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                      "trial %llu: n = %d and d = %d must be positive",
                      (unsigned long long)t->index, n, d);
    goto trial_failed;
  }
  ts = ensure_shape(pl, n, d, m);
  if (ts == AS_ERR_NOMEM) { /* this trial's shape does not fit: its failure, not the run's */
    as_error_clear();
    ts =
        as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                     "trial %llu: n = %d, d = %d needs about %.3g GiB of workspace and the "
                     "allocation failed (memory_limit: docs/spec.md)",
                     (unsigned long long)t->index, n, d, as_pipeline_bytes(n, d, m) / 1073741824.0);
    goto trial_failed;
  }
  AS_TRY(ts);
  AS_ASSERT(pl->n == n && pl->d == d && pl->m == m && pl->X0 != NULL);
  /* The kernel: streamed for any n when ranks_per_trial is given (1 included), so the record
   * does not depend on R; this rank's rows of a trial over several ranks. */
  AS_TRY(as_dyn_set_kernel(pl->dyn,
                           t->ranks_per_trial >= 1 ? AS_DYN_KERNEL_STREAM : AS_DYN_KERNEL_AUTO));
  {
    int lo = 0, hi = n;
    if (pl->group.parts > 1) as_dyn_part_rows(n, pl->group.part, pl->group.parts, &lo, &hi);
    AS_TRY(as_dyn_set_rows(pl->dyn, lo, hi, pl->group.parts > 1 ? pl->group.exchange : NULL,
                           pl->group.parts > 1 ? pl->group.ctx : NULL));
  }
  const size_t nd = (size_t)n * (size_t)d, dd = (size_t)d * (size_t)d;

  /* The triple and its analysis. */
  const as_blocks_kind bkind = as_blocks_kind_of(t);
  ts = trial_triple(t, pl->tr, &blk);
  if (ts != AS_OK) goto trial_failed;
  if ((int64_t)t->index == pl->fault_trial) {
    ts = inject_fault(pl);
    goto trial_failed;
  }
  if (bulk && bulk->V) memcpy(bulk->V, pl->tr->V, dd * sizeof(double));
  if (bulk && bulk->M) memcpy(bulk->M, pl->tr->M, dd * sizeof(double));
  ts = pl->spectral && d >= pl->spectral_below
           ? pl->spectral(pl->tr, AS_PIPELINE_SPECTRAL_TOL, pl->sp, pl->spectral_ctx)
           : spectral_of(pl);
  if (ts != AS_OK) goto trial_failed;

  /* Initial tokens and the integration. */
  ts = as_tokens_init(t, pl->X0);
  if (ts != AS_OK) goto trial_failed;
  const int sphere = t->attn.norm == AS_NORM_SPHERE;
  if (sphere) { /* tokens on the unit sphere: a zero token has no direction */
    for (int i = 0; i < n; i++) {
      double *x = pl->X0 + (size_t)i * d, s2 = 0.0;
      for (int k = 0; k < d; k++) s2 += x[k] * x[k];
      if (!(s2 > 0.0)) {
        ts = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                          "trial %llu: initial token %d is zero; norm: sphere needs nonzero "
                          "tokens",
                          (unsigned long long)t->index, i);
        goto trial_failed;
      }
      const double inv = 1.0 / sqrt(s2);
      for (int k = 0; k < d; k++) x[k] *= inv;
    }
  }
  if (bulk && bulk->initial) memcpy(bulk->initial, pl->X0, nd * sizeof(double));
  dyn = pre ? pre->dyn : pl->dyn;
  as_expm path = pre ? pre->path : AS_EXPM_NONE;
  if (!pre) {
    ts = as_dyn_set_triple(dyn, pl->tr->V, pl->tr->M, &path);
    if (ts != AS_OK) goto trial_failed;
  }
  /* The model variant (docs/variants.md) and the theorem that speaks about it. */
  const int hardmax = t->triple.beta == INFINITY;
  ts = as_dyn_set_model(dyn, &t->attn, hardmax);
  if (ts != AS_OK) goto trial_failed;
  as_near nr;
  AS_TRY(trial_theorems(t, pl->tr, pl->sp, &nr));
  if (!pre) AS_TRY(as_dyn_set_blocks(dyn, blk));
  copy_spectral(pl->sp, path, rec);
  copy_near(&nr, rec);
  as_meta_reset(pl->meta, pl->X0);
  if (!pre) AS_TRY(as_dyn_set_step_hook(dyn, sphere ? on_step : NULL, pl->meta));

  snap_ctx snaps = {bulk ? bulk->snapshots : NULL,         nd,      0, t->output.n_snapshots,
                    bulk ? bulk->snapshot_clusters : NULL, pl->meta};
  as_dyn_stats ds;
  as_integ_spec integ = t->integ;
  if (sphere) integ.vars = AS_VARS_X; /* the sphere dynamics is in x (spec: vars x implied) */
  integ.T = decided_horizon(t, pl->sp, nr.theorem);
  if (pre) {
    ds = pre->ds;
  } else {
    ts = as_dyn_run(dyn, &integ, pl->X0, stop, t->output.snapshot_times, t->output.n_snapshots,
                    on_snapshot, &snaps, &ds);
    if (ts != AS_OK) goto trial_failed;
  }
  rec->sinkhorn_dev = as_dyn_sinkhorn_dev(dyn);
  /* Only the converged Sinkhorn can miss its tolerance; sinkhorn_fixed is a model of its own
   * (exactly sinkhorn_iters iterations: nothing to miss), so its sinkhorn_missed stays -1 (not
   * applicable) and its outcome is the integration's (reached_T, ...), never not_converged. */
  if (t->attn.attention == AS_ATTN_SINKHORN) {
    as_dyn_sinkhorn_stats sks;
    as_dyn_sinkhorn_stats_of(dyn, &sks);
    rec->sinkhorn_missed = sks.missed > INT32_MAX ? INT32_MAX : (int32_t)sks.missed;
  }
  if (sphere) {
    as_meta_finish(pl->meta, rec);
  } else {
    rec->n_plateaus = rec->n_clusters_track = -1;
  }
  rec->outcome = (int32_t)ds.outcome;
  /* Sinkhorn attention that missed sinkhorn_tol at some evaluation: the run went on to its
   * end with that P (and is classified as usual), but its trial is no result of the model
   * with doubly stochastic attention: its own outcome, which summaries exclude
   * (docs/variants.md). */
  if (rec->sinkhorn_missed > 0 && (ds.outcome == AS_OUT_REACHED_T || ds.outcome == AS_OUT_SETTLED ||
                                   ds.outcome == AS_OUT_MAX_STEPS))
    rec->outcome = AS_OUT_NOT_CONVERGED;
  rec->steps = ds.steps;
  rec->rejected = ds.rejected;
  rec->t_final = ds.t_final;
  rec->settle_time = ds.settle_time;
  rec->velocity = ds.velocity;
  if (pl->group.part > 0) goto done; /* the leader (part 0) classifies and records */

  const double *state = as_dyn_state(dyn);
  /* The matrix of the dynamics that ran (docs/variants.md): P (the masked P, the Sinkhorn P,
   * the heads' mean), for usa the weights e^{s_ij} / n themselves. */
  const double *usa_w = as_dyn_usa_weights(dyn);
  const double *P = usa_w ? usa_w : as_dyn_attention(dyn);
  if (bulk && bulk->final) memcpy(bulk->final, state, nd * sizeof(double));
  if (bulk && bulk->attention && P) memcpy(bulk->attention, P, (size_t)n * (size_t)n * sizeof *P);
  AS_TRY(as_dyn_state_x(dyn, pl->X));

  /* The theorems speak about z: when x was integrated, z = x e^{-tV}^T (rows are tokens). */
  const double *Z = state, *Zp = NULL, *Ez = NULL;
  if (bkind == AS_BLOCKS_FIELD) {
    /* Scalar rescaling: the state is z (or x) itself, classified as it is. */
  } else if (t->integ.vars == AS_VARS_X && !sphere) {
    ts = as_expm_set(pl->expm, pl->tr->V, AS_EXPM_NONE, NULL);
    if (ts != AS_OK) goto trial_failed;
    if (t->integ.method == AS_METHOD_LAYERS) {
      /* z^k = R^{-k} x^k: solve with R^k instead of forming its inverse. */
      long k = lround(ds.t_final / t->integ.dt);
      AS_TRY(as_expm_eval_layers(pl->expm, t->integ.dt, k, 1.0, pl->E));
      int dn = d, nn = n, info = 0;
      /* Row-major E is column-major E^T; solve E z_i = x_i for all rows: X^T columns. */
      memcpy(pl->Z, pl->X, nd * sizeof(double));
      double *Et = pl->E; /* transpose in place: we need E itself in column-major */
      for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++) {
          double tmp = Et[(size_t)i * d + j];
          Et[(size_t)i * d + j] = Et[(size_t)j * d + i];
          Et[(size_t)j * d + i] = tmp;
        }
      dgesv_(&dn, &nn, Et, &dn, pl->ipiv, pl->Z, &dn, &info);
      AS_LAPACK_CHECK("dgesv", info);
    } else {
      AS_TRY(as_expm_eval(pl->expm, -ds.t_final, 0.0, pl->E));
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, d, d, 1.0, pl->X, d, pl->E, d, 0.0,
                  pl->Z, d);
      Ez = pl->E;
      /* The part of z a theorem of the positive spectrum reads, never formed from the part
       * that grows (the classifier's precision rule, docs/theory.md 2.2). */
      if (pl->Zp && pl->sp->kpos >= 1 && as_expm_path(pl->expm) == AS_EXPM_EIGEN) {
        const double cut = AS_PIPELINE_SPECTRAL_TOL * as_spectral_eig_scale(pl->sp);
        AS_TRY(as_expm_positive_part(pl->expm, ds.t_final, cut, n, pl->X, pl->Zu, pl->Zp));
        Zp = pl->Zp;
      }
    }
    Z = pl->Z;
  }

  /* Classification. */
  rec->residual = as_blocks_residual(n, d, bkind == AS_BLOCKS_FIELD ? state : pl->X);
  if (bkind == AS_BLOCKS_FIELD) {
    int rmin = -1, rmax = -1;
    ts = as_blocks_head_ranks(blk, AS_CLASSIFY_RANK_RTOL, &rmin, &rmax);
    if (ts != AS_OK) goto trial_failed;
    rec->rank_p_head_min = rmin;
    rec->rank_p_head_max = rmax;
  }
  if (!isfinite(rec->residual)) rec->residual = NAN;
  if (ds.outcome != AS_OUT_INTERRUPTED) {
    /* Field trials: the generic observables only (the analysis without a theorem, the
     * effective V of the final block, the heads' mean attention). The inside form is judged
     * against the theorem of its triple: does that geometry survive the feed-forward part? */
    as_spectral spg = *pl->sp;
    const double *Vc = pl->tr->V;
    if (bkind == AS_BLOCKS_FIELD) {
      spg.dim_f = 0;
      Vc = as_blocks_veff(blk,
                          as_blocks_block_last(blk, ds.t_final, lround(ds.t_final / t->integ.dt)));
    }
    /* The measured approach rates (t_decide) where z'' is cheap: base-like models in R^d with
     * P formed and small, continuous time. */
    const double *A = NULL;
    if (pl->p_keep && P && !sphere && bkind == AS_BLOCKS_OFF &&
        t->integ.method != AS_METHOD_LAYERS &&
        (ds.outcome == AS_OUT_REACHED_T || ds.outcome == AS_OUT_SETTLED ||
         ds.outcome == AS_OUT_MAX_STEPS)) {
      ts = end_acceleration(pl, dyn, ds.t_final, Z, &P);
      if (ts != AS_OK) goto trial_failed;
      A = pl->acc_A;
    }
    /* z integrated where x would give its positive part (the remedy of reason precision). */
    const int x_decides = t->integ.vars == AS_VARS_Z && t->integ.method != AS_METHOD_LAYERS &&
                          bkind != AS_BLOCKS_FIELD && !sphere && path == AS_EXPM_EIGEN && P &&
                          x_in_range(pl->X, nd);
    as_classify_input in = {.n = n,
                            .d = d,
                            .Z0 = pl->X0,
                            .Z = Z,
                            .X = pl->X,
                            .P = P,
                            .V = Vc,
                            .sp = &spg,
                            .outcome = ds.outcome,
                            .t_final = ds.t_final,
                            .T = t->integ.T,
                            .F = sphere ? as_dyn_velocity(dyn) : NULL,
                            .sphere = sphere,
                            .A = A,
                            .E = Ez,
                            .Zp = Zp,
                            .x_decides = x_decides};
    as_classify_set_stop(pl->cws, stop);
    as_classify_set_product(pl->cws, NULL);
    if (!P) { /* streamed: P Z (P X for minus_identity) from tiles */
      const double *S = as_theorem_row_of(pl->sp->theorem)->reading == AS_READ_X ? pl->X : Z;
      AS_TRY(as_dyn_attention_apply(dyn, S, pl->PS));
      as_classify_set_product(pl->cws, pl->PS);
    }
    /* A thread CPU clock read is a system call (1.5 us CPU here): one trial in
     * AS_PIPELINE_CLASSIFY_SAMPLE is timed, not every one. */
    const int timed = pl->classified++ % AS_PIPELINE_CLASSIFY_SAMPLE == 0;
    const double tc = timed ? cpu_seconds() : 0.0;
    ts = near_verdict(pl, &nr, &in, rec);
    if (ts != AS_OK) goto trial_failed;
    ts = as_classify(&in, pl->cws, rec);
    if (timed) pl->classify_s += cpu_seconds() - tc, pl->classify_timed++;
    if (ts == AS_ERR_INTERRUPTED) { /* a stop signal while classifying: resumable */
      as_error_clear();
      rec->outcome = AS_OUT_INTERRUPTED;
      goto done;
    }
    if (ts != AS_OK) goto trial_failed;
    if (t->reference_n > 0) { /* ref_w1: the same trial at reference_n tokens */
      int intr = 0;
      ts = reference_distance(pl, t, stop, rec, &intr);
      if (ts != AS_OK) goto trial_failed;
      if (intr) {
        rec->outcome = AS_OUT_INTERRUPTED;
        goto done;
      }
    }
    if (nr.theorem == pl->sp->theorem) {
      rec->near_verdict = rec->verdict;
      rec->near_reason = rec->reason;
      rec->near_t_decide = rec->t_decide;
    } else if (nr.theorem == AS_THM_NONE)
      rec->near_verdict = AS_VERDICT_NO_PREDICTION;
  }
  goto done;

trial_failed:
  /* The rule of as_trial_failure, applied here so that a recorded failure keeps what the
   * record already holds (the spectral fields copied before a later step failed). */
  if (!as_status_is_trial_problem(ts)) {
    st = ts;
    goto cleanup;
  }
  record_failure(rec, ts);
done:
  rec->wall_time = now_seconds() - t0 + (pre ? pre->seconds : 0.0);
cleanup:
  if (pl && pl->dyn && blk) (void)as_dyn_set_blocks(pl->dyn, NULL);
  as_blocks_destroy(&blk);
  /* Whatever stops the run says where (the error record) and in which trial. */
  if (st != AS_OK) st = as_trial_failure(t, st, 0, NULL);
  return st;
}

as_status as_trial_run(as_pipeline *pl, const as_trial *t, const volatile sig_atomic_t *stop,
                       as_record *rec, as_bulk *bulk) {
  return trial_run(pl, t, stop, rec, bulk, NULL);
}

as_status as_trial_horizon(const as_trial *t, double *T) {
  as_status st = AS_OK;
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  as_blocks *blk = NULL;
  AS_CHECK(t && T, AS_ERR_ARG, "as_trial_horizon: NULL argument");
  *T = t->integ.T;
  if (!(t->integ.T_decide > 0.0)) goto cleanup;
  AS_CHECK(t->d >= 1, AS_ERR_DATA, "trial %llu: d = %d must be positive",
           (unsigned long long)t->index, t->d);
  AS_TRY(as_triple_create(t->d, t->triple.m_rows > 0 ? t->triple.m_rows : t->d, &tr));
  AS_TRY(as_spectral_create(t->d, &sp));
  AS_TRY(trial_triple(t, tr, &blk));
  AS_TRY(as_spectral_analyze(tr, AS_PIPELINE_SPECTRAL_TOL, sp));
  as_near nr;
  AS_TRY(trial_theorems(t, tr, sp, &nr));
  *T = decided_horizon(t, sp, nr.theorem);
cleanup:
  as_blocks_destroy(&blk);
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
  return st;
}

/* ---------------------------------------------------------------- batches (batch.h) */

int as_trial_batchable(const as_trial *t) {
  if (!t || t->n < 1 || t->d < 1 || t->n > AS_SMALL_NMAX || t->d > AS_SMALL_DMAX) return 0;
  if (!as_attn_is_base(&t->attn, t->triple.beta == INFINITY)) return 0;
  if (as_blocks_kind_of(t) != AS_BLOCKS_OFF || t->output.n_snapshots != 0) return 0;
  if (t->integ.method == AS_METHOD_LAYERS) return 0;
  if (t->ranks_per_trial != 0) return 0; /* the streamed kernel, set per trial (trial_run) */
  if (t->reference_n != 0) return 0;     /* ref_w1: a second run of the trial (trial_run) */
  if (t->integ.T_decide > 0.0) return 0; /* its horizon comes from its own triple */
  if (t->integ.method == AS_METHOD_DOPRI5 && (t->integ.rtol > 0.0 || t->integ.atol > 0.0)) return 0;
  return t->integ.vars == AS_VARS_Z || t->integ.vars == AS_VARS_X;
}

int as_trial_same_batch(const as_trial *a, const as_trial *b) {
  return a->n == b->n && a->d == b->d && a->integ.method == b->integ.method &&
         a->integ.vars == b->integ.vars && a->integ.T == b->integ.T && a->integ.dt == b->integ.dt;
}

/* The lanes' workspaces and initial-token buffers for the current shape. */
static as_status batch_buffers(as_pipeline *pl) {
  as_status st = AS_OK;
  if (pl->bx0) return AS_OK;
  for (int l = 0; l < AS_BATCH_LANES; l++) AS_TRY(as_dyn_create(pl->n, pl->d, &pl->bdyn[l]));
  pl->bx0 = malloc((size_t)AS_BATCH_LANES * (size_t)pl->n * (size_t)pl->d * sizeof(double));
  AS_CHECK_ALLOC(pl->bx0);
cleanup:
  if (st != AS_OK)
    for (int l = 0; l < AS_BATCH_LANES; l++) as_dyn_destroy(&pl->bdyn[l]);
  return st;
}

/* The part of a trial the integration needs (triple, tokens, the workspace's triple and model)
 * into lane l; nonzero when it worked (else the trial runs alone, which records why). */
static int batch_lane_prepare(as_pipeline *pl, const as_trial *t, int l, as_expm *path) {
  const size_t nd = (size_t)t->n * (size_t)t->d;
  if ((int64_t)t->index == pl->fault_trial) return 0;
  as_status ts = as_triple_build(t, pl->tr);
  if (ts == AS_OK) ts = as_tokens_init(t, pl->bx0 + (size_t)l * nd);
  if (ts == AS_OK) ts = as_dyn_set_triple(pl->bdyn[l], pl->tr->V, pl->tr->M, path);
  if (ts == AS_OK) ts = as_dyn_set_model(pl->bdyn[l], &t->attn, 0);
  if (ts == AS_OK) ts = as_dyn_set_blocks(pl->bdyn[l], NULL);
  if (ts == AS_OK) ts = as_dyn_set_step_hook(pl->bdyn[l], NULL, NULL);
  if (ts != AS_OK) as_error_clear();
  return ts == AS_OK && as_dyn_batchable(pl->bdyn[l], &t->integ, 0);
}

/* One batch: trials t[0..B) that fit together (B >= 2). */
static as_status run_one_batch(as_pipeline *pl, const as_trial *t, int B,
                               const volatile sig_atomic_t *stop, as_record *rec,
                               as_bulk *const *bulk) {
  as_status st = AS_OK;
  const int n = t[0].n, d = t[0].d;
  const int m = t[0].triple.m_rows > 0 ? t[0].triple.m_rows : d;
  int lane_of[AS_BATCH_LANES], alone[AS_BATCH_LANES] = {0}, ok[AS_BATCH_LANES] = {0}, nb = 0;
  as_dyn *w[AS_BATCH_LANES];
  const as_integ_spec *in[AS_BATCH_LANES];
  const double *X0[AS_BATCH_LANES];
  as_dyn_stats ds[AS_BATCH_LANES];
  as_expm path[AS_BATCH_LANES];
  double secs = 0.0;
  as_status ss = ensure_shape(pl, n, d, m);
  if (ss == AS_OK) ss = batch_buffers(pl);
  if (ss != AS_OK) { /* no room for a batch: each trial alone (which reports its own failure) */
    as_error_clear();
    for (int k = 0; k < B; k++) alone[k] = 1;
  }
  for (int k = 0; k < B && ss == AS_OK; k++) {
    const int mk = t[k].triple.m_rows > 0 ? t[k].triple.m_rows : d;
    if (mk != m || !batch_lane_prepare(pl, &t[k], nb, &path[nb])) {
      alone[k] = 1;
      continue;
    }
    lane_of[k] = nb;
    w[nb] = pl->bdyn[nb];
    in[nb] = &t[k].integ;
    X0[nb] = pl->bx0 + (size_t)nb * (size_t)n * (size_t)d;
    nb++;
  }
  if (nb >= 1) {
    const double t0 = now_seconds();
    as_status bs = as_dyn_run_batch(w, nb, in, X0, stop, ds, ok);
    if (bs != AS_OK) { /* whatever it was, alone each trial meets it where it belongs */
      as_error_clear();
      for (int l = 0; l < nb; l++) ok[l] = 0;
    }
    secs = (now_seconds() - t0) / nb;
  }
  for (int k = 0; k < B; k++) {
    as_bulk *bk = bulk ? bulk[k] : NULL;
    if (pl->ctx_rank >= 0) as_error_context_set(pl->ctx_rank, (int64_t)t[k].index);
    if (alone[k] || !ok[lane_of[k]]) {
      AS_TRY(trial_run(pl, &t[k], stop, &rec[k], bk, NULL));
    } else {
      const int l = lane_of[k];
      prerun pre = {w[l], ds[l], path[l], secs};
      AS_TRY(trial_run(pl, &t[k], stop, &rec[k], bk, &pre));
    }
  }
cleanup:
  return st;
}

as_status as_trial_run_batch(as_pipeline *pl, const as_trial *t, int count,
                             const volatile sig_atomic_t *stop, as_record *rec,
                             as_bulk *const *bulk) {
  as_status st = AS_OK;
  AS_CHECK(pl && count >= 0 && (count == 0 || (t && rec)), AS_ERR_ARG,
           "as_trial_run_batch: bad arguments");
  for (int k = 0; k < count;) {
    int e = k + 1;
    if (as_trial_batchable(&t[k]))
      while (e < count && e - k < AS_BATCH_LANES && as_trial_batchable(&t[e]) &&
             as_trial_same_batch(&t[k], &t[e]))
        e++;
    if (e - k >= 2) {
      AS_TRY(run_one_batch(pl, t + k, e - k, stop, rec + k, bulk ? bulk + k : NULL));
    } else {
      AS_TRY(trial_run(pl, &t[k], stop, &rec[k], bulk ? bulk[k] : NULL, NULL));
    }
    k = e;
  }
cleanup:
  return st;
}

double as_pipeline_classify_seconds(const as_pipeline *pl, int64_t *trials) {
  if (trials) *trials = pl ? pl->classify_timed : 0;
  return pl ? pl->classify_s : 0.0;
}

void as_pipeline_set_rank(as_pipeline *pl, int rank) {
  if (pl) pl->ctx_rank = rank;
}
