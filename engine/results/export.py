"""Export a run as one tidy long table: one row per item answer.

Columns: ``run_id, study, backend_id, model, respondent_id`` then one column per persona
attribute, then ``instrument, item_id, position, repeat, option_order, status, reason,
disclaimer, raw_text, value, keyed_value, expected, option_mass, distribution, trial_status,
attempts, reasks, text``. ``text`` holds free-text answers (a kind may store several rows per item, e.g.
``<item>:self`` and ``<item>:other``: :meth:`psyq.engine.kinds.ItemKind.answer_ids`). ``distribution`` is the JSON text ``{value: probability}`` (answer mode
`logprobs`), else empty. ``value`` is the raw scale value (missing stays missing), ``keyed_value`` the value
after reverse keying with the instrument copy stored in the run.

A run of a study with `stages:` (engine/administer/stages.py) has two more columns at the end, ``stage`` (the
0-based index in `stages:`) and ``situation_id``, and holds the answers of its measure stages only:
an evoke stage asks no items (its reply is in the store's ``stage_trials`` table and the trial's
``raw_text``). Runs without stages have neither column.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from psyq.engine.design.instrument import Instrument, load_instrument
from psyq.engine.store.run_dir import RunDir, open_run_dir
from psyq.engine.trials.scoring import reverse_key
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.store.run_store import RunStore, store_is_current

QUERY = """
SELECT t.backend_id, t.model, t.respondent_id, t.instrument_id AS instrument, a.item_id, a.position,
       t.repeat, t.option_order, a.status, a.reason, a.disclaimer, t.raw_text, a.value, a.expected,
       a.option_mass, a.distribution, a.text, t.status AS trial_status, t.attempts, t.reasks, r.attributes
FROM answers a JOIN trials t USING (trial_id) LEFT JOIN respondents r USING (respondent_id)
ORDER BY t.backend_id, t.repeat, t.respondent_id, t.instrument_id, a.position
"""


# A run of a study with `stages:` (engine/administer/stages.py): the answers of its measure stages, with the
# stage and the situation; the evoke stages hold no item answers and are left out (said in the docstring).
STAGED_QUERY = """
SELECT t.backend_id, t.model, t.respondent_id, t.instrument_id AS instrument, a.item_id, a.position,
       t.repeat, t.option_order, a.status, a.reason, a.disclaimer, t.raw_text, a.value, a.expected,
       a.option_mass, a.distribution, a.text, t.status AS trial_status, t.attempts, t.reasks, r.attributes,
       s.stage, s.situation_id
FROM answers a JOIN trials t USING (trial_id) LEFT JOIN respondents r USING (respondent_id)
     LEFT JOIN stage_trials s USING (trial_id)
WHERE t.instrument_id != 'evoke'
ORDER BY t.backend_id, t.repeat, t.respondent_id, s.situation_id, s.stage, t.instrument_id, a.position
"""


def run_has_stages(run: RunDir) -> bool:
    """True when the run's study copy declares `stages:` (its export then has `stage`, `situation_id`)."""
    copy = run.path / "study.yaml"
    if not copy.exists():
        return False
    data = yaml.safe_load(copy.read_text(encoding="utf-8"))
    return isinstance(data, dict) and bool(data.get("stages"))


def run_instruments(run: RunDir) -> dict[str, Instrument]:
    """The instrument copies stored in a run directory, by id."""
    return {p.stem: load_instrument(p) for p in sorted((run.path / "instruments").glob("*.yaml"))}


def export_table(run_path: str | Path) -> pd.DataFrame:
    """The run's answers as a tidy long DataFrame (see the module docstring for columns).

    Example (`run_dir`: 4 personas × the 4 items of tests/data/mini_1to7.yaml, one answer refused):
        >>> table = export_table(run_dir)
        >>> table.groupby("instrument")["value"].count().to_dict(), table.groupby("status").size().to_dict()
        ({'mini': 15}, {'answered': 15, 'refusal': 1})
    """
    run = open_run_dir(run_path)
    manifest = run.read_manifest()
    if not store_is_current(run.database):
        RunStore(run.database).close()   # brings a run stored by an older psyq up to the current schema
    staged = run_has_stages(run)
    with closing(connect_readonly(run.database)) as db:
        table = pd.read_sql_query(STAGED_QUERY if staged else QUERY, db)
    attributes = pd.DataFrame([json.loads(a) if a else {} for a in table.pop("attributes")], index=table.index)
    attributes = attributes.convert_dtypes()  # ages stay whole numbers although the baseline has none
    table["value"] = table["value"].astype(float)
    table["keyed_value"] = _keyed(table, run_instruments(run))
    table["disclaimer"] = table["disclaimer"].astype(bool)
    front = pd.DataFrame({"run_id": manifest["run_id"], "study": manifest["study"]}, index=table.index)
    head = table[["backend_id", "model", "respondent_id"]]
    rest = table.drop(columns=["backend_id", "model", "respondent_id"])
    if staged:
        # Measure stages only (the evoke stages' replies are in the store's stage_trials table);
        # stage is the 0-based index in the study's `stages:`.
        rest["stage"] = rest["stage"].astype("Int64")
        rest = rest[[c for c in rest.columns if c not in ("stage", "situation_id")] + ["stage", "situation_id"]]
    clash = [c for c in attributes.columns if c in table.columns or c in front.columns]
    attributes = attributes.rename(columns={c: f"persona_{c}" for c in clash})
    return pd.concat([front, head, attributes, rest], axis=1)


def _keyed(table: pd.DataFrame, instruments: dict[str, Instrument]) -> np.ndarray:
    keyed = table["value"].to_numpy(dtype=float).copy()
    for inst_id, instrument in instruments.items():
        reversed_items = {i.id for i in instrument.rating_items if i.reverse}
        rows = (table["instrument"] == inst_id) & table["item_id"].isin(reversed_items)
        if not reversed_items:
            continue
        keyed[rows.to_numpy()] = reverse_key(keyed[rows.to_numpy()], instrument.scale_min, instrument.scale_max)
    return keyed


def wide_answers(table: pd.DataFrame, instrument_id: str) -> pd.DataFrame:
    """Raw values of one instrument as respondent(+backend, repeat) × item, ready for scoring."""
    rows = table[table["instrument"] == instrument_id]
    return rows.pivot_table(index=["backend_id", "respondent_id", "repeat"], columns="item_id",
                            values="value", aggfunc="first", dropna=False)
