"""test_exp_poly.py: the attention exponential's polynomial and table are what their recipe gives.

src/core/linalg_dyn.h holds the coefficients (AS_EXP_POLY_TOP, AS_EXP_POLY) of the polynomial
for e^r on |r| <= ln2 / 16 that the kernels evaluate (src/core/attention_kernels.h):
1 + r + r^2 / 2 + r^3 g(r), with g of degree 4 interpolating (e^r - 1 - r - r^2 / 2) / r^3 at
the 5 Chebyshev nodes of [-ln2 / 16, ln2 / 16], and the table AS_EXP_TABLE of 2^(j/8),
j = 0..7. This recomputes g with 60 digits (mpmath, no code shared with the C side), rounds to
double, and requires
  * the header's coefficients to be exactly those doubles, the last three exactly 1/2, 1, 1;
  * the polynomial with those coefficients (exact arithmetic) within 5e-17 of e^r relative on a
    dense grid of |r| <= ln2 / 16 (1 + 1e-9), i.e. well below the half ulp (1.1e-16) that the
    final rounding costs anyway;
  * each table entry to be the double nearest to 2^(j/8) (within half an ulp), the first 1.
"""

import os
import re
import sys

import mpmath as mp

SRC = os.environ.get("AS_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
failures = 0


def check(what, ok):
    global failures
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures += 1


def header_coefficients():
    text = open(os.path.join(SRC, "src", "core", "linalg_dyn.h")).read()
    top = re.search(r"#define AS_EXP_POLY_TOP\s+(\S+)", text)
    rest = re.search(r"#define AS_EXP_POLY\s+((?:[^\n]*\\\n)*[^\n]*)", text)
    if not top or not rest:
        return None
    vals = [float(top.group(1))]
    vals += [float(v) for v in re.split(r"[,\s\\]+", rest.group(1)) if v]
    return vals  # degree 7 down to 0


def header_table():
    text = open(os.path.join(SRC, "src", "core", "linalg_dyn.h")).read()
    m = re.search(r"#define AS_EXP_TABLE\s+((?:[^\n]*\\\n)*[^\n]*)", text)
    return [float(v) for v in re.split(r"[,\s\\]+", m.group(1)) if v] if m else None


def recipe():
    mp.mp.dps = 60
    h = mp.log(2) / 16

    def g(r):  # (e^r - 1 - r - r^2 / 2) / r^3 by its series: no cancellation near 0
        return mp.fsum(r ** k / mp.factorial(k + 3) for k in range(80))

    nodes = [h * mp.cos(mp.pi * (2 * k + 1) / 10) for k in range(5)]
    A = mp.matrix([[x ** j for j in range(5)] for x in nodes])
    c = mp.lu_solve(A, mp.matrix([g(x) for x in nodes]))
    return [float(c[j]) for j in reversed(range(5))] + [0.5, 1.0, 1.0], h


def main():
    have = header_coefficients()
    check("the header defines 8 coefficients (degree 7)", have is not None and len(have) == 8)
    if have is None or len(have) != 8:
        return 1
    want, h = recipe()
    for k, (a, b) in enumerate(zip(have, want)):
        check("coefficient of degree %d: header %r, recipe %r" % (7 - k, a, b), a == b)
    tab = header_table()
    check("the header defines a table of 8 entries", tab is not None and len(tab) == 8)
    for j, t in enumerate(tab or []):
        exact = mp.mpf(2) ** (mp.mpf(j) / 8)
        ulp = mp.mpf(2) ** (mp.floor(mp.log(exact, 2)) - 52)
        check("table entry %d: %r within half an ulp of 2^(%d/8)" % (j, t, j),
              abs(mp.mpf(t) - exact) <= ulp / 2)
    check("table entry 0 is exactly 1", bool(tab) and tab[0] == 1.0)
    worst = mp.mpf(0)
    hh = h * (1 + mp.mpf(10) ** -9)  # k = round(8 a / ln2) in double: |r| a hair above h
    for i in range(4001):
        r = -hh + 2 * hh * i / 4000
        p = mp.mpf(0)
        for c in have:
            p = p * r + mp.mpf(c)
        worst = max(worst, abs(p / mp.exp(r) - 1))
    check("max relative error of the polynomial %.3g <= 5e-17" % float(worst), worst <= 5e-17)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
