/* cli.h: the subcommands of the attnsweep executable (private to src/cli).
 * Each returns a process exit code (0, 2 bad input, 3 I/O failure, 70 internal error,
 * 99 resumable). */
#ifndef AS_CLI_H
#define AS_CLI_H

#include "attnsweep/status.h"

typedef int (*as_cmd_fn)(int argc, char **argv);

typedef struct as_command {
  const char *name;     /* subcommand */
  as_cmd_fn fn;         /* entry point; argv[0] is the subcommand name */
  int needs_mpi;        /* 1: MPI_Init around it */
  const char *synopsis; /* one line for --help */
  const char *help;     /* full text for `attnsweep help CMD` */
} as_command;

int as_cmd_validate(int argc, char **argv);
int as_cmd_plan(int argc, char **argv);
int as_cmd_run(int argc, char **argv);
int as_cmd_status(int argc, char **argv);
int as_cmd_summarize(int argc, char **argv);
int as_cmd_reproduce(int argc, char **argv);
int as_cmd_repair(int argc, char **argv);
int as_cmd_merge(int argc, char **argv);
int as_cmd_bench(int argc, char **argv);
int as_cmd_import_weights(int argc, char **argv);
int as_cmd_census(int argc, char **argv);

/* Replaces the process with `python SCRIPT argv[1..]` (execv): SCRIPT is `name` in the
 * analysis directory (search order in cmd_summarize.c), python $ATTNSWEEP_PYTHON or
 * /usr/bin/python3. Returns 3 (after a message prefixed with cmd) only when that fails. */
int as_cli_exec_script(const char *cmd, const char *name, int argc, char **argv);

/* `attnsweep help keys|fields`: prints the table of sweep keys or of /trials fields as
 * markdown; returns 0, or -1 for another topic. */
int as_cli_help_table(const char *topic);

/* Prints "attnsweep CMD: message" and returns 2 (bad usage). */
int as_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints the recorded error (as_error_format_user: no source location unless a bug or
 * ATTNSWEEP_DEBUG=1) prefixed with the command, returns its exit code. */
int as_cli_report(const char *cmd, as_status st);
/* Says plainly that a command is not available in this build; returns 2. */
int as_cli_not_implemented(const char *cmd);

#endif
