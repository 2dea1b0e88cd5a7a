"""Survey weights in the report: which side of a comparison with human data is weighted, and what
the report and the methods paragraph say about it.

The weighted statistics themselves are in :mod:`psyq.analysis.statistics.human_comparison` (scores) and
:mod:`psyq.analysis.statistics.validity` (item option shares); human answers carry their weights in the
column :data:`psyq.engine.files.codebook.WEIGHT_COLUMN` (a codebook's ``columns.weight``).

Checked in tests/test_weights.py
(``test_report_weights_a_cohort_of_twins_by_their_persons_weights``): the weights given to a cohort
of twins, through the Kish n_eff the report states for each side, computed by hand from the persons'
weights.

Example
-------
>>> humans = pd.DataFrame({"1": [1.0, 2.0], WEIGHT_COLUMN: [1.0, 3.0]}, index=["h1", "h2"])
>>> twin_weights(pd.DataFrame({"1": [2.0, 2.0]}, index=["h2", "baseline"]), humans).tolist()
[1.0, 3.0]
>>> twin_weights(pd.DataFrame({"1": [2.0]}, index=["p00"]), humans) is None
True
"""

from __future__ import annotations

import pandas as pd

from psyq.engine.files.codebook import WEIGHT_COLUMN

def twin_weights(cohort: pd.DataFrame, humans: pd.DataFrame) -> pd.Series | None:
    """The weights of the cohort side: the humans' survey weights when every persona of the cohort
    (the baseline aside) is a respondent of the weighted human file, i.e. the cohort is made of their
    twins (persona id = respondent id); else None. A cohort drawn from the file in proportion to its
    weights is self-weighting: its persona ids must not be the respondents' ids, or it would be
    weighted twice.

    Example
    -------
    >>> humans = pd.DataFrame({"1": [1.0, 2.0], WEIGHT_COLUMN: [1.0, 3.0]}, index=["h1", "h2"])
    >>> twin_weights(pd.DataFrame({"1": [2.0]}, index=["h2"]), humans).tolist()     # twins: weighted
    [1.0, 3.0]
    >>> twin_weights(pd.DataFrame({"1": [2.0]}, index=["p07"]), humans) is None       # drawn: not
    True
    """
    if WEIGHT_COLUMN not in humans.columns:
        return None
    ids = {str(r) for r in cohort.index} - {"baseline"}
    weights = humans[WEIGHT_COLUMN]
    return weights if ids and ids <= {str(r) for r in weights.index} else None


