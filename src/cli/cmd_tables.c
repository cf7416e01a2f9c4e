/* cmd_tables.c: `attnsweep help keys`, `attnsweep help fields`, `attnsweep help theorems`,
 * `attnsweep help reasons` and `attnsweep help combinations`: the sweep keys (params.h), the
 * fields of /trials (record.h), the theorem table (theorem.h), the reasons of a verdict
 * (enums.h) and the pairs of model variants against the rules (rules.h) as markdown tables.
 * docs/spec.md, docs/results.md, docs/theory.md and docs/variants.md hold these tables verbatim
 * between markers; tests/cli/test_docs_tables.sh fails when they differ,
 * so the docs never drift from the one declaration.
 *
 * `attnsweep help fields --json` prints the same layout for programs: every field of /trials
 * with its record kind, numpy dtype and, for an enumeration, its labels and values; the flag
 * bits; the schema version. The analysis (analysis/attnsweep/layout.py) builds the row dtype of
 * synthetic results files from it instead of reading the C headers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/near.h"
#include "attnsweep/params.h"
#include "attnsweep/record.h"
#include "attnsweep/results.h"
#include "attnsweep/rules.h"
#include "attnsweep/theorem.h"
#include "cli.h"

/* Markdown cell text: '|' escaped. */
static void cell(const char *s) {
  for (; *s; s++) {
    if (*s == '|') putchar('\\');
    putchar(*s);
  }
}

static void print_keys(void) {
  printf("| key | type | default | record field | meaning |\n|---|---|---|---|---|\n");
  for (int i = 0; i < AS_PARAM_COUNT; i++) {
    const as_param *p = &as_params[i];
    char range[512], dflt[64];
    as_param_range_text(p, range, sizeof range);
    as_param_default_text(p, dflt, sizeof dflt);
    printf("| `%s%s` | ", p->flags & AS_PF_INIT_PART ? "init." : "",
           p->flags & AS_PF_INIT_PART ? p->key + 5 : p->key);
    cell(range);
    printf(" | %s | ", dflt[0] ? dflt : "-");
    if (strcmp(p->rkind, "NONE") == 0)
      printf("- | ");
    else
      printf("`%s` | ", p->rname);
    cell(p->doc);
    printf(" |\n");
  }
}

/* Type text of a record field kind. */
static const char *kind_text(const char *kind) {
  static const struct {
    const char *kind, *text;
  } tab[] = {{"U64", "uint64"},
             {"I64", "int64"},
             {"I32", "int32"},
             {"F64", "float64"},
             {"HASH", "uint64 (hash)"},
             {"LABEL", "enum (labels of the spec)"},
             {"MSG", "string[160]"},
             {"EXPM", "enum `expm`"},
             {"THEOREM", "enum `theorem`"},
             {"GEOM", "enum `geometry`"},
             {"VERDICT", "enum `verdict`"},
             {"REASON", "enum `reason`"},
             {"OUTCOME", "enum `outcome`"}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(tab[i].kind, kind) == 0) return tab[i].text;
  return kind;
}

/* Type text of a field: an ENUM field names the enumeration of its key. */
static void print_type(const char *kind, const char *name) {
  const as_enum_table *tab = strcmp(kind, "ENUM") == 0 ? as_record_enum_table(name) : NULL;
  if (tab)
    printf("enum `%s`", tab->type_name);
  else
    printf("%s", kind_text(kind));
}

static void print_fields(void) {
  printf("| field | type | meaning |\n|---|---|---|\n");
#define AS_X_ROW(kind, name, doc) \
  printf("| `%s` | ", #name);     \
  print_type(#kind, #name);       \
  printf(" | ");                  \
  cell(doc);                      \
  printf(" |\n");
  AS_RECORD_FIELDS(AS_X_ROW)
#undef AS_X_ROW
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* The enumeration table of a record kind (NULL: not an enumeration of enums.h). */
static const as_enum_table *kind_table(const char *kind, const char *name) {
  if (strcmp(kind, "ENUM") == 0) return as_record_enum_table(name);
  static const struct {
    const char *kind;
    const as_enum_table *tab;
  } tabs[] = {{"EXPM", &as_expm_table},     {"THEOREM", &as_theorem_table},
              {"GEOM", &as_geom_table},     {"VERDICT", &as_verdict_table},
              {"REASON", &as_reason_table}, {"OUTCOME", &as_outcome_table}};
  for (size_t i = 0; i < sizeof tabs / sizeof tabs[0]; i++)
    if (strcmp(tabs[i].kind, kind) == 0) return tabs[i].tab;
  return NULL;
}

/* numpy dtype text of a record kind (little-endian, as the file stores it). */
static const char *kind_dtype(const char *kind) {
  if (strcmp(kind, "U64") == 0 || strcmp(kind, "HASH") == 0) return "<u8";
  if (strcmp(kind, "I64") == 0) return "<i8";
  if (strcmp(kind, "F64") == 0) return "<f8";
  if (strcmp(kind, "MSG") == 0) {
    static char msg[16];
    snprintf(msg, sizeof msg, "S%d", AS_RECORD_MSG);
    return msg;
  }
  return "<i4"; /* I32 and every enumeration */
}

/* A flag's name as the analysis spells it: AS_FLAG_M_SPD -> "m_spd". */
static void json_flag_name(const char *name) {
  putchar('"');
  for (; *name; name++) putchar(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name);
  putchar('"');
}

/* The key-table kind of the sweep key recorded in field `name`, or NULL. */
static const char *key_kind(const char *name, const char **key) {
  static const char *const kinds[] = {"number", "integer", "integer", "bool",
                                      "enum",   "text",    "matrix",  "group"};
  for (int i = 0; i < AS_PARAM_COUNT; i++)
    if (strcmp(as_params[i].rkind, "NONE") != 0 && strcmp(as_params[i].rname, name) == 0) {
      *key = as_params[i].key;
      return kinds[as_params[i].kind];
    }
  return NULL;
}

/* One field of `help fields --json`. */
static void json_field(int *first, const char *kind, const char *name, const char *doc) {
  printf("%s\n    {\"name\": ", *first ? "" : ",");
  *first = 0;
  json_str(name);
  printf(", \"kind\": ");
  json_str(kind);
  printf(", \"dtype\": ");
  json_str(kind_dtype(kind));
  printf(", \"doc\": ");
  json_str(doc);
  const char *key = NULL, *kk = key_kind(name, &key);
  if (kk) {
    printf(", \"key\": ");
    json_str(key);
    printf(", \"key_kind\": \"%s\"", kk);
  }
  const as_enum_table *tab = kind_table(kind, name);
  if (tab || strcmp(kind, "LABEL") == 0) {
    /* An ENUM or LABEL field has "-" = -1 (not applicable); a LABEL field's other labels
     * are the spec's (null here). */
    const int na = strcmp(kind, "ENUM") == 0 || strcmp(kind, "LABEL") == 0;
    printf(", \"enum\": {\"type\": ");
    json_str(tab ? tab->type_name : "labels of the spec");
    printf(", \"labels\": ");
    if (!tab) {
      printf("null");
    } else {
      printf("[");
      if (na) printf("[\"-\", -1]%s", tab->count ? ", " : "");
      for (int v = 0; v < tab->count; v++) {
        printf("[");
        json_str(tab->labels[v]);
        printf(", %d]%s", v, v + 1 < tab->count ? ", " : "");
      }
      printf("]");
    }
    printf(", \"not_applicable\": %s}", na ? "-1" : "null");
  }
  printf("}");
}

/* `attnsweep help fields --json`: the layout of a /trials row (see the file comment). */
static void print_fields_json(void) {
  int first = 1;
  printf("{\n  \"schema_version\": %d,\n  \"record_msg\": %d,\n  \"fields\": [",
         AS_RESULTS_SCHEMA_VERSION, AS_RECORD_MSG);
#define AS_X_JSON(kind, name, doc) json_field(&first, #kind, #name, doc);
  AS_RECORD_FIELDS(AS_X_JSON)
#undef AS_X_JSON
  printf("\n  ],\n  \"flags\": {");
  first = 1;
#define AS_X_FLAG_JSON(name, bit, doc)  \
  printf("%s\n    ", first ? "" : ","); \
  first = 0;                            \
  json_flag_name(#name);                \
  printf(": %d", bit);
  AS_FLAG_LIST(AS_X_FLAG_JSON)
#undef AS_X_FLAG_JSON
  printf("\n  }\n}\n");
}

/* The AS_FLAG_* names of the bits in flags, or "-". */
static void print_flag_names(uint32_t flags) {
  int any = 0;
#define AS_X_FLAG_NAME(name, bit, doc)        \
  if (flags & (1u << (bit))) {                \
    printf("%s`%s`", any ? ", " : "", #name); \
    any = 1;                                  \
  }
  AS_FLAG_LIST(AS_X_FLAG_NAME)
#undef AS_X_FLAG_NAME
  if (!any) printf("-");
}

static void print_theorems(void) {
  printf("| theorem | model | hypotheses on V | on Q^T K | flags | near-miss distances | "
         "prediction | read on | rate | separation | decided by | source |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int n = 0;
  const as_theorem_row *rows = as_theorem_rows(&n);
  for (int i = 0; i < n; i++) {
    const as_theorem_row *r = &rows[i];
    printf("| `%s` | %s | ", as_enum_label(&as_theorem_table, (int)r->id),
           as_enum_label(&as_thm_model_table, (int)r->model));
    cell(r->hyp_v);
    printf(" | ");
    cell(r->hyp_m);
    printf(" | ");
    print_flag_names(r->flags);
    printf(" | ");
    int any = 0;
    for (int h = 0; h < AS_NEAR_NHYP; h++)
      if (r->near >> h & 1u) printf("%s`dist_%s`", any++ ? ", " : "", as_near_hypothesis_name(h));
    if (!any) printf("-");
    printf(" | ");
    cell(r->prediction);
    printf(" (`%s`) | ", as_enum_label(&as_geom_table, (int)r->predicted));
    cell(as_enum_label(&as_thm_reading_table, (int)r->reading));
    printf(" | ");
    cell(as_enum_label(&as_thm_rate_table, (int)r->rate));
    printf(" | ");
    cell(as_enum_label(&as_thm_sep_table, (int)r->sep));
    printf(" | ");
    cell(r->decided_by);
    printf(" | ");
    cell(r->reference);
    printf(" |\n");
  }
}

/* The reasons of the record (enums.h AS_REASON_LIST): label, the verdict it goes with and what
 * decides it (the doc string "VERDICT: rule" split at its first colon). */
static void print_reasons(void) {
  printf("| reason | verdict | what decides it; t_decide |\n|---|---|---|\n");
  for (int i = 0; i < as_reason_table.count; i++) {
    const char *doc = as_reason_table.docs[i], *colon = strchr(doc, ':');
    printf("| `%s` | ", as_reason_table.labels[i]);
    if (colon) {
      printf("%.*s | ", (int)(colon - doc), doc);
      cell(colon + 2);
    } else {
      printf("- | ");
      cell(doc);
    }
    printf(" |\n");
  }
}

/* Every pair of model variants against the rules (rules.h, as_variant_pair_broken): `yes`, `no`
 * with the first rule the pair breaks, or `-` for two values of one key. */
static void print_combinations(void) {
  printf("| variant | keys |\n|---|---|\n");
  for (int a = 0; a < AS_VARIANT_COUNT; a++)
    printf("| `%s` | `%s` |\n", as_variants[a].name, as_variants[a].keys);
  printf("\n| with |");
  for (int b = 0; b < AS_VARIANT_COUNT; b++) printf(" `%s` |", as_variants[b].name);
  printf("\n|---|");
  for (int b = 0; b < AS_VARIANT_COUNT; b++) printf("---|");
  printf("\n");
  for (int a = 0; a < AS_VARIANT_COUNT; a++) {
    printf("| `%s` |", as_variants[a].name);
    for (int b = 0; b < AS_VARIANT_COUNT; b++) {
      as_rule_hit h;
      const int r = as_variant_pair_broken((as_variant_id)a, (as_variant_id)b, &h);
      if (r > 0)
        printf(" no: `%s` |", as_rules[h.rule].name);
      else
        printf(" %s |", r < 0 ? "-" : "yes");
    }
    printf("\n");
  }
}

int as_cli_help_json(const char *topic) {
  if (strcmp(topic, "fields") == 0) {
    print_fields_json();
    return 0;
  }
  return -1;
}

int as_cli_help_table(const char *topic) {
  if (strcmp(topic, "combinations") == 0) {
    print_combinations();
    return 0;
  }
  if (strcmp(topic, "theorems") == 0) {
    print_theorems();
    return 0;
  }
  if (strcmp(topic, "reasons") == 0) {
    print_reasons();
    return 0;
  }
  if (strcmp(topic, "theorem_table") == 0) { /* the /trials attribute, for tests and scripts */
    char buf[4096];
    if (as_theorem_table_text(buf, sizeof buf) >= sizeof buf) return -1;
    printf("%s\n", buf);
    return 0;
  }
  if (strcmp(topic, "keys") == 0) {
    print_keys();
    return 0;
  }
  if (strcmp(topic, "fields") == 0) {
    print_fields();
    return 0;
  }
  return -1;
}
