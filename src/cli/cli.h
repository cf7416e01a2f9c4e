/* cli.h: the subcommands of the attnsweep executable (private to src/cli).
 * Each returns a process exit code (0, 2 bad input, 3 I/O failure, 70 internal error,
 * 99 resumable). */
#ifndef AS_CLI_H
#define AS_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "attnsweep/spec.h"
#include "attnsweep/status.h"

/* ---------------------------------------------------------------- options (opts.c)
 *
 * Every option of a command is ONE entry of that command's table: long name, short letter,
 * argument, help line, and where its value goes (a byte offset into the command's own
 * arguments struct, or a handler). From the table come the getopt_long array, the option
 * list of `attnsweep help CMD` and the error messages (unknown option, missing argument,
 * bad number with its bounds: exit 2). Adding an option is adding one line to a table:
 *
 *   AS_OPT_STR("output", 'o', "FILE", run_args, out, "the results file (required)"),
 */
typedef enum as_opt_kind {
  AS_OPT_SET,  /* no argument: the int at `at` gets `set` */
  AS_OPT_STR,  /* const char * at `at`: the argument */
  AS_OPT_REAL, /* double at `at`: a finite number between lo and hi (see open) */
  AS_OPT_INT,  /* long at `at`: a whole number with lo <= x <= hi */
  AS_OPT_CALL  /* fn(opt, argument or NULL, the arguments struct, msg): the handler stores */
} as_opt_kind;

/* Whether an option takes an argument (getopt_long's has_arg). AS_ARG_OPTIONAL takes an
 * attached one (--calibrate=5) or a following word that is a number (--calibrate 5). */
typedef enum as_opt_arg { AS_ARG_NONE = 0, AS_ARG_REQUIRED = 1, AS_ARG_OPTIONAL = 2 } as_opt_arg;

typedef struct as_opt as_opt;

/* A handler: stores the value of arg (NULL: an optional argument not given) into the struct
 * dst; returns 0, or -1 with what the option needs in msg ("needs a value without blanks"),
 * which the parser prints after the option's name (exit 2). */
typedef int (*as_opt_fn)(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap);

struct as_opt {
  const char *name;    /* long name without "--" */
  char letter;         /* short option letter, 0: none */
  as_opt_kind kind;    /* what the value is */
  as_opt_arg arg;      /* argument: none, required or optional */
  const char *argname; /* the argument in help and messages ("FILE"); NULL without one */
  size_t at;           /* offsetof the value in the command's arguments struct */
  int set;             /* AS_OPT_SET: the value stored */
  double lo, hi;       /* AS_OPT_REAL, AS_OPT_INT: bounds, inclusive unless open */
  int open;            /* AS_OPT_REAL: AS_OPEN_LO (x > lo) | AS_OPEN_HI (x < hi) */
  as_opt_fn fn;        /* AS_OPT_CALL */
  const char *help;    /* one line for `attnsweep help CMD` */
};

enum { AS_OPEN_LO = 1, AS_OPEN_HI = 2 };

/* One-line table entries. T is the command's arguments struct, F a member (designator). */
#define AS_OPT_FLAG(name, letter, T, F, help) \
  { name, letter, AS_OPT_SET, AS_ARG_NONE, NULL, offsetof(T, F), 1, 0, 0, 0, NULL, help }
#define AS_OPT_VALUE(name, letter, T, F, value, help) \
  { name, letter, AS_OPT_SET, AS_ARG_NONE, NULL, offsetof(T, F), value, 0, 0, 0, NULL, help }
#define AS_OPT_TEXT(name, letter, argname, T, F, help) \
  { name, letter, AS_OPT_STR, AS_ARG_REQUIRED, argname, offsetof(T, F), 0, 0, 0, 0, NULL, help }
#define AS_OPT_NUM(name, letter, argname, T, F, lo, hi, help) \
  { name, letter, AS_OPT_REAL, AS_ARG_REQUIRED, argname, offsetof(T, F), 0, lo, hi, 0, NULL, help }
#define AS_OPT_RANGE(name, letter, argname, T, F, lo, hi, open, help)                           \
  {                                                                                             \
    name, letter, AS_OPT_REAL, AS_ARG_REQUIRED, argname, offsetof(T, F), 0, lo, hi, open, NULL, \
        help                                                                                    \
  }
#define AS_OPT_WHOLE(name, letter, argname, T, F, lo, hi, help) \
  { name, letter, AS_OPT_INT, AS_ARG_REQUIRED, argname, offsetof(T, F), 0, lo, hi, 0, NULL, help }
#define AS_OPT_FN(name, letter, arg, argname, T, F, fn, help) \
  { name, letter, AS_OPT_CALL, arg, argname, offsetof(T, F), 0, 0, 0, 0, fn, help }

/* A command's options and its positional arguments (for help). */
typedef struct as_optset {
  const as_opt *opts;   /* the table */
  int count;            /* its entries */
  const char *operands; /* the positional arguments in the usage line, e.g. "[SPEC]" */
} as_optset;

#define AS_OPTSET(table, operands) \
  { table, (int)(sizeof table / sizeof table[0]), operands }

/* Parses argv[1..argc-1] (argv[0] is the command name) against set, storing values into dst
 * (the command's arguments struct, zeroed or defaulted by the caller). -h/--help of every
 * command prints `attnsweep help CMD`. The positional arguments, in order, are moved to
 * argv[1..*npos] (options and their arguments taken out; "--" ends the options). Messages
 * are printed only when report is nonzero (rank 0). Returns 0 to go on, else 1 with the
 * exit code in *code: 0 after --help, 2 for a usage error (the option named). */
int as_opts_parse(const char *cmd, const as_optset *set, int argc, char **argv, void *dst,
                  int report, int *npos, int *code);

/* Prints the option list of set (one line per option: letters, argument, help). */
void as_opts_print_help(FILE *f, const as_optset *set);

/* ---------------------------------------------------------------- commands */

typedef int (*as_cmd_fn)(int argc, char **argv);

typedef struct as_command {
  const char *name;      /* subcommand */
  as_cmd_fn fn;          /* entry point; argv[0] is the subcommand name */
  int needs_mpi;         /* 1: MPI_Init around it */
  const char *synopsis;  /* one line for --help */
  const char *help;      /* `attnsweep help CMD`: a usage line, then what the command does */
  const as_optset *opts; /* its options (listed after help), NULL: none of its own */
  const char *script;    /* a Python script that parses its own arguments (summarize,
                            import-weights): `help CMD` ends with the script's --help */
  void (*more)(FILE *f); /* more help after the options (the benchmarks), NULL: none */
} as_command;

/* The option tables of the commands (each in its cmd_*.c). */
extern const as_optset as_opts_validate, as_opts_plan, as_opts_run, as_opts_status,
    as_opts_reproduce, as_opts_repair, as_opts_merge, as_opts_census, as_opts_bench;

/* `attnsweep help bench`: the benchmark names with what each measures (cmd_bench.c). */
void as_cli_bench_topics(FILE *f);

/* Prints `attnsweep help CMD` on stdout for the command named cmd (main.c): its text, its
 * options, and for a Python command the script's own --help (execv: does not return when
 * that runs). Returns 0, or 2 for an unknown command. */
int as_cli_print_command_help(const char *cmd);

int as_cmd_validate(int argc, char **argv);
int as_cmd_plan(int argc, char **argv);
int as_cmd_run(int argc, char **argv);
int as_cmd_status(int argc, char **argv);
int as_cmd_summarize(int argc, char **argv);
int as_cmd_report(int argc, char **argv);
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

/* One option of an analysis script (its argparse declaration), for telling its input files
 * from the values of its options: nargs 0 a flag, 1 one value, '?' an optional value, '+' one
 * or more values, 'h' help (the script reads no file). tests/cli/test_gate.sh compares each
 * table with the script's own parser. */
typedef struct as_script_opt {
  const char *name; /* long name without "--" */
  char shortname;   /* its one-letter form, 0 none */
  char nargs;       /* 0, 1, '?', '+' or 'h' */
} as_script_opt;

/* The checksum gate of a command that hands results files to a script (summarize, report):
 * every operand of argv (what argparse would take as a positional argument, given the script's
 * options opts[0..n)) is verified by as_outset_gate before the script starts, and the first
 * it refuses ends the command: returns its exit code after the message (2 a missing file, a
 * FIFO, device or directory, not a results file; 3 damage, an unreadable file). 0 when every
 * operand passes, or when the script is asked for its help. */
int as_cli_gate_files(const char *cmd, const as_script_opt *opts, size_t n, int argc, char **argv);

/* `attnsweep help keys|fields`: prints the table of sweep keys or of /trials fields as
 * markdown; returns 0, or -1 for another topic. */
int as_cli_help_table(const char *topic);
/* `attnsweep help fields --json`: the layout of a /trials row as JSON (cmd_tables.c); returns
 * 0, or -1 for a topic without a JSON form. */
int as_cli_help_json(const char *topic);

/* What as_cli_locate looks for: the analysis (Python) or the Slurm job template. */
typedef enum as_cli_dir { AS_CLI_DIR_ANALYSIS, AS_CLI_DIR_JOBS } as_cli_dir;
/* Finds `file` in the analysis directory or the job template's (main.c), first hit wins:
 * $ATTNSWEEP_ANALYSIS_DIR or $ATTNSWEEP_JOBS_DIR; installed beside the executable
 * (EXE_DIR/../share/attnsweep/analysis or jobs: the `cmake --install` layout, wherever the
 * prefix was moved); the source tree it was built from and the install prefix it was
 * configured with (both compiled in); a tree beside the executable (EXE_DIR/../analysis,
 * EXE_DIR/../../analysis). Returns 1 with the file's path in out (cap bytes) and the place in
 * *how (static text, also printed by --version), else 0 (*how "not found"). */
int as_cli_locate(as_cli_dir kind, const char *file, char *out, size_t cap, const char **how);

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

/* --set KEY=VALUE of run, validate and plan (override.h; spec_set.c): the options given. */
typedef struct as_cli_sets {
  const char *v[64];
  int n;
} as_cli_sets;
/* The option handler (as_opt_fn; the member at o->at is an as_cli_sets). */
int as_cli_opt_set(const as_opt *o, const char *arg, void *dst, char *msg, size_t cap);
/* Parse text (len bytes, named name) with the overrides applied (none: as_spec_parse). When
 * the spec parses without them but not with them, the problems are printed on stderr naming
 * the first --set that brought them (when loud) and AS_ERR_ARG is returned (exit 2, *printed =
 * 1); diags then stays empty. Other failures as as_spec_parse (diags filled) or AS_ERR_ARG
 * recorded (a malformed or unknown --set). */
as_status as_cli_spec_parse(const char *cmd, const char *text, size_t len, const char *name,
                            const as_cli_sets *sets, int loud, as_spec_diags *diags, as_spec **out,
                            int *printed);

#endif
