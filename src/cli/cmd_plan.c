/* cmd_plan.c: attnsweep plan SPEC: trial counts per case and per axis, cost and size estimate,
 * suggested ranks and walltime for a target duration.
 *
 * The cost model is cost.h's (seconds = a * work + b, the bytes of the layout, the estimate
 * per case, the calibration): this file only reads options and prints. --cost A,B sets (a, b);
 * --calibrate runs a sample of the spec's own trials, fits it by least squares and saves the
 * fit (SPEC.cost beside the spec, or --calibration FILE; cost.h as_cost_model_save), which
 * later plans of the spec read (and so --sbatch and --array size their walltime with it).
 *
 * --sbatch [-o OUT.h5] prints a ready Slurm job script on stdout (the tables go to stderr): the
 * template jobs/attnsweep.sbatch (docs/slurm.md) with --ntasks, --time and --job-name from the
 * estimate, and the absolute paths of this executable, SPEC and OUT.h5 filled in, so that it
 * can be submitted from any directory. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/cost.h"
#include "attnsweep/iocheck.h"
#include "attnsweep/journal.h"
#include "attnsweep/sched.h"
#include "attnsweep/shard.h"
#include "attnsweep/spec.h"
#include "attnsweep/spectral.h"
#include "cli.h"

#define TEMPLATE_NAME "attnsweep.sbatch"
#define PATH_CAP 4096

#ifndef AS_ANALYSIS_DIR
#define AS_ANALYSIS_DIR ""
#endif
#ifndef AS_INSTALL_ANALYSIS_DIR
#define AS_INSTALL_ANALYSIS_DIR ""
#endif

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

/* Finds jobs/attnsweep.sbatch (as_cli_locate, main.c: $ATTNSWEEP_JOBS_DIR, installed beside
 * the executable, the source tree, the install prefix). Returns 1 and the path in out, else 0. */
static int find_template(char *out, size_t cap) {
  const char *how = NULL;
  return as_cli_locate(AS_CLI_DIR_JOBS, TEMPLATE_NAME, out, cap, &how);
}

/* Absolute form of a path whose directory may not exist yet (the job script creates it):
 * the real path of its directory when that exists, else the path joined to the working
 * directory. Returns 0 on success. */
static int absolute_path(const char *path, char *out, size_t cap) {
  char dir[PATH_CAP], real[PATH_CAP];
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (slash) {
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  if (!base[0]) return -1;
  int len;
  if (realpath(dir, real)) {
    len = snprintf(out, cap, "%s/%s", strcmp(real, "/") == 0 ? "" : real, base);
  } else if (path[0] == '/') {
    len = snprintf(out, cap, "%s", path);
  } else {
    char cwd[PATH_CAP];
    if (!getcwd(cwd, sizeof cwd)) return -1;
    len = snprintf(out, cap, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path);
  }
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

/* A value that goes into a job script on a line of its own or inside a here-document: no
 * control character (a newline would end the line or the here-document and start another). */
static int script_safe(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < ' ' || *s == 127) return 0;
  return 1;
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

/* Site options of --sbatch, passed through to the job script. */
#define SETUP_MAX 16
/* The memory the job script asks for: the largest rank's estimate (cost.h) times this
 * (docs/slurm.md, "Memory"). */
#define AS_MEM_MARGIN 1.5
typedef struct site_opts {
  const char *account, *partition, *qos, *mem; /* #SBATCH values, NULL: not given */
  long cpus_per_task;                          /* #SBATCH --cpus-per-task, 0: not given */
  long per_node;                               /* --ntasks-per-node, 0: not given */
  const char *mpi;                             /* srun --mpi plugin, NULL: the template's */
  const char *setup[SETUP_MAX];                /* --setup commands, in order */
  int n_setup;
  long array; /* --array N: a job array of N shards and a merge job, 0: one job */
} site_opts;

/* The lead time of the time-limit signal, from the template's #SBATCH --signal=B:USR1@N
 * (300 s when the template is absent or has none). */
static long template_lead(const char *tpath) {
  long lead = 300;
  if (tpath && as_path_check(tpath, NULL, 0) != AS_OK) { /* render_sbatch refuses it */
    as_error_clear();
    return lead;
  }
  FILE *f = tpath ? fopen(tpath, "r") : NULL;
  if (!f) return lead;
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, "--signal=B:USR1@");
    if (starts_with(line, "#SBATCH") && at) lead = strtol(at + 16, NULL, 10);
  }
  fclose(f);
  return lead;
}

/* Prints the job script: the template with its settings replaced. Returns an exit code. */
static int render_sbatch(const as_spec *spec, const char *tpath, const char *spec_path,
                         const char *out_path, const as_cli_sets *sets, const site_opts *so,
                         double ranks, const char *wall, const char *merge_wall,
                         const char *mem_per_cpu, long lead, double expect_s, double tot_s,
                         uint64_t trials) {
  char exe[PATH_CAP], spec_abs[PATH_CAP], out_abs[PATH_CAP], name[128];
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
    fprintf(stderr, "attnsweep plan: -o %s: not a usable file path\n", out_path);
    return 2;
  }
  /* Every value written into the script is quoted, and none may break a line. */
  const char *unsafe = !script_safe(out_abs)    ? "-o OUT.h5"
                       : !script_safe(spec_abs) ? "SPEC"
                       : !script_safe(exe)      ? "the attnsweep executable's path"
                       : !script_safe(tpath)    ? "the template's path"
                                                : NULL;
  if (unsafe) {
    fprintf(stderr,
            "attnsweep plan: %s contains a newline or another control character: it cannot go "
            "into a job script (rename it)\n",
            unsafe);
    return 2;
  }
  for (int k = 0; k < sets->n; k++)
    if (!script_safe(sets->v[k])) {
      fprintf(stderr,
              "attnsweep plan: --set %s contains a control character: it cannot go into a job "
              "script\n",
              sets->v[k]);
      return 2;
    }
  if (as_path_check(tpath, "the job template", 0) != AS_OK) /* a FIFO would block the open */
    return as_cli_report("plan", as_error_get()->status);
  FILE *f = fopen(tpath, "r");
  if (!f) {
    fprintf(stderr, "attnsweep plan: %s: %s\n", tpath, strerror(errno));
    return 3;
  }
  char line[8192];
  job_name(as_spec_name(spec), name, sizeof name);
  int seen = 0, in_header = 1;
  if (so->array) {
    /* A submit script: the array (the template, one shard per task) from a here-document,
     * then the merge job that waits for every task to succeed. */
    printf("#!/bin/bash\n"
           "# Rendered by `attnsweep plan --sbatch --array %ld` from %s:\n"
           "# submits sweep %s as a Slurm job array of %ld shards (each task runs `attnsweep run\n"
           "# --shard I/%ld`, drains and requeues itself at its time limit) and a merge job that\n"
           "# starts when every task has completed with exit 0 (--dependency=afterok).\n"
           "#   bash THIS_SCRIPT [sbatch options for the array, e.g. --hold]\n"
           "set -eu\n"
           "array=$(sbatch --parsable \"$@\" <<'AS_ARRAY_TASK'\n",
           so->array, tpath, name, so->array, so->array);
  }
  while (fgets(line, sizeof line, f)) {
    if (in_header && !starts_with(line, "#")) {
      in_header = 0;
    }
    if (in_header && starts_with(line, "#SBATCH --ntasks=")) {
      printf("#SBATCH --ntasks=%.0f\n", ranks);
      if (so->per_node > 0)
        printf("#SBATCH --nodes=%.0f\n#SBATCH --ntasks-per-node=%ld\n",
               ranks / (double)so->per_node, so->per_node);
      seen |= 1;
    } else if (in_header && starts_with(line, "#SBATCH --time=")) {
      printf("#SBATCH --time=%s\n", wall);
      seen |= 2;
    } else if (in_header && starts_with(line, "#SBATCH --job-name=")) {
      printf("#SBATCH --job-name=%s\n", name);
      if (so->array) printf("#SBATCH --array=1-%ld\n", so->array);
      if (so->account) printf("#SBATCH --account=%s\n", so->account);
      if (so->partition) printf("#SBATCH --partition=%s\n", so->partition);
      if (so->qos) printf("#SBATCH --qos=%s\n", so->qos);
      if (so->mem)
        printf("#SBATCH --mem=%s\n", so->mem);
      else if (mem_per_cpu[0])
        printf("#SBATCH --mem-per-cpu=%s\n", mem_per_cpu);
      if (so->cpus_per_task > 0) printf("#SBATCH --cpus-per-task=%ld\n", so->cpus_per_task);
    } else if (in_header && starts_with(line, "#SBATCH --output=")) {
      fputs(so->array ? "#SBATCH --output=attnsweep-%A_%a.out\n" : line, stdout);
      printf("#\n# Rendered by `attnsweep plan --sbatch` from %s:\n"
             "#   %llu trials, estimated %.3g core-hours; %.0f ranks for about %.2f h of work,\n"
             "#   walltime = 1.2 x that + 1 min + %ld s of warning before the limit.\n",
             tpath, (unsigned long long)trials, tot_s / 3600.0, ranks, expect_s / 3600.0, lead);
      if (sets->n) {
        /* The job runs the sweep this plan sized: the overrides go to attnsweep run too. */
        fputs("#   the spec with the overrides (passed to attnsweep run):", stdout);
        for (int k = 0; k < sets->n; k++) {
          fputs(" --set ", stdout);
          shell_quote(stdout, sets->v[k]);
        }
        fputc('\n', stdout);
      }
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
      for (int k = 0; k < sets->n; k++) {
        fputs(" --set ", stdout);
        shell_quote(stdout, sets->v[k]);
      }
      if (so->array) printf(" --shard \"${SLURM_ARRAY_TASK_ID:-0}/%ld\"", so->array);
      fputs(")\n", stdout);
      seen |= 8;
    } else if (starts_with(line, "AS_RENDERED_MPI=")) {
      if (so->mpi)
        printf("AS_RENDERED_MPI=%s\n", so->mpi);
      else
        fputs(line, stdout);
      seen |= 16;
    } else if (starts_with(line, "# AS_RENDERED_SETUP")) {
      fputs(line, stdout);
      for (int k = 0; k < so->n_setup; k++) {
        printf("%s || {\n  say \"set-up command failed (exit $?):\" ", so->setup[k]);
        shell_quote(stdout, so->setup[k]);
        fputs("\n  exit 2\n}\n", stdout);
      }
      seen |= 32;
    } else {
      fputs(line, stdout);
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad || seen != 63) {
    fprintf(stderr,
            "attnsweep plan: %s is not a usable template (it needs the lines '#SBATCH "
            "--ntasks=', '#SBATCH --time=', 'AS_RENDERED_BIN=', 'AS_RENDERED_ARGS=', "
            "'AS_RENDERED_MPI=' and '# AS_RENDERED_SETUP')\n",
            tpath);
    return 3;
  }
  if (so->array) {
    /* The merge job: one task, after every array task succeeded; site options as above. */
    printf("AS_ARRAY_TASK\n)\narray=${array%%%%;*}\n"
           "merge=$(sbatch --parsable --dependency=afterok:\"$array\" --kill-on-invalid-dep=yes "
           "<<'AS_MERGE_JOB'\n"
           "#!/bin/bash\n#SBATCH --job-name=%s-merge\n#SBATCH --ntasks=1\n"
           "#SBATCH --time=%s\n#SBATCH --output=attnsweep-merge-%%j.out\n",
           name, merge_wall);
    if (so->account) printf("#SBATCH --account=%s\n", so->account);
    if (so->partition) printf("#SBATCH --partition=%s\n", so->partition);
    if (so->qos) printf("#SBATCH --qos=%s\n", so->qos);
    if (so->mem) printf("#SBATCH --mem=%s\n", so->mem);
    fputs("set -u\n", stdout);
    for (int k = 0; k < so->n_setup; k++) {
      printf("%s || {\n  echo \"attnsweep merge job: set-up command failed (exit $?):\" ",
             so->setup[k]);
      shell_quote(stdout, so->setup[k]);
      fputs(" >&2\n  exit 2\n}\n", stdout);
    }
    fputs("bin=${ATTNSWEEP:-", stdout);
    shell_quote(stdout, exe);
    fputs("}\nout=", stdout);
    shell_quote(stdout, out_abs);
    printf("\nshards=()\nfor ((i = 1; i <= %ld; i++)); do shards+=(\"$out.shard-$i-of-%ld\"); "
           "done\n"
           "srun --mpi=${AS_SRUN_MPI:-%s} -n 1 \"$bin\" merge \"$out\" \"${shards[@]}\"\n"
           "AS_MERGE_JOB\n)\n"
           "echo \"attnsweep: job array $array (%ld shards of %s) and merge job $merge "
           "(afterok:$array; Slurm removes it if a task fails for good) submitted\"\n",
           so->array, so->array, so->mpi ? so->mpi : "pmix", so->array, name);
  }
  if (fflush(stdout) != 0) return 3;
  if (so->array)
    fprintf(stderr,
            "attnsweep plan: submit script for a job array of %ld shards of %.0f ranks each, "
            "walltime %s, then a merge job into %s (submit: bash SCRIPT)\n",
            so->array, ranks, wall, out_abs);
  else
    fprintf(stderr,
            "attnsweep plan: job script for %.0f ranks, walltime %s, results %s (submit: sbatch "
            "SCRIPT)\n",
            ranks, wall, out_abs);
  return 0;
}

/* A value for an #SBATCH line: non-empty, printable, no blank or quote (it is not quoted). */
static int sbatch_word(const char *v) {
  if (!v[0]) return 0;
  for (const char *c = v; *c; c++)
    if (*c <= ' ' || *c == 127 || *c == '\'' || *c == '"' || *c == '\\' || *c == '#') return 0;
  return 1;
}

/* The arguments of `attnsweep plan`; the values of its options land here (plan_opts). */
typedef struct plan_args {
  const char *out;   /* -o OUT.h5 (with --sbatch) */
  int sbatch;        /* --sbatch */
  double target_h;   /* --target-hours */
  int cal;           /* --calibrate: sample size, 0: none */
  int cost_given;    /* --cost given */
  const char *calib; /* --calibration FILE (default SPEC.cost) */
  int kinds;         /* --cost-kinds */
  as_cost_model model;
  site_opts so;
  long ranks;       /* --ranks N: the job's rank count (ranks_per_trial is checked against it) */
  as_cli_sets sets; /* --set KEY=VALUE */
} plan_args;

/* Option handlers (cli.h as_opt_fn): 0, or -1 with what the option needs. */
static int opt_word(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  if (!sbatch_word(arg)) {
    snprintf(msg, cap, "needs a value without blanks or quotes");
    return -1;
  }
  *(const char **)(void *)((char *)dst + o->at) = arg;
  return 0;
}

/* Seconds and trials of the costliest shard of spec split into n (shard.h) under m. */
static as_status shard_seconds(const as_spec *spec, const as_cost_model *m, uint32_t n,
                               double *seconds, double *trials, double *most_trials) {
  as_status st = AS_OK;
  const uint64_t t = as_spec_trial_count(spec);
  uint32_t *owner = malloc((t ? t : 1) * sizeof *owner);
  double *loads = calloc(n, sizeof *loads), *count = calloc(n, sizeof *count);
  AS_CHECK(owner && loads && count, AS_ERR_NOMEM, "shards of %llu trials", (unsigned long long)t);
  AS_TRY(as_shard_owners(spec, n, owner, loads));
  for (uint64_t i = 0; i < t; i++) count[owner[i] - 1] += 1;
  *seconds = 0;
  *trials = 0;
  *most_trials = 0;
  for (uint32_t s = 0; s < n; s++) {
    if (count[s] > *most_trials) *most_trials = count[s];
    double sec = m->a * loads[s] + m->b * count[s];
    if (sec > *seconds) {
      *seconds = sec;
      *trials = count[s];
    }
  }
cleanup:
  free(owner);
  free(loads);
  free(count);
  return st;
}

static int opt_mpi(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  for (const char *c = arg; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) arg = "";
  if (!arg[0]) {
    snprintf(msg, cap, "needs a plugin name such as pmix or pmi2");
    return -1;
  }
  return opt_word(o, arg, dst, msg, cap);
}

static int opt_setup(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  (void)o;
  site_opts *so = &((plan_args *)dst)->so;
  if (!arg[0] || !script_safe(arg)) {
    snprintf(msg, cap, "needs a shell command on one line (no newline or control character)");
    return -1;
  }
  if (so->n_setup == SETUP_MAX) {
    snprintf(msg, cap, "can be given at most %d times", SETUP_MAX);
    return -1;
  }
  so->setup[so->n_setup++] = arg;
  return 0;
}

static int opt_calibrate(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  int *cal = (int *)(void *)((char *)dst + o->at);
  if (!arg) {
    *cal = 32;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  long n = strtol(arg, &end, 10);
  if (errno || end == arg || *end || n < 2 || n > 100000) {
    snprintf(msg, cap, "needs N, a whole number from 2 to 100000");
    return -1;
  }
  *cal = (int)n;
  return 0;
}

static int opt_cost(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap) {
  (void)o;
  plan_args *p = dst;
  char tail;
  double a = 0, b = 0;
  if (sscanf(arg, "%lg,%lg%c", &a, &b, &tail) != 2 || !(a > 0) || !(b >= 0) || !isfinite(a) ||
      !isfinite(b)) {
    snprintf(msg, cap, "needs A,B: seconds per unit of work A > 0, per trial B >= 0");
    return -1;
  }
  p->model.a = a;
  p->model.b = b;
  p->cost_given = 1;
  return 0;
}

/* Every option of `attnsweep plan`, once. */
static const as_opt plan_opts[] = {
    AS_OPT_RANGE("target-hours", 0, "H", plan_args, target_h, 0, 1e9, AS_OPEN_LO,
                 "the wall time to suggest ranks for, in hours (default 1)"),
    AS_OPT_FN("cost", 0, AS_ARG_REQUIRED, "A,B", plan_args, model, opt_cost,
              "cost model: A s per unit of work + B s per trial"),
    AS_OPT_FN("calibrate", 0, AS_ARG_OPTIONAL, "N", plan_args, cal, opt_calibrate,
              "fit the cost model on N sample trials first (default 32) and save the fit"),
    AS_OPT_TEXT("calibration", 0, "FILE", plan_args, calib,
                "where --calibrate saves the fit and plan reads it (default SPEC.cost)"),
    AS_OPT_FLAG("cost-kinds", 0, plan_args, kinds,
                "print the operation counts of the cost model by kind (to refit it)"),
    AS_OPT_FLAG("sbatch", 0, plan_args, sbatch,
                "print a Slurm job script on stdout (the report on stderr)"),
    AS_OPT_TEXT("output", 'o', "OUT.h5", plan_args, out,
                "with --sbatch: the job's results file (default SPEC.h5)"),
    AS_OPT_FN("account", 0, AS_ARG_REQUIRED, "A", plan_args, so.account, opt_word,
              "with --sbatch: #SBATCH --account"),
    AS_OPT_FN("partition", 0, AS_ARG_REQUIRED, "P", plan_args, so.partition, opt_word,
              "with --sbatch: #SBATCH --partition"),
    AS_OPT_FN("qos", 0, AS_ARG_REQUIRED, "Q", plan_args, so.qos, opt_word,
              "with --sbatch: #SBATCH --qos"),
    AS_OPT_FN("mem", 0, AS_ARG_REQUIRED, "M", plan_args, so.mem, opt_word,
              "with --sbatch: #SBATCH --mem (per node, e.g. 64G)"),
    AS_OPT_WHOLE("cpus-per-task", 0, "C", plan_args, so.cpus_per_task, 1, 1000000,
                 "with --sbatch: #SBATCH --cpus-per-task"),
    AS_OPT_WHOLE("ntasks-per-node", 0, "N", plan_args, so.per_node, 1, 1000000,
                 "with --sbatch: whole nodes of N tasks each"),
    AS_OPT_FN("mpi", 0, AS_ARG_REQUIRED, "PLUGIN", plan_args, so.mpi, opt_mpi,
              "with --sbatch: the srun MPI plugin (default pmix)"),
    AS_OPT_FN("setup", 0, AS_ARG_REQUIRED, "CMD", plan_args, so, opt_setup,
              "with --sbatch: a command the job runs first (repeatable)"),
    AS_OPT_WHOLE("array", 0, "N", plan_args, so.array, 1, AS_SHARD_MAX,
                 "with --sbatch: a job array of N shards and a merge job"),
    AS_OPT_WHOLE("ranks", 0, "N", plan_args, ranks, 1, 65536,
                 "the job's MPI ranks: a trial asking for more (ranks_per_trial) is an error"),
    AS_OPT_FN("set", 0, AS_ARG_REQUIRED, "KEY=VALUE", plan_args, sets, as_cli_opt_set,
              "override a spec key (repeatable); with --sbatch the job runs with it too"),
};
const as_optset as_opts_plan = AS_OPTSET(plan_opts, "SPEC");

int as_cmd_plan(int argc, char **argv) {
  plan_args args;
  memset(&args, 0, sizeof args);
  args.target_h = 1.0;
  as_cost_model_default(&args.model);
  int npos = 0, code = 0;
  if (as_opts_parse("plan", &as_opts_plan, argc, argv, &args, 1, &npos, &code)) return code;
  if (npos > 1)
    return as_cli_usage_error("plan", "more than one SPEC ('%s', '%s')", argv[1], argv[2]);
  const char *path = npos == 1 ? argv[1] : NULL, *out_path = args.out;
  const int sbatch = args.sbatch, cal = args.cal, cost_given = args.cost_given;
  const double target_h = args.target_h;
  as_cost_model model = args.model;
  const site_opts so = args.so;
  const int site_given = so.account || so.partition || so.qos || so.mem || so.mpi ||
                         so.cpus_per_task > 0 || so.per_node > 0 || so.n_setup > 0 || so.array > 0;
  if (!path) return as_cli_usage_error("plan", "missing SPEC");
  if (out_path && !sbatch) return as_cli_usage_error("plan", "-o OUT.h5 goes with --sbatch");
  if (site_given && !sbatch)
    return as_cli_usage_error("plan", "the job script options (--account, --partition, --qos, "
                                      "--mem, --cpus-per-task, --ntasks-per-node, --mpi, "
                                      "--setup, --array) go with --sbatch");
  /* The template: needed for --sbatch; its signal lead time enters the suggested walltime,
   * so that the walltime printed equals the script's --time. */
  char tpath[PATH_CAP];
  int have_template = find_template(tpath, sizeof tpath);
  if (have_template) {
    char treal[PATH_CAP];
    if (realpath(tpath, treal)) snprintf(tpath, sizeof tpath, "%s", treal);
  } else if (sbatch) {
    fprintf(stderr,
            "attnsweep plan: the job script template %s was not found (looked in "
            "$ATTNSWEEP_JOBS_DIR, beside the executable and %s/../jobs); set "
            "ATTNSWEEP_JOBS_DIR to the directory that holds it\n",
            TEMPLATE_NAME, AS_ANALYSIS_DIR[0] ? AS_ANALYSIS_DIR : "(no source tree)");
    return 3;
  }
  const long lead = template_lead(have_template ? tpath : NULL);
  /* With --sbatch stdout carries the job script only; the report goes to stderr. */
  FILE *rep = sbatch ? stderr : stdout;

  as_spec_diags diags = {0, 0, NULL};
  as_spec *spec = NULL;
  as_cost_estimate est;
  memset(&est, 0, sizeof est);
  char *stext = NULL;
  size_t slen = 0;
  int printed = 0;
  as_status st = as_spec_read(path, NULL, &stext, &slen);
  if (st == AS_OK)
    st = as_cli_spec_parse("plan", stext, slen, path, &args.sets, 1, &diags, &spec, &printed);
  free(stext);
  if (st != AS_OK) {
    if (printed) {
      code = 2;
    } else if (st == AS_ERR_SPEC && diags.count > 0) {
      for (int k = 0; k < diags.count; k++)
        fprintf(stderr, "%s:%d:%d: %s\n", path, diags.items[k].line, diags.items[k].col,
                diags.items[k].message);
      code = 2;
    } else {
      code = as_cli_report("plan", st);
    }
    goto done;
  }
  if (args.ranks > 0) { /* the one check that needs the job's size (docs/meanfield.md) */
    st = as_cost_ranks_check(spec, (int)args.ranks);
    if (st != AS_OK) {
      code = as_cli_report("plan", st);
      goto done;
    }
  }
  /* The saved calibration: --calibration FILE, or SPEC.cost beside the spec. */
  char cpath[PATH_CAP];
  if (snprintf(cpath, sizeof cpath, "%s", args.calib ? args.calib : path) >= (int)sizeof cpath ||
      (!args.calib && strlen(cpath) + 5 >= sizeof cpath)) {
    code = as_cli_usage_error("plan", "the calibration file's path is too long");
    goto done;
  }
  if (!args.calib) strcat(cpath, ".cost");
  as_cost_saved saved;
  memset(&saved, 0, sizeof saved);
  const char *model_from = cal ? "calibrated" : (cost_given ? "--cost" : NULL);
  char from_buf[PATH_CAP + 512];
  if (!cal && !cost_given && (args.calib || access(cpath, F_OK) == 0)) {
    st = as_cost_model_load(cpath, &model, &saved);
    if (st != AS_OK) {
      code = as_cli_report("plan", st);
      goto done;
    }
    snprintf(from_buf, sizeof from_buf, "calibrated on %d trials on %s; read from %s%s",
             saved.trials, saved.machine[0] ? saved.machine : "an unnamed machine", cpath,
             strcmp(saved.spec_sha256, as_spec_sha256(spec)) == 0
                 ? ""
                 : "; fitted on another version of the spec");
    model_from = from_buf;
  }
  if (cal) {
    as_cost_calibration ci;
    st = as_cost_calibrate(spec, cal, &model, &ci);
    if (st != AS_OK) {
      code = as_cli_report("plan", st);
      goto done;
    }
    saved.trials = ci.trials;
    as_cost_machine(saved.machine, sizeof saved.machine);
    snprintf(saved.spec_sha256, sizeof saved.spec_sha256, "%s", as_spec_sha256(spec));
    st = as_cost_model_save(cpath, &model, &saved);
    if (st != AS_OK) {
      code = as_cli_report("plan", st);
      goto done;
    }
    snprintf(from_buf, sizeof from_buf, "calibrated on %d trials here (%s); saved to %s", ci.trials,
             saved.machine, cpath);
    model_from = from_buf;
    if (ci.failed)
      fprintf(stderr,
              "attnsweep plan: %d of the %d calibration trials failed to set up (see "
              "`attnsweep run`); the fit may be off\n",
              ci.failed, ci.trials);
    fprintf(rep,
            "calibrated on %d trials: %.3g s per unit of work + %.3g s per trial"
            " (reuse with --cost %.3g,%.3g)\n",
            ci.trials, model.a, model.b, model.a, model.b);
  }

  int nc = as_spec_case_count(spec);
  uint64_t R = as_spec_replicates(spec), P = as_spec_point_count(spec);
  st = as_cost_estimate_spec(spec, &model, &est);
  if (st != AS_OK) {
    code = as_cli_report("plan", st);
    goto done;
  }
  double tot_s = est.seconds;
  const double tot_bytes = est.bytes;
  int thr = as_spec_spectral_threshold(spec), gp = 1, gq = 1;
  as_spec_spectral_grid(spec, &gp, &gq);

  fprintf(rep, "spec %s: %s, sha256 %s\n", path, as_spec_name(spec), as_spec_sha256(spec));
  fprintf(rep, "%llu trials = %llu replicates x %llu points, %d case%s, master seed %llu\n",
          (unsigned long long)as_spec_trial_count(spec), (unsigned long long)R,
          (unsigned long long)P, nc, nc == 1 ? "" : "s", (unsigned long long)as_spec_seed(spec));
  if (as_spec_common_keys(spec)[0]) /* docs/spec.md, "Enumeration and seeds" */
    fprintf(rep, "common random numbers: trials that differ only in %s share their draws\n",
            as_spec_common_keys(spec));
  fprintf(rep, "\n| case | points | trials | core-hours | output |\n|---|---:|---:|---:|---:|\n");
  for (int c = 0; c < nc; c++) {
    char hb[32];
    double s = as_cost_case_seconds(&est, spec, &model, c);
    human_bytes((double)R * est.cases[c].bytes, hb, sizeof hb);
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
  fprintf(rep, "\ncost model: %.3g s per unit of work + %.3g s per trial (%s)\n", model.a, model.b,
          model_from ? model_from : "default, the reference machine; --calibrate fits it here");
  /* What `attnsweep run` on one rank costs: every trial and the rank's start and end. */
  fprintf(rep, "one-rank run: about %.4g CPU seconds (trials %.4g s + %.3g s to start and end)\n",
          tot_s + est.large_seconds + AS_COST_RANK_START_S, tot_s + est.large_seconds,
          AS_COST_RANK_START_S);
  if (args.kinds) { /* cost.h as_cost_kinds: the raw counts, for bench/plan_accuracy.sh --fit */
    fprintf(rep, "cost kinds:");
    for (int k = 0; k < AS_COST_KINDS; k++) fprintf(rep, " %.6g", est.kinds[k]);
    fputc('\n', rep);
  }
  /* Beside the results file each rank journals its records (OUT.h5.journal.<rank>, one
   * entry per trial it finished, docs/robustness.md): all journals hold about one entry per
   * trial, plus a header per rank. */
  char jb[32], allb[32];
  double jbytes = (double)as_spec_trial_count(spec) * (double)AS_JOURNAL_ENTRY_BYTES;
  human_bytes(jbytes, jb, sizeof jb);
  human_bytes(tot_bytes + jbytes, allb, sizeof allb);
  fprintf(rep,
          "estimate%s: %.3g core-hours, output %s = %s results file (bulk data included) + %s "
          "journals (%zu bytes per trial)\n",
          est.sampled ? " (sampled)" : "", tot_s / 3600.0, allb, hb, jb,
          (size_t)AS_JOURNAL_ENTRY_BYTES);
  /* Ranks: enough workers to finish in the target time at 85% efficiency;
   * never more workers than trials. Walltime: target (or the longest trial) plus 20%. */
  double target_s = target_h * 3600.0, longest_s = est.max_seconds;
  /* A job array: every task is sized for the costliest shard of the split (shard.h). */
  double job_s = tot_s, job_trials = (double)as_spec_trial_count(spec);
  const double n_trials_d = (double)as_spec_trial_count(spec);
  if (so.array) {
    double most = 0;
    st = shard_seconds(spec, &model, (uint32_t)so.array, &job_s, &job_trials, &most);
    if (st != AS_OK) {
      code = as_cli_report("plan", st);
      goto done;
    }
    fprintf(rep, "job array of %ld shards: the costliest %.3g core-hours (%.0f trials)\n", so.array,
            job_s / 3600.0, job_trials);
    /* A shard's file holds its own rows (shard.h): its share of the results file, the trial
     * index of each row, and the fixed part of a results file. */
    char sb[32], allsb[32], mb[32], sjb[32];
    const double share = n_trials_d > 0 ? most / n_trials_d : 0.0;
    human_bytes(share * tot_bytes + 8.0 * most + AS_COST_FILE_FIXED_BYTES, sb, sizeof sb);
    human_bytes(tot_bytes + (double)so.array * AS_COST_FILE_FIXED_BYTES + 8.0 * n_trials_d, allsb,
                sizeof allsb);
    human_bytes(tot_bytes, mb, sizeof mb);
    human_bytes(share * jbytes, sjb, sizeof sjb);
    fprintf(rep,
            "job array files: each shard file up to %s (%.0f trials), %s for all %ld; merged "
            "file %s; journals up to %s per shard while it runs (removed when it completes)\n",
            sb, most, allsb, so.array, mb, sjb);
  }
  double workers = ceil(job_s / (0.85 * target_s));
  if (workers < 1) workers = 1;
  if (workers > job_trials) workers = job_trials;
  if (workers < 1) workers = 1;
  double expect_s = job_s / (0.85 * workers);
  if (expect_s < longest_s) expect_s = longest_s;
  if (est.large_trials > 0) {
    /* Every rank takes part in the pre-pass (floor(ranks / PQ) grids at once, the rest wait):
     * its wall time comes before the sweep, and it costs that time on every rank. */
    double pq = (double)gp * gq, grids = floor(workers / pq);
    if (workers < pq) workers = pq; /* a smaller job is refused */
    if (grids < 1) grids = 1;
    double pre_wall = est.large_seconds / grids;
    if (pre_wall < est.large_max) pre_wall = est.large_max;
    expect_s += pre_wall;
    tot_s += pre_wall * workers;
    fprintf(rep,
            "large-d spectral analysis: %.0f triples with d >= %d on spectral_grid %dx%d, "
            "~%.3g s each on one grid, ~%.3g s before the sweep with %.0f grid%s (%.3g "
            "core-hours, included below)\n",
            est.large_trials, thr > 0 ? thr : AS_SPECTRAL_THRESHOLD_DEFAULT, gp, gq,
            est.large_seconds / est.large_trials, pre_wall, grids, grids == 1 ? "" : "s",
            pre_wall * workers / 3600.0);
    fprintf(rep, "estimate with the large-d phase: %.3g core-hours\n", tot_s / 3600.0);
  }
  hms(1.2 * expect_s + 60.0 + (double)lead, wall, sizeof wall);
  /* Up to AS_SCHED_COORD_RUNS_MAX ranks the coordinator runs trials too (sched.h); beyond,
   * it only coordinates and needs a rank of its own. */
  double ranks = workers <= AS_SCHED_COORD_RUNS_MAX ? workers : workers + 1;
  /* A trial over several ranks (ranks_per_trial) needs at least that many in the job. */
  const int most_rpt = as_cost_max_ranks_per_trial(spec);
  if ((double)most_rpt > ranks) {
    fprintf(rep, "ranks_per_trial: a trial runs on %d ranks, so the job gets at least %d\n",
            most_rpt, most_rpt);
    ranks = most_rpt;
  }
  char nodes[96] = "";
  if (so.per_node > 0) {
    /* Whole nodes: the extra ranks run trials too, so the estimate only gets shorter. */
    double pn = (double)so.per_node, whole = ceil(ranks / pn) * pn;
    snprintf(nodes, sizeof nodes, ", %.0f node%s x %ld", whole / pn, whole == pn ? "" : "s",
             so.per_node);
    ranks = whole;
  }
  fprintf(rep,
          "suggested for a %.3g h target: %.0f rank%s (%s%s), walltime %s (longest trial ~%.3g "
          "s; 1.2 x the work + 1 min + %ld s of warning before the limit)\n",
          target_h, ranks, ranks == 1 ? "" : "s",
          ranks <= AS_SCHED_COORD_RUNS_MAX ? "every rank runs trials, rank 0 also coordinates"
                                           : "one coordinator, the others run trials",
          nodes, wall, longest_s, lead);
  char mem_per_cpu[32] = "";
  {
    /* Memory (cost.h): per trial, the largest, and per rank against the limit run applies. */
    const int per_node = so.per_node > 0 ? (int)so.per_node : 1;
    const double given = as_spec_memory_limit(spec);
    const double limit = given > 0.0 ? given : as_cost_memory_available(per_node);
    as_cost_memory_info mi;
    as_status mst = as_cost_memory_scan(spec, limit, &mi);
    char lo[32], hi[32], rk[32], lim[32];
    human_bytes(mi.min_bytes, lo, sizeof lo);
    human_bytes(mi.max_bytes, hi, sizeof hi);
    human_bytes(mi.max_bytes + AS_COST_RANK_BASE_BYTES, rk, sizeof rk);
    human_bytes(limit, lim, sizeof lim);
    as_trial mt;
    if (as_spec_trial(spec, mi.max_trial, &mt) == AS_OK)
      fprintf(rep,
              "memory: %s to %s per trial (largest: trial %llu, case '%s', n = %d, d = %d); "
              "per rank %s with the process; limit %s per rank (%s)\n",
              lo, hi, (unsigned long long)mi.max_trial, mt.case_name ? mt.case_name : "?", mt.n,
              mt.d, rk, limit > 0.0 ? lim : "unknown",
              given > 0.0 ? "memory_limit"
                          : (so.per_node > 0 ? "MemAvailable here / --ntasks-per-node"
                                             : "MemAvailable here, 1 rank per node"));
    if (mst != AS_OK) {
      fprintf(rep, "memory: run would refuse this spec: %s\n", as_error_get()->message);
      as_error_clear();
    }
    /* The job's request: the largest rank's need with AS_MEM_MARGIN, per CPU (--mem
     * overrides it). */
    const double cpus = so.cpus_per_task > 0 ? (double)so.cpus_per_task : 1.0;
    const double per_cpu =
        ceil(AS_MEM_MARGIN * (mi.max_bytes + AS_COST_RANK_BASE_BYTES) / cpus / 1048576.0);
    snprintf(mem_per_cpu, sizeof mem_per_cpu, "%.0fM", per_cpu > 1.0 ? per_cpu : 1.0);
    if (sbatch)
      fprintf(rep, "memory request: %s\n",
              so.mem ? "--mem as given"
                     : "--mem-per-cpu from the largest rank x AS_MEM_MARGIN (1.5)");
    if (sbatch && !so.mem)
      fprintf(rep, "  #SBATCH --mem-per-cpu=%s (override with --mem)\n", mem_per_cpu);
  }
  /* The merge job checks every shard and writes the file at the measured rates (cost.h),
   * allowed twice as long, plus 10 minutes. */
  char merge_wall[32];
  const double merge_s =
      n_trials_d / AS_COST_MERGE_ROWS_PER_S + tot_bytes / AS_COST_MERGE_BYTES_PER_S;
  hms(600.0 + 2.0 * merge_s, merge_wall, sizeof merge_wall);
  if (so.array)
    fprintf(rep, "merge job: about %.0f s at %.0f rows/s and %.0f MB/s (measured), walltime %s\n",
            merge_s, AS_COST_MERGE_ROWS_PER_S, AS_COST_MERGE_BYTES_PER_S / 1e6, merge_wall);
  if (sbatch)
    code = render_sbatch(spec, tpath, path, out_path, &args.sets, &so, ranks, wall, merge_wall,
                         mem_per_cpu, lead, expect_s, tot_s, as_spec_trial_count(spec));
done:
  as_cost_estimate_free(&est);
  as_spec_diags_free(&diags);
  as_spec_destroy(&spec);
  return code;
}
