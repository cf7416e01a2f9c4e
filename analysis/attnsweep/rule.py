"""THE rule: which trials every fraction of the analysis counts (issue 48).

    judged = consistent + violated + unresolved

A trial is judged when its verdict is one of those three and its outcome is not
`not_converged`. Every fraction (consistent, violated, unresolved) is over the judged trials;
the others are excluded from every fraction and counted beside, each under its name:

* `no_prediction`: no theorem applies to the triple;
* `not_converged`: Sinkhorn attention missed sinkhorn_tol at some evaluation (outcome
  not_converged, whatever the verdict its end state got): no result of the model;
* `nonfinite`: the integration produced non-finite numbers;
* `failed`: the trial could not be set up.

Pending trials (not run yet) are neither. `judge` applies the rule to one verdict column:
`verdict` (against the theorem whose hypotheses hold) or `near_verdict` (against the nearest
theorem); a table judges one of them, and takes its reasons and horizons from the same family
(`reason`, `t_decide` or `near_reason`, `near_t_decide`: VERDICT_FAMILIES). Every consumer
calls it: the verdict tables, Table 1, --phase, --robustness, --stat fractions of a verdict,
--pair, the figures, the report and jobs/referees.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .errors import UsageError
from .schema import Results

#: the verdicts a fraction counts: its denominator
JUDGED = ("consistent", "violated", "unresolved")
#: excluded from every fraction and counted beside, in this order
EXCLUDED = ("no_prediction", "not_converged", "nonfinite", "failed")
#: every category of a trial that ran
CATEGORIES = JUDGED + EXCLUDED
#: the verdict labels of the file, in the order the tables count them
VERDICTS = ("consistent", "violated", "unresolved", "no_prediction", "nonfinite", "failed")
#: verdicts whose end state was classified (cluster counts, rank P are read on these rows)
CLASSIFIED = ("consistent", "violated", "unresolved", "no_prediction")
#: which verdict a table judges -> (its verdict, reason and horizon fields)
VERDICT_FAMILIES = {"exact": ("verdict", "reason", "t_decide"),
                    "near": ("near_verdict", "near_reason", "near_t_decide")}


class Judgement:
    """The rule applied to the rows of one verdict column. cat: the category of each row, an
    index into ("pending",) + CATEGORIES (-1: a verdict value the file's type does not name);
    masks by name: mask("judged"), mask("consistent"), mask("not_converged"), ..."""

    NAMES = ("pending",) + CATEGORIES

    def __init__(self, cat: np.ndarray, which: str) -> None:
        self.cat = cat
        #: "exact" (verdict) or "near" (near_verdict)
        self.which = which

    def mask(self, name: str) -> np.ndarray:
        """The rows of a category, "judged" (consistent, violated, unresolved), "excluded"
        (EXCLUDED) or "done" (every category but pending)."""
        if name == "judged":
            return (self.cat >= 1) & (self.cat <= len(JUDGED))
        if name == "excluded":
            return self.cat > len(JUDGED)
        if name == "done":
            return self.cat != 0
        return self.cat == self.NAMES.index(name)

    def counts(self, gid: np.ndarray, ngroups: int) -> Dict[str, np.ndarray]:
        """Per group (gid: the group of each row): the count of each category, `judged`,
        `excluded` (their sum), `done` and `n` (every row)."""
        out = {"n": np.bincount(gid, minlength=ngroups)}
        both = np.bincount(gid * (len(self.NAMES) + 1) + (self.cat + 1),
                           minlength=ngroups * (len(self.NAMES) + 1))
        per = both.reshape(ngroups, len(self.NAMES) + 1)
        for k, name in enumerate(self.NAMES):
            out[name] = per[:, k + 1]
        out["judged"] = sum((out[v] for v in JUDGED), np.zeros(ngroups, dtype=np.int64))
        out["excluded"] = sum((out[v] for v in EXCLUDED), np.zeros(ngroups, dtype=np.int64))
        out["done"] = out["n"] - out["pending"]
        return out


def fields(rf: Results, which: str = "exact") -> List[str]:
    """The fields judge() reads for a verdict family: its verdict and the outcome."""
    verdict = VERDICT_FAMILIES[which][0]
    return [f for f in (verdict, "outcome") if f in rf.fields]


def judge(rf: Results, cols: Mapping[str, np.ndarray], which: str = "exact",
          rows: Optional[np.ndarray] = None) -> Judgement:
    """THE rule (module doc) on the verdict column of `which` ("exact": verdict, "near":
    near_verdict) of cols (read from rf, with the outcome when the file has it), over the given
    rows (indices or a mask into the columns; default all)."""
    vf = VERDICT_FAMILIES[which][0]
    v = np.asarray(cols[vf])
    out = np.asarray(cols["outcome"]) if "outcome" in cols else None
    if rows is not None:
        v = v[rows]
        out = out[rows] if out is not None else None
    cat = np.full(len(v), -1, dtype=np.int64)
    for k, name in enumerate(Judgement.NAMES):
        if name != "not_converged" and rf.has_code(vf, name):
            cat[v == rf.code(vf, name)] = k
    if out is not None and rf.has_code("outcome", "not_converged"):
        nc = (out == rf.code("outcome", "not_converged")) & (cat != 0)
        cat[nc] = Judgement.NAMES.index("not_converged")
    if out is not None and rf.has_code("outcome", "pending"):
        cat[out == rf.code("outcome", "pending")] = 0
    return Judgement(cat, which)


def family(which: str) -> Tuple[str, str, str]:
    """(verdict, reason, horizon) fields of a verdict family."""
    return VERDICT_FAMILIES[which]


def has_near(rf: Results) -> bool:
    """Whether the file has the nearest-theorem fields a near judgement needs."""
    return all(f in rf.fields for f in ("near_verdict", "near_theorem", "theorem"))


def choose(rf: Results, mask: np.ndarray, choice: Optional[str] = None,
           default: Optional[str] = None) -> str:
    """Which verdict a table judges: choice ("near" or "exact", --verdict) when given; else
    `default` when given; else "near" when the file has the near fields and a selected trial
    is a near miss (its nearest theorem is a proved one whose hypotheses do not hold:
    near_theorem != theorem), else "exact". UsageError for "near" without the fields."""
    has = has_near(rf)
    if choice == "near" and not has:
        raise UsageError("--verdict near needs the field near_verdict, which this file lacks "
                         "(written by an attnsweep without the nearest theorem)")
    if choice:
        return choice
    if default:
        return default if has or default == "exact" else "exact"
    if not has:
        return "exact"
    c = rf.read(["near_theorem", "theorem"])
    miss = mask & (c["near_theorem"] != c["theorem"])
    if rf.has_code("near_theorem", "none"):
        miss &= c["near_theorem"] != rf.code("near_theorem", "none")
    return "near" if miss.any() else "exact"


def verdict_line(which: str, default_text: str) -> str:
    """The header line of a table that says which verdict it judged."""
    if which == "near":
        return ("verdict: near_verdict, with near_reason and near_t_decide (against the nearest "
                "theorem; %s; --verdict exact judges `verdict`)" % default_text)
    return ("verdict: verdict, with reason and t_decide (%s; --verdict near judges near misses "
            "against their nearest theorem)" % default_text)


def excluded_text(counts: Mapping[str, Any], i: int, sep: str = ", ",
                  names: Sequence[str] = EXCLUDED) -> List[str]:
    """The excluded trials of group i, "no_prediction 3" for each category that has some."""
    return ["%s %d" % (v, int(counts[v][i])) for v in names if counts[v][i]]
