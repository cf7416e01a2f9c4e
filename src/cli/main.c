/* main.c: the attnsweep command: global options, help, and dispatch to subcommands. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__ /* defined by the glibc headers above */
#include <malloc.h>
#endif

#include "attnsweep/par.h"
#include "attnsweep/signals.h"
#include "attnsweep/versions.h"
#include "cli.h"

static const as_command commands[] = {
    {"validate", as_cmd_validate, 0, "check a sweep spec; every error as SPEC:LINE:COL",
     "usage: attnsweep validate [OPTIONS] SPEC...\n\n"
     "Parses and checks SPEC (YAML) and reports every error at once as SPEC:LINE:COL: message.\n"
     "Matrix and token files the spec reads are loaded and checked too (--no-files skips it).\n"
     "Exit 0 with a one-line summary when valid, 2 otherwise.\n",
     &as_opts_validate, NULL, NULL},
    {"plan", as_cmd_plan, 0, "trial counts, cost estimate, suggested ranks and walltime",
     "usage: attnsweep plan [OPTIONS] SPEC\n\n"
     "Counts trials per case and per axis, estimates core-hours and output size from the cost\n"
     "model (--calibrate runs a sample of N trials to fit it), suggests ranks and walltime, and\n"
     "with --sbatch prints a ready Slurm job script (docs/slurm.md); with --array N a submit\n"
     "script (bash) for a job array of N shards (run --shard) and a dependent merge job. The\n"
     "job script options (--account ... --setup, --array) go with --sbatch.\n",
     &as_opts_plan, NULL, NULL},
    {"run", as_cmd_run, 1, "run a sweep into one HDF5 results file (under mpiexec/srun)",
     "usage: mpiexec -n N attnsweep run [OPTIONS] [SPEC] -o OUT.h5\n\n"
     "Runs every trial of SPEC (no SPEC: the built-in default sweep of the paper's theorems;\n"
     "with --resume and no SPEC: the spec stored with OUT.h5, its .spec copy or /spec)\n"
     "on all ranks and writes the results into OUT.h5. Exit 0 when complete, 4 when complete\n"
     "but some trials failed or are non-finite (the count is printed; --resume --retry-failed\n"
     "runs them again and keeps the rest), 99 when stopped early by a signal (resumable with\n"
     "--resume), 2 for bad input, 3 for I/O failures, 70 for an internal error (a bug:\n"
     "file:line and the trial are named; resumable).\n"
     "--shard I/N runs only shard I of N of the sweep (a cost-balanced split, the same for\n"
     "every job) into OUT.h5.shard-I-of-N; `attnsweep merge OUT.h5 SHARD...` joins them\n"
     "(docs/slurm.md). Rank 0 shows progress on stderr: a live bar when that is a terminal\n"
     "(or mpiexec's is), else one line per interval.\n",
     &as_opts_run, NULL, NULL},
    {"status", as_cmd_status, 0, "progress of a running or interrupted sweep",
     "usage: attnsweep status OUT.h5 | SHARD...\n\n"
     "Reports done/total, failures and the segments of a sweep. For a job array (shard\n"
     "files OUT.h5.shard-I-of-N beside a missing OUT.h5, or several shard files given):\n"
     "the progress of each shard, the missing ones and the total.\n",
     &as_opts_status, NULL, NULL},
    {"summarize", as_cmd_summarize, 0, "summary tables from a results file",
     "usage: attnsweep summarize OUT.h5 [OPTIONS]\n\n"
     "Grouped tables (default by theorem): counts, verdict fractions with Wilson 95% intervals,\n"
     "cluster counts, rank of P, settling and wall time; --table1 the paper's Table 1 with the\n"
     "measured columns; --phase a phase diagram (table, PNG); --plot one trial's end state.\n"
     "Runs /usr/bin/python3 analysis/attnsweep_summarize.py (docs/analysis.md), which reads\n"
     "the options:\n",
     NULL, "attnsweep_summarize.py", NULL},
    {"report", as_cmd_report, 0, "one self-contained HTML page (tables, figures) from results",
     "usage: attnsweep report FILE.h5 [FILE2.h5 ...] -o report.html [OPTIONS]\n\n"
     "For each file: provenance (spec, hashes, versions, dates), completeness and failures,\n"
     "verdict tables with intervals, Table 1, near-miss robustness, the sections of what the\n"
     "sweep varies (variants, mean field, weights) and figures, computed by the summarize\n"
     "machinery; inline CSS and figures, no script, no request to the network. Runs\n"
     "/usr/bin/python3 analysis/attnsweep_report.py (docs/analysis.md), which reads the\n"
     "options:\n",
     NULL, "attnsweep_report.py", NULL},
    {"reproduce", as_cmd_reproduce, 1, "rerun one trial and compare it with its record",
     "usage: attnsweep reproduce OUT.h5 TRIAL [--save TRIAL.h5 [--snapshots K]]\n\n"
     "Reruns trial TRIAL from the spec stored in OUT.h5 and compares it bit for bit with its\n"
     "record and bulk data (timing fields aside). Exit 0 identical, 1 different (fields\n"
     "named), 2 no such or pending trial. --save writes the rerun trial with all its bulk\n"
     "data as a results file of one row (summarize TRIAL.h5 --plot 0 draws it).\n",
     &as_opts_reproduce, NULL, NULL},
    {"repair", as_cmd_repair, 1, "rebuild the results from the journal after a hard kill",
     "usage: attnsweep repair [OPTIONS] OUT.h5\n\n"
     "Puts journaled records back into OUT.h5 after a hard kill, or rebuilds it from\n"
     "OUT.h5.spec and the journals when it is unreadable (docs/robustness.md).\n",
     &as_opts_repair, NULL, NULL},
    {"merge", as_cmd_merge, 1, "join the shard files of a sweep into one results file",
     "usage: attnsweep merge [OPTIONS] OUT.h5 SHARD...\n\n"
     "Joins the shard files of one sweep (run --shard I/N: OUT.h5.shard-I-of-N) into OUT.h5,\n"
     "the file a single job would have written: /trials and the bulk data of every done row.\n"
     "Refuses (exit 2) files of another spec, a missing or unfinished shard (named; --partial\n"
     "merges what exists, the other rows stay pending) and rows two files disagree on.\n"
     "The root attribute merged_from lists the inputs (docs/slurm.md).\n",
     &as_opts_merge, NULL, NULL},
    {"import-weights", as_cmd_import_weights, 0,
     "attention heads of a checkpoint (safetensors) -> a matrix file",
     "usage: attnsweep import-weights CHECKPOINT -o OUT.h5 [OPTIONS]\n\n"
     "Writes every (layer, head) of CHECKPOINT (a safetensors file, or a directory with\n"
     "model.safetensors or its sharded index) as a triple Q_h, K_h (d_k x d), V_h (d x d,\n"
     "stored as factors in the checkpoint's precision) with mscale = 1/sqrt(d_k), in the\n"
     "layout `vfamily: file` and `mfamily: file` read (--stack-heads: one item per layer).\n"
     "The model is detected from the tensor names unless --model is given; the heads come\n"
     "from --heads or config.json beside the checkpoint. Biases are ignored. Exit 2 names\n"
     "a missing or misshapen tensor. Runs analysis/import_weights.py (docs/weights.md),\n"
     "which reads the options:\n",
     NULL, "import_weights.py", NULL},
    {"census", as_cmd_census, 1, "the theorems' hypotheses, head by head, of a matrix file",
     "usage: [mpiexec -n N] attnsweep census [OPTIONS] WEIGHTS.h5\n\n"
     "For every triple of WEIGHTS.h5 (per layer and head after import-weights): the spectral\n"
     "analysis of the sweep (eigenvalues of V, the good-triple checks with their margins,\n"
     "<Q phi_1, K phi_1>, the asymmetry and smallest symmetric eigenvalue of M, k positive\n"
     "eigenvalues, paranormal structure) and the theorem whose hypotheses hold, as a\n"
     "markdown table (--csv: CSV), then \"good triples: a of b heads\". LAPACK takes one\n"
     "triple per rank, ScaLAPACK all ranks per triple, whichever is cheaper (--threshold D:\n"
     "ScaLAPACK from d >= D); a damaged file is exit 2 (docs/weights.md).\n",
     &as_opts_census, NULL, NULL},
    {"bench", as_cmd_bench, 0, "benchmarks of the numerical core (prints figures)",
     "usage: attnsweep bench [NAME]\n\nRuns the benchmark NAME (default all) on one core and "
     "prints its figures.\n",
     &as_opts_bench, NULL, as_cli_bench_topics},
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void print_usage(FILE *f) {
  fprintf(f, "usage: attnsweep [--version] [--help] COMMAND [ARGS]\n");
}

static void print_help(void) {
  print_usage(stdout);
  printf("\nattnsweep runs sweeps of self-attention particle dynamics (Geshkovski et al.,\n"
         "\"The emergence of clusters in self-attention dynamics\") across MPI ranks into one\n"
         "HDF5 file, and judges every end state against the theorems' predictions.\n\n"
         "commands:\n");
  for (int i = 0; i < n_commands; i++)
    printf("  %-14s %s\n", commands[i].name, commands[i].synopsis);
  printf("\n`attnsweep help COMMAND` describes one command and all its options; `attnsweep "
         "help keys` lists the sweep keys, `attnsweep help fields` the fields of /trials, "
         "`attnsweep help theorems` the theorems, `attnsweep help help` the topics.\n"
         "Exit codes: 0 done, 2 bad input, 3 I/O failure, 4 done but some trials failed,\n"
         "70 internal error (a bug), "
         "99 stopped early (resumable).\n"
         "ATTNSWEEP_DEBUG=1 makes every error message name its place in the source (file:line).\n");
}

#ifndef AS_ANALYSIS_DIR
#define AS_ANALYSIS_DIR ""
#endif
#ifndef AS_INSTALL_ANALYSIS_DIR
#define AS_INSTALL_ANALYSIS_DIR ""
#endif
#define AS_PATH_CAP 4096

/* Writes DIR/file into out; returns 1 when that file is readable. */
static int file_in(const char *dir, const char *file, char *out, size_t cap) {
  if (!dir || !dir[0]) return 0;
  int len = snprintf(out, cap, "%s/%s", dir, file);
  if (len < 0 || (size_t)len >= cap) return 0;
  return access(out, R_OK) == 0;
}

int as_cli_locate(as_cli_dir kind, const char *file, char *out, size_t cap, const char **how) {
  const int jobs = kind == AS_CLI_DIR_JOBS;
  const char *sub = jobs ? "jobs" : "analysis";
  char dir[AS_PATH_CAP + 64];
  *how = jobs ? "ATTNSWEEP_JOBS_DIR" : "ATTNSWEEP_ANALYSIS_DIR";
  if (file_in(getenv(*how), file, out, cap)) return 1;
  /* The executable's own directory: an installed (or copied, or moved) prefix carries its
   * analysis and job template in PREFIX/share/attnsweep, and they belong to it, not to the
   * tree it was compiled in (issue 48). */
  char exe[AS_PATH_CAP] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash = NULL;
  if (n > 0) {
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
  }
  if (slash) {
    snprintf(dir, sizeof dir, "%s/../share/attnsweep/%s", exe, sub);
    *how = "installed beside the executable";
    if (file_in(dir, file, out, cap)) return 1;
  }
  /* The source tree and the install prefix the executable was configured with (compiled in):
   * a build tree's executable runs its own tree's scripts. */
  snprintf(dir, sizeof dir, "%s%s", AS_ANALYSIS_DIR, jobs && AS_ANALYSIS_DIR[0] ? "/../jobs" : "");
  *how = "the source tree it was built from";
  if (file_in(dir, file, out, cap)) return 1;
  snprintf(dir, sizeof dir, "%s%s", AS_INSTALL_ANALYSIS_DIR,
           jobs && AS_INSTALL_ANALYSIS_DIR[0] ? "/../jobs" : "");
  *how = "the install prefix it was configured with";
  if (file_in(dir, file, out, cap)) return 1;
  /* A build tree copied elsewhere: its source tree beside it. */
  static const char *const rel[] = {"/..", "/../.."};
  for (size_t i = 0; slash && i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(dir, sizeof dir, "%s%s/%s", exe, rel[i], sub);
    *how = "a tree beside the executable";
    if (file_in(dir, file, out, cap)) return 1;
  }
  *how = "not found";
  return 0;
}

/* One line of --version: where the analysis or the job template is taken from. */
static void print_located(const char *what, as_cli_dir kind, const char *file) {
  char path[AS_PATH_CAP], real[AS_PATH_CAP];
  const char *how = NULL;
  if (!as_cli_locate(kind, file, path, sizeof path, &how)) {
    printf("  %-9s not found (set %s)\n", what,
           kind == AS_CLI_DIR_JOBS ? "ATTNSWEEP_JOBS_DIR" : "ATTNSWEEP_ANALYSIS_DIR");
    return;
  }
  if (realpath(path, real)) snprintf(path, sizeof path, "%s", real);
  if (kind == AS_CLI_DIR_ANALYSIS) { /* the directory, not the script in it */
    char *slash = strrchr(path, '/');
    if (slash && slash != path) *slash = '\0';
  }
  printf("  %-9s %s (%s)\n", what, path, how);
}

static void print_version(void) {
  as_versions v;
  as_versions_get(&v);
  printf("attnsweep %s (git %s)\n", v.tool, v.git);
  printf("  MPI:     %s\n", v.mpi);
  printf("  HDF5:    %s\n", v.hdf5);
  printf("  libyaml: %s\n", v.yaml);
  printf("  BLAS:    %s\n", v.blas);
  printf("  RNG:     %s\n", v.rng);
  print_located("analysis:", AS_CLI_DIR_ANALYSIS, "attnsweep_summarize.py");
  print_located("jobs:", AS_CLI_DIR_JOBS, "attnsweep.sbatch");
  const char *python = getenv("ATTNSWEEP_PYTHON");
  printf("  python:   %s\n", python && python[0] ? python : "/usr/bin/python3");
}

static const as_command *find_command(const char *name) {
  for (int i = 0; i < n_commands; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

/* `attnsweep help TOPIC`: the topics that are not commands. */
static const struct {
  const char *name, *what;
} topics[] = {
    {"keys", "the sweep keys of a spec, as a markdown table (docs/spec.md)"},
    {"fields", "the fields of /trials, as a markdown table (docs/results.md); --json: as JSON"},
    {"theorems", "the theorem table: hypotheses, predictions, precedence (docs/theory.md)"},
    {"theorem_table", "the same rows as the /trials attribute theorem_table (tab-separated)"},
    {"reasons", "the reasons of a verdict and what decides each (docs/theory.md 2.2)"},
    {"combinations", "pairs of model variants: allowed, or the rule that refuses them"},
    {"help", "this list of topics"},
};

static void print_topics(FILE *f) {
  fprintf(f, "usage: attnsweep help [TOPIC]\n\ntopics: every command (what it does and all "
             "its options) and\n");
  for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++)
    fprintf(f, "  %-14s %s\n", topics[i].name, topics[i].what);
  fprintf(f, "commands:");
  for (int i = 0; i < n_commands; i++) fprintf(f, " %s", commands[i].name);
  fprintf(f, "\n");
}

int as_cli_print_command_help(const char *cmd) {
  const as_command *c = find_command(cmd);
  if (!c) return 2;
  fputs(c->help, stdout);
  if (c->opts) {
    fputc('\n', stdout);
    as_opts_print_help(stdout, c->opts);
  }
  if (c->more) {
    fputc('\n', stdout);
    c->more(stdout);
  }
  if (c->script) {
    /* The script lists its own options (its argparse --help): one declaration of them. */
    char name[64], help[] = "--help";
    snprintf(name, sizeof name, "%s", c->name);
    char *args[] = {name, help, NULL};
    fputc('\n', stdout);
    fflush(stdout);
    as_cli_exec_script(c->name, c->script, 2, args);
    printf("(the options of %s are listed by the script %s, which cannot be run here)\n", c->name,
           c->script);
  }
  return 0;
}

int as_cli_usage_error(const char *cmd, const char *fmt, ...) {
  fprintf(stderr, "attnsweep %s: ", cmd);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  const as_command *c = find_command(cmd);
  if (c) {
    const char *end = strchr(c->help, '\n');
    fprintf(stderr, "%.*s\n", end ? (int)(end - c->help) : (int)strlen(c->help), c->help);
  }
  return 2;
}

int as_cli_report(const char *cmd, as_status st) {
  char buf[AS_ERRMSG_MAX + 256];
  const as_error *e = as_error_get();
  /* The message alone; the place in the code only for a bug or under ATTNSWEEP_DEBUG=1
   * (as_error_format_user). */
  if (e->status != AS_OK)
    as_error_format_user(buf, sizeof buf);
  else
    snprintf(buf, sizeof buf, "%s", as_status_message(st));
  fprintf(stderr, "attnsweep %s: %s\n", cmd, buf);
  return as_status_exit_code(st);
}

int as_cli_not_implemented(const char *cmd) {
  fprintf(stderr,
          "attnsweep %s: this command is not implemented yet in attnsweep %s; nothing was run.\n",
          cmd, AS_VERSION);
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    fprintf(stderr, "run `attnsweep --help` for the commands\n");
    return 2;
  }
  const char *a = argv[1];
  if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
    print_help();
    return 0;
  }
  if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
    print_version();
    return 0;
  }
  if (strcmp(a, "help") == 0) {
    if (argc == 2) {
      print_help();
      return 0;
    }
    if (argc == 4 && strcmp(argv[3], "--json") == 0) {
      if (as_cli_help_json(argv[2]) == 0) return 0;
      fprintf(stderr, "attnsweep help: --json goes with the topic fields\n");
      return 2;
    }
    if (argc > 3) {
      fprintf(stderr, "attnsweep help: one topic at a time\n");
      print_topics(stderr);
      return 2;
    }
    if (as_cli_help_table(argv[2]) == 0) return 0;
    if (strcmp(argv[2], "help") == 0) {
      print_topics(stdout);
      return 0;
    }
    if (!find_command(argv[2])) {
      fprintf(stderr, "attnsweep help: unknown topic '%s'\n", argv[2]);
      print_topics(stderr);
      return 2;
    }
    return as_cli_print_command_help(argv[2]);
  }
  if (a[0] == '-') {
    fprintf(stderr, "attnsweep: unknown option '%s'\n", a);
    print_usage(stderr);
    return 2;
  }
  const as_command *c = find_command(a);
  if (!c) {
    fprintf(stderr, "attnsweep: unknown command '%s'\n", a);
    print_usage(stderr);
    fprintf(stderr, "run `attnsweep --help` for the commands\n");
    return 2;
  }
  /* -h/--help: the option parser of each command (opts.c); the Python commands pass it to
   * their script. */
#ifdef __GLIBC__
  /* Memory a command frees stays with the process for its next allocation. glibc hands a
   * block of 128 KiB or more back to the system when it is freed, and the next such block is
   * faulted in again page by page, at some microseconds a fault on a virtual machine: the
   * file's creation, the batches of the sweep and the checks at close each fault in their own
   * megabytes (docs/performance.md, "page faults"). Blocks above 32 MiB (a large trial's
   * matrices) still come from the system and go back to it, and the heap gives back what lies
   * free above 64 MiB. Settings the user made through glibc's variables win. */
  if (!getenv("GLIBC_TUNABLES") && !getenv("MALLOC_MMAP_THRESHOLD_") &&
      !getenv("MALLOC_TRIM_THRESHOLD_")) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  }
#endif
  /* A sweep drains on SIGTERM, SIGUSR1 and SIGINT (exit 99). The handlers go in before
   * MPI_Init and stay until exit, so a signal at any moment of a rank's life is a clean stop,
   * never a kill: early ones stop the sweep before its first trial, late ones are ignored. */
  if (c->fn == as_cmd_run && as_signals_install() != AS_OK) {
    fprintf(stderr, "attnsweep: cannot install signal handlers\n");
    return 3;
  }
  /* The kernels' instruction-set cap (attention.h): a value it does not know would be ignored
   * silently, and a benchmark would then measure another path than the one asked for. */
  const char *isa = getenv("ATTNSWEEP_ISA");
  if (isa && *isa && strcmp(isa, "avx2") != 0 && strcmp(isa, "baseline") != 0) {
    fprintf(stderr, "attnsweep: ATTNSWEEP_ISA=%s: expected avx2 or baseline (or unset)\n", isa);
    return 2;
  }
  /* Every process (each MPI rank) pins its own BLAS threads before any work (par.h). */
  as_status bst = as_par_blas_threads(NULL);
  if (bst != AS_OK) return as_cli_report(c->name, bst);
  if (!c->needs_mpi) return c->fn(argc - 1, argv + 1);
  /* Started without a launcher (a singleton), Open MPI 4.1 forks and execs a support daemon
   * (orted) that these commands never use (no spawn, no connect): 0.3 s of wall time of
   * every `attnsweep run -o ...` on one rank (0.6 s against 0.9 s here, docs/performance.md).
   * An isolated singleton skips it. The parameter only applies to singletons (a process
   * started by mpiexec or srun ignores it), and a value the user set wins. */
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  /* A singleton talks to itself only, so more start-up costs buy it nothing: the cm messaging
   * layer opens every interconnect library it knows (PSM2, libfabric); the byte transfer
   * layers other than self (shared memory, TCP) and the collectives for communicators of
   * several processes (tuned, sm, han, adapt, ...) are loaded and set up for peers that cannot
   * exist (a communicator of one process uses self, basic and libnbc's nonblocking
   * collectives); hwloc reads the PCI configuration space of every device to place network
   * cards, and loads its plugins for PCI, OpenCL, OpenGL and libxml2 (with the X11 and ICU
   * libraries they pull in); docs/performance.md, "start, sink and close" and "the libraries
   * a rank maps". These apply where no launcher's variables are set (the variables every Open
   * MPI, PMIx or PMI launch gives its processes), and what the user set wins. */
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK") &&
      !getenv("PMI_FD") && !getenv("PMI_SIZE")) {
    setenv("OMPI_MCA_pml", "ob1", 0);
    setenv("OMPI_MCA_btl", "self", 0);
    setenv("OMPI_MCA_coll", "self,basic,libnbc", 0);
    setenv("HWLOC_COMPONENTS", "-pci,-linuxio", 0);
    setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml", 0);
  }
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "attnsweep: MPI_Init failed\n");
    return 3;
  }
  int rc = c->fn(argc - 1, argv + 1);
  MPI_Finalize();
  return rc;
}
