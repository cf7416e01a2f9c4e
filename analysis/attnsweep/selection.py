"""Which rows a table selects and what its header says about the file: the --where
expression (a safe evaluator over the columns), the completeness lines every table begins
with, and the small checks of the grouping arguments shared by every table."""

from __future__ import annotations

import ast
from typing import Any, Dict, Iterable, List, NoReturn, Optional

import numpy as np

from . import rule, schema
from .errors import UsageError
from .schema import Results

class _Where:
    """A safe evaluator of filter expressions over columns: comparisons, and/or/not, + - * /,
    `in (...)`, isnan/isfinite/abs. Enum fields compare against their labels as strings."""

    FUNCS = {"isnan": np.isnan, "isfinite": np.isfinite, "abs": np.abs, "log10": np.log10}

    def __init__(self, rf: Results, expr: str) -> None:
        self.rf = rf
        self.expr = expr
        try:
            self.tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError as e:
            raise UsageError("--where: cannot parse '%s': %s" % (expr, e.msg))
        called = {id(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call)}
        names = sorted({n.id for n in ast.walk(self.tree)
                        if isinstance(n, ast.Name) and id(n) not in called} -
                       {"nan", "inf", "True", "False"})
        for nm in names:
            try:
                rf.field_kind(nm)
            except schema.SchemaError as e:
                raise UsageError("--where: %s" % e)
        self.cols = rf.read(names)

    def fail(self, node: ast.AST, what: str) -> NoReturn:
        raise UsageError("--where: %s in '%s'" % (what, ast.unparse(node)))

    def run(self) -> np.ndarray:
        r = self.ev(self.tree.body)
        r = np.asarray(r)
        if r.dtype != bool:
            raise UsageError("--where: '%s' is not a condition" % self.expr)
        if r.shape == ():
            r = np.full(self.rf.n_rows, bool(r))
        return r

    def enum_field(self, node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Name) and self.rf.is_enum(node.id):
            return node.id
        return None

    def operand(self, node: ast.AST, enum: Optional[str]) -> Any:
        """Evaluate a comparison operand; strings become codes of `enum` (the other side)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if enum is None:
                return self.fail(node, "a string compares only with an enumeration field")
            try:
                return self.rf.code(enum, node.value)
            except schema.SchemaError as e:
                raise UsageError("--where: %s" % e)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return np.array([self.operand(e, enum) for e in node.elts])
        return self.ev(node)

    def ev(self, node: ast.AST) -> Any:
        if isinstance(node, ast.BoolOp):
            vals = [np.asarray(self.ev(v), dtype=bool) for v in node.values]
            r = vals[0]
            for v in vals[1:]:
                r = (r & v) if isinstance(node.op, ast.And) else (r | v)
            return r
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand)
            if isinstance(node.op, ast.Not):
                return ~np.asarray(v, dtype=bool)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return ~v
        if isinstance(node, ast.Compare):
            result = None
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                enum = self.enum_field(left) or self.enum_field(right)
                a = self.operand(left, enum)
                b = self.operand(right, enum)
                if isinstance(op, (ast.In, ast.NotIn)):
                    if np.ndim(b) != 1:
                        self.fail(node, "'in' needs a list like (1, 2)")
                    r = np.isin(a, b)
                    if isinstance(op, ast.NotIn):
                        r = ~r
                else:
                    cmps: Dict[type, Any] = {ast.Eq: np.equal, ast.NotEq: np.not_equal,
                                             ast.Lt: np.less, ast.LtE: np.less_equal,
                                             ast.Gt: np.greater, ast.GtE: np.greater_equal}
                    fn = cmps.get(type(op))
                    if fn is None:
                        self.fail(node, "unsupported comparison")
                    r = fn(a, b)
                result = r if result is None else (result & r)
                left = right
            return result
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left), self.ev(node.right)
            ops: Dict[type, Any] = {ast.Add: np.add, ast.Sub: np.subtract,
                                    ast.Mult: np.multiply, ast.Div: np.true_divide,
                                    ast.Mod: np.mod, ast.Pow: np.power,
                                    ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or}
            fn = ops.get(type(node.op))
            if fn is None:
                self.fail(node, "unsupported operator")
            with np.errstate(all="ignore"):
                return fn(a, b)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in self.FUNCS \
                    or len(node.args) != 1 or node.keywords:
                self.fail(node, "only isnan(x), isfinite(x), abs(x), log10(x) may be called")
            with np.errstate(all="ignore"):
                func: Any = self.FUNCS[getattr(node.func, "id")]
                return func(self.ev(node.args[0]))
        if isinstance(node, ast.Name):
            if node.id in self.cols:
                return self.cols[node.id]
            return {"nan": np.nan, "inf": np.inf, "True": True, "False": False}[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.fail(node, "a string compares only with an enumeration field")
        self.fail(node, "unsupported expression")



def not_converged_mask(rf: Results) -> np.ndarray:
    """Rows whose outcome is not_converged: Sinkhorn attention that missed sinkhorn_tol at some
    evaluation (docs/variants.md). The rule (rule.py) counts them beside the judged trials, in
    no fraction; no statistic of another field takes their values (stat_rows)."""
    if "outcome" not in rf.fields or not rf.has_code("outcome", "not_converged"):
        return np.zeros(rf.n_rows, dtype=bool)
    return np.asarray(rf.read(["outcome"])["outcome"]) == rf.code("outcome", "not_converged")


def where_mask(rf: Results, expr: Optional[str]) -> np.ndarray:
    """The rows --where EXPR selects (every row without an expression)."""
    if not expr:
        return np.ones(rf.n_rows, dtype=bool)
    return _Where(rf, expr).run()


def done_mask(rf: Results, cols: Optional[Dict[str, np.ndarray]] = None) -> np.ndarray:
    """Rows of trials that ran (outcome not pending)."""
    if "outcome" in rf.fields and rf.has_code("outcome", "pending"):
        out = cols["outcome"] if cols is not None and "outcome" in cols else \
            rf.read(["outcome"])["outcome"]
        return np.asarray(out) != rf.code("outcome", "pending")
    return np.ones(rf.n_rows, dtype=bool)


def stat_rows(rf: Results, cols: Optional[Dict[str, np.ndarray]] = None) -> np.ndarray:
    """The rows whose values enter a statistic of any field (--stat, --measure, --series, the
    default columns): the trials that ran, less the not_converged ones (rule.py: no result of
    the model; counted in the header)."""
    return done_mask(rf, cols) & ~not_converged_mask(rf)


def parse_by(text: Optional[str]) -> Optional[List[str]]:
    """The axes of --by A,B (None: not given; "" gives [])."""
    if text is None:
        return None
    return [b.strip() for b in text.split(",") if b.strip()]


def check_axes(rf: Results, names: Iterable[str], what: str) -> None:
    """UsageError naming the option when an axis is not a field (or flag) of the file."""
    for a in names:
        try:
            rf.field_kind(a)
        except schema.SchemaError as e:
            raise UsageError("%s: %s" % (what, e))


def filter_line(rf: Results, where: Optional[str], mask: np.ndarray) -> List[str]:
    """The header line of a --where filter ([] without one)."""
    if not where:
        return []
    return ["filter: %s (%d of %d rows)" % (where, int(mask.sum()), rf.n_rows)]


def completeness(rf: Results, cols: Optional[Dict[str, np.ndarray]] = None) -> List[str]:
    """Lines of the preamble: file identity, how complete the data are, and the rule's count of
    the trials every fraction leaves out (rule.py)."""
    lines = ["attnsweep summary of %s" % rf.path]
    ident = []
    for k in ("tool_version", "git_revision", "spec_sha256", "master_seed", "start_time",
              "end_time"):
        if k in rf.attrs:
            ident.append("%s %s" % (k, rf.attrs[k]))
    if ident:
        lines.append("; ".join(ident))
    sv = rf.attrs.get("schema_version")
    if sv is not None and int(sv) > schema.SCHEMA_VERSION:
        lines.append("WARNING: schema_version %d is newer than this analysis knows (%d); "
                     "columns it does not know are ignored" % (int(sv), schema.SCHEMA_VERSION))
    n = rf.n_rows
    jd = rule.judge(rf, rf.read(rule.fields(rf)))
    c = jd.counts(np.zeros(n, dtype=np.int64), 1)
    pend = int(c["pending"][0])
    done = n - pend
    expected = rf.attrs.get("n_trials")
    line = "trials: %d rows, %d done (%.1f%%), %d pending" % (
        n, done, 100.0 * done / n if n else 100.0, pend)
    if expected is not None and int(expected) != n:
        line += "; root attribute n_trials = %d differs from the rows of /trials" % int(expected)
    lines.append(line)
    if pend:
        lines.append("INCOMPLETE: the sweep was interrupted or is still running; fractions are "
                     "over the %d trials done (resume with `attnsweep run ... --resume`)" % done)
    excl = rule.excluded_text(c, 0)
    if excl:
        lines.append("excluded from every fraction (judged = consistent + violated + "
                     "unresolved: %d) and counted beside: %s%s" % (
                         int(c["judged"][0]), ", ".join(excl),
                         " (not_converged: Sinkhorn attention missed sinkhorn_tol, "
                         "docs/variants.md; in no statistic either)"
                         if c["not_converged"][0] else ""))
    return lines
