/* dyn_batch.c: small trials of one shape integrated in lock-step, one per vector lane
 * (batch.h, as_dyn_batchable and as_dyn_run_batch of dynamics.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/batch.h"
#include "dyn_impl.h"
#include "linalg_dyn.h"

/*  * Up to AS_BATCH_LANES trials of one shape integrated in lock-step: the loop of
 * run_continuous without step control, snapshots or hooks, run for every lane at once. The
 * state stays lane-interleaved from the first stage to the last; each lane's stages are
 * formed with the arithmetic of the one-trial functions in their order (rk_combine,
 * scaled_tokens, the A^T products, small_output, max_row_norm, radius_of, all_finite: as
 * vector passes over all lanes, dyn_batch_lanes.h), the attention kernel runs once for all
 * lanes (as_attention_small_lanes, the same arithmetic per lane as as_attention_small), and a
 * lane leaves the batch at the step where it would have stopped alone. So every lane ends with
 * the bits of as_dyn_run. */

int as_dyn_batchable(const as_dyn *w, const as_integ_spec *in, int n_snap) {
  if (!w || !in || !AS_DYN_HAVE_SMALL) return 0;
  if (!w->small || w->stream || w->variant || w->bkind != AS_BLOCKS_OFF || w->step_cb ||
      w->tb_force || n_snap != 0 || w->n > AS_SMALL_NMAX || w->d > AS_SMALL_DMAX)
    return 0;
  if (in->method == AS_METHOD_LAYERS || in->method < 0 || in->method >= AS_METHOD_COUNT) return 0;
  const as_tableau *tb = as_tableau_of(in->method);
  if (!tb) return 0;
  return !(tb->order_hat > 0 && (in->rtol > 0.0 || in->atol > 0.0)); /* no step control */
}

#if AS_DYN_HAVE_SMALL
/* The batch's state lives lane-interleaved for the whole run (entry q of lane l at
 * [q AS_BATCH_LANES + l]: the layout of the lane kernel), so the stages, the scaling, the
 * products around the kernel and the step's measures are vector passes over all lanes
 * (dyn_batch_lanes.h), each lane with the bits of the one-trial function. What the vectors do
 * not follow (a basis change, a Pade exponential, an infinite temperature) runs per lane
 * through the one-trial functions on a copy of the lane. */
typedef struct batch {
  int n, d;          /* tokens, coordinates */
  size_t nd;         /* n d */
  int mode;          /* MODE_Z or MODE_X (the same in every lane) */
  const rk_plan *rk; /* the method (the same tableau in every lane) */
  int nst;           /* its stages */
  as_dyn *const *w;  /* the lanes' workspaces, B of them (lanes >= B idle) */
  int B;
  /* nd AS_BATCH_LANES doubles each (e: n AS_BATCH_LANES; Mm, V: d d AS_BATCH_LANES) */
  double *Z, *Zn, *Ys, *K[AS_RK_MAX_STAGES]; /* the lanes' run state */
  double *G, *A, *H, *e;                     /* the kernel's inputs, output, scratch */
  double *Mm, *V;                            /* each lane's score matrix and V */
  double *mem;                               /* the block they live in (64-byte aligned) */
  int act[AS_BATCH_LANES];                   /* the lane is integrating */
  int fast[AS_BATCH_LANES];  /* its transformed tokens are Y, or Y with scaled columns:
                              * MODE_X, or MODE_Z with an identity eigenbasis */
  int unit[AS_BATCH_LANES];  /* MODE_Z, fast: V = mu I, the blocks are 1 at every time */
  int all_unit;              /* every lane fast and unit (or MODE_X) */
  int alone[AS_BATCH_LANES]; /* this stage: infinite temperature, rhs_mode on its own */
  /* MODE_Z, fast lanes: the blocks at the last two stage times (RK4 asks for t + h/2 twice
   * and for t + h again as the next step's t) */
  double bt[2];
  int bvalid[2], bnext;
  double bd[2][AS_BATCH_LANES][AS_SMALL_DMAX];
  int bunit[2][AS_BATCH_LANES]; /* the identity: dyn_transformed() skips it */
  int bpair[2][AS_BATCH_LANES]; /* an off-diagonal entry (not for an identity basis) */
  /* c = exp(logc) per lane at its last two logc (the same call: the same bits) */
  double elog[AS_BATCH_LANES][2], ec[AS_BATCH_LANES][2];
  int enext[AS_BATCH_LANES];
} batch;

/* Lane l of lane-interleaved entries [0, len) from / into a plain vector x. */
static void lane_pack(size_t len, const double *x, double *v, int l) {
  for (size_t q = 0; q < len; q++) v[q * AS_BATCH_LANES + l] = x[q];
}

static void lane_unpack(size_t len, const double *v, int l, double *x) {
  for (size_t q = 0; q < len; q++) x[q] = v[q * AS_BATCH_LANES + l];
}

/* Lane l leaves the batch with state Z: its tokens back into its workspace and, unless the
 * batch ends (last), its lane of every state vector zeroed (a zero lane stays exactly zero
 * through the stages: harmless values). */
static void lane_leave(batch *b, int l, int last) {
  lane_unpack(b->nd, b->Z, l, b->w[l]->Z);
  b->act[l] = 0;
  if (last) return;
  double *vs[3 + AS_RK_MAX_STAGES] = {b->Z, b->Zn, b->Ys};
  for (int s = 0; s < b->nst; s++) vs[3 + s] = b->K[s];
  for (int k = 0; k < 3 + b->nst; k++)
    for (size_t q = 0; q < b->nd; q++) vs[k][q * AS_BATCH_LANES + l] = 0.0;
}

/* c = exp(logc) for lane l: remembered for its last two logc, and shared with the lanes of the
 * same stage (seen: nseen pairs logc, c; lanes with equal V and scale have equal logc). */
static double lane_exp(batch *b, int l, double logc, double (*seen)[2], int *nseen) {
  for (int k = 0; k < 2; k++)
    if (b->elog[l][k] == logc) return b->ec[l][k];
  const int k = b->enext[l];
  double c = 0.0;
  int found = 0;
  for (int q = 0; q < *nseen && !found; q++)
    if (seen[q][0] == logc) c = seen[q][1], found = 1;
  if (!found) {
    c = exp(logc);
    seen[*nseen][0] = logc;
    seen[*nseen][1] = c;
    ++*nseen;
  }
  b->elog[l][k] = logc;
  b->ec[l][k] = c;
  b->enext[l] = 1 - k;
  return c;
}

/* Exponent e of frexp(s) (s = m 2^e, m in [1/2, 1)) and f = 2^-e, for finite s > 0. */
static void pow2_scale(double s, int *e, double *f) {
  uint64_t u;
  memcpy(&u, &s, sizeof u);
  const int bexp = (int)((u >> 52) & 0x7ff);
  if (bexp >= 1 && bexp <= 2044) { /* s normal, and 2^-e normal too */
    *e = bexp - 1022;
    const uint64_t fb = (uint64_t)(1023 - *e) << 52;
    memcpy(f, &fb, sizeof *f);
    return;
  }
  (void)frexp(s, e);
  *f = ldexp(1.0, -*e);
}

/* The first part of a batched right-hand side at time t (MODE_Z): per fast lane the blocks
 * of dyn_transformed() (cached per stage time) as column multipliers mul (d x AS_BATCH_LANES, 1
 * in the other lanes); slow[l] = 1 for the active lanes that take scaled_tokens itself.
 * Returns 1 when some lane's multipliers are not the identity. */
static int batch_rhs_blocks(batch *b, double t, double *mul, int *slow) {
  const int d = b->d, L = AS_BATCH_LANES;
  int need = 0;
  for (int l = 0; l < L; l++) slow[l] = b->act[l] && !b->fast[l];
  for (int q = 0; q < d * L; q++) mul[q] = 1.0;
  if (b->mode != MODE_Z || b->all_unit) return 0; /* G = Y: dyn_transformed() copies */
  int k = -1;
  for (int s = 0; s < 2; s++)
    if (b->bvalid[s] && b->bt[s] == t) k = s;
  if (k < 0) {
    k = b->bnext;
    b->bnext = 1 - k;
    b->bt[k] = t;
    b->bvalid[k] = 1;
    for (int l = 0; l < b->B; l++) {
      if (!b->fast[l] || b->unit[l]) continue;
      as_dyn *wl = b->w[l];
      as_expm_blocks(wl->ex, t, wl->mu, wl->bd, wl->bo); /* as dyn_transformed() */
      int unit = 1, pair = 0;
      for (int j = 0; j < d; j++) {
        unit &= wl->bd[j] == 1.0 && wl->bo[j] == 0.0;
        pair |= wl->bo[j] != 0.0;
        b->bd[k][l][j] = wl->bd[j];
      }
      b->bunit[k][l] = unit;
      b->bpair[k][l] = pair;
    }
  }
  for (int l = 0; l < b->B; l++) {
    if (!b->act[l] || !b->fast[l] || b->unit[l] || b->bunit[k][l]) continue;
    if (b->bpair[k][l]) { /* a rotation block: apply_blocks' pair formula, per lane */
      slow[l] = 1;
      continue;
    }
    for (int j = 0; j < d; j++) mul[j * L + l] = b->bd[k][l][j];
    need = 1;
  }
  return need;
}

/* The per-lane scalars of scaled_tokens and rhs_mode from the largest |entry| smax of each
 * lane's G~: the scale f = 2^-e (1: none) and the temperature c = exp(logc) (0: the lane is
 * not in the kernel). The slow lanes (*nslow of them) run scaled_tokens on a copy of their Y
 * (f = 1, their G packed by batch_rhs_slow); a lane whose c is infinite leaves the small
 * kernel as rhs_mode does (rhs_mode on the copy, its F in its Zn, packed by
 * batch_rhs_alone). *any: some lane is in the kernel. */
static as_status batch_rhs_lanes(batch *b, double t, const double *Y, const double *smax,
                                 const int *slow, double *f, double *c, int *nslow, int *any) {
  as_status st = AS_OK;
  double seen[AS_BATCH_LANES][2];
  int nseen = 0;
  *nslow = *any = 0;
  for (int l = 0; l < AS_BATCH_LANES; l++) {
    f[l] = 1.0;
    c[l] = 0.0;
    b->alone[l] = 0;
    if (!b->act[l]) continue;
    as_dyn *wl = b->w[l];
    double logc = 0.0;
    if (slow[l]) {
      ++*nslow;
      lane_unpack(b->nd, Y, l, wl->Ys);
      AS_TRY(dyn_scaled_tokens(wl, b->mode, t, 0, wl->Ys, &logc));
    } else {
      const double ls = b->mode == MODE_Z ? wl->mu * t : 0.0, s = smax[l];
      logc = 2.0 * ls;
      if (s > 0.0 && isfinite(s)) {
        int e = 0;
        pow2_scale(s, &e, &f[l]);
        logc += 2.0 * (double)e * AS_LN2;
      }
    }
    const double cl = lane_exp(b, l, logc, seen, &nseen);
    if (!(cl < INFINITY)) {
      b->alone[l] = 1;
      if (!slow[l]) lane_unpack(b->nd, Y, l, wl->Ys);
      AS_TRY(dyn_rhs_mode(wl, b->mode, t, 0, wl->Ys, wl->Zn));
      continue;
    }
    c[l] = cl;
    *any = 1;
  }
cleanup:
  return st;
}

/* The slow lanes' G (scaled_tokens' output) into the batch's G. */
static void batch_rhs_slow(batch *b, const int *slow) {
  for (int l = 0; l < AS_BATCH_LANES; l++)
    if (slow[l]) lane_pack(b->nd, b->w[l]->G, b->G, l);
}

static void batch_rhs_alone(batch *b, double *F) {
  for (int l = 0; l < AS_BATCH_LANES; l++)
    if (b->alone[l]) lane_pack(b->nd, b->w[l]->Zn, F, l);
}

/* The vector passes, 2 doubles per vector (SSE2, NEON, or split by the compiler) ... */
#define BW 2
#define BFN(x) batch_##x##_w2
#define BATTR
#include "dyn_batch_lanes.h"
#undef BATTR
#undef BFN
#undef BW
#if defined(__x86_64__) && !defined(__clang__)
#define AS_BATCH_X86 1
/* ... and 4 with AVX2 (no FMA: the same bits) */
#define BW 4
#define BFN(x) batch_##x##_w4
#define BATTR __attribute__((target("avx2")))
#include "dyn_batch_lanes.h"
#undef BATTR
#undef BFN
#undef BW
#endif

as_status as_dyn_run_batch(as_dyn *const *w, int B, const as_integ_spec *const *in,
                           const double *const *X0, const volatile sig_atomic_t *stop,
                           as_dyn_stats *stats, int *ok) {
  as_status st = AS_OK;
  batch b;
  memset(&b, 0, sizeof b);
  AS_CHECK(w != NULL && in != NULL && X0 != NULL && stats != NULL && ok != NULL && B >= 1 &&
               B <= AS_BATCH_LANES,
           AS_ERR_ARG, "as_dyn_run_batch: B = %d", B);
  const int n = w[0]->n, d = w[0]->d;
  for (int l = 0; l < B; l++) {
    AS_CHECK(w[l] && w[l]->n == n && w[l]->d == d && in[l] && in[l]->method == in[0]->method &&
                 in[l]->vars == in[0]->vars && in[l]->T == in[0]->T && in[l]->dt == in[0]->dt &&
                 as_dyn_batchable(w[l], in[l], 0),
             AS_ERR_ARG, "as_dyn_run_batch: lane %d does not fit the batch", l);
    for (int q = 1; q < l; q++) AS_CHECK(w[q] != w[l], AS_ERR_ARG, "as_dyn_run_batch: shared lane");
  }
  b.n = n;
  b.d = d;
  b.nd = (size_t)n * d;
  b.w = w;
  b.B = B;
  double since[AS_BATCH_LANES];
  for (int l = 0; l < B; l++) {
    since[l] = NAN;
    ok[l] = 0;
    as_status bs = dyn_begin_run(w[l], in[l], X0[l], NULL, 0, &stats[l]);
    if (bs != AS_OK) { /* this lane's problem: the caller runs it alone, which says why */
      if (bs == AS_ERR_NOMEM || bs == AS_ERR_INTERNAL) AS_TRY(bs);
      as_error_clear();
      continue;
    }
    ok[l] = b.act[l] = 1;
    if (!b.rk) { /* the same tableau and mode in every lane */
      b.rk = &w[l]->rk;
      b.mode = w[l]->mode;
    }
  }
  if (b.rk) {
    const size_t nd = b.nd, dd = (size_t)d * d;
    b.nst = b.rk->s;
    const size_t L = AS_BATCH_LANES, len = (nd * (6 + (size_t)b.nst) + (size_t)n + 2 * dd) * L;
    b.mem = aligned_alloc(64, len * sizeof(double)); /* a multiple of 64 bytes */
    AS_CHECK_ALLOC(b.mem);
    memset(b.mem, 0, len * sizeof(double)); /* idle lanes: zeros throughout */
    double *p = b.mem;
    b.Z = p, p += nd * L;
    b.Zn = p, p += nd * L;
    b.Ys = p, p += nd * L;
    for (int s = 0; s < b.nst; s++) b.K[s] = p, p += nd * L;
    b.G = p, p += nd * L;
    b.A = p, p += nd * L;
    b.H = p, p += nd * L;
    b.e = p, p += (size_t)n * L;
    b.Mm = p, p += dd * L;
    b.V = p;
    for (int l = 0; l < B; l++) {
      b.elog[l][0] = b.elog[l][1] = NAN;
      if (!b.act[l]) continue;
      as_dyn *wl = w[l];
      lane_pack(nd, wl->Z, b.Z, l);
      lane_pack(dd, b.mode == MODE_Z ? wl->Mt : wl->M, b.Mm, l);
      lane_pack(dd, wl->V, b.V, l);
      b.fast[l] = b.mode == MODE_X || (wl->path == AS_EXPM_EIGEN && as_expm_identity_basis(wl->ex));
      b.unit[l] = b.fast[l] && b.mode == MODE_Z && as_expm_scalar(wl->ex);
      wl->pt_newer = 0; /* P^T is not formed in a batch: finish_run forms P alone */
    }
    b.all_unit = 1;
    for (int l = 0; l < B; l++) b.all_unit &= !b.act[l] || b.mode == MODE_X || b.unit[l];
#ifdef AS_BATCH_X86
    /* 256-bit vectors where the CPU has them and the kernels are not capped to the baseline
     * (as_attention_isa, ATTNSWEEP_ISA); never wider, whatever the CPU. */
    if (__builtin_cpu_supports("avx2") && strncmp(as_attention_isa(), "baseline", 8) != 0) {
      AS_TRY(batch_loop_w4(&b, in, stop, stats, since));
    } else {
      AS_TRY(batch_loop_w2(&b, in, stop, stats, since));
    }
#else
    AS_TRY(batch_loop_w2(&b, in, stop, stats, since));
#endif
  }
  for (int l = 0; l < B; l++) {
    if (!ok[l]) continue;
    stats[l].t_final = w[l]->t;
    stats[l].settle_time = since[l];
    AS_TRY(dyn_finish_run(w[l], in[l], &stats[l]));
  }
cleanup:
  free(b.mem);
  return st;
}
#else  /* no vector extensions: nothing batches (as_dyn_batchable) */
as_status as_dyn_run_batch(as_dyn *const *w, int B, const as_integ_spec *const *in,
                           const double *const *X0, const volatile sig_atomic_t *stop,
                           as_dyn_stats *stats, int *ok) {
  (void)w, (void)in, (void)X0, (void)stop, (void)stats, (void)ok;
  as_status st = AS_OK;
  AS_CHECK(0, AS_ERR_ARG, "as_dyn_run_batch: B = %d lanes, but this build has no batches", B);
cleanup:
  return st;
}
#endif /* AS_DYN_HAVE_SMALL */
