/* spec_impl.h: private to the spec module (spec.c, spec_yaml.c): the YAML node tree with the
 * place of every node, the arena that owns a parsed spec, and the diagnostics collector. */
#ifndef AS_SPEC_IMPL_H
#define AS_SPEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "attnsweep/spec.h"

/* ---------------------------------------------------------------- arena
 * Everything a parsed spec owns lives in one arena (a chain of blocks), so sub-terms can be
 * shared between cases and the whole spec is freed in one pass. */
typedef struct as_arena_blk as_arena_blk;
typedef struct as_arena {
  as_arena_blk *head;
  int nomem; /* sticky: an allocation failed */
} as_arena;
/* Zeroed memory of n bytes, or NULL (and a->nomem set). */
void *as_arena_alloc(as_arena *a, size_t n);
/* Copy of s (len bytes, NUL added), or NULL. */
char *as_arena_strndup(as_arena *a, const char *s, size_t len);
void as_arena_free(as_arena *a);

/* ---------------------------------------------------------------- diagnostics */
#define AS_SPEC_MAX_DIAGS 200
typedef struct as_spec_cx {
  as_arena *arena;
  as_spec_diags diags; /* always collected; handed to the caller at the end */
  int full;            /* AS_SPEC_MAX_DIAGS reached: further ones dropped */
  int nomem;
} as_spec_cx;
/* Record a problem at (line, col) unless the same one is already recorded. */
void as_spec_note(as_spec_cx *cx, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---------------------------------------------------------------- YAML tree */
typedef enum as_sn_kind { AS_SN_SCALAR, AS_SN_SEQ, AS_SN_MAP } as_sn_kind;
typedef struct as_sn {
  as_sn_kind kind;
  int line, col;        /* 1-based place of the node's start */
  int quoted;           /* scalar written quoted, as a block, or tagged !!str: a string */
  char *text;           /* scalar: its text (NUL terminated) */
  size_t len;           /* scalar: its length in bytes */
  int n;                /* seq: items; map: pairs */
  struct as_sn **items; /* seq: n items; map: 2n nodes, key then value */
  /* Validation (spec.c) of the keys that do not apply: key_id + 1 of the sweep key this
   * value set at some checked point (0: none), and whether one of those points applies it. */
  int given_key;
  int applied;
} as_sn;

/* Parse text into a tree in cx->arena. Syntax problems become diagnostics; *root is NULL when
 * the text is not a usable YAML document (a diagnostic says why) or empty. */
void as_spec_tree_build(as_spec_cx *cx, const char *text, size_t len, as_sn **root);
/* Check every mapping of the tree for duplicate and non-scalar keys (diagnostics). */
void as_spec_tree_check_keys(as_spec_cx *cx, const as_sn *root);
/* Canonical SHA-256 of a tree (sorted keys, numbers by value): hex into out. */
void as_spec_tree_sha256(const as_sn *root, char out[AS_SHA256_HEX]);
/* Canonical scalar: writes the normalised form into buf (len >= 64) for numbers, booleans and
 * nulls and returns its kind letter ('n' number, 'i' big integer, 'b' boolean, 'z' null), or 's'
 * for a string (buf untouched). */
char as_spec_scalar_canon(const as_sn *s, char *buf, size_t len);

/* For tests of run's defence (rules.h): as_spec_parse without the rules between keys and
 * without the check of keys that do not apply, so that as_spec_trial meets a trial that
 * breaks a rule. Never for input. */
as_status as_spec_parse_unchecked(const char *text, size_t len, const char *name,
                                  as_spec_diags *diags, as_spec **out);

/* Levenshtein distance (bounded inputs), for did-you-mean suggestions. */
int as_spec_edit_distance(const char *a, const char *b);

#endif
