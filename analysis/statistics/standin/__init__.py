"""Can the personas stand in for people? The verdict's statistics, in a room of their own.

What each criterion of the verdict rests on: whether a classifier can tell personas from people
(:mod:`.distinguishability`), response style against trait (:mod:`.style_trait`), the known
relations of the scores (:mod:`.relations`), what the personas are worth added to people
(:mod:`.prediction_powered`), twins against the people they were made from (:mod:`.twins`), the
instrument's behaviour in the cohort (:mod:`.fidelity`); the marks decided from intervals
(:mod:`.equivalence`), the scorecard of a questionnaire (:mod:`.scorecard`) and of the other
designs (:mod:`.design_verdict`), and how often its marks are right at a cohort size
(:mod:`.verdict_power`).

Checked module by module: each module's paragraph names its tests (tests/test_scorecard.py,
tests/test_verdict_power.py, tests/test_equivalence.py among them) and the independent computation.

May import: the rest of psyq.analysis.statistics, psyq.analysis.scoring and the psyq.engine rooms
the statistics may read; never psyq.analysis.report.
"""
