/* attention_kernels.h (private to attention.c): the exponential and the small-shape attention
 * kernels for one instruction set. attention.c includes this file once per set, after defining
 *   AK_W            the vector width in doubles (8 AVX-512F, 4 AVX2, 2 the baseline),
 *   AK(name)        the name of this set's version of `name`,
 *   AK_FMA(a, b, c) a * b + c rounded once, lane by lane,
 *   AK_TAB8(t, i)   the doubles t[i] lane by lane, t a table of 8, i a vector of indices 0..7,
 *   AK_MAX(s, b)    s > b ? s : b lane by lane,
 *   AK_ANY(m)       nonzero when some lane of the integer vector m is nonzero,
 * and selecting the target (#pragma GCC target). Every version performs the same operations on
 * every entry, only W entries at a time, and rounds each of them exactly as C does (an FMA is
 * one correctly rounded operation on every machine; nothing is contracted otherwise: ISO C,
 * -ffp-contract=off). So all versions give the same bits, whatever the width.
 *
 * Every function that takes or returns a vector is always_inline: no vector crosses a call,
 * where versions compiled for different instruction sets would pass it differently. */

typedef double AK(v) __attribute__((vector_size(8 * AK_W)));
typedef int64_t AK(vi) __attribute__((vector_size(8 * AK_W)));
typedef uint64_t AK(vu) __attribute__((vector_size(8 * AK_W)));

static inline __attribute__((always_inline)) AK(v) AK(ld)(const double *p) {
  AK(v) v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline __attribute__((always_inline)) void AK(st)(double *p, AK(v) v) {
  memcpy(p, &v, sizeof v);
}
/* m ? a : b lane by lane (m: all ones or all zeros per lane). */
static inline __attribute__((always_inline)) AK(v) AK(sel)(AK(vi) m, AK(v) a, AK(v) b) {
  return (AK(v))(((AK(vi))a & m) | ((AK(vi))b & ~m));
}
/* max(s, b) lane by lane as s > b ? s : b (a NaN s leaves b): AK_MAX, the instruction where
 * the set has one with exactly this rule (x86's maxpd: "if s > b then s else b"). */
static inline __attribute__((always_inline)) AK(v) AK(max)(AK(v) s, AK(v) b) {
  return AK_MAX(s, b);
}

/* e^a in place for the U vectors a[0..U) of entries a <= 0 (-inf allowed; NaN gives 0):
 * exactly 0 below -AS_EXP_CUT, where e^a is below the smallest normal number (so no subnormal
 * ever enters the arithmetic), exactly 1 at 0.
 * a = (8 m + j) ln2 / 8 + r with k = 8 m + j = round(8 a / ln2), j in 0..7 and |r| <= ln2 / 16
 * (Cody and Waite's two-part ln2 / 8, both parts by FMA); e^a = (e^r 2^(j/8)) 2^m with e^r by a
 * polynomial of degree 7 by Horner's rule in FMAs (AS_EXP_POLY: within 2.0e-17 relative),
 * 2^(j/8) from a table of eight doubles (AS_EXP_TABLE, each rounded to nearest; one permute
 * on AVX-512F) and the exact product with 2^m, m in [-1022, 0], built in the exponent bits.
 * The table costs one rounding and buys four FMAs of the degree-11 polynomial on |r| <= ln2 / 2
 * it replaced. Accuracy: a few ulp. U is a constant after inlining; when every entry is 0 or
 * below the cut (the hardmax regime of long runs) the polynomial is skipped, giving what it
 * would give. */
static inline __attribute__((always_inline)) void AK(exp)(AK(v) * a, const int U) {
  const AK(v) zero = {0.0}, one = zero + 1.0, cut = zero - AS_EXP_CUT;
  AK(vi) need = {0}, nz[4];
  for (int u = 0; u < U; u++) {
    nz[u] = (AK(vi))(a[u] != 0.0);
    need |= (AK(vi))(a[u] >= -AS_EXP_CUT) & nz[u];
  }
  if (!AK_ANY(need)) {
    for (int u = 0; u < U; u++) a[u] = AK(sel)(nz[u], zero, one);
    return;
  }
  /* e^r ~ 1 + r + r^2 / 2 + r^3 g(r): g of degree 4 interpolates (e^r - 1 - r - r^2 / 2) / r^3
   * at the 5 Chebyshev nodes of [-ln2 / 16, ln2 / 16], coefficients rounded to double
   * (computed with 60 digits; tests/py/test_exp_poly.py recomputes them): the polynomial is
   * within 2.0e-17 of e^r relative with 7 FMAs. Highest degree first (Horner). */
  static const double co[7] = {AS_EXP_POLY};
  static const double tab[8] __attribute__((aligned(64))) = {AS_EXP_TABLE};
  AK(v) x[4], kf[4], r[4], q[4];
  AK(vu) kb[4];
  for (int u = 0; u < U; u++) x[u] = AK(max)(a[u], cut);
  for (int u = 0; u < U; u++) kf[u] = AK_FMA(x[u], zero + 11.541560327111707, zero + 0x1.8p52);
  for (int u = 0; u < U; u++) {
    kb[u] = (AK(vu))kf[u]; /* round to nearest: k sits in the low mantissa bits */
    kf[u] -= 0x1.8p52;
  }
  /* ln2 / 8 as 0.08664339754614048 (the high part of ln2 over 8: its low 21 mantissa bits
   * zero) plus 2.3852686615882346e-11 */
  for (int u = 0; u < U; u++)
    r[u] = AK_FMA(-kf[u], zero + 2.3852686615882346e-11,
                  AK_FMA(-kf[u], zero + 0.08664339754614048, x[u]));
  for (int u = 0; u < U; u++) q[u] = zero + AS_EXP_POLY_TOP;
  for (int h = 0; h < 7; h++)
    for (int u = 0; u < U; u++) q[u] = AK_FMA(q[u], r[u], zero + co[h]);
  /* j = k mod 8 in the low three bits of kb; m = floor(k / 8) in its bits 3..14 (two's
   * complement: the bits above 2^50 are shifted out) */
  for (int u = 0; u < U; u++)
    a[u] = AK(sel)((AK(vi))(a[u] >= -AS_EXP_CUT),
                   (q[u] * AK_TAB8(tab, (AK(vi))(kb[u] & 7))) *
                       (AK(v))(((kb[u] >> 3) + (uint64_t)1023) << 52),
                   zero);
}

/* p[j] = e^{p[j]} for j < m (entries <= 0), four vectors at a time; the last entries in a
 * vector padded with zeros. */
static void AK(exp_array)(int m, double *p) {
  int j = 0;
  for (; j + 4 * AK_W <= m; j += 4 * AK_W) {
    AK(v) a[4];
    for (int u = 0; u < 4; u++) a[u] = AK(ld)(p + j + u * AK_W);
    AK(exp)(a, 4);
    for (int u = 0; u < 4; u++) AK(st)(p + j + u * AK_W, a[u]);
  }
  for (; j < m; j += AK_W) {
    const int k = m - j < AK_W ? m - j : AK_W;
    double buf[AK_W] = {0.0};
    memcpy(buf, p + j, (size_t)k * sizeof(double));
    AK(v) a[1] = {AK(ld)(buf)};
    AK(exp)(a, 1);
    AK(st)(buf, a[0]);
    memcpy(p + j, buf, (size_t)k * sizeof(double));
  }
}

/* The softmax weights of one row of W lanes: with the scores at p[j * stride] (j < n, read in
 * place) and their maximum best, p[j * stride] = e^{c (s - best)}, four tokens at a time (the
 * last n % 4 padded with exponents 0 that are then dropped); returns 1 / (row sum), the sum
 * with four partial sums over j (token j of whole groups of four to j % 4, the rest to 0). */
static inline __attribute__((always_inline)) AK(v)
    AK(expsum)(double *p, size_t stride, int n, AK(v) c, AK(v) best) {
  const AK(v) zero = {0.0};
  const int nfull = n / 4 * 4;
  AK(v) sum[4] = {zero, zero, zero, zero};
  int j = 0;
  for (; j < nfull; j += 4) {
    AK(v) e[4];
    for (int u = 0; u < 4; u++) e[u] = c * (AK(ld)(p + (size_t)(j + u) * stride) - best);
    AK(exp)(e, 4);
    for (int u = 0; u < 4; u++) {
      AK(st)(p + (size_t)(j + u) * stride, e[u]);
      sum[u] += e[u];
    }
  }
  if (j < n) {
    AK(v) e[4] = {zero, zero, zero, zero};
    for (int u = 0; u < n - j; u++) e[u] = c * (AK(ld)(p + (size_t)(j + u) * stride) - best);
    AK(exp)(e, 4);
    for (int u = 0; u < n - j; u++) {
      AK(st)(p + (size_t)(j + u) * stride, e[u]);
      sum[0] += e[u];
    }
  }
  return 1.0 / ((sum[0] + sum[1]) + (sum[2] + sum[3]));
}

/* The entry of P at p: e * inv, stored there first when `first` (the first pass over P). */
static inline __attribute__((always_inline)) AK(v) AK(pnorm)(double *p, AK(v) inv, int first) {
  AK(v) v = AK(ld)(p);
  if (!first) return v;
  v *= inv;
  AK(st)(p, v);
  return v;
}

/* ---- rows of P as lanes (as_attention_small): rows i0 .. i0 + W - 1 of one trial.
 * Always inlined with d a constant for the common dimensions, so that the loops over k and
 * col unroll and every accumulator lives in a register. */
static inline __attribute__((always_inline)) void
AK(rows)(int i0, int n, const int d, int ld, const double *restrict AT, const double *restrict G,
         double c, const double *restrict Y, double *restrict PT, double *restrict H) {
  const AK(v) zero = {0.0};
  const int nfull = n / 4 * 4; /* tokens j < nfull go to partial sum j % 4, the rest to 0 */
  double *pt = PT + i0;
  AK(v) at[AS_SMALL_DMAX];
  for (int k = 0; k < d; k++) at[k] = AK(ld)(AT + (size_t)k * ld + i0);
  /* Scores of the W rows against every token, and the row maxima (four chains: a maximum is
   * the same in any order). */
  AK(v) bm[4] = {zero - DBL_MAX, zero - DBL_MAX, zero - DBL_MAX, zero - DBL_MAX};
  for (int j0 = 0; j0 < n; j0 += 4)
    for (int u = 0; u < 4; u++) { /* constant u: the four maxima stay in registers */
      const int j = j0 + u;
      if (j >= n) break;
      const double *g = G + (size_t)j * d;
      AK(v) s = at[0] * g[0];
      for (int k = 1; k < d; k++) s += at[k] * g[k];
      bm[u] = AK(max)(s, bm[u]);
      AK(st)(pt + (size_t)j * ld, s);
    }
  const AK(v) best = AK(max)(AK(max)(bm[3], bm[2]), AK(max)(bm[1], bm[0]));
  const AK(v) inv = AK(expsum)(pt, (size_t)ld, n, zero + c, best);
  int j;
  /* P = e * (1 / sum) (the first pass stores it), H = P Y two columns at a time, each with
   * four partial sums over j. */
  const int lanes = n - i0 < AK_W ? n - i0 : AK_W;
  for (int c0 = 0; c0 < d; c0 += 2) {
    const int two = d - c0 >= 2, first = c0 == 0;
    AK(v) h0[4] = {zero, zero, zero, zero}, h1[4] = {zero, zero, zero, zero};
    for (j = 0; j < nfull; j += 4)
      for (int u = 0; u < 4; u++) {
        const AK(v) p = AK(pnorm)(pt + (size_t)(j + u) * ld, inv, first);
        h0[u] += p * Y[(size_t)(j + u) * d + c0];
        if (two) h1[u] += p * Y[(size_t)(j + u) * d + c0 + 1];
      }
    for (; j < n; j++) {
      const AK(v) p = AK(pnorm)(pt + (size_t)j * ld, inv, first);
      h0[0] += p * Y[(size_t)j * d + c0];
      if (two) h1[0] += p * Y[(size_t)j * d + c0 + 1];
    }
    const AK(v) ha = (h0[0] + h0[1]) + (h0[2] + h0[3]), hb = (h1[0] + h1[1]) + (h1[2] + h1[3]);
    for (int l = 0; l < lanes; l++) {
      H[(size_t)(i0 + l) * d + c0] = ha[l];
      if (two) H[(size_t)(i0 + l) * d + c0 + 1] = hb[l];
    }
  }
}

static void AK(small)(int n, int d, int ld, const double *restrict AT, const double *restrict G,
                      double c, const double *restrict Y, double *restrict PT, double *restrict H) {
  for (int i0 = 0; i0 < n; i0 += AK_W) {
    switch (d) {
    case 1:
      AK(rows)(i0, n, 1, ld, AT, G, c, Y, PT, H);
      break;
    case 2:
      AK(rows)(i0, n, 2, ld, AT, G, c, Y, PT, H);
      break;
    case 3:
      AK(rows)(i0, n, 3, ld, AT, G, c, Y, PT, H);
      break;
    default:
      AK(rows)(i0, n, d, ld, AT, G, c, Y, PT, H);
      break;
    }
  }
}

/* ---- trials as lanes (as_attention_small_lanes): row i of lanes l0 .. l0 + W - 1 of a batch,
 * the same operations per lane as AK(rows) on that trial. Inputs lane-interleaved with stride
 * AS_BATCH_LANES; e: n W doubles of scratch. */
static inline __attribute__((always_inline)) void
AK(lrow)(int i, int n, const int d, const double *restrict A, const double *restrict G,
         const double *restrict c, const double *restrict Y, double *restrict H, double *restrict e,
         int l0) {
  const int L = AS_BATCH_LANES, nfull = n / 4 * 4;
  const AK(v) zero = {0.0}, cv = AK(ld)(c + l0);
  AK(v) at[AS_SMALL_DMAX];
  for (int k = 0; k < d; k++) at[k] = AK(ld)(A + ((size_t)i * d + k) * L + l0);
  AK(v) bm[4] = {zero - DBL_MAX, zero - DBL_MAX, zero - DBL_MAX, zero - DBL_MAX};
  for (int j0 = 0; j0 < n; j0 += 4)
    for (int u = 0; u < 4; u++) {
      const int j = j0 + u;
      if (j >= n) break;
      const double *g = G + (size_t)j * d * L + l0;
      AK(v) s = at[0] * AK(ld)(g);
      for (int k = 1; k < d; k++) s += at[k] * AK(ld)(g + (size_t)k * L);
      bm[u] = AK(max)(s, bm[u]);
      AK(st)(e + (size_t)j * AK_W, s);
    }
  const AK(v) best = AK(max)(AK(max)(bm[3], bm[2]), AK(max)(bm[1], bm[0]));
  const AK(v) inv = AK(expsum)(e, AK_W, n, cv, best);
  int j;
  const size_t sy = (size_t)d * L;
  for (int c0 = 0; c0 < d; c0 += 2) {
    const int two = d - c0 >= 2;
    AK(v) h0[4] = {zero, zero, zero, zero}, h1[4] = {zero, zero, zero, zero};
    const double *y = Y + (size_t)c0 * L + l0;
    for (j = 0; j < nfull; j += 4)
      for (int u = 0; u < 4; u++) {
        const AK(v) p = AK(ld)(e + (size_t)(j + u) * AK_W) * inv;
        h0[u] += p * AK(ld)(y + (size_t)(j + u) * sy);
        if (two) h1[u] += p * AK(ld)(y + (size_t)(j + u) * sy + L);
      }
    for (; j < n; j++) {
      const AK(v) p = AK(ld)(e + (size_t)j * AK_W) * inv;
      h0[0] += p * AK(ld)(y + (size_t)j * sy);
      if (two) h1[0] += p * AK(ld)(y + (size_t)j * sy + L);
    }
    AK(st)(H + ((size_t)i * d + c0) * L + l0, (h0[0] + h0[1]) + (h0[2] + h0[3]));
    if (two) AK(st)(H + ((size_t)i * d + c0 + 1) * L + l0, (h1[0] + h1[1]) + (h1[2] + h1[3]));
  }
}

static void AK(lanes)(int n, int d, const double *restrict A, const double *restrict G,
                      const double *restrict c, const double *restrict Y, double *restrict H,
                      double *restrict e) {
  for (int l0 = 0; l0 < AS_BATCH_LANES; l0 += AK_W)
    for (int i = 0; i < n; i++) switch (d) {
      case 1:
        AK(lrow)(i, n, 1, A, G, c, Y, H, e, l0);
        break;
      case 2:
        AK(lrow)(i, n, 2, A, G, c, Y, H, e, l0);
        break;
      case 3:
        AK(lrow)(i, n, 3, A, G, c, Y, H, e, l0);
        break;
      default:
        AK(lrow)(i, n, d, A, G, c, Y, H, e, l0);
        break;
      }
}
