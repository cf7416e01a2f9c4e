/* dyn_batch_lanes.h: the vector passes of a batch (dyn_batch.c), written once for a
 * vector of BW doubles and included by dyn_batch.c once per width (no include guard).
 *
 * Before each inclusion dynamics.c defines BW (doubles per vector: 2, or 4 with AVX2), BFN(x)
 * (the instance's name for x) and BATTR (the attributes of its outer function: the target).
 * A vector of BW doubles is native on its target, so every operation below compiles to one
 * instruction per vector (wider generic vectors are lowered lane by lane for comparisons).
 *
 * Layout: entry q of lane l of a lane-interleaved array at [q AS_BATCH_LANES + l]; vector g
 * of entry q holds lanes g BW .. g BW + BW - 1 and sits at index q NG + g of the array read as
 * vectors. Each vector operation is, lane by lane, the scalar operation of the one-trial
 * function it mirrors, in the same order (IEEE arithmetic, no contraction in ISO C mode), so
 * every width gives every lane the bits of the one-trial path. */

typedef double BFN(vec) __attribute__((vector_size(BW * sizeof(double))));
typedef long long BFN(mask) __attribute__((vector_size(BW * sizeof(double))));
#define BV BFN(vec)
#define BM BFN(mask)
#define NG (AS_BATCH_LANES / BW)
/* m ? a : b per lane, m from a vector comparison (all ones or zero) */
#define BSEL(m, a, b) ((BV)(((m) & (BM)(a)) | (~(m) & (BM)(b))))
#define BINL static inline __attribute__((always_inline))
/* STMT with the constant D = d for d = 1, 2, 3 (the loops over coordinates unrolled), else
 * D = d at run time. */
#define BY_D(d, STMT)    \
  do {                   \
    switch (d) {         \
    case 1: {            \
      enum { D = 1 };    \
      STMT;              \
    } break;             \
    case 2: {            \
      enum { D = 2 };    \
      STMT;              \
    } break;             \
    case 3: {            \
      enum { D = 3 };    \
      STMT;              \
    } break;             \
    default: {           \
      const int D = (d); \
      STMT;              \
    } break;             \
    }                    \
  } while (0)

/* Y = Z + h sum_q co[q] K[idx[q]] in every lane: rk_combine's sums. On the way, per lane, the
 * largest |entry| of Y into smax (scaled_tokens' first pass when G~ = Y; NaN entries never
 * win) and all_finite(Y) into fin (no NaN, and that maximum < inf). A maximum and a test do
 * not depend on the order of the entries: two accumulators per vector (shorter chains). */
BINL void BFN(combine)(size_t nd, const double *restrict Zd, double h, const rk_comb *cb,
                       double *const *Kd, double *restrict Yd, double *smax, int *fin) {
  const int nt = cb->nt;
  const BV *Z = (const BV *)Zd, *Kq[AS_RK_MAX_STAGES];
  BV *Y = (BV *)Yd;
  const BV zero = {0.0};
  const BM nosign = (BM){0} + INT64_MAX, none = {0}; /* fabs: the sign bit cleared */
  double co[AS_RK_MAX_STAGES];
  for (int q = 0; q < nt; q++) Kq[q] = (const BV *)Kd[cb->idx[q]], co[q] = cb->co[q];
  for (int g = 0; g < NG; g++) {
    BV sm0 = zero, sm1 = zero;
    BM nan0 = none, nan1 = none;
    /* entry q into Y and the accumulators of its parity; Y_OF(i) the combination at index i */
#define BCOMB_ONE(q, SM, NAN, Y_OF)      \
  do {                                   \
    const size_t i_ = (q)*NG + g;        \
    const BV y_ = Y_OF(i_);              \
    Y[i_] = y_;                          \
    const BV a_ = (BV)((BM)y_ & nosign); \
    SM = BSEL(a_ > SM, a_, SM);          \
    NAN |= y_ != y_;                     \
  } while (0)
#define BCOMB_ALL(Y_OF)                          \
  do {                                           \
    size_t q_ = 0;                               \
    for (; q_ + 2 <= nd; q_ += 2) {              \
      BCOMB_ONE(q_, sm0, nan0, Y_OF);            \
      BCOMB_ONE(q_ + 1, sm1, nan1, Y_OF);        \
    }                                            \
    if (q_ < nd) BCOMB_ONE(q_, sm0, nan0, Y_OF); \
  } while (0)
#define Y_COPY(i) (Z[i])
#define Y_ONE(i) (Z[i] + h * (zero + co[0] * Kq[0][i]))
#define Y_SUM(i)                                                 \
  __extension__({                                                \
    BV acc_ = zero; /* from 0.0 in stage order, as rk_combine */ \
    for (int k_ = 0; k_ < nt; k_++) acc_ += co[k_] * Kq[k_][i];  \
    Z[i] + h *acc_;                                              \
  })
    if (nt == 0)
      BCOMB_ALL(Y_COPY);
    else if (nt == 1)
      BCOMB_ALL(Y_ONE);
    else
      BCOMB_ALL(Y_SUM);
#undef Y_SUM
#undef Y_ONE
#undef Y_COPY
#undef BCOMB_ALL
#undef BCOMB_ONE
    const BV m = BSEL(sm1 > sm0, sm1, sm0);
    const BM bad = nan0 | nan1;
    for (int u = 0; u < BW; u++) {
      smax[g * BW + u] = m[u];
      fin[g * BW + u] = !bad[u] && m[u] < INFINITY;
    }
  }
}

/* The largest row norm of lane u of group g of X (about mu, or 0), its entries scaled by a
 * power of two first: the slow path of a lane whose sum of squares overflowed (dynamics.c
 * norm_scale, the same bits). */
BINL double BFN(lane_norm_scaled)(int n, int d, const BV *X, int g, int u, double mu_is,
                                  const BV *mean) {
  double amax = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < d; j++) {
      double a = fabs(X[((size_t)i * d + j) * NG + g][u] - (mu_is != 0.0 ? mean[j][u] : 0.0));
      if (!(a <= amax)) amax = a;
    }
  int e = 0;
  if (amax > 0x1p500 && isfinite(amax)) (void)frexp(amax, &e);
  const double f = ldexp(1.0, -e);
  double best = 0.0;
  for (int i = 0; i < n; i++) {
    double sum = 0.0;
    for (int j = 0; j < d; j++) {
      const double v = (X[((size_t)i * d + j) * NG + g][u] - (mu_is != 0.0 ? mean[j][u] : 0.0)) * f;
      sum += v * v;
    }
    if (!(sum <= best)) best = sum;
  }
  return ldexp(sqrt(best), e);
}

/* max_row_norm of K into v and radius_of Z into r, every lane. */
BINL void BFN(measures)(int n, int d, const double *Kd, const double *Zd, double *v, double *r,
                        int safe) {
  const BV *K = (const BV *)Kd, *Z = (const BV *)Zd;
  const BV zero = {0.0};
  for (int g = 0; g < NG; g++) {
    BV best = zero;
    for (int i = 0; i < n; i++) {
      BV s = zero;
      for (int j = 0; j < d; j++) {
        const BV k = K[((size_t)i * d + j) * NG + g];
        s += k * k;
      }
      best = BSEL(s <= best, best, s); /* NaN propagates */
    }
    for (int u = 0; u < BW; u++)
      v[g * BW + u] = best[u] == INFINITY && safe ? BFN(lane_norm_scaled)(n, d, K, g, u, 0.0, NULL)
                                                  : sqrt(best[u]);
    BV mean[AS_SMALL_DMAX];
    for (int j = 0; j < d; j++) mean[j] = zero;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < d; j++) mean[j] += Z[((size_t)i * d + j) * NG + g];
    for (int j = 0; j < d; j++) mean[j] /= (double)n;
    best = zero;
    for (int i = 0; i < n; i++) {
      BV s = zero;
      for (int j = 0; j < d; j++) {
        const BV e = Z[((size_t)i * d + j) * NG + g] - mean[j];
        s += e * e;
      }
      best = BSEL(s <= best, best, s);
    }
    for (int u = 0; u < BW; u++)
      r[g * BW + u] = best[u] == INFINITY && safe ? BFN(lane_norm_scaled)(n, d, Z, g, u, 1.0, mean)
                                                  : sqrt(best[u]);
  }
}

/* scaled_tokens' first pass: G~ = Y with column j times mul[j] (mul: d x AS_BATCH_LANES, NULL:
 * G~ = Y, not copied), and the largest |entry| of G~ per lane into smax. */
BINL void BFN(tokmax)(int n, int d, const double *Yd, const double *mul, double *Gd, double *smax) {
  const BV *Y = (const BV *)Yd, *M = (const BV *)mul;
  BV *G = (BV *)Gd;
  const BV zero = {0.0};
  const BM nosign = (BM){0} + INT64_MAX; /* fabs: the sign bit cleared */
  for (int g = 0; g < NG; g++) {
    BV sm = zero;
    if (M) {
      for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++) {
          const size_t q = ((size_t)i * d + j) * NG + g;
          const BV y = Y[q] * M[(size_t)j * NG + g];
          G[q] = y;
          const BV a = (BV)((BM)y & nosign);
          sm = BSEL(a > sm, a, sm);
        }
    } else {
      for (size_t q = 0; q < (size_t)n * d; q++) {
        const BV a = (BV)((BM)Y[q * NG + g] & nosign);
        sm = BSEL(a > sm, a, sm);
      }
    }
    for (int u = 0; u < BW; u++) smax[g * BW + u] = sm[u];
  }
}

/* G = S f per lane (scaled_tokens' scaling; f = 1: the lane unchanged, exactly; S may be G),
 * then A = G Mm per lane: attention_small's dot products (four partial sums, same order). */
BINL void BFN(scores)(int n, int d, const double *Sd, const double *f, const double *Md, double *Gd,
                      double *Ad) {
  const BV *S = (const BV *)Sd, *Mm = (const BV *)Md, *F = (const BV *)f;
  BV *G = (BV *)Gd, *A = (BV *)Ad;
  const BV zero = {0.0};
  for (int g = 0; g < NG; g++) {
    const BV fg = F[g];
    for (int i = 0; i < n; i++) {
      BV gi[AS_SMALL_DMAX];
      for (int q = 0; q < d; q++) {
        const size_t k = ((size_t)i * d + q) * NG + g;
        gi[q] = S[k] * fg;
        G[k] = gi[q];
      }
      for (int col = 0; col < d; col++) {
        BV s0 = zero, s1 = zero, s2 = zero, s3 = zero;
        int q = 0;
        for (; q + 4 <= d; q += 4) {
          s0 += gi[q] * Mm[((size_t)q * d + col) * NG + g];
          s1 += gi[q + 1] * Mm[((size_t)(q + 1) * d + col) * NG + g];
          s2 += gi[q + 2] * Mm[((size_t)(q + 2) * d + col) * NG + g];
          s3 += gi[q + 3] * Mm[((size_t)(q + 3) * d + col) * NG + g];
        }
        for (; q < d; q++) s0 += gi[q] * Mm[((size_t)q * d + col) * NG + g];
        /* d < 4: s1 = s2 = s3 = +0 and s0, a sum from +0, is never -0, so (s0 + s1) + (s2 + s3)
         * is s0 bit for bit (NaN included) */
        A[((size_t)i * d + col) * NG + g] = d < 4 ? s0 : (s0 + s1) + (s2 + s3);
      }
    }
  }
}

/* small_output per lane: F = 1.0 (H - Y) V^T (minus_y: z) or 1.0 H V^T (x), one sum over l. */
BINL void BFN(output)(int n, int d, int minus_y, const double *Hd, const double *Yd,
                      const double *Vd, double *Fd) {
  const BV *H = (const BV *)Hd, *Y = (const BV *)Yd, *V = (const BV *)Vd;
  BV *F = (BV *)Fd;
  const BV zero = {0.0};
  for (int g = 0; g < NG; g++)
    for (int i = 0; i < n; i++) {
      BV h[AS_SMALL_DMAX];
      for (int l = 0; l < d; l++) {
        const size_t q = ((size_t)i * d + l) * NG + g;
        h[l] = minus_y ? H[q] - Y[q] : H[q];
      }
      for (int j = 0; j < d; j++) {
        BV s = zero;
        for (int l = 0; l < d; l++) s += h[l] * V[((size_t)j * d + l) * NG + g];
        F[((size_t)i * d + j) * NG + g] = 1.0 * s;
      }
    }
}

/* The lanes' right-hand sides at time t: F = f(t, Y) in every active lane, each with the bits
 * of rhs_mode on that lane's Y alone (scaled_tokens, attention_small, small_output). ysmax:
 * the largest |entry| of Y per lane (from the combination that formed Y), NULL: not known. */
BINL as_status BFN(rhs)(batch *b, double t, const double *restrict Y, double *restrict F,
                        const double *ysmax) {
  as_status st = AS_OK;
  const int n = b->n, d = b->d;
  double mul[AS_SMALL_DMAX * AS_BATCH_LANES] __attribute__((aligned(64)));
  double f[AS_BATCH_LANES] __attribute__((aligned(64)));
  double c[AS_BATCH_LANES] __attribute__((aligned(64)));
  double smax[AS_BATCH_LANES];
  int slow[AS_BATCH_LANES], any = 0, nslow = 0;
  const int need_mul = batch_rhs_blocks(b, t, mul, slow);
  if (need_mul || !ysmax) {
    BY_D(d, BFN(tokmax)(n, D, Y, need_mul ? mul : NULL, b->G, smax));
    ysmax = smax;
  }
  AS_TRY(batch_rhs_lanes(b, t, Y, ysmax, slow, f, c, &nslow, &any));
  const double *src = Y; /* G~ per lane: Y, or the batch's G */
  if (need_mul || nslow) {
    if (!need_mul) memcpy(b->G, Y, b->nd * AS_BATCH_LANES * sizeof(double));
    batch_rhs_slow(b, slow);
    src = b->G;
  }
  if (any) {
    BY_D(d, BFN(scores)(n, D, src, f, b->Mm, b->G, b->A));
    as_attention_small_lanes(n, d, b->A, b->G, c, Y, b->H, b->e);
    const int mz = b->mode == MODE_Z;
    BY_D(d, BFN(output)(n, D, mz, b->H, Y, b->V, F));
  }
  batch_rhs_alone(b, F);
cleanup:
  return st;
}

/* run_continuous without step control, snapshots or hooks, in lock-step for the active lanes;
 * a lane leaves at the step where it would have stopped alone. */
static BATTR as_status BFN(loop)(batch *b, const as_integ_spec *const *in,
                                 const volatile sig_atomic_t *stop, as_dyn_stats *stats,
                                 double *since) {
  as_status st = AS_OK;
  as_dyn *const *w = b->w;
  const int B = b->B;
  const rk_plan *rk = b->rk;
  const double T = in[0]->T, h0 = in[0]->dt;
  double t = 0.0;
  int have_k1 = 0, live = 0, have_zmax = 0;
  double zmax[AS_BATCH_LANES], ymax[AS_BATCH_LANES]; /* largest |entry| of Z, of Y per lane */
  int fin[AS_BATCH_LANES], yfin[AS_BATCH_LANES];
  for (int l = 0; l < B; l++) live += b->act[l];
  while (live > 0) {
    if (stop && *stop) {
      for (int l = 0; l < B; l++)
        if (b->act[l]) {
          stats[l].outcome = AS_OUT_INTERRUPTED;
          w[l]->t = t;
          lane_leave(b, l, 1);
        }
      break;
    }
    if (!have_k1) {
      AS_TRY(BFN(rhs)(b, t, b->Z, b->K[0], have_zmax ? zmax : NULL));
      have_k1 = 1;
    }
    double v[AS_BATCH_LANES], r[AS_BATCH_LANES];
    BY_D(b->d, BFN(measures)(b->n, D, b->K[0], b->Z, v, r, b->mode == MODE_Z));
    for (int l = 0; l < B; l++) {
      if (!b->act[l]) continue;
      run_ctx rc = {in[l], stop, NULL, 0, NULL, NULL, &stats[l]};
      as_outcome out = dyn_step_guard(&rc, t, v[l], r[l], &since[l]);
      if (out != AS_OUT_PENDING) {
        stats[l].outcome = out;
        w[l]->t = t;
        lane_leave(b, l, 0);
        live--;
      }
    }
    if (live == 0) break;
    double h = h0;
    int land = 0;
    if (T - t <= h * (1.0 + 1e-9)) {
      h = T - t;
      land = 1;
    }
    for (int s = 1; s < rk->s; s++) {
      const int last = rk->fsal && s == rk->s - 1; /* this stage's state is the solution */
      double *Y = last ? b->Zn : b->Ys;
      BFN(combine)(b->nd, b->Z, h, &rk->a[s], b->K, Y, last ? zmax : ymax, last ? fin : yfin);
      AS_TRY(BFN(rhs)(b, t + rk->c[s] * h, Y, b->K[s], last ? zmax : ymax));
    }
    if (!rk->fsal) BFN(combine)(b->nd, b->Z, h, &rk->b, b->K, b->Zn, zmax, fin);
    have_zmax = 1; /* of Zn, the next step's Z */
    for (int l = 0; l < B; l++) {
      if (!b->act[l]) continue;
      stats[l].steps++;
      if (!fin[l]) { /* stops before the step, with the state it had */
        stats[l].outcome = AS_OUT_NONFINITE;
        w[l]->t = t;
        lane_leave(b, l, 0);
        live--;
      }
    }
    dyn_swap(&b->Z, &b->Zn);
    if (rk->fsal) dyn_swap(&b->K[0], &b->K[rk->s - 1]);
    t = land ? T : t + h;
    if (!rk->fsal) have_k1 = 0;
    if (land && t >= T) {
      for (int l = 0; l < B; l++)
        if (b->act[l]) {
          stats[l].outcome = AS_OUT_REACHED_T;
          w[l]->t = t;
          lane_leave(b, l, 1);
        }
      live = 0;
    }
  }
cleanup:
  return st;
}

#undef BY_D
#undef BINL
#undef BSEL
#undef NG
#undef BM
#undef BV
