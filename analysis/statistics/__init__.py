"""Statistics: pure functions from scores and answers to tidy frames (pingouin's shape).

One function per statistic, each returning a DataFrame (or a number) and naming in its docstring
the R function or published result it is checked against; none writes report text. Comparing with
people: norms (:mod:`.norms`), people's own data (:mod:`.human_comparison`, :mod:`.validity`,
:mod:`.weighting`), the same construct (:mod:`.invariance`, :mod:`.irt`, :mod:`.dif`; ordinal
items' thresholds, polychoric correlations and their asymptotic covariance, the first step of
ordinal factor analysis: :mod:`.polychoric`); the instrument in the cohort (:mod:`.reliability`,
:mod:`.effects`); change after situations (:mod:`.change`); ratings and their
raters (:mod:`.agreement`, :mod:`.rater_agreement`, :mod:`.response_comparison`, :mod:`.robustness`,
:mod:`.prompt_sensitivity`); corrections for multiple tests and the t quantile and interval of a
mean, shared by the others (:mod:`.multiple_testing`, :mod:`.intervals`). Can the personas stand in for people? The verdict's statistics have a
room of their own, :mod:`.standin`.

May import: psyq.analysis.scoring and the psyq.engine rooms that read runs and files (files,
store, trials, kinds, design, results, judging); never psyq.analysis.report.

Checked module by module: each module's own docstring has a paragraph naming its tests and the
independent computation (R function, published result, other library or hand formula) they compare
it with; tests/test_statistics_docs.py checks that every module has one.
"""
