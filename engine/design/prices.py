"""Price tables: what a model's tokens cost, as the user writes it (USD per 1M tokens).

A table is kept in a study (a ``prices:`` block) or in a file given with ``--prices FILE``
(the same block at the top level, optionally with ``as_of:`` and ``source:`` saying where the
numbers come from)::

    prices:                  # USD per 1M tokens, by model name as the backend sends it
      gpt-4o-mini: {input: 0.15, output: 0.60}
      gemma-3-270m-q4_k_m: {input: 0, output: 0}   # the local model: free, said explicitly
    as_of: 2026-11-01
    source: the provider's pricing page

psyq ships no prices (they change); a model without a price is "not estimable", never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from psyq.engine.files.fields import StrictModel, Text
from psyq.engine.files.validation import load_document

PER_TOKENS = 1_000_000


class ModelPrice(StrictModel):
    """USD per 1M input (prompt) and output (completion) tokens; `cached_input`: per 1M prompt
    tokens read from the provider's prompt cache (absent: they are priced at `input`, and said so)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)


def _date_as_text(value: Any) -> Any:
    # YAML reads `as_of: 2026-11-01` as a date; it is a note, kept as written.
    return value.isoformat() if isinstance(value, date) else value


class PriceFile(StrictModel):
    """A price file as written (``--prices FILE``)."""

    prices: dict[Text, ModelPrice]
    as_of: Annotated[Text, BeforeValidator(_date_as_text)] | None = None
    source: Text | None = None


@dataclass(frozen=True)
class PriceTable:
    """The prices in force and where they came from (printed with every cost)."""

    prices: dict[str, ModelPrice]
    origin: str          # e.g. "study studies/x.yaml" or "prices.yaml (as of 2026-11-01)"

    def to_json(self) -> dict:
        """The table as recorded in a run's manifest.

        Example:
            >>> PriceTable({"m": ModelPrice(input=1, output=2)}, "f.yaml").to_json()
            {'origin': 'f.yaml', 'usd_per_1m_tokens': {'m': {'input': 1.0, 'output': 2.0}}}
        """
        return {"origin": self.origin,
                "usd_per_1m_tokens": {m: p.model_dump(exclude_none=True) for m, p in self.prices.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "PriceTable":
        """Back from :meth:`to_json` (a run's manifest)."""
        return cls({m: ModelPrice(**p) for m, p in data.get("usd_per_1m_tokens", {}).items()},
                   str(data.get("origin", "the run's manifest")))


def load_prices(path: str | Path) -> PriceTable:
    """A price file, read with the bounded safe YAML reader (InputError: file:line:column: field: what).

    Example (the example price file of the documentation):
        >>> table = load_prices("docs/examples/prices.yaml")
        >>> table.prices["gpt-4o-mini"].input, table.origin
        (0.15, 'docs/examples/prices.yaml (as of 2026-11-01; source: example figures for the documentation)')
    """
    spec = load_document(path, PriceFile).spec
    notes = [f"as of {spec.as_of}" if spec.as_of else "", f"source: {spec.source}" if spec.source else ""]
    extra = "; ".join(n for n in notes if n)
    return PriceTable(dict(spec.prices), f"{path}" + (f" ({extra})" if extra else ""))


def combine(study_prices: dict[str, ModelPrice] | None, study_path: str | Path,
            file_table: PriceTable | None) -> PriceTable | None:
    """The study's `prices:` with the file's entries taking precedence (None: no table at all).

    Example:
        >>> a = {"m": ModelPrice(input=1, output=1)}
        >>> combine(a, "s.yaml", PriceTable({"m": ModelPrice(input=2, output=2)}, "p.yaml")).prices["m"].input
        2.0
    """
    if not study_prices and file_table is None:
        return None
    if file_table is None:
        return PriceTable(dict(study_prices or {}), f"study {study_path}")
    if not study_prices:
        return file_table
    return PriceTable({**study_prices, **file_table.prices}, f"{file_table.origin}, then study {study_path}")


@dataclass(frozen=True)
class Cost:
    """A cost in USD, or why it cannot be estimated (never a silent 0)."""

    usd: float | None
    why_not: str | None = None
    note: str | None = None      # how an estimate was made when it is not exact (e.g. cached tokens)

    def __str__(self) -> str:
        if self.usd is None:
            return f"not estimable ({self.why_not})"
        return f"${self.usd:,.4f}" + (f" ({self.note})" if self.note else "")


def cost_of(model: str | None, prompt_tokens: float, completion_tokens: float, table: PriceTable | None,
            cached_tokens: float = 0) -> Cost:
    """USD for these tokens of `model` from `table`; `cached_tokens` are the part of the prompt
    tokens read from the provider's prompt cache, priced at `cached_input` when the table has it.

    Example:
        >>> table = PriceTable({"m": ModelPrice(input=0.5, output=2.0)}, "p.yaml")
        >>> cost_of("m", 2_000_000, 1_000_000, table).usd   # 2 × 0.5 + 1 × 2.0
        3.0
        >>> str(cost_of("other", 1, 1, table))
        'not estimable (no price for model other in p.yaml)'
        >>> cached = PriceTable({"m": ModelPrice(input=1.0, output=2.0, cached_input=0.1)}, "p.yaml")
        >>> round(cost_of("m", 2_000_000, 0, cached, cached_tokens=1_000_000).usd, 6)   # 1 × 1.0 + 1 × 0.1
        1.1
    """
    if table is None:
        return Cost(None, "no price table: add `prices:` to the study or give --prices FILE")
    price = table.prices.get(model or "")
    if price is None:
        return Cost(None, f"no price for model {model} in {table.origin}")
    if cached_tokens and price.cached_input is not None:
        prompt_usd = (prompt_tokens - cached_tokens) * price.input + cached_tokens * price.cached_input
        return Cost((prompt_usd + completion_tokens * price.output) / PER_TOKENS)
    note = (f"{cached_tokens:,.0f} cached tokens priced at the input price: no cached_input price for model "
            f"{model} in {table.origin}" if cached_tokens else None)
    return Cost((prompt_tokens * price.input + completion_tokens * price.output) / PER_TOKENS, note=note)
