/* cmd_summarize.c: attnsweep summarize: hands over to the analysis script; and the hand-over
 * itself (as_cli_exec_script), shared with the other commands written in Python.
 *
 * The summary is written in Python (analysis/attnsweep_summarize.py, numpy + h5py) and reads
 * the results file through its documented schema only; this command finds the script and
 * the interpreter and replaces itself with them (execv), passing every argument through, so
 * exit codes and output are the script's: 0 done, 2 bad arguments or not a results file,
 * 3 unreadable file or missing Python modules.
 *
 * Where a script is looked for, first hit wins (as_cli_locate, main.c; `attnsweep --version`
 * prints which): $ATTNSWEEP_ANALYSIS_DIR; installed beside the executable
 *   (EXE_DIR/../share/attnsweep/analysis); the source tree's analysis/ and
 *   PREFIX/share/attnsweep/analysis (compiled in); EXE_DIR/../analysis, EXE_DIR/../../analysis.
 * The interpreter is $ATTNSWEEP_PYTHON, else /usr/bin/python3 (Debian's python3-h5py,
 * python3-numpy and python3-matplotlib belong to it, not to a pyenv python3 on PATH).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnsweep/outset.h"
#include "attnsweep/results.h"
#include "cli.h"

#ifndef AS_ANALYSIS_DIR
#define AS_ANALYSIS_DIR ""
#endif
#ifndef AS_INSTALL_ANALYSIS_DIR
#define AS_INSTALL_ANALYSIS_DIR ""
#endif

#define PATH_CAP 4096

/* Finds the script (as_cli_locate, main.c); returns 1 and its path in out, else 0. */
static int find_script(const char *name, char *out, size_t cap) {
  const char *how = NULL;
  return as_cli_locate(AS_CLI_DIR_ANALYSIS, name, out, cap, &how);
}

/* The file an output option at argv[i] names (-o FILE, -oFILE, --output[=]FILE or a unique
 * prefix such as --out, --png[=]FILE), or NULL; *next = 1 when it is argv[i + 1]. */
static const char *output_value(int argc, char **argv, int i, int *next) {
  const char *a = argv[i];
  *next = 0;
  if (a[0] == '-' && a[1] == 'o') {
    if (a[2]) return a + 2;
    *next = i + 1 < argc;
    return *next ? argv[i + 1] : NULL;
  }
  if (a[0] != '-' || a[1] != '-' || !a[2]) return NULL;
  const char *eq = strchr(a, '=');
  size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
  if (!((len >= 1 && len <= 6 && strncmp(a + 2, "output", len) == 0) ||
        (len >= 2 && len <= 3 && strncmp(a + 2, "png", len) == 0)))
    return NULL;
  if (eq) return eq + 1;
  *next = i + 1 < argc;
  return *next ? argv[i + 1] : NULL;
}

/* No script writes over one of its inputs (issue 36): every output named on the command line
 * is compared (device and inode) with every other argument that names a file. 0, or the exit
 * code of the refusal (2). */
static int refuse_output_over_input(const char *cmd, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    int next = 0;
    const char *out = output_value(argc, argv, i, &next);
    if (!out) continue;
    for (int j = 1; j < argc; j++) {
      int jn = 0;
      if (j == i || (next && j == i + 1) || output_value(argc, argv, j, &jn)) continue;
      if (j > 1 && output_value(argc, argv, j - 1, &jn) && jn) continue; /* another output */
      const char *in = argv[j], *eq = strncmp(in, "--", 2) == 0 ? strchr(in, '=') : NULL;
      as_status st = as_outset_guard_output(out, eq ? eq + 1 : in, "the input");
      if (st != AS_OK) return as_cli_report(cmd, st);
    }
  }
  return 0;
}

int as_cli_exec_script(const char *cmd, const char *name, int argc, char **argv) {
  char script[PATH_CAP];
  int refused = refuse_output_over_input(cmd, argc, argv);
  if (refused) return refused;
  if (!find_script(name, script, sizeof script)) {
    fprintf(stderr,
            "attnsweep %s: the analysis script %s was not found (looked in "
            "$ATTNSWEEP_ANALYSIS_DIR, beside the executable, %s and %s); set "
            "ATTNSWEEP_ANALYSIS_DIR to the directory that holds it\n",
            cmd, name, AS_ANALYSIS_DIR[0] ? AS_ANALYSIS_DIR : "(no source tree)",
            AS_INSTALL_ANALYSIS_DIR[0] ? AS_INSTALL_ANALYSIS_DIR : "(no install prefix)");
    return 3;
  }
  const char *python = getenv("ATTNSWEEP_PYTHON");
  if (!python || !python[0]) python = "/usr/bin/python3";
  if (access(python, X_OK) != 0) {
    fprintf(stderr,
            "attnsweep %s: the Python interpreter %s is not available (%s); install "
            "python3 python3-numpy python3-h5py python3-matplotlib (Debian) or set "
            "ATTNSWEEP_PYTHON\n",
            cmd, python, strerror(errno));
    return 3;
  }
  /* python SCRIPT ARGS... NULL; argv[0] (the command) is replaced by the script. */
  char **args = calloc((size_t)argc + 2, sizeof *args);
  if (!args) {
    fprintf(stderr, "attnsweep %s: out of memory\n", cmd);
    return 3;
  }
  char pybuf[PATH_CAP];
  snprintf(pybuf, sizeof pybuf, "%s", python);
  args[0] = pybuf;
  args[1] = script;
  for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
  args[argc + 1] = NULL;
  fflush(stdout);
  fflush(stderr);
  execv(pybuf, args);
  int err = errno;
  free(args);
  fprintf(stderr, "attnsweep %s: cannot run %s %s: %s\n", cmd, python, script, strerror(err));
  return 3;
}

/* The option of opts that argument a ("--name", "--name=v", a unique prefix "--na", "-x",
 * "-xVALUE") names, or NULL (an unknown or ambiguous option: argparse refuses it). *attached:
 * the value is part of a. */
static const as_script_opt *script_option(const as_script_opt *opts, size_t n, const char *a,
                                          int *attached) {
  const as_script_opt *hit = NULL;
  *attached = 0;
  if (a[1] != '-') { /* -x, -xVALUE */
    for (size_t k = 0; k < n; k++)
      if (opts[k].shortname && opts[k].shortname == a[1]) hit = &opts[k];
    *attached = hit && a[2] != '\0';
    return hit;
  }
  const char *eq = strchr(a, '=');
  const size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
  int matches = 0;
  for (size_t k = 0; k < n; k++) {
    if (strncmp(opts[k].name, a + 2, len) != 0) continue;
    if (strlen(opts[k].name) == len) { /* an exact name wins over prefixes */
      matches = 1;
      hit = &opts[k];
      break;
    }
    matches++;
    hit = &opts[k];
  }
  *attached = eq != NULL;
  return matches == 1 ? hit : NULL;
}

int as_cli_gate_files(const char *cmd, const as_script_opt *opts, size_t n, int argc, char **argv) {
  /* First pass: a script asked for its help reads no file. */
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    int att = 0;
    const as_script_opt *o =
        argv[i][0] == '-' && argv[i][1] ? script_option(opts, n, argv[i], &att) : NULL;
    if (o && o->nargs == 'h') return 0;
  }
  int only_files = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!only_files && strcmp(a, "--") == 0) {
      only_files = 1;
      continue;
    }
    if (!only_files && a[0] == '-' && a[1]) {
      int att = 0;
      const as_script_opt *o = script_option(opts, n, a, &att);
      if (!o || att || o->nargs == 0) continue;
      if (o->nargs == 1) {
        i++;
      } else if (o->nargs == '?') {
        if (i + 1 < argc && argv[i + 1][0] != '-') i++;
      } else if (o->nargs == '+') {
        while (i + 1 < argc && argv[i + 1][0] != '-') i++;
      }
      continue;
    }
    as_status st = as_outset_gate(a);
    if (st != AS_OK) return as_cli_report(cmd, st);
  }
  return 0;
}

/* The options of analysis/attnsweep_summarize.py (its argparse declarations, in order). */
static const as_script_opt summarize_opts[] = {
    {"help", 'h', 'h'}, {"stat", 0, '+'},     {"pair", 0, '?'},   {"by", 0, 1},
    {"where", 0, 1},    {"format", 0, 1},     {"width", 0, 1},    {"drop-empty", 0, 0},
    {"table1", 0, 0},   {"phase", 0, 1},      {"bins", 0, 1},     {"png", 0, 1},
    {"verdict", 0, 1},  {"robustness", 0, 0}, {"columns", 0, 1},  {"measure", 0, 0},
    {"plot", 0, 1},     {"series", 0, 1},     {"output", 'o', 1},
};

int as_cmd_summarize(int argc, char **argv) {
  /* Damaged rows are never summarized (issue 36): the checksums of every row and bulk slab of
   * every file are verified here, before the script reads any; a file the gate cannot open or
   * verify is refused, never passed on (issue 49). */
  const int gated = as_cli_gate_files("summarize", summarize_opts,
                                      sizeof summarize_opts / sizeof summarize_opts[0], argc, argv);
  if (gated) return gated;
  as_error_clear();
  return as_cli_exec_script("summarize", "attnsweep_summarize.py", argc, argv);
}
