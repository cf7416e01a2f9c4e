/* attnsweep/override.h: `--set KEY=VALUE` overrides of a spec (override.c; docs/spec.md,
 * "Overrides").
 *
 * An override is applied to the spec's YAML text before it is parsed, so the spec stored in
 * the results file (/spec, OUT.h5.spec) is the one that ran: a resume or reproduce from the
 * file sees the override, and the spec's SHA-256 (of its parsed tree) includes it.
 *
 * KEY is a key where `attnsweep help keys` (params.h) or docs/spec.md "Top level" says it
 * lives, and the override goes exactly there:
 *   a top-level key (seed, replicates, name, output, common, ...): its value at the top level
 *       is replaced (added when the spec has none); `sweep` and `defaults` are the sweep's
 *       structure, not values: refused.
 *   a sweep key (vfamily, d, T, init, ...): its value in `defaults` and in every mapping of the
 *       sweep algebra (the `sweep` mapping and, recursively, the items of its product, zip and
 *       concat) that sets it; never inside the value of another key (`file` is the matrix
 *       file, not the `file` of an `init:` mapping). A list [a, b] is an axis: it replaces
 *       the key in the sweep's mappings (defaults take one value).
 *   a member of `init` by its dotted name (init.kind, init.scale, init.data, init.file,
 *       init.dataset; init_kind and init_scale are also sweep keys of their own): its value in
 *       every `init:` value that sets it (a mapping's member, or for init.kind the short form
 *       `init: gauss`), and for init_kind and init_scale also where they are written as keys.
 * Where some point of the sweep would still take the key from its default (or a list from
 * `defaults`), the value is added where those trials read it: a single value to `defaults`
 * (init.file and the like inside its `init:`), a list to the sweep mappings that lack it.
 *
 * VALUE is one YAML flow node on one line: 200, 1e-3, box, "a, b", [20, 40], {kind: box}. A
 * value that reads as more than one node in a flow context (`6, T: 7`) or spans lines is
 * refused; there is no limit on its length or on the number of places it goes.
 *
 * After the edited text is parsed, every point of the sweep (up to 2^16 per check, every case
 * sampled evenly beyond) whose trials read the key (params.h `applies`) must take it from the
 * override's value: a --set shadowed somewhere (a later --set of the same key, a key written
 * where it wins over the override) or read by no trial is refused as having no effect,
 * naming the case and the place in the spec that wins.
 *
 * A header comment "# attnsweep --set KEY=VALUE ..." records the overrides in the text (after
 * a UTF-8 byte order mark, which stays first). A UTF-16 spec is refused with overrides.
 */
#ifndef ATTNSWEEP_OVERRIDE_H
#define ATTNSWEEP_OVERRIDE_H

#include <stddef.h>

#include "attnsweep/spec.h"
#include "attnsweep/status.h"

/* Most --set options of one command. */
#define AS_OVERRIDE_MAX 64

/* Parse text (len bytes, the spec named name in messages) with the n overrides sets[0..n)
 * ("KEY=VALUE") applied in order. n = 0 is as_spec_parse. Returns
 *   AS_OK: *out the spec of the edited text (as_spec_text gives that text);
 *   AS_ERR_SPEC: the spec itself (*blame = -1) or the spec after override k (*blame = k) has
 *       the problems listed in diags (positions in that text);
 *   AS_ERR_ARG: a malformed override (no '=', an unknown key, a value that is not one YAML
 *       value on one line, a list where one value goes), one with no effect, or a UTF-16
 *       spec; the message names the option ("--set KEY=VALUE: ..."), *blame = its index;
 *   AS_ERR_NOMEM.
 * diags as for as_spec_parse (may be NULL); blame may be NULL. Not collective. */
as_status as_override_parse(const char *text, size_t len, const char *name, const char *const *sets,
                            int n, as_spec_diags *diags, int *blame, as_spec **out);

#endif /* ATTNSWEEP_OVERRIDE_H */
