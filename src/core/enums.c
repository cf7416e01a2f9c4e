/* enums.c: label tables generated from the lists in enums.h. */
#include "attnsweep/enums.h"

#include <string.h>

AS_ENUM_TABLE_DEFINE(as_vfamily_table, AS_VFAMILY_LIST, "vfamily", AS_V_COUNT)
AS_ENUM_TABLE_DEFINE(as_mfamily_table, AS_MFAMILY_LIST, "mfamily", AS_M_COUNT)
AS_ENUM_TABLE_DEFINE(as_perturb_table, AS_PERTURB_LIST, "perturb", AS_PERTURB_COUNT)
AS_ENUM_TABLE_DEFINE(as_tseed_table, AS_TSEED_LIST, "triple_seed", AS_TSEED_COUNT)
AS_ENUM_TABLE_DEFINE(as_init_table, AS_INIT_LIST, "init", AS_INIT_COUNT)
AS_ENUM_TABLE_DEFINE(as_method_table, AS_METHOD_LIST, "method", AS_METHOD_COUNT)
AS_ENUM_TABLE_DEFINE(as_vars_table, AS_VARS_LIST, "vars", AS_VARS_COUNT)
AS_ENUM_TABLE_DEFINE(as_expm_table, AS_EXPM_LIST, "expm", AS_EXPM_COUNT)
AS_ENUM_TABLE_DEFINE(as_theorem_table, AS_THEOREM_LIST, "theorem", AS_THM_COUNT)
AS_ENUM_TABLE_DEFINE(as_geom_table, AS_GEOM_LIST, "geometry", AS_GEOM_COUNT)
AS_ENUM_TABLE_DEFINE(as_verdict_table, AS_VERDICT_LIST, "verdict", AS_VERDICT_COUNT)
AS_ENUM_TABLE_DEFINE(as_reason_table, AS_REASON_LIST, "reason", AS_REASON_COUNT)
AS_ENUM_TABLE_DEFINE(as_outcome_table, AS_OUTCOME_LIST, "outcome", AS_OUT_COUNT)
AS_ENUM_TABLE_DEFINE(as_attn_table, AS_ATTN_LIST, "attention", AS_ATTN_COUNT)
AS_ENUM_TABLE_DEFINE(as_mask_table, AS_MASK_LIST, "mask", AS_MASK_COUNT)
AS_ENUM_TABLE_DEFINE(as_norm_table, AS_NORM_LIST, "norm", AS_NORM_COUNT)
AS_ENUM_TABLE_DEFINE(as_nform_table, AS_NFORM_LIST, "norm_form", AS_NFORM_COUNT)
AS_ENUM_TABLE_DEFINE(as_ffn_table, AS_FFN_LIST, "ffn", AS_FFN_COUNT)
AS_ENUM_TABLE_DEFINE(as_ffn_form_table, AS_FFN_FORM_LIST, "ffn_form", AS_FFN_FORM_COUNT)
AS_ENUM_TABLE_DEFINE(as_ffn_w_table, AS_FFN_W_LIST, "ffn_w", AS_FFN_W_COUNT)
AS_ENUM_TABLE_DEFINE(as_weights_table, AS_WEIGHTS_LIST, "weights", AS_WEIGHTS_COUNT)

const char *as_enum_label(const as_enum_table *t, int v) {
  return (v >= 0 && v < t->count) ? t->labels[v] : "?";
}

int as_enum_parse(const as_enum_table *t, const char *label) {
  for (int i = 0; i < t->count; i++)
    if (strcmp(t->labels[i], label) == 0) return i;
  return -1;
}
