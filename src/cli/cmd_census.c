/* cmd_census.c: attnsweep census WEIGHTS.h5: the theorems' hypotheses, triple by triple.
 *
 * Every triple of a matrix file (docs/matrices.md; per layer and head after import-weights,
 * docs/weights.md) is read the way a sweep reads it (as_matfile_load + as_triple_build with
 * vfamily and mfamily file, so M = mscale Q^T K) and analysed with the sweep's spectral
 * functions and tolerance: LAPACK on rank 0 below the threshold, ScaLAPACK on every rank of
 * MPI_COMM_WORLD from it on (the same split as `attnsweep run`, whose flags and theorem the
 * census therefore reproduces). Rank 0 reads the file and prints; a bad file stops every rank
 * with exit 2. A triple whose analysis fails (LAPACK convergence: an outcome, not an error)
 * is a row marked failed and counted in the summary; the exit code stays 0.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnsweep/matfile.h"
#include "attnsweep/par.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/record.h"
#include "attnsweep/spectral.h"
#include "attnsweep/triple.h"
#include "cli.h"

/* The relative tolerance of the sweep's spectral tests (pipeline.c, sweep.c). */
#define CENSUS_TOL 1e-10

typedef struct census_opts {
  const char *path; /* the matrix file */
  const char *out;  /* -o FILE, NULL: stdout */
  int csv;          /* 1: CSV instead of markdown */
  double tol;       /* relative tolerance of the spectral tests */
  int threshold;    /* d from which ScaLAPACK is used */
} census_opts;

/* One triple's row: its labels and analysis (sp NULL when it failed). */
typedef struct census_row {
  int index, layer, head;
  double m_norm; /* ||M||_F */
  double sep;    /* min_{i>1} |lambda_i - lambda_1| (simplicity margin); inf for d = 1 */
  char failed[AS_ERRMSG_MAX];
} census_row;

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
  const char *out; /* -o FILE */
  int csv;         /* --csv */
  double tol;      /* --tol */
  long threshold;  /* --threshold */
} census_args;

/* Every option of `attnsweep census`, once. */
static const as_opt census_opts_table[] = {
    AS_OPT_FLAG("csv", 0, census_args, csv, "CSV instead of markdown (the summary on stderr)"),
    AS_OPT_TEXT("output", 'o', "FILE", census_args, out, "write the table here, not stdout"),
    AS_OPT_RANGE("tol", 0, "T", census_args, tol, 0, 1, AS_OPEN_LO | AS_OPEN_HI,
                 "relative tolerance of the spectral tests (default 1e-10, the sweep's)"),
    AS_OPT_WHOLE("threshold", 0, "D", census_args, threshold, 1, 1 << 20,
                 "d from which ScaLAPACK on all ranks is used (default 512)"),
};
const as_optset as_opts_census = AS_OPTSET(census_opts_table, "WEIGHTS.h5");

/* Parses the options; 0 on success, else the exit code (rank 0 printed the message). */
static int parse(int argc, char **argv, int rank, census_opts *o) {
  census_args a = {NULL, 0, CENSUS_TOL, AS_SPECTRAL_THRESHOLD_DEFAULT};
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
  return 0;
}

/* Rank 0: triple `index` of the file into tr (created for d, m). */
static as_status load_triple(const census_opts *o, int index, int d, int m, as_triple *tr) {
  as_status st = AS_OK;
  as_matfile *mf = NULL;
  as_trial t;
  as_trial_defaults(&t);
  t.d = d;
  t.triple.vfamily = AS_V_FILE;
  t.triple.mfamily = AS_M_FILE;
  t.triple.m_rows = m;
  t.triple.file.text = o->path;
  t.triple.file_index = index;
  t.triple.file_mscale = 1.0;
  AS_TRY(as_matfile_load(&t, &mf));
  AS_TRY(as_triple_build(&t, tr));
cleanup:
  as_matfile_destroy(&mf);
  return st;
}

/* Rank 0's file facts, broadcast: st, count, d, m. */
typedef struct census_shape {
  int st, count, d, m;
} census_shape;

int as_cmd_census(int argc, char **argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  census_opts o;
  int code = parse(argc, argv, rank, &o);
  if (code) return code < 0 ? 0 : code; /* -1: --help was printed */

  as_status st = as_par_setup(MPI_COMM_WORLD);
  if (st != AS_OK) return as_cli_report("census", st);

  int *layer = NULL, *head = NULL;
  char model[64] = "";
  as_triple *tr = NULL;
  as_spectral *sp = NULL;
  as_pspectral *ps = NULL;
  FILE *out = NULL;
  census_row *row = NULL;
  int n_good = 0, n_failed = 0, thm_count[AS_THM_COUNT] = {0};

  census_shape sh = {AS_OK, 0, 0, 0};
  if (rank == 0) {
    st = as_matfile_info(o.path, &sh.count, &sh.d, &sh.m);
    if (st == AS_OK) {
      layer = malloc(((size_t)sh.count + 1) * sizeof *layer);
      head = malloc(((size_t)sh.count + 1) * sizeof *head);
      st = layer && head ? as_matfile_labels(o.path, sh.count, layer, head, model, sizeof model)
                         : AS_ERR_NOMEM;
    }
    if (st == AS_OK && o.out) {
      out = fopen(o.out, "w");
      if (!out)
        st = as_error_set(AS_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot write: %s", o.out,
                          strerror(errno));
    }
    sh.st = st;
  }
  if (MPI_Bcast(&sh, 4, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    code = 3;
    goto cleanup;
  }
  if (sh.st != AS_OK) {
    code = rank == 0 ? as_cli_report("census", (as_status)sh.st) : as_status_exit_code(sh.st);
    goto cleanup;
  }
  const int d = sh.d, m = sh.m, distributed = d >= o.threshold;
  st = as_triple_create(d, m, &tr);
  if (st == AS_OK) st = as_spectral_create(d, &sp);
  row = calloc(1, sizeof *row);
  if (st == AS_OK && !row) st = AS_ERR_NOMEM;
  if (st == AS_OK && distributed) {
    /* One grid over as many ranks as a supported shape can use (pdhseqr refuses 1-D grids
     * of 3 or more): 1x1, 1x2, then the squarest P x Q with P, Q >= 2. */
    int np = 1, gp = 1, gq = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np >= 2) gq = 2;
    for (int p = 2; p * p <= np; p++)
      if (as_pspectral_grid_ok(p, np / p, NULL, 0)) {
        gp = p;
        gq = np / p;
      }
    st = as_pspectral_create(MPI_COMM_WORLD, o.threshold, gp, gq, &ps);
  }
  if (st != AS_OK) {
    code = rank == 0 ? as_cli_report("census", st) : as_status_exit_code(st);
    goto cleanup;
  }
  if (rank == 0) {
    FILE *f = out ? out : stdout;
    if (o.csv) {
      fprintf(f, "%s\n", csv_columns);
    } else {
      fprintf(f, "census of %s: %d triple%s, d = %d, Q and K %d x %d%s%s; tol %g; %s\n\n", o.path,
              sh.count, sh.count == 1 ? "" : "s", d, m, d, model[0] ? ", model " : "", model, o.tol,
              distributed ? "ScaLAPACK (d >= threshold)" : "LAPACK (d below the threshold)");
      md_header(f);
    }
  }

  for (int i = 0; i < sh.count; i++) {
    /* Rank 0 reads the triple; a bad one stops everybody before a collective call. */
    int ok = 1;
    if (rank == 0) {
      as_error_clear();
      st = load_triple(&o, i, d, m, tr);
      ok = st == AS_OK;
    }
    if (MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
      code = 3;
      goto cleanup;
    }
    if (!ok) {
      code = rank == 0 ? as_cli_report("census", st) : 2;
      goto cleanup;
    }
    as_error_clear();
    if (distributed)
      st = as_pspectral_analyze(ps, tr, o.tol, sp); /* collective; same status everywhere */
    else if (rank == 0)
      st = as_spectral_analyze(tr, o.tol, sp);
    if (st == AS_ERR_NOMEM || st == AS_ERR_MPI) {
      code = rank == 0 ? as_cli_report("census", st) : as_status_exit_code(st);
      goto cleanup;
    }
    if (rank != 0) continue;
    memset(row, 0, sizeof *row);
    row->index = i;
    row->layer = layer[i];
    row->head = head[i];
    if (st != AS_OK) {
      snprintf(row->failed, sizeof row->failed, "%s", as_error_get()->message);
      n_failed++;
    } else {
      double nm = 0, sep = INFINITY;
      for (size_t e = 0; e < (size_t)d * d; e++) nm += tr->M[e] * tr->M[e];
      for (int j = 1; j < d; j++)
        sep = fmin(sep, hypot(sp->wr[j] - sp->wr[0], sp->wi[j] - sp->wi[0]));
      row->m_norm = sqrt(nm);
      row->sep = sep;
      if (sp->flags & AS_FLAG_GOOD) n_good++;
      if ((int)sp->theorem >= 0 && (int)sp->theorem < AS_THM_COUNT) thm_count[sp->theorem]++;
    }
    FILE *f = out ? out : stdout;
    if (o.csv)
      csv_row(f, row, d, m, st == AS_OK ? sp : NULL);
    else
      md_row(f, row, st == AS_OK ? sp : NULL);
  }

  if (rank == 0) {
    FILE *f = out ? out : stdout;
    /* In CSV the summary goes to stderr, so the table stays one CSV document. */
    FILE *sf = o.csv ? stderr : f;
    fprintf(sf, "%sgood triples: %d of %d heads\n", o.csv ? "" : "\n", n_good, sh.count);
    fprintf(sf, "theorems:");
    int first = 1;
    for (int t = 0; t < AS_THM_COUNT; t++) {
      if (!thm_count[t]) continue;
      fprintf(sf, "%s %s %d", first ? "" : ",", as_enum_label(&as_theorem_table, t), thm_count[t]);
      first = 0;
    }
    if (n_failed) fprintf(sf, "%s failed %d", first ? "" : ",", n_failed);
    fprintf(sf, "\n");
    if (fflush(f) != 0 || (out && ferror(out))) {
      fprintf(stderr, "attnsweep census: %s: write failed\n", o.out ? o.out : "stdout");
      code = 3;
    }
  }

cleanup:
  as_pspectral_destroy(&ps);
  as_spectral_destroy(&sp);
  as_triple_destroy(&tr);
  free(row);
  free(layer);
  free(head);
  if (out) fclose(out);
  /* Every rank leaves with the same code. */
  int all = code;
  MPI_Allreduce(&code, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return all;
}
