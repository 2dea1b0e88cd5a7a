"""The report's one number vocabulary, in APA 7th edition style: ``fmt_*`` for table cells,
``say_*`` for sentences. Two decimals, a true minus sign, no leading zero for quantities that cannot
exceed 1 (p, r, α, ω, ICC), ``< .001`` for small p, CIs in brackets; a value that is not estimable
is ``—`` (:data:`DASH`) in a table and "not estimable" in a sentence. The tables that use them are
laid out by :mod:`psyq.analysis.report.tables` and printed by the views of
:mod:`psyq.analysis.report.views`; the sentences are the sections' and
:mod:`psyq.analysis.report.readings`'. Nothing here computes.

Example
-------
>>> fmt_p(0.0004), fmt_p(0.0376), fmt_r(-0.456), fmt_num(2.0), fmt_ci(-0.4, 1.15)
('< .001', '.038', '−.46', '2.00', '[−0.40, 1.15]')
>>> say_num(float("nan")), say_p(0.0312)
('not estimable', '.031')

References
----------
American Psychological Association (2020). *Publication Manual of the American Psychological
Association* (7th ed.), section 6.36 (decimal places, leading zeros).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

MINUS = "\u2212"
DASH = "\u2014"
"""Shown for a value that is not estimable; the note says so."""


def is_missing(x: Any) -> bool:
    """Is `x` a missing value (None, NaN, pandas' NA or NaT), shown as ``—`` or "not estimable"?

    Example
    -------
    >>> is_missing(None), is_missing(float("nan")), is_missing(pd.NA), is_missing(0.0), is_missing("text")
    (True, True, True, False, False)
    """
    try:
        return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) or bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def fmt_num(x: Any, digits: int = 2) -> str:
    """A number with `digits` decimals and a true minus sign; ``—`` when missing.

    Example
    -------
    >>> fmt_num(-1.234), fmt_num(3), fmt_num(float("nan"))
    ('−1.23', '3.00', '—')
    """
    if is_missing(x):
        return DASH
    text = f"{float(x):.{digits}f}"
    if float(text) == 0:
        text = f"{0:.{digits}f}"          # no "−0.00"
    return text.replace("-", MINUS)


def fmt_signed(x: Any, digits: int = 2) -> str:
    """A difference with its sign always written (``+`` or a true minus); ``—`` when missing.

    Example
    -------
    >>> fmt_signed(0.256), fmt_signed(-1.5), fmt_signed(-0.001)
    ('+0.26', '−1.50', '0.00')
    """
    text = fmt_num(x, digits)
    return text if text == DASH or text.startswith(MINUS) or float(text) == 0 else "+" + text


def fmt_r(x: Any, digits: int = 2) -> str:
    """A quantity bounded by ±1 (r, α, ω, ICC): no leading zero.

    Example
    -------
    >>> fmt_r(0.847), fmt_r(-0.05), fmt_r(1.0)
    ('.85', '−.05', '1.00')
    """
    text = fmt_num(x, digits)
    return text.replace("0.", ".", 1) if text.lstrip(MINUS).startswith("0.") else text


def fmt_p(p: Any) -> str:
    """A p value: three decimals without the leading zero, ``< .001`` below .001.

    Example
    -------
    >>> fmt_p(0.04999), fmt_p(0.00099), fmt_p(1.0)
    ('.050', '< .001', '1.000')
    """
    if is_missing(p):
        return DASH
    if float(p) < 0.001:
        return "< .001"
    text = f"{float(p):.3f}"
    return text[1:] if text.startswith("0") else text


def p_clause(p: Any) -> str:
    """A p value as it follows "p" in a sentence: ``= .012``, or ``< .001``.

    Example
    -------
    >>> p_clause(0.0123), p_clause(0.00001)
    ('= .012', '< .001')
    """
    text = fmt_p(p)
    return text if text.startswith("<") or text == DASH else f"= {text}"


NOT_ESTIMABLE = "not estimable"
"""What a sentence says where a table shows ``—`` (:data:`DASH`)."""


def say_num(x: Any) -> str:
    """A number in a sentence: two decimals with a true minus (:func:`fmt_num`), or "not estimable".

    Example
    -------
    >>> say_num(-0.5), say_num(float("nan"))
    ('−0.50', 'not estimable')
    """
    return NOT_ESTIMABLE if is_missing(x) else fmt_num(x)


def say_pct(x: Any) -> str:
    """A share in a sentence, as a whole percentage, or "not estimable".

    Example
    -------
    >>> say_pct(0.254), say_pct(None)
    ('25 %', 'not estimable')
    """
    return NOT_ESTIMABLE if is_missing(x) else f"{100 * x:.0f} %"


def say_p(p: Any) -> str:
    """A p value in a sentence: as :func:`fmt_p` prints it, or "not estimable".

    Example
    -------
    >>> say_p(0.0312), say_p(float("nan"))
    ('.031', 'not estimable')
    """
    return NOT_ESTIMABLE if is_missing(p) else fmt_p(p)


def sentence_case(text: str) -> str:
    """`text` begun with a capital; a symbol (φ, α) keeps its case, as capitalising would change it
    into another symbol (Φ).

    Example
    -------
    >>> sentence_case("r not estimable"), sentence_case("φ below .85")
    ('R not estimable', 'φ below .85')
    """
    return text[0].upper() + text[1:] if text[:1].isascii() else text


def fmt_ci(low: Any, high: Any, fmt: Callable[[Any], str] = fmt_num) -> str:
    """A confidence interval in brackets, ``[low, high]``; ``—`` when either end is missing.

    Example
    -------
    >>> fmt_ci(0.012, 1.6), fmt_ci(0.1, 0.9, fmt_r)
    ('[0.01, 1.60]', '[.10, .90]')
    """
    if is_missing(low) or is_missing(high):
        return DASH
    return f"[{fmt(low)}, {fmt(high)}]"


def fmt_int(x: Any) -> str:
    """A count (thousands separated by a comma); ``—`` when missing."""
    return DASH if is_missing(x) else f"{int(x):,}"


def fmt_pct(x: Any) -> str:
    """A share as a percentage with one decimal."""
    return DASH if is_missing(x) else f"{100 * float(x):.1f}"
