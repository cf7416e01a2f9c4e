/* cmd_plan.c: attnsweep plan SPEC: trial counts per case and per axis, cost and size estimate,
 * suggested ranks and walltime for a target duration.
 *
 * Cost model: seconds(trial) = a * work + b, work = as_trial_work (steps x stages x
 * (n^2 d + n d^2) + d^3). The default (a, b) is a conservative figure for one core of this
 * machine kind; --cost A,B sets it; --calibrate runs a sample of the spec's own trials and fits
 * (a, b) by least squares.
 *
 * --sbatch [-o OUT.h5] prints a ready Slurm job script on stdout (the tables go to stderr): the
 * template jobs/attnsweep.sbatch (docs/slurm.md) with --ntasks, --time and --job-name from the
 * estimate, and the absolute paths of this executable, SPEC and OUT.h5 filled in, so that it
 * can be submitted from any directory. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/matfile.h"
#include "attnsweep/pipeline.h"
#include "attnsweep/pspectral.h"
#include "attnsweep/sched.h"
#include "attnsweep/spec.h"
#include "cli.h"

#define DEFAULT_A 2.0e-9 /* seconds per unit of work (RK4 stage arithmetic, small n, d) */
#define DEFAULT_B 2.0e-4 /* seconds per trial (set-up, classification, record) */
#define MAX_EXACT_POINTS 4000000u
#define TEMPLATE_NAME "attnsweep.sbatch"
#define PATH_CAP 4096

#ifndef AS_ANALYSIS_DIR
#define AS_ANALYSIS_DIR ""
#endif
#ifndef AS_INSTALL_ANALYSIS_DIR
#define AS_INSTALL_ANALYSIS_DIR ""
#endif

typedef struct plan_case {
  double work;  /* sum over the case's points (one replicate) */
  double bytes; /* idem */
  double maxw;  /* largest work of a point */
  uint64_t visited;
} plan_case;

static void human_bytes(double b, char *buf, size_t len) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (b >= 1024 && i < 5) {
    b /= 1024;
    i++;
  }
  snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static void hms(double s, char *buf, size_t len) {
  long t = 60 * (long)ceil(s / 60.0); /* whole minutes */
  if (t < 60) t = 60;
  snprintf(buf, len, "%02ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
}

/* Run a sample of trials (spread over the cases, small and large) and fit (a, b). */
static int calibrate(const as_spec *spec, int samples, double *a, double *b, FILE *rep) {
  as_pipeline *pl = NULL;
  as_status st = as_pipeline_create(NULL, NULL, &pl);
  if (st != AS_OK) return as_cli_report("plan", st);
  uint64_t N = as_spec_trial_count(spec);
  uint64_t S = (uint64_t)samples < N ? (uint64_t)samples : N;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int m = 0, failed = 0;
  for (uint64_t k = 0; k <= S; k++) {
    /* Distinct trials spread over the whole sweep; k = 0 warms the workspaces up untimed. */
    uint64_t idx = k == 0 ? 0 : (uint64_t)((double)(k - 1) * (double)N / (double)S);
    as_trial t;
    as_record rec;
    if (as_spec_trial(spec, idx, &t) != AS_OK) break;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Matrices and tokens from files are part of a trial's cost, as in `run`. */
    as_matfile *mf = NULL;
    st = as_matfile_load(&t, &mf);
    if (st == AS_OK) {
      st = as_trial_run(pl, &t, NULL, &rec, NULL);
    } else if (st != AS_ERR_NOMEM) {
      as_record_init(&rec, &t);
      rec.outcome = AS_OUT_FAILED;
      as_error_clear();
      st = AS_OK;
    }
    as_matfile_destroy(&mf);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != AS_OK) {
      as_pipeline_destroy(&pl);
      return as_cli_report("plan", st);
    }
    if (k == 0) continue;
    if (rec.outcome == AS_OUT_FAILED) failed++;
    double x = as_trial_work(&t);
    double y = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    m++;
  }
  as_pipeline_destroy(&pl);
  double den = m * sxx - sx * sx;
  if (m >= 2 && den > 1e-12 * m * sxx) {
    *a = (m * sxy - sx * sy) / den;
    *b = (sy - *a * sx) / m;
  } else if (m > 0) { /* all trials alike: a pure proportional model */
    *a = 0;
  }
  if (!(*a > 0) && m > 0) { /* alike or noisy: a pure proportional model */
    *a = sx > 0 ? sy / sx : DEFAULT_A;
    *b = 0;
  }
  if (*b < 0) *b = 0;
  if (failed)
    fprintf(stderr,
            "attnsweep plan: %d of the %d calibration trials failed to set up (see "
            "`attnsweep run`); the fit may be off\n",
            failed, m);
  fprintf(rep,
          "calibrated on %d trials: %.3g s per unit of work + %.3g s per trial"
          " (reuse with --cost %.3g,%.3g)\n",
          m, *a, *b, *a, *b);
  return 0;
}

/* Writes DIR/REL/TEMPLATE_NAME into out; returns 1 when that file is readable. */
static int template_in(const char *dir, const char *rel, char *out, size_t cap) {
  if (!dir || !dir[0]) return 0;
  int len = snprintf(out, cap, "%s%s/%s", dir, rel, TEMPLATE_NAME);
  if (len < 0 || (size_t)len >= cap) return 0;
  return access(out, R_OK) == 0;
}

/* Finds jobs/attnsweep.sbatch: $ATTNSWEEP_JOBS_DIR, the source tree, the install prefix, then
 * beside the executable. Returns 1 and the path in out, else 0. */
static int find_template(char *out, size_t cap) {
  if (template_in(getenv("ATTNSWEEP_JOBS_DIR"), "", out, cap)) return 1;
  if (template_in(AS_ANALYSIS_DIR, "/../jobs", out, cap)) return 1;
  if (template_in(AS_INSTALL_ANALYSIS_DIR, "/../jobs", out, cap)) return 1;
  char exe[PATH_CAP];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return 0;
  *slash = '\0';
  static const char *const rel[] = {"/../share/attnsweep/jobs", "/../jobs", "/../../jobs"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
    if (template_in(exe, rel[i], out, cap)) return 1;
  return 0;
}

/* Absolute form of a path that may not exist yet (its directory must): returns 0 on success. */
static int absolute_path(const char *path, char *out, size_t cap) {
  char dir[PATH_CAP], real[PATH_CAP];
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (slash) {
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  if (!realpath(dir, real)) return -1;
  if (!base[0]) return -1;
  int len = snprintf(out, cap, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
  return len < 0 || (size_t)len >= cap ? -1 : 0;
}

/* Prints s as one single-quoted shell word. */
static void shell_quote(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The job name: the spec's name with characters other than [A-Za-z0-9._-] replaced. */
static void job_name(const char *name, char *out, size_t cap) {
  size_t k = 0;
  for (; name && name[k] && k + 1 < cap; k++) {
    char c = name[k];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    out[k] = ok ? c : '_';
  }
  out[k] = '\0';
  if (k == 0) snprintf(out, cap, "attnsweep");
}

/* Prints the job script: the template with its settings replaced. Returns an exit code. */
static int render_sbatch(const as_spec *spec, const char *spec_path, const char *out_path,
                         double ranks, double expect_s, double tot_s, uint64_t trials) {
  char tpath[PATH_CAP], exe[PATH_CAP], spec_abs[PATH_CAP], out_abs[PATH_CAP], name[128];
  if (!find_template(tpath, sizeof tpath)) {
    fprintf(stderr,
            "attnsweep plan: the job script template %s was not found (looked in "
            "$ATTNSWEEP_JOBS_DIR, %s/../jobs and beside the executable); set "
            "ATTNSWEEP_JOBS_DIR to the directory that holds it\n",
            TEMPLATE_NAME, AS_ANALYSIS_DIR[0] ? AS_ANALYSIS_DIR : "(no source tree)");
    return 3;
  }
  char treal[PATH_CAP];
  if (realpath(tpath, treal)) snprintf(tpath, sizeof tpath, "%s", treal);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fprintf(stderr, "attnsweep plan: cannot find this executable's path: %s\n", strerror(errno));
    return 3;
  }
  exe[n] = '\0';
  if (!realpath(spec_path, spec_abs)) {
    fprintf(stderr, "attnsweep plan: %s: %s\n", spec_path, strerror(errno));
    return 2;
  }
  char def_out[PATH_CAP];
  if (!out_path) {
    const char *base = strrchr(spec_path, '/');
    base = base ? base + 1 : spec_path;
    const char *dot = strrchr(base, '.');
    int stem = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(def_out, sizeof def_out, "%.*s.h5", stem, base);
    out_path = def_out;
  }
  if (absolute_path(out_path, out_abs, sizeof out_abs) != 0) {
    fprintf(stderr, "attnsweep plan: -o %s: its directory does not exist\n", out_path);
    return 2;
  }
  FILE *f = fopen(tpath, "r");
  if (!f) {
    fprintf(stderr, "attnsweep plan: %s: %s\n", tpath, strerror(errno));
    return 3;
  }
  /* Lead time of the time-limit signal, from the template's --signal=B:USR1@N. */
  char line[8192];
  long lead = 300;
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, "--signal=B:USR1@");
    if (starts_with(line, "#SBATCH") && at) lead = strtol(at + 16, NULL, 10);
  }
  rewind(f);
  char wall[32];
  hms(1.2 * expect_s + 60.0 + (double)lead, wall, sizeof wall);
  job_name(as_spec_name(spec), name, sizeof name);
  int seen = 0, in_header = 1;
  while (fgets(line, sizeof line, f)) {
    if (in_header && !starts_with(line, "#")) {
      in_header = 0;
    }
    if (in_header && starts_with(line, "#SBATCH --ntasks=")) {
      printf("#SBATCH --ntasks=%.0f\n", ranks);
      seen |= 1;
    } else if (in_header && starts_with(line, "#SBATCH --time=")) {
      printf("#SBATCH --time=%s\n", wall);
      seen |= 2;
    } else if (in_header && starts_with(line, "#SBATCH --job-name=")) {
      printf("#SBATCH --job-name=%s\n", name);
    } else if (in_header && starts_with(line, "#SBATCH --output=")) {
      fputs(line, stdout);
      printf("#\n# Rendered by `attnsweep plan --sbatch` from %s:\n"
             "#   %llu trials, estimated %.3g core-hours; %.0f ranks for about %.2f h of work,\n"
             "#   walltime = 1.2 x that + 1 min + %ld s of warning before the limit.\n",
             tpath, (unsigned long long)trials, tot_s / 3600.0, ranks, expect_s / 3600.0, lead);
    } else if (starts_with(line, "AS_RENDERED_BIN=")) {
      fputs("AS_RENDERED_BIN=", stdout);
      shell_quote(stdout, exe);
      fputc('\n', stdout);
      seen |= 4;
    } else if (starts_with(line, "AS_RENDERED_ARGS=")) {
      fputs("AS_RENDERED_ARGS=(", stdout);
      shell_quote(stdout, spec_abs);
      fputs(" -o ", stdout);
      shell_quote(stdout, out_abs);
      fputs(")\n", stdout);
      seen |= 8;
    } else {
      fputs(line, stdout);
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad || seen != 15) {
    fprintf(stderr,
            "attnsweep plan: %s is not a usable template (it needs the lines '#SBATCH "
            "--ntasks=', '#SBATCH --time=', 'AS_RENDERED_BIN=' and 'AS_RENDERED_ARGS=')\n",
            tpath);
    return 3;
  }
  if (fflush(stdout) != 0) return 3;
  fprintf(stderr,
          "attnsweep plan: job script for %.0f ranks, walltime %s, results %s (submit: sbatch "
          "SCRIPT)\n",
          ranks, wall, out_abs);
  return 0;
}

int as_cmd_plan(int argc, char **argv) {
  const char *path = NULL, *out_path = NULL;
  int sbatch = 0;
  double target_h = 1.0, a = DEFAULT_A, b = DEFAULT_B;
  int cal = 0, cost_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (strcmp(o, "--calibrate") == 0) {
      cal = 32;
    } else if (strncmp(o, "--calibrate=", 12) == 0) {
      cal = atoi(o + 12);
      if (cal < 2 || cal > 100000)
        return as_cli_usage_error("plan", "--calibrate=N needs 2 <= N <= 100000");
    } else if (strcmp(o, "--target-hours") == 0 && i + 1 < argc) {
      char *end;
      target_h = strtod(argv[++i], &end);
      if (*end || !(target_h > 0) || !isfinite(target_h))
        return as_cli_usage_error("plan", "--target-hours needs a positive number");
    } else if (strcmp(o, "--cost") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%lg,%lg", &a, &b) != 2 || !(a > 0) || !(b >= 0))
        return as_cli_usage_error("plan", "--cost needs A,B with A > 0, B >= 0");
      cost_given = 1;
    } else if (strcmp(o, "--sbatch") == 0) {
      sbatch = 1;
    } else if ((strcmp(o, "-o") == 0 || strcmp(o, "--output") == 0) && i + 1 < argc) {
      out_path = argv[++i];
    } else if (o[0] == '-' && o[1] != '\0') {
      return as_cli_usage_error("plan", "unknown option '%s'", o);
    } else if (!path) {
      path = o;
    } else {
      return as_cli_usage_error("plan", "more than one SPEC");
    }
  }
  if (!path) return as_cli_usage_error("plan", "missing SPEC");
  if (out_path && !sbatch) return as_cli_usage_error("plan", "-o OUT.h5 goes with --sbatch");
  /* With --sbatch stdout carries the job script only; the report goes to stderr. */
  FILE *rep = sbatch ? stderr : stdout;

  as_spec_diags diags = {0, 0, NULL};
  as_spec *spec = NULL;
  plan_case *pc = NULL;
  int code = 0;
  as_status st = as_spec_load(path, &diags, &spec);
  if (st != AS_OK) {
    if (st == AS_ERR_SPEC && diags.count > 0) {
      for (int k = 0; k < diags.count; k++)
        fprintf(stderr, "%s:%d:%d: %s\n", path, diags.items[k].line, diags.items[k].col,
                diags.items[k].message);
      code = 2;
    } else {
      code = as_cli_report("plan", st);
    }
    goto done;
  }
  if (cal) {
    code = calibrate(spec, cal, &a, &b, rep);
    if (code) goto done;
  }
  (void)cost_given;

  int nc = as_spec_case_count(spec);
  uint64_t R = as_spec_replicates(spec), P = as_spec_point_count(spec);
  pc = calloc((size_t)nc, sizeof *pc);
  if (!pc) {
    code = 3;
    goto done;
  }
  /* Work and bytes do not depend on the replicate: sum over the points, times R. Very large
   * sweeps are sampled evenly within each case. */
  int sampled = 0;
  /* The large-d phase (pspectral.h): analyses on the spec's grid before the sweep. */
  int thr = as_spec_spectral_threshold(spec), gp = 1, gq = 1;
  as_spec_spectral_grid(spec, &gp, &gq);
  double big_s = 0, big_n = 0, big_max = 0; /* per replicate: grid seconds, triples */
  for (int c = 0; c < nc; c++) {
    uint64_t L = as_spec_case_points(spec, c), off = as_spec_case_offset(spec, c);
    uint64_t step = L > MAX_EXACT_POINTS / (uint64_t)nc ? L / (MAX_EXACT_POINTS / (uint64_t)nc) : 1;
    if (step > 1) sampled = 1;
    for (uint64_t q = 0; q < L; q += step) {
      as_trial t;
      if (as_spec_trial(spec, off + q, &t) != AS_OK) continue;
      double w = as_trial_work(&t);
      pc[c].work += w;
      pc[c].bytes += as_trial_bytes(&t);
      if (w > pc[c].maxw) pc[c].maxw = w;
      pc[c].visited++;
      if (t.d >= (thr > 0 ? thr : AS_PSPECTRAL_THRESHOLD_DEFAULT)) {
        double g = as_pspectral_seconds(t.d, gp, gq) * (double)step;
        big_s += g;
        big_n += (double)step;
        if (g / (double)step > big_max) big_max = g / (double)step;
      }
    }
    double scale = pc[c].visited ? (double)L / (double)pc[c].visited : 0;
    pc[c].work *= scale;
    pc[c].bytes *= scale;
  }
  double tot_s = 0, tot_bytes = 0, maxw = 0;
  for (int c = 0; c < nc; c++) {
    tot_s += (double)R * (a * pc[c].work + b * (double)as_spec_case_points(spec, c));
    tot_bytes += (double)R * pc[c].bytes;
    if (pc[c].maxw > maxw) maxw = pc[c].maxw;
  }

  fprintf(rep, "spec %s: %s, sha256 %s\n", path, as_spec_name(spec), as_spec_sha256(spec));
  fprintf(rep, "%llu trials = %llu replicates x %llu points, %d case%s, master seed %llu\n",
          (unsigned long long)as_spec_trial_count(spec), (unsigned long long)R,
          (unsigned long long)P, nc, nc == 1 ? "" : "s", (unsigned long long)as_spec_seed(spec));
  fprintf(rep, "\n| case | points | trials | core-hours | output |\n|---|---:|---:|---:|---:|\n");
  for (int c = 0; c < nc; c++) {
    char hb[32];
    double s = (double)R * (a * pc[c].work + b * (double)as_spec_case_points(spec, c));
    human_bytes((double)R * pc[c].bytes, hb, sizeof hb);
    fprintf(rep, "| %s | %llu | %llu | %.3g | %s |\n", as_spec_case_name(spec, c),
            (unsigned long long)as_spec_case_points(spec, c),
            (unsigned long long)(R * as_spec_case_points(spec, c)), s / 3600.0, hb);
  }
  int na = as_spec_axis_count(spec);
  if (na > 0) {
    fprintf(rep, "\n| case | axis | values | trials per value | at | first values |\n"
                 "|---|---|---:|---:|---|---|\n");
    for (int i = 0; i < na; i++) {
      as_spec_axis ax;
      if (as_spec_axis_get(spec, i, &ax) != AS_OK) continue;
      char vals[200] = "", v[64];
      size_t used = 0;
      for (uint64_t j = 0; j < ax.values && j < 6; j++) {
        as_spec_axis_value(spec, i, j, v, sizeof v);
        int w = snprintf(vals + used, sizeof vals - used, "%s%s", j ? ", " : "", v);
        if (w < 0 || (size_t)w >= sizeof vals - used) break;
        used += (size_t)w;
      }
      if (ax.values > 6 && used + 6 < sizeof vals)
        snprintf(vals + used, sizeof vals - used, ", ...");
      uint64_t per = R * as_spec_case_points(spec, ax.case_id) / ax.values;
      fprintf(rep, "| %s | %s%s | %llu | %llu | %d:%d | %s |\n",
              as_spec_case_name(spec, ax.case_id), ax.key, ax.zipped ? " (zip)" : "",
              (unsigned long long)ax.values, (unsigned long long)per, ax.line, ax.col, vals);
    }
  }
  char hb[32], wall[32];
  human_bytes(tot_bytes, hb, sizeof hb);
  fprintf(rep, "\ncost model: %.3g s per unit of work + %.3g s per trial (%s)\n", a, b,
          cal ? "calibrated" : (cost_given ? "--cost" : "default; --calibrate fits it"));
  fprintf(rep, "estimate%s: %.3g core-hours, output %s (results file, bulk data included)\n",
          sampled ? " (sampled)" : "", tot_s / 3600.0, hb);
  /* Ranks: enough workers to finish in the target time at 85% efficiency;
   * never more workers than trials. Walltime: target (or the longest trial) plus 20%. */
  double target_s = target_h * 3600.0, longest_s = a * maxw + b;
  double workers = ceil(tot_s / (0.85 * target_s));
  if (workers < 1) workers = 1;
  if (workers > (double)as_spec_trial_count(spec)) workers = (double)as_spec_trial_count(spec);
  double expect_s = tot_s / (0.85 * workers);
  if (expect_s < longest_s) expect_s = longest_s;
  if (big_n > 0) {
    /* Every rank takes part in the pre-pass (floor(ranks / PQ) grids at once, the rest wait):
     * its wall time comes before the sweep, and it costs that time on every rank. */
    double pq = (double)gp * gq, grids = floor(workers / pq);
    if (workers < pq) workers = pq; /* a smaller job is refused */
    if (grids < 1) grids = 1;
    double pre_wall = (double)R * big_s / grids;
    if (pre_wall < big_max) pre_wall = big_max;
    expect_s += pre_wall;
    tot_s += pre_wall * workers;
    fprintf(rep,
            "large-d spectral analysis: %.0f triples with d >= %d on spectral_grid %dx%d, "
            "~%.3g s each on one grid, ~%.3g s before the sweep with %.0f grid%s (%.3g "
            "core-hours, included below)\n",
            (double)R * big_n, thr > 0 ? thr : AS_PSPECTRAL_THRESHOLD_DEFAULT, gp, gq,
            big_s / big_n, pre_wall, grids, grids == 1 ? "" : "s", pre_wall * workers / 3600.0);
    fprintf(rep, "estimate with the large-d phase: %.3g core-hours\n", tot_s / 3600.0);
  }
  hms(1.2 * expect_s + 60.0, wall, sizeof wall);
  /* Up to AS_SCHED_COORD_RUNS_MAX ranks the coordinator runs trials too (sched.h); beyond,
   * it only coordinates and needs a rank of its own. */
  double ranks = workers <= AS_SCHED_COORD_RUNS_MAX ? workers : workers + 1;
  fprintf(rep,
          "suggested for a %.3g h target: %.0f rank%s (%s), walltime %s (longest trial ~%.3g s)\n",
          target_h, ranks, ranks == 1 ? "" : "s",
          ranks == workers ? "every rank runs trials, rank 0 also coordinates"
                           : "one coordinator, the others run trials",
          wall, longest_s);
  if (sbatch)
    code = render_sbatch(spec, path, out_path, ranks, expect_s, tot_s, as_spec_trial_count(spec));
done:
  free(pc);
  as_spec_diags_free(&diags);
  as_spec_destroy(&spec);
  return code;
}
