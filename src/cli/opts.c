/* opts.c: the one option parser of the attnsweep commands, on getopt_long (cli.h).
 *
 * A command declares each option once, as an entry of its as_opt table; this file derives
 * from the table the getopt_long array and short-option string, the help list, and every
 * usage error (unknown option, missing or unexpected argument, a number outside its
 * bounds), all exit 2 with the option named. Arguments are processed in order (optstring
 * "-:"): an operand comes back as code 1 and is moved to the front of argv, so operands are
 * counted after the options and their arguments are taken out, whatever POSIXLY_CORRECT
 * says. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* getopt_long's code of entry i: its letter, or 256 + i for a long-only option. */
#define LONG_ONLY_BASE 256
#define HELP_CODE 'h'
#define OPTS_MAX 64

static int code_of(const as_opt *o, int i) {
  return o->letter ? (unsigned char)o->letter : LONG_ONLY_BASE + i;
}

/* The entry a getopt code stands for; -1 for none (-h/--help, or not in the table). */
static int entry_of(const as_optset *set, int c) {
  if (c >= LONG_ONLY_BASE) return c - LONG_ONLY_BASE < set->count ? c - LONG_ONLY_BASE : -1;
  for (int i = 0; i < set->count; i++)
    if (set->opts[i].letter && (unsigned char)set->opts[i].letter == c) return i;
  return -1;
}

/* A usage error: printed when report (with the command's usage line), exit code 2; returns 1. */
static int usage(const char *cmd, int report, int *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int usage(const char *cmd, int report, int *code, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (report) as_cli_usage_error(cmd, "%s", buf);
  *code = 2;
  return 1;
}

/* The option as the user wrote it: "--name" (long) or "-x" (short). */
static void written(const as_opt *o, int as_long, char *buf, size_t cap) {
  if (as_long || !o->letter)
    snprintf(buf, cap, "--%s", o->name);
  else
    snprintf(buf, cap, "-%c", o->letter);
}

/* The bounds of a number as words: "from 0 to 1e+09", "> 0 and < 1", ">= 1". */
static void bounds_text(const as_opt *o, char *buf, size_t cap) {
  const char *lo_op = o->open & AS_OPEN_LO ? ">" : ">=", *hi_op = o->open & AS_OPEN_HI ? "<" : "<=";
  if (isinf(o->hi))
    snprintf(buf, cap, "%s %g", lo_op, o->lo);
  else if (o->open)
    snprintf(buf, cap, "%s %g and %s %g", lo_op, o->lo, hi_op, o->hi);
  else
    snprintf(buf, cap, "from %g to %g", o->lo, o->hi);
}

/* A whole decimal word that strtod reads entirely: what a detached optional argument must
 * be, so that an operand is never taken for one. */
static int is_number(const char *s) {
  if (!s || !s[0] || s[0] == '-') return 0;
  char *end = NULL;
  errno = 0;
  (void)strtod(s, &end);
  return errno == 0 && end != s && *end == '\0';
}

/* Stores the value of entry o from arg (NULL: no argument). Returns 0, or 1 after a usage
 * error. */
static int store(const char *cmd, const as_opt *o, const char *name, const char *arg, void *dst,
                 int report, int *code) {
  char *at = (char *)dst + o->at;
  char want[160], msg[256];
  if (o->arg != AS_ARG_NONE && !arg && o->kind != AS_OPT_CALL)
    return usage(cmd, report, code, "%s needs an argument (%s)", name, o->argname);
  switch (o->kind) {
  case AS_OPT_SET:
    *(int *)(void *)at = o->set;
    return 0;
  case AS_OPT_STR:
    *(const char **)(void *)at = arg;
    return 0;
  case AS_OPT_REAL: {
    char *end = NULL;
    errno = 0;
    double x = strtod(arg, &end);
    int ok = errno == 0 && end != arg && *end == '\0' && isfinite(x) &&
             (o->open & AS_OPEN_LO ? x > o->lo : x >= o->lo) &&
             (o->open & AS_OPEN_HI ? x < o->hi : x <= o->hi);
    if (ok) {
      *(double *)(void *)at = x;
      return 0;
    }
    bounds_text(o, want, sizeof want);
    return usage(cmd, report, code, "%s needs %s, a number %s (got '%s')", name, o->argname, want,
                 arg);
  }
  case AS_OPT_INT: {
    char *end = NULL;
    errno = 0;
    long x = strtol(arg, &end, 10);
    int ok = errno == 0 && end != arg && *end == '\0' && (double)x >= o->lo && (double)x <= o->hi;
    if (ok) {
      *(long *)(void *)at = x;
      return 0;
    }
    bounds_text(o, want, sizeof want);
    return usage(cmd, report, code, "%s needs %s, a whole number %s (got '%s')", name, o->argname,
                 want, arg);
  }
  case AS_OPT_CALL:
    msg[0] = '\0';
    if (o->fn(o, arg, dst, msg, sizeof msg) == 0) return 0;
    if (arg) return usage(cmd, report, code, "%s %s (got '%s')", name, msg, arg);
    return usage(cmd, report, code, "%s %s", name, msg);
  }
  return usage(cmd, report, code, "%s: unknown kind of option", name);
}

int as_opts_parse(const char *cmd, const as_optset *set, int argc, char **argv, void *dst,
                  int report, int *npos, int *code) {
  struct option lo[OPTS_MAX + 2];
  char shorts[3 * OPTS_MAX + 8];
  size_t ns = 0;
  *npos = 0;
  *code = 0;
  if (set->count > OPTS_MAX) return usage(cmd, report, code, "more than %d options", OPTS_MAX);
  /* "-": operands come back in order as code 1; ":": a missing argument is ':' (no
   * messages from getopt itself). */
  shorts[ns++] = '-';
  shorts[ns++] = ':';
  shorts[ns++] = HELP_CODE;
  for (int i = 0; i < set->count; i++) {
    const as_opt *o = &set->opts[i];
    lo[i].name = o->name;
    lo[i].has_arg = o->arg == AS_ARG_NONE       ? no_argument
                    : o->arg == AS_ARG_REQUIRED ? required_argument
                                                : optional_argument;
    lo[i].flag = NULL;
    lo[i].val = code_of(o, i);
    if (o->letter) {
      shorts[ns++] = o->letter;
      if (o->arg != AS_ARG_NONE) shorts[ns++] = ':';
      if (o->arg == AS_ARG_OPTIONAL) shorts[ns++] = ':';
    }
  }
  shorts[ns] = '\0';
  lo[set->count] = (struct option){"help", no_argument, NULL, HELP_CODE};
  lo[set->count + 1] = (struct option){NULL, 0, NULL, 0};

  opterr = 0;
  optind = 0; /* glibc: a full reset of getopt's state */
  for (;;) {
    int li = -1;
    int c = getopt_long(argc, argv, shorts, lo, &li);
    if (c == -1) break;
    if (c == 1) { /* an operand, in order; argv slots before optind are free */
      argv[++*npos] = optarg;
      continue;
    }
    const char *text = optind - 1 < argc ? argv[optind - 1] : "";
    if (c == HELP_CODE) {
      if (report) as_cli_print_command_help(cmd);
      *code = 0;
      return 1;
    }
    if (c == '?' || c == ':') {
      int e = entry_of(set, optopt);
      char name[128];
      if (e >= 0 || optopt == HELP_CODE) {
        int as_long = strncmp(text, "--", 2) == 0;
        if (e >= 0)
          written(&set->opts[e], as_long, name, sizeof name);
        else
          snprintf(name, sizeof name, "--help");
        if (c == ':')
          return usage(cmd, report, code, "%s needs an argument (%s)", name,
                       e >= 0 && set->opts[e].argname ? set->opts[e].argname : "a value");
        return usage(cmd, report, code, "%s takes no argument ('%s')", name, text);
      }
      if (optopt) {
        snprintf(name, sizeof name, "-%c", optopt);
        return usage(cmd, report, code, "unknown option '%s'", name);
      }
      /* A long option: unknown, or an ambiguous abbreviation. */
      size_t len = strcspn(text + 2, "="), used = 0;
      int matches = 0;
      char which[256] = "";
      for (int i = 0; i < set->count; i++) {
        if (strncmp(set->opts[i].name, text + 2, len) != 0) continue;
        matches++;
        int w = snprintf(which + used, sizeof which - used, "%s--%s", used ? ", " : "",
                         set->opts[i].name);
        if (w > 0 && (size_t)w < sizeof which - used) used += (size_t)w;
      }
      snprintf(name, sizeof name, "%.*s", (int)(len + 2), text);
      if (matches > 1) return usage(cmd, report, code, "ambiguous option '%s' (%s)", name, which);
      return usage(cmd, report, code, "unknown option '%s'", name);
    }
    int e = entry_of(set, c);
    if (e < 0) return usage(cmd, report, code, "unknown option '%s'", text);
    const as_opt *o = &set->opts[e];
    char name[128];
    written(o, li >= 0, name, sizeof name);
    const char *arg = optarg;
    if (o->arg == AS_ARG_OPTIONAL && !arg && optind < argc && is_number(argv[optind]))
      arg = argv[optind++]; /* --calibrate 5: a number after it is its argument */
    if (o->arg == AS_ARG_NONE) arg = NULL;
    if (store(cmd, o, name, arg, dst, report, code)) return 1;
  }
  for (int i = optind; i < argc; i++) argv[++*npos] = argv[i]; /* after "--" */
  return 0;
}

void as_opts_print_help(FILE *f, const as_optset *set) {
  char left[OPTS_MAX + 1][96];
  int width = 0;
  const int n = set->count;
  for (int i = 0; i <= n; i++) {
    const as_opt *o = i < n ? &set->opts[i] : NULL;
    char letter = o ? o->letter : HELP_CODE;
    const char *name = o ? o->name : "help";
    const char *arg = o ? o->argname : NULL;
    as_opt_arg has = o ? o->arg : AS_ARG_NONE;
    int w = snprintf(left[i], sizeof left[i], "%c%c%c --%s%s%s%s", letter ? '-' : ' ',
                     letter ? letter : ' ', letter ? ',' : ' ', name,
                     has == AS_ARG_OPTIONAL   ? "[="
                     : has == AS_ARG_REQUIRED ? "="
                                              : "",
                     has != AS_ARG_NONE && arg ? arg : "", has == AS_ARG_OPTIONAL ? "]" : "");
    if (w > width) width = w;
  }
  if (width > 34) width = 34;
  fprintf(f, "options:\n");
  for (int i = 0; i <= n; i++) {
    const char *help = i < n ? set->opts[i].help : "this help";
    if ((int)strlen(left[i]) > width)
      fprintf(f, "  %s\n  %-*s  %s\n", left[i], width, "", help);
    else
      fprintf(f, "  %-*s  %s\n", width, left[i], help);
  }
}
