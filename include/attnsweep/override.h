/* attnsweep/override.h: `--set KEY=VALUE` overrides of a spec (override.c; docs/spec.md).
 *
 * An override is applied to the spec's YAML text before it is parsed, so the spec stored in
 * the results file (/spec, OUT.h5.spec) is the one that ran: a resume or reproduce from the
 * file sees the override, and the spec's SHA-256 (of its parsed tree) includes it.
 *
 *   KEY a top-level key (seed, replicates, name, ...): its value is replaced (added when the
 *       spec has none).
 *   KEY a sweep key (the parameter table, params.h): a single value replaces it in `defaults`
 *       and in every mapping under `sweep` that has it (an axis becomes fixed); a list [a, b]
 *       replaces it in every mapping under `sweep` that has it (the axis takes the new values).
 *       A key found nowhere goes into `defaults` (a list: into the `sweep` mapping itself, an
 *       axis of every case, which overrides the default).
 *   VALUE one YAML flow node on one line: 200, 1e-3, box, [20, 40], {kind: box, scale: 5}.
 *
 * A header comment "# attnsweep --set KEY=VALUE ..." records the overrides in the text.
 * Nothing here parses the spec itself: the caller parses the result (as_spec_parse) and, when
 * that fails, as_override_blame names the override that made it fail.
 */
#ifndef ATTNSWEEP_OVERRIDE_H
#define ATTNSWEEP_OVERRIDE_H

#include <stddef.h>

#include "attnsweep/status.h"

/* Most --set options of one command. */
#define AS_OVERRIDE_MAX 64

/* Apply the n overrides sets[0..n) ("KEY=VALUE") to text (len bytes) in order: *out allocated
 * (NUL terminated, caller frees), *out_len its length. AS_ERR_ARG with a message naming the
 * option ("--set KEY=VALUE: ...") for a malformed one, an unknown key, a value that is not one
 * YAML node on one line, or a spec whose YAML cannot be read (the parser reports it better:
 * callers parse the text unchanged then). AS_ERR_NOMEM. */
as_status as_override_apply(const char *text, size_t len, const char *const *sets, int n,
                            char **out, size_t *out_len);

#endif /* ATTNSWEEP_OVERRIDE_H */
