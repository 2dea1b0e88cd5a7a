"""Free-text answers, kept whole: answered, empty or a refusal, never a value of a scale; read
here for every kind whose answers are text, and by the statistics that count them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from psyq.engine.trials.parsing import ParsedAnswer, is_refusal


@dataclass(frozen=True)
class ParsedText:
    """A free-text answer: the text itself, or why there is none."""

    text: str | None
    status: Literal["answered", "refusal", "unparseable", "empty"]
    reason: str | None = None


def text_part(text: str | None) -> ParsedText:
    """One free-text answer (or one part of a reply that holds several): answered, empty or a refusal.

    Example:
        >>> text_part("  I'd be glad. ").text, text_part("").status
        ("I'd be glad.", 'empty')
    """
    if text is None or not str(text).strip():
        return ParsedText(None, "empty", "no answer for this question")
    text = str(text).strip()
    if is_refusal(text):
        return ParsedText(text, "refusal", "the answer is a refusal (it declines to answer)")
    return ParsedText(text, "answered")


def has_text(value: Any) -> bool:
    """True for a string with something besides white space (a stored free-text answer).

    Example:
        >>> has_text("  "), has_text(None), has_text("sad")
        (False, False, True)
    """
    return isinstance(value, str) and bool(value.strip())


def parse_free_text(value: Any) -> ParsedAnswer:
    """A free-text answer kept whole: answered, empty or a refusal (never a scale value).

    Example:
        >>> parse_free_text("  She is scared. ").text
        'She is scared.'
    """
    part = text_part(value if isinstance(value, str) else None)
    return ParsedAnswer(None, part.status, part.reason, text=part.text)
