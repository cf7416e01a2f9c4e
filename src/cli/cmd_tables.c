/* cmd_tables.c: `attnsweep help keys`, `attnsweep help fields`, `attnsweep help theorems`,
 * `attnsweep help reasons` and `attnsweep help combinations`: the sweep keys (params.h), the
 * fields of /trials (record.h), the theorem table (theorem.h), the reasons of a verdict
 * (enums.h) and the pairs of model variants against the rules (rules.h) as markdown tables.
 * docs/spec.md, docs/results.md, docs/theory.md and docs/variants.md hold these tables verbatim
 * between markers; tests/cli/test_docs_tables.sh fails when they differ,
 * so the docs never drift from the one declaration. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnsweep/near.h"
#include "attnsweep/params.h"
#include "attnsweep/record.h"
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
