/* cmd_census.c: attnsweep census WEIGHTS.h5: the theorems' hypotheses, triple by triple.
 *
 * Every triple of a matrix file (docs/matrices.md; per layer and head after import-weights,
 * docs/weights.md; a file with a head axis gives each item's heads in turn) is read the way a
 * sweep reads it (as_matfile_load + as_triple_build with vfamily and mfamily file, so M =
 * mscale Q^T K) and analysed with the sweep's spectral functions and tolerance, on the
 * cheaper path (choose_distributed): LAPACK with one triple per rank at a time, or ScaLAPACK
 * on every rank of MPI_COMM_WORLD (forced from d >= --threshold, the split of `attnsweep run`).
 * Rank 0 prints the rows in order; a bad file stops every rank with exit 2, and every read of
 * the file runs under a time bound and a crash guard (a damaged file is exit 2, never a hang or
 * a crash). A triple whose analysis fails (LAPACK convergence: an outcome, not an error) is a
 * row marked failed and counted in the summary; the exit code stays 0.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnsweep/matfile.h"
#include "attnsweep/par.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/triple.h"
#include "cli.h"

/* The relative tolerance of the sweep's spectral tests (pipeline.c, sweep.c). */
#define CENSUS_TOL 1e-10
/* Default time bound of one read of the file, seconds (--read-seconds). */
#define CENSUS_READ_SECONDS 60.0

typedef struct census_opts {
  const char *path;    /* the matrix file */
  const char *out;     /* -o FILE, NULL: stdout */
  int csv;             /* 1: CSV instead of markdown */
  double tol;          /* relative tolerance of the spectral tests */
  int threshold;       /* d from which ScaLAPACK is used; 0: the path is chosen by cost */
  double read_seconds; /* time bound of one read of the file */
  int factored;        /* V = VL VR stored: 1 analyse the factors, 0 the d x d V, -1 by d */
} census_opts;

/* One triple's row: its labels and analysis (sp NULL when it failed). */
typedef struct census_row {
  int index, layer, head;
  double m_norm; /* ||M||_F */
  double sep;    /* min_{i>1} |lambda_i - lambda_1| (simplicity margin); inf for d = 1 */
  char failed[AS_ERRMSG_MAX];
} census_row;

/* What the file's position attribute (import-weights) means for the table. */
static const char *position_note(const char *position) {
  if (strcmp(position, "rotary") == 0)
    return ": the model rotates q and k by their positions, so its score matrix at relative "
           "position r is W_Q R(r) W_K^T; M here is the position-free one (r = 0)";
  if (strcmp(position, "relative_bias") == 0)
    return ": a learned bias of the relative position is added to the scores, outside M";
  if (strcmp(position, "absolute") == 0)
    return ": added to the tokens before the first layer; M is the layer's own";
  return "";
}

static const char *yn(uint32_t flags, uint32_t bit) {
  return (flags & bit) ? "yes" : "no";
}

/* A number for the markdown table: 4 significant digits, "-" for NaN. */
static void fmt_num(char *buf, size_t cap, double x) {
  if (isnan(x))
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "%.4g", x);
}

static void md_header(FILE *f) {
  fprintf(f, "| layer | head | lambda_1 | abs lambda_2 | real | positive | simple | dominant | "
             "gap / abs lambda_1 | <Q phi_1, K phi_1> | asym(M) | min eig sym(M) | k+ | "
             "paranormal | good | theorem |\n");
  fprintf(f, "|---:|---:|---:|---:|:-:|:-:|:-:|:-:|---:|---:|---:|---:|---:|:-:|:-:|:--|\n");
}

static void md_label(char *buf, size_t cap, int v, int fallback) {
  if (v >= 0)
    snprintf(buf, cap, "%d", v);
  else
    snprintf(buf, cap, "(%d)", fallback);
}

static void md_row(FILE *f, const census_row *r, const as_spectral *sp) {
  char lay[32], head[32];
  md_label(lay, sizeof lay, r->layer, r->index);
  md_label(head, sizeof head, r->head, r->index);
  if (!sp) {
    fprintf(f, "| %s | %s | failed: %s ||||||||||||| - |\n", lay, head, r->failed);
    return;
  }
  char l1[64], l2[32], gap[32], mar[32], asym[32], mins[32], par[32];
  double s = hypot(sp->lambda1_re, sp->lambda1_im);
  int real = (sp->flags & AS_FLAG_LEAD_REAL) != 0;
  if (real) {
    snprintf(l1, sizeof l1, "%.4g", sp->lambda1_re);
  } else { /* a real part at rounding level of a purely imaginary pair prints as 0 */
    double re = fabs(sp->lambda1_re) <= 1e-12 * s ? 0.0 : sp->lambda1_re;
    snprintf(l1, sizeof l1, "%.4g%+.4gi", re, sp->lambda1_im);
  }
  fmt_num(l2, sizeof l2, sp->lambda2_abs);
  /* the dominance margin means something only for a real lambda_1 */
  fmt_num(gap, sizeof gap, real && s > 0 ? sp->gap / s : NAN);
  fmt_num(mar, sizeof mar, sp->margin);
  fmt_num(asym, sizeof asym, sp->m_asym);
  fmt_num(mins, sizeof mins, sp->m_min_sym_eig);
  if (sp->flags & AS_FLAG_PARANORMAL)
    snprintf(par, sizeof par, "yes (dim F %d)", sp->dim_f);
  else
    snprintf(par, sizeof par, "no");
  fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n",
          lay, head, l1, l2, yn(sp->flags, AS_FLAG_LEAD_REAL), yn(sp->flags, AS_FLAG_LEAD_POSITIVE),
          yn(sp->flags, AS_FLAG_LEAD_SIMPLE), yn(sp->flags, AS_FLAG_LEAD_DOMINANT), gap, mar, asym,
          mins, sp->kpos, par, yn(sp->flags, AS_FLAG_GOOD),
          as_enum_label(&as_theorem_table, (int)sp->theorem));
}

/* The CSV columns, in order (one list for the header and the rows). */
static const char *const csv_columns =
    "index,layer,head,d,m,lambda1_re,lambda1_im,lambda2_abs,gap,gap_rel,sep_rel,lead_real,"
    "lead_positive,lead_simple,lead_dominant,margin,margin_positive,good,m_asym,m_symmetric,"
    "m_min_sym_eig,m_spd,m_norm_f,kpos,paranormal,dim_f,complex_lead,mu,angle_l1_phi1,eig_cond,"
    "distributed,flags,theorem,predicted,status";

static int bit(uint32_t flags, uint32_t b) {
  return (flags & b) ? 1 : 0;
}

/* A CSV field for a message: quoted, inner quotes doubled. */
static void csv_quoted(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s == '\n' ? ' ' : *s, f);
  }
  fputc('"', f);
}

static void csv_row(FILE *f, const census_row *r, int d, int m, const as_spectral *sp) {
  fprintf(f, "%d,%d,%d,%d,%d,", r->index, r->layer, r->head, d, m);
  if (!sp) {
    /* 29 empty analysis fields, then the status. */
    for (int i = 0; i < 29; i++) fputc(',', f);
    fputs("failed: ", f);
    csv_quoted(f, r->failed);
    fputc('\n', f);
    return;
  }
  uint32_t fl = sp->flags;
  double s = hypot(sp->lambda1_re, sp->lambda1_im);
  fprintf(f, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d,%d,%d,%d,%.17g,%d,%d,%.17g,%d,%.17g,%d,%.17g,",
          sp->lambda1_re, sp->lambda1_im, sp->lambda2_abs, sp->gap, s > 0 ? sp->gap / s : NAN,
          s > 0 ? r->sep / s : NAN, bit(fl, AS_FLAG_LEAD_REAL), bit(fl, AS_FLAG_LEAD_POSITIVE),
          bit(fl, AS_FLAG_LEAD_SIMPLE), bit(fl, AS_FLAG_LEAD_DOMINANT), sp->margin,
          bit(fl, AS_FLAG_MARGIN_POSITIVE), bit(fl, AS_FLAG_GOOD), sp->m_asym,
          bit(fl, AS_FLAG_M_SYMMETRIC), sp->m_min_sym_eig, bit(fl, AS_FLAG_M_SPD), r->m_norm);
  fprintf(f, "%d,%d,%d,%d,%.17g,%.17g,%.17g,%d,%u,%s,%s,ok\n", sp->kpos,
          bit(fl, AS_FLAG_PARANORMAL), sp->dim_f, bit(fl, AS_FLAG_COMPLEX_LEAD), sp->mu,
          sp->angle_l1_phi1, sp->eig_cond, bit(fl, AS_FLAG_DISTRIBUTED), (unsigned)fl,
          as_enum_label(&as_theorem_table, (int)sp->theorem),
          as_enum_label(&as_geom_table, (int)sp->predicted));
}

/* The arguments of `attnsweep census`; its options land here (census_opts_table). */
typedef struct census_args {
  const char *out;     /* -o FILE */
  int csv;             /* --csv */
  double tol;          /* --tol */
  long threshold;      /* --threshold (0: the path is chosen by cost) */
  double read_seconds; /* --read-seconds */
  int expanded;        /* --expanded */
  int factored;        /* --factored */
} census_args;

/* Every option of `attnsweep census`, once. */
static const as_opt census_opts_table[] = {
    AS_OPT_FLAG("csv", 0, census_args, csv, "CSV instead of markdown (the summary on stderr)"),
    AS_OPT_TEXT("output", 'o', "FILE", census_args, out, "write the table here, not stdout"),
    AS_OPT_RANGE("tol", 0, "T", census_args, tol, 0, 1, AS_OPEN_LO | AS_OPEN_HI,
                 "relative tolerance of the spectral tests (default 1e-10, the sweep's)"),
    AS_OPT_WHOLE("threshold", 0, "D", census_args, threshold, 1, 1 << 20,
                 "d from which ScaLAPACK on all ranks is used (default: the cheaper path)"),
    AS_OPT_RANGE("read-seconds", 0, "S", census_args, read_seconds, 0, 86400, AS_OPEN_LO,
                 "time bound of each read of the file (default 60): a damaged file that makes "
                 "HDF5 loop stops with exit 2"),
    AS_OPT_FLAG("expanded", 0, census_args, expanded,
                "analyse a factored V (V = VL VR, import-weights) as the d x d matrix a sweep "
                "analyses, also from d >= 512 (slower; eig_cond defined)"),
    AS_OPT_FLAG("factored", 0, census_args, factored,
                "analyse a factored V through its r x r factors also below d = 512"),
};
const as_optset as_opts_census = AS_OPTSET(census_opts_table, "WEIGHTS.h5");

/* Parses the options; 0 on success, else the exit code (rank 0 printed the message). */
static int parse(int argc, char **argv, int rank, census_opts *o) {
  census_args a = {NULL, 0, CENSUS_TOL, 0, CENSUS_READ_SECONDS, 0, 0};
  memset(o, 0, sizeof *o);
  int npos = 0, code = 0;
  if (as_opts_parse("census", &as_opts_census, argc, argv, &a, rank == 0, &npos, &code))
    return code ? code : -1;
  if (npos > 1)
    return rank == 0
               ? as_cli_usage_error("census", "more than one file ('%s', '%s')", argv[1], argv[2])
               : 2;
  if (npos == 0) return rank == 0 ? as_cli_usage_error("census", "missing WEIGHTS.h5") : 2;
  o->path = argv[1];
  o->out = a.out;
  o->csv = a.csv;
  o->tol = a.tol;
  o->threshold = (int)a.threshold;
  o->read_seconds = a.read_seconds;
  if (a.expanded && a.factored)
    return rank == 0 ? as_cli_usage_error("census", "--expanded and --factored exclude each other")
                     : 2;
  o->factored = a.expanded ? 0 : a.factored ? 1 : -1;
  return 0;
}

/* ---------------------------------------------------------------- the read guard
 *
 * HDF5 reads whatever a damaged file's metadata says; some damage makes it loop or crash
 * (issue 36 item 9). Every read of the file runs under a guard: an alarm after
 * --read-seconds, and handlers for the signals of a crash, each of which prints one line
 * naming the file and leaves with exit 2 (bad input). The messages are built before the read
 * (a handler only calls write and _exit). */
static char guard_slow[768], guard_crash[768];
static size_t guard_slow_len, guard_crash_len;
static struct sigaction guard_saved[5];
static const int guard_signals[5] = {SIGALRM, SIGSEGV, SIGBUS, SIGFPE, SIGILL};

static void guard_handler(int sig) {
  if (sig == SIGALRM) {
    if (write(STDERR_FILENO, guard_slow, guard_slow_len) < 0) _exit(2);
  } else if (write(STDERR_FILENO, guard_crash, guard_crash_len) < 0) {
    _exit(2);
  }
  _exit(2);
}

static void guard_begin(const census_opts *o) {
  snprintf(guard_slow, sizeof guard_slow,
           "attnsweep census: %s: reading the file took more than %g s (--read-seconds): it is "
           "damaged (HDF5 loops on it) or its disk hangs; the census stopped\n",
           o->path, o->read_seconds);
  snprintf(guard_crash, sizeof guard_crash,
           "attnsweep census: %s: the HDF5 library crashed reading the file: it is damaged "
           "(rewrite it with attnsweep import-weights); the census stopped\n",
           o->path);
  guard_slow_len = strlen(guard_slow);
  guard_crash_len = strlen(guard_crash);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = guard_handler;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 5; i++) sigaction(guard_signals[i], &sa, &guard_saved[i]);
  double s = ceil(o->read_seconds);
  alarm(s >= 1 ? (unsigned)s : 1u);
}

static void guard_end(void) {
  alarm(0);
  for (int i = 0; i < 5; i++) sigaction(guard_signals[i], &guard_saved[i], NULL);
}

/* The path for a V stored factored (V = VL VR, d x r times r x d, import-weights): from d >=
 * CENSUS_FACTORED_MIN_D with r <= d / 2, as_spectral_analyze_factored on r x r problems; a d = 768
 * head then costs about 0.1 s instead of 1.1 to 1.5 s (docs/weights.md). Below it the d x d
 * analysis is cheap (under 0.2 s a head) and gives the bits a sweep records, which runs LAPACK
 * there; from the sweep's default spectral threshold on, a sweep distributes the analysis
 * (ScaLAPACK, other roundings) anyway. --expanded and --factored override the choice. */
#define CENSUS_FACTORED_MIN_D AS_SPECTRAL_THRESHOLD_DEFAULT

/* Triple (item, head) of the file into tr (created for d, m); heads 0: no head axis. Any rank;
 * under the read guard. fac (may be NULL) gets V's factors when the file stores them and the
 * factored path applies (fac->r = 0 otherwise). */
typedef struct census_factors {
  int r;           /* inner size of V = VL VR; 0: analyse the d x d V */
  double *VL, *VR; /* d x r and r x d, owned (sized for the largest r seen) */
  size_t cap;      /* doubles each buffer holds */
} census_factors;

static as_status keep_factors(const census_opts *o, const as_matfile *mf, int head, int d,
                              census_factors *fac) {
  as_status st = AS_OK;
  const double *L, *R;
  fac->r = 0;
  if (o->factored == 0 || (o->factored < 0 && d < CENSUS_FACTORED_MIN_D)) goto cleanup;
  int r = as_matfile_v_factors(mf, head, &L, &R);
  if (r < 1 || 2 * r > d) goto cleanup; /* the d x d path costs about what the factored one does */
  size_t need = (size_t)d * r;
  if (need > fac->cap) {
    double *nl = realloc(fac->VL, need * sizeof *nl);
    if (nl) fac->VL = nl;
    double *nr = nl ? realloc(fac->VR, need * sizeof *nr) : NULL;
    if (nr) fac->VR = nr;
    AS_CHECK_ALLOC(nl && nr ? nr : NULL);
    fac->cap = need;
  }
  memcpy(fac->VL, L, need * sizeof *L);
  memcpy(fac->VR, R, need * sizeof *R);
  fac->r = r;
cleanup:
  return st;
}

static as_status load_triple(const census_opts *o, int item, int heads, int head, int d, int m,
                             as_triple *tr, census_factors *fac) {
  as_status st = AS_OK;
  as_matfile *mf = NULL;
  as_trial t;
  as_trial_defaults(&t);
  t.d = d;
  t.triple.vfamily = AS_V_FILE;
  t.triple.mfamily = AS_M_FILE;
  t.triple.m_rows = m;
  t.triple.file.text = o->path;
  t.triple.file_index = item;
  t.triple.file_mscale = 1.0;
  t.blocks.heads = heads > 1 ? heads : 1;
  guard_begin(o);
  st = as_matfile_load(&t, &mf);
  guard_end();
  AS_TRY(st);
  if (heads > 1) { /* head `head` of the item: one triple of the base model */
    const size_t dd = (size_t)d * d, md = (size_t)m * d;
    t.blocks.heads = 1;
    if (t.triple.V.data) t.triple.V.data += dd * head;
    if (t.triple.Q.data) t.triple.Q.data += md * head;
    if (t.triple.K.data) t.triple.K.data += md * head;
    if (t.triple.M.data) t.triple.M.data += dd * head;
    t.triple.V.rows = d;
    t.triple.Q.rows = t.triple.K.rows = m;
    t.triple.M.rows = d;
  }
  AS_TRY(as_triple_build(&t, tr));
  if (fac) AS_TRY(keep_factors(o, mf, heads > 1 ? head : 0, d, fac));
cleanup:
  as_matfile_destroy(&mf);
  return st;
}

/* ---------------------------------------------------------------- the path, by cost
 *
 * LAPACK analyses whole triples, one per rank at a time: ceil(n / P) analyses in a row on P
 * ranks. ScaLAPACK analyses each triple on all P ranks; on this machine one rank's ScaLAPACK
 * analysis of a d = 768 head costs what LAPACK's does (11.2 s and 12.5 s CPU for 12 heads) and
 * the distributed eigensolver's parallel efficiency on small grids is at best about one half,
 * so n triples cost about n / (P / 2). ScaLAPACK is chosen when that is smaller (a few triples
 * on many ranks), or when LAPACK's workspace, about 12 d^2 doubles, would not fit in a rank's
 * share of the memory. */
#define CENSUS_PAR_EFFICIENCY 0.5

static int choose_distributed(const census_opts *o, int n, int d, int nranks) {
  if (o->threshold > 0) return d >= o->threshold; /* the sweep's split, as asked */
  if (nranks < 2) return 0;
  double lapack = ceil((double)n / nranks);
  double scalapack = n / (nranks * CENSUS_PAR_EFFICIENCY);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double share = pages > 0 && page > 0 ? (double)pages * (double)page / nranks : 0;
  if (share > 0 && 12.0 * d * (double)d * sizeof(double) > 0.5 * share) return 1;
  return scalapack < lapack;
}

/* One analysed triple as rank 0 prints it: the row's text, its counts, or a stop. */
#define CENSUS_ROW_MAX 4096
typedef struct census_out {
  int code;       /* 0, or the exit code of a bad file (the rank printed the message) */
  int good;       /* 1: a good triple */
  int theorem;    /* the theorem, -1 for a failed analysis */
  uint32_t flags; /* AS_FLAG_* of the analysis */
  double gap_rel; /* (lambda_1 - abs lambda_2) / abs lambda_1 (NaN unless lambda_1 is real) */
  double margin;  /* <Q phi_1, K phi_1> (NaN where undefined) */
  char text[CENSUS_ROW_MAX];
} census_out;

/* The summary fields of a successful analysis. */
/* ||M||_F and the gap of lambda_1 to the nearest other eigenvalue, into row. */
static void row_numbers(census_row *row, const as_triple *tr, const as_spectral *sp) {
  const int d = tr->d;
  double nm = 0, sep = INFINITY;
  for (size_t e = 0; e < (size_t)d * d; e++) nm += tr->M[e] * tr->M[e];
  for (int i = 1; i < d; i++) sep = fmin(sep, hypot(sp->wr[i] - sp->wr[0], sp->wi[i] - sp->wi[0]));
  row->m_norm = sqrt(nm);
  row->sep = sep;
}

static void census_fill(census_out *r, const as_spectral *sp) {
  double s = hypot(sp->lambda1_re, sp->lambda1_im);
  r->good = (sp->flags & AS_FLAG_GOOD) != 0;
  r->theorem = (int)sp->theorem;
  r->flags = sp->flags;
  r->gap_rel = (sp->flags & AS_FLAG_LEAD_REAL) && s > 0 ? sp->gap / s : NAN;
  r->margin = sp->margin;
}

/* The summary of the hypotheses over the analysed triples (docs/weights.md "census"). */
typedef struct census_stats {
  int n, real_dominant, good, margin_pos, m_sym, m_spd;
  double *gap, *margin; /* the defined values, n_gap and n_margin of them */
  int n_gap, n_margin;
} census_stats;

static void stats_add(census_stats *a, const census_out *r) {
  if (r->theorem < 0) return;
  a->n++;
  a->real_dominant += (r->flags & AS_FLAG_LEAD_REAL) && (r->flags & AS_FLAG_LEAD_DOMINANT) ? 1 : 0;
  a->good += r->good;
  a->margin_pos += (r->flags & AS_FLAG_MARGIN_POSITIVE) ? 1 : 0;
  a->m_sym += (r->flags & AS_FLAG_M_SYMMETRIC) ? 1 : 0;
  a->m_spd += (r->flags & AS_FLAG_M_SPD) ? 1 : 0;
  if (a->gap && !isnan(r->gap_rel)) a->gap[a->n_gap++] = r->gap_rel;
  if (a->margin && !isnan(r->margin)) a->margin[a->n_margin++] = r->margin;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Median of v (n values, sorted in place); NaN for none. */
static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Analyse triple j (item j / H, head j % H) on this rank alone (LAPACK) into *res. */
static void analyse_local(const census_opts *o, int j, int heads, int d, int m, const int *layer,
                          const int *head, as_triple *tr, as_spectral *sp, census_factors *fac,
                          census_out *res) {
  const int H = heads > 1 ? heads : 1, item = j / H, h = j % H;
  memset(res, 0, sizeof *res);
  res->theorem = -1;
  as_error_clear();
  as_status st = load_triple(o, item, heads, h, d, m, tr, fac);
  if (st != AS_OK) {
    res->code = as_cli_report("census", st);
    return;
  }
  as_error_clear();
  /* A factored V of small inner size: the same analysis on r x r problems (spectral.h). */
  if (fac->r > 0)
    st = as_spectral_analyze_factored(tr, fac->r, fac->VL, fac->VR, o->tol, sp);
  else
    st = as_spectral_analyze(tr, o->tol, sp);
  if (st == AS_ERR_NOMEM) {
    res->code = as_cli_report("census", st);
    return;
  }
  census_row row;
  memset(&row, 0, sizeof row);
  row.index = j;
  row.layer = layer ? layer[item] : -1;
  row.head = heads > 1 ? h : (head ? head[item] : -1);
  if (st != AS_OK) {
    snprintf(row.failed, sizeof row.failed, "%s", as_error_get()->message);
  } else {
    row_numbers(&row, tr, sp);
    census_fill(res, sp);
  }
  FILE *f = fmemopen(res->text, sizeof res->text - 1, "w");
  if (!f) {
    snprintf(res->text, sizeof res->text, "(row %d: no memory to format it)\n", j);
    return;
  }
  if (o->csv)
    csv_row(f, &row, d, m, st == AS_OK ? sp : NULL);
  else
    md_row(f, &row, st == AS_OK ? sp : NULL);
  fclose(f);
}

/* Rank 0's file facts, broadcast: st, count, heads, d, m. */
typedef struct census_shape {
  int st, count, heads, d, m;
} census_shape;

/* Is `out` the same file as `in` (device and inode, links followed)? */
static int same_file(const char *in, const char *out) {
  struct stat a, b;
  return stat(in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int as_cmd_census(int argc, char **argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  census_opts o;
  int code = parse(argc, argv, rank, &o);
  if (code) return code < 0 ? 0 : code; /* -1: --help was printed */

  as_status st = as_par_setup(MPI_COMM_WORLD);
  if (st != AS_OK) return as_cli_report("census", st);

  int *layer = NULL, *head = NULL, have_spread = 0;
  double *spread = NULL;
  char model[64] = "", position[64] = "";
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  census_factors fac = {0, NULL, NULL, 0};
  as_pspectral *ps = NULL;
  FILE *out = NULL;
  census_out *mine = NULL, *all = NULL;
  int n_good = 0, n_failed = 0, thm_count[AS_THM_COUNT] = {0};
  census_stats stats;
  memset(&stats, 0, sizeof stats);

  census_shape sh = {AS_OK, 0, 0, 0, 0};
  if (rank == 0) {
    if (o.out && same_file(o.path, o.out)) {
      st = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__,
                        "-o %s is the input %s: an output never replaces an input", o.out, o.path);
    } else {
      guard_begin(&o);
      /* Test hook (tests/cli/test_census.sh): a read that never ends, now that a FIFO, which
       * used to stand for one, is refused by type before it is opened (issue 49). */
      if (getenv("ATTNSWEEP_TEST_CENSUS_STALL"))
        for (;;) pause();
      st = as_matfile_shape(o.path, &sh.count, &sh.heads, &sh.d, &sh.m);
      if (st == AS_OK) {
        layer = malloc(((size_t)sh.count + 1) * sizeof *layer);
        head = malloc(((size_t)sh.count + 1) * sizeof *head);
        st = layer && head ? as_matfile_labels(o.path, sh.count, layer, head, model, sizeof model,
                                               position, sizeof position)
                           : AS_ERR_NOMEM;
      }
      const long ntrip = (long)sh.count * (sh.heads > 1 ? sh.heads : 1);
      if (st == AS_OK && ntrip < INT_MAX / 2) {
        spread = malloc(((size_t)ntrip + 1) * sizeof *spread);
        st = spread ? as_matfile_rotary(o.path, (int)ntrip, spread, &have_spread) : AS_ERR_NOMEM;
      }
      guard_end();
    }
    if (st == AS_OK && (long)sh.count * (sh.heads > 1 ? sh.heads : 1) > INT_MAX / 2)
      st = as_error_set(AS_ERR_DATA, __FILE__, __LINE__, __func__, "%s: too many triples", o.path);
    if (st == AS_OK && o.out) {
      out = fopen(o.out, "w");
      if (!out)
        st = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot write: %s", o.out,
                          strerror(errno));
    }
    sh.st = st;
  }
  if (MPI_Bcast(&sh, 5, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    code = 3;
    goto cleanup;
  }
  if (sh.st != AS_OK) {
    code = rank == 0 ? as_cli_report("census", (as_status)sh.st) : as_status_exit_code(sh.st);
    goto cleanup;
  }
  /* Every rank needs the labels when LAPACK runs everywhere. */
  if (rank != 0) {
    layer = malloc(((size_t)sh.count + 1) * sizeof *layer);
    head = malloc(((size_t)sh.count + 1) * sizeof *head);
  }
  int have = layer && head, every = 0;
  MPI_Allreduce(&have, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!every) {
    code = rank == 0 ? as_cli_report("census", AS_ERR_NOMEM) : 3;
    goto cleanup;
  }
  if (sh.count > 0) {
    MPI_Bcast(layer, sh.count, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(head, sh.count, MPI_INT, 0, MPI_COMM_WORLD);
  }
  const int d = sh.d, m = sh.m, H = sh.heads > 1 ? sh.heads : 1, n = sh.count * H;
  const int distributed = choose_distributed(&o, n, d, size);
  st = as_triple_create(d, m, &tr);
  if (st == AS_OK) st = as_spectral_create(d, &sp);
  mine = calloc(1, sizeof *mine);
  all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
  if (rank == 0) {
    stats.gap = malloc(((size_t)n + 1) * sizeof *stats.gap);
    stats.margin = malloc(((size_t)n + 1) * sizeof *stats.margin);
  }
  if (st == AS_OK && (!mine || (rank == 0 && (!all || !stats.gap || !stats.margin))))
    st = AS_ERR_NOMEM;
  if (st == AS_OK && distributed) {
    /* One grid over as many ranks as a supported shape can use (pdhseqr refuses 1-D grids
     * of 3 or more): 1x1, 1x2, then the squarest P x Q with P, Q >= 2. */
    int gp = 1, gq = 1;
    if (size >= 2) gq = 2;
    for (int p = 2; p * p <= size; p++)
      if (as_pspectral_grid_ok(p, size / p, NULL, 0)) {
        gp = p;
        gq = size / p;
      }
    st = as_pspectral_create(MPI_COMM_WORLD, o.threshold > 0 ? o.threshold : 1, gp, gq, &ps);
  }
  int ok = st == AS_OK, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    code = st != AS_OK ? as_cli_report("census", st) : 3;
    goto cleanup;
  }
  if (rank == 0) {
    FILE *f = out ? out : stdout;
    if (o.csv) {
      fprintf(f, "%s\n", csv_columns);
    } else {
      fprintf(f, "census of %s: %d triple%s%s, d = %d, Q and K %d x %d%s%s; tol %g; %s\n", o.path,
              n, n == 1 ? "" : "s", sh.heads > 1 ? " (layers of stacked heads)" : "", d, m, d,
              model[0] ? ", model " : "", model, o.tol,
              distributed ? "ScaLAPACK on every rank" : "LAPACK, one triple per rank");
      if (position[0]) fprintf(f, "positions: %s%s\n", position, position_note(position));
      fprintf(f, "\n");
      md_header(f);
    }
  }

  const int per_round = distributed ? 1 : size;
  for (int first = 0; first < n; first += per_round) {
    if (distributed) {
      /* Rank 0 reads the triple; a bad one stops everybody before a collective call. */
      int lok = 1;
      if (rank == 0) {
        as_error_clear();
        st = load_triple(&o, first / H, sh.heads, first % H, d, m, tr, NULL);
        lok = st == AS_OK;
      }
      if (MPI_Bcast(&lok, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        code = 3;
        goto cleanup;
      }
      if (!lok) {
        code = rank == 0 ? as_cli_report("census", st) : 2;
        goto cleanup;
      }
      as_error_clear();
      st = as_pspectral_analyze(ps, tr, o.tol, sp); /* collective; same status everywhere */
      if (st == AS_ERR_NOMEM || st == AS_ERR_MPI) {
        code = rank == 0 ? as_cli_report("census", st) : as_status_exit_code(st);
        goto cleanup;
      }
      if (rank != 0) continue;
      census_out *r = all;
      memset(r, 0, sizeof *r);
      r->theorem = -1;
      census_row row;
      memset(&row, 0, sizeof row);
      row.index = first;
      row.layer = layer[first / H];
      row.head = sh.heads > 1 ? first % H : head[first / H];
      if (st != AS_OK) {
        snprintf(row.failed, sizeof row.failed, "%s", as_error_get()->message);
      } else {
        row_numbers(&row, tr, sp);
        census_fill(r, sp);
      }
      FILE *f = out ? out : stdout;
      if (o.csv)
        csv_row(f, &row, d, m, st == AS_OK ? sp : NULL);
      else
        md_row(f, &row, st == AS_OK ? sp : NULL);
      n_good += r->good;
      stats_add(&stats, r);
      if (r->theorem >= 0 && r->theorem < AS_THM_COUNT)
        thm_count[r->theorem]++;
      else
        n_failed++;
      continue;
    }
    /* LAPACK: triple first + rank on each rank, the rows gathered to rank 0 in order. */
    const int j = first + rank;
    if (j < n)
      analyse_local(&o, j, sh.heads, d, m, layer, head, tr, sp, &fac, mine);
    else
      memset(mine, 0, sizeof *mine);
    if (MPI_Gather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0,
                   MPI_COMM_WORLD) != MPI_SUCCESS) {
      code = 3;
      goto cleanup;
    }
    int stop = 0;
    if (rank == 0)
      for (int p = 0; p < size && first + p < n; p++)
        if (all[p].code && !stop) stop = all[p].code;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) {
      code = stop;
      goto cleanup;
    }
    if (rank != 0) continue;
    FILE *f = out ? out : stdout;
    for (int p = 0; p < size && first + p < n; p++) {
      fputs(all[p].text, f);
      n_good += all[p].good;
      stats_add(&stats, &all[p]);
      if (all[p].theorem >= 0 && all[p].theorem < AS_THM_COUNT)
        thm_count[all[p].theorem]++;
      else
        n_failed++;
    }
  }

  if (rank == 0) {
    FILE *f = out ? out : stdout;
    /* In CSV the summary goes to stderr, so the table stays one CSV document. */
    FILE *sf = o.csv ? stderr : f;
    fprintf(sf, "%sgood triples: %d of %d heads\n", o.csv ? "" : "\n", n_good, n);
    fprintf(sf, "theorems:");
    int first = 1;
    for (int t = 0; t < AS_THM_COUNT; t++) {
      if (!thm_count[t]) continue;
      fprintf(sf, "%s %s %d", first ? "" : ",", as_enum_label(&as_theorem_table, t), thm_count[t]);
      first = 0;
    }
    if (n_failed) fprintf(sf, "%s failed %d", first ? "" : ",", n_failed);
    fprintf(sf, "\n");
    fprintf(sf,
            "hypotheses: real dominant lambda_1 %d, good %d, <Q phi_1, K phi_1> > 0 %d, M "
            "symmetric %d, M positive definite %d (of %d analysed); median gap / abs lambda_1 "
            "%.4g, median <Q phi_1, K phi_1> %.4g\n",
            stats.real_dominant, stats.good, stats.margin_pos, stats.m_sym, stats.m_spd, stats.n,
            median(stats.gap, stats.n_gap), median(stats.margin, stats.n_margin));
    if (o.csv && position[0]) fprintf(sf, "positions: %s%s\n", position, position_note(position));
    if (have_spread) {
      double mx = 0;
      for (int i = 0; i < n; i++) mx = fmax(mx, spread[i]);
      double med = median(spread, n);
      fprintf(sf,
              "rotary: norm(M(r) - M(0))_F / norm(M(0))_F over 0 < |r| <= 64 (import-weights): "
              "median %.4g, max %.4g; the rows above are r = 0\n",
              med, mx);
    }
    if (fflush(f) != 0 || (out && ferror(out))) {
      fprintf(stderr, "attnsweep census: %s: write failed\n", o.out ? o.out : "stdout");
      code = 3;
    }
  }

cleanup:
  as_pspectral_destroy(&ps);
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
  free(fac.VL);
  free(fac.VR);
  free(mine);
  free(all);
  free(stats.gap);
  free(stats.margin);
  free(spread);
  free(layer);
  free(head);
  if (out) fclose(out);
  /* Every rank leaves with the same code. */
  int worst = code;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
