"""Measurement invariance against lavaan 0.6.14 and semTools 0.5.6 (R 4.2.2, Debian's packages) on the
shipped Briganti et al. (2018) IRI answers of 1,973 people by gender.

tests/data/lavaan/invariance.R wrote tests/data/lavaan/invariance_out.json (its printed output beside
it); these tests compare psyq with the stored output, so the suite does not need R. The slow test at
the end reruns the script when Rscript with lavaan is installed and checks the stored file is what
lavaan prints today.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from psyq.analysis.statistics.invariance import measurement_invariance
from psyq.analysis.statistics.invariance.continuous import ContinuousModel, Sample, Structure
from psyq.analysis.statistics.invariance.layout import Layout
from psyq.analysis.statistics.invariance.sequence import score_tests

ROOT = Path(__file__).resolve().parents[1]
STORED = ROOT / "tests" / "data" / "lavaan" / "invariance_out.json"
LAVAAN = json.loads(STORED.read_text())
PEOPLE = pd.read_csv(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv")
SUBSCALES = LAVAAN["data"]["subscales"]
# lavaan's fitMeasures name -> psyq's column.
CONTINUOUS = {"chisq": "chi2", "df": "df", "cfi": "cfi", "tli": "tli", "rmsea": "rmsea", "srmr": "srmr"}
ROBUST = {**CONTINUOUS, "chisq.scaled": "chi2_scaled", "chisq.scaling.factor": "scaling", "cfi.scaled": "cfi_scaled",
          "tli.scaled": "tli_scaled", "rmsea.scaled": "rmsea_scaled", "cfi.robust": "cfi_robust",
          "tli.robust": "tli_robust", "rmsea.robust": "rmsea_robust"}


def _fit(subscale: str, estimator: str, partial: bool = True) -> pd.DataFrame:
    return measurement_invariance(PEOPLE, {subscale: SUBSCALES[subscale]}, "gender", estimator=estimator,
                                  partial=partial)


def _agree(ours: pd.Series, theirs: dict, names: dict[str, str], label: str) -> None:
    assert set(names) & set(theirs), label
    for r_name, column in ((r, c) for r, c in names.items() if r in theirs):
        # three decimals: χ² to 1e-3 relative (hundreds), indices to 1e-3 absolute
        tolerance = 1e-3 * max(1.0, abs(theirs[r_name])) if r_name.startswith("chisq") else 1e-3
        assert ours[column] == pytest.approx(theirs[r_name], abs=tolerance), f"{label} {r_name}"


@pytest.mark.parametrize("subscale", list(SUBSCALES))
def test_ml_steps_equal_lavaan(subscale):
    ours = _fit(subscale, "ML", partial=False).set_index("step")
    for step in LAVAAN["ml"][subscale]["steps"]:
        _agree(ours.loc[step["step"]], step["fit"], CONTINUOUS, f"ML {subscale} {step['step']}")


@pytest.mark.parametrize("subscale", list(SUBSCALES))
def test_mlr_steps_scaled_and_robust_equal_lavaan(subscale):
    """Yuan–Bentler (Mplus) scaled χ², its scaling factor, scaled and robust CFI/TLI/RMSEA; the
    Satorra–Bentler (2001) scaled differences of lavTestLRT."""
    ours = _fit(subscale, "MLR", partial=False).set_index("step")
    print("\n" + ours[list(ROBUST.values())].round(4).to_string())
    for step in LAVAAN["mlr"][subscale]["steps"]:
        _agree(ours.loc[step["step"]], step["fit"], ROBUST, f"MLR {subscale} {step['step']}")
    for test in LAVAAN["mlr"][subscale]["lrt"]:
        assert test["method"] == "satorra.bentler.2001"
        row = ours.loc[test["to"]]
        assert row["delta_df"] == test["df_diff"]
        assert row["delta_chi2"] == pytest.approx(test["chisq_diff"], rel=1e-4)


@pytest.mark.parametrize("subscale", list(SUBSCALES))
def test_score_tests_of_the_scalar_model_equal_lavtestscore(subscale):
    """lavTestScore(fit)$uni of each subscale's ML scalar model: every equality (the loadings but the
    marker's, all intercepts, the marker's included)."""
    items = SUBSCALES[subscale]
    samples = [Sample(g, rows[items].to_numpy(dtype=float)) for g, rows in PEOPLE.groupby("gender", sort=False)]
    structure = Structure(np.zeros(len(items), dtype=int), np.arange(len(items)) == 0)
    model = ContinuousModel(samples, structure, items, [subscale], "ML")
    equal = ("loadings", "intercepts")
    ours = score_tests(model, model.fit(Layout.build(model.free(equal), equal))).set_index("parameter")
    theirs = LAVAAN["ml"][subscale]["scalar_lavTestScore"]["uni"]
    assert len(ours) == len(theirs)
    for row in theirs:
        assert ours.loc[row["partial"], "x2"] == pytest.approx(row["X2"], abs=1e-3, rel=1e-4), row["partial"]
    # The step's own table, where the search ran (FS), is the same computation.
    if subscale == "FS":
        first = _fit(subscale, "ML").attrs["score_tests"].query("iteration == 1").set_index("parameter")
        assert first["x2"].to_dict() == pytest.approx(ours["x2"].to_dict(), rel=1e-6)


def test_partial_scalar_of_fs_releases_what_the_r_emulation_releases():
    """invariance.R emulates the release rule in R (largest lavTestScore statistic first, refit, Chen's
    rule against the metric model): FS releases davi5's intercept, after which partial scalar holds;
    the latent mean of the men under that model, its SE, CI and d."""
    fit = _fit("FS", "ML")
    reference = LAVAAN["partial_FS"]
    assert reference["final_state"] == "partial scalar holds after releasing davi5~1"
    partial = fit.set_index("step").loc["partial scalar"]
    assert partial["released"] == ", ".join(reference["final_group.partial"])
    assert "partial invariance holds" in partial["note"]
    _agree(partial, reference["final_model"]["fit"], CONTINUOUS, "FS partial scalar")
    released = fit.attrs["score_tests"].query("released")
    assert released["parameter"].tolist() == [it["released"] for it in reference["iterations"]]
    assert released["x2"].tolist() == pytest.approx([it["X2"] for it in reference["iterations"]], rel=1e-4)
    means = fit.attrs["latent_means"].iloc[0]
    theirs = reference["final_model"]
    assert (means["group"], means["reference"], means["step"]) == ("M", "F", "partial scalar")
    assert means["estimate"] == pytest.approx(theirs["latent_mean_group2"]["est"], abs=1e-4)
    assert means["se"] == pytest.approx(theirs["latent_mean_group2"]["se"], abs=1e-4)
    assert means["ci_low"] == pytest.approx(theirs["latent_mean_group2"]["ci.lower"], abs=1e-4)
    assert means["d"] == pytest.approx(theirs["d_latent"], abs=1e-3)


def test_other_subscales_hold_scalar_invariance_and_release_nothing():
    """PT, EC and PD pass Chen's rule at every step in lavaan's figures (the R script's chen_* entries):
    nothing is released and the latent means come from the full scalar model."""
    for subscale in ("PT", "EC", "PD"):
        assert LAVAAN["ml"][subscale]["chen_scalar_vs_metric"]["holds"]
        fit = _fit(subscale, "ML")
        assert list(fit["step"]) == ["configural", "metric", "scalar"]
        assert fit.attrs["score_tests"].empty
        assert fit.attrs["latent_means"].loc[0, "step"] == "scalar"


def test_mlr_latent_mean_and_robust_se_equal_lavaan():
    """The men's FS latent mean under full scalar invariance (MLR): lavaan's estimate and its
    Huber–White (robust.huber.white) standard error."""
    means = _fit("FS", "MLR", partial=False).attrs["latent_means"].iloc[0]
    theirs = LAVAAN["mlr"]["FS"]["scalar_latent_mean_group2"]
    assert means["estimate"] == pytest.approx(theirs["est"], abs=1e-4)
    assert means["se"] == pytest.approx(theirs["se"], abs=1e-4)



@pytest.mark.parametrize("subscale", list(SUBSCALES))
def test_robust_rmsea_interval_equals_lavaan(subscale):
    """lavaan's rmsea.ci.lower.robust / rmsea.ci.upper.robust of every MLR step (its 90 % interval): from
    the stored ML χ², df and scaling factor c, fit_measures.rmsea_interval(χ²/c, df, N, G, c) at its default
    level. A 95 % interval differs from lavaan's by about .002."""
    from psyq.analysis.statistics.invariance.fit_measures import rmsea_interval

    n = LAVAAN["data"]["n"]
    assert n == len(PEOPLE)
    for step in LAVAAN["mlr"][subscale]["steps"]:
        theirs = step["fit"]
        c = theirs["chisq.scaling.factor"]
        low, high = rmsea_interval(theirs["chisq"] / c, int(theirs["df"]), n, 2, c)
        assert low == pytest.approx(theirs["rmsea.ci.lower.robust"], abs=1e-6), step["step"]
        assert high == pytest.approx(theirs["rmsea.ci.upper.robust"], abs=1e-6), step["step"]


def test_mlr_latent_mean_z_p_and_ci_equal_lavaan():
    """The men's PT latent mean relative to the women's under full scalar invariance (MLR): lavaan's
    parameterEstimates z, two-sided p (.0114; one-sided would be .0057) and 95 % CI."""
    means = _fit("PT", "MLR", partial=False).attrs["latent_means"].iloc[0]
    theirs = LAVAAN["mlr"]["PT"]["scalar_latent_mean_group2"]
    assert means["estimate"] == pytest.approx(theirs["est"], abs=1e-4)
    assert means["se"] == pytest.approx(theirs["se"], abs=1e-4)
    assert means["z"] == pytest.approx(theirs["z"], abs=1e-2)
    assert means["p"] == pytest.approx(theirs["pvalue"], rel=1e-2)
    assert (means["ci_low"], means["ci_high"]) == pytest.approx((theirs["ci.lower"], theirs["ci.upper"]), abs=1e-4)


@pytest.mark.slow
def test_stored_lavaan_output_is_what_lavaan_prints(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed (apt-get install r-base-core r-cran-lavaan r-cran-semtools)")
    if subprocess.run(["Rscript", "-e", "library(lavaan); library(semTools)"], capture_output=True).returncode:
        pytest.skip("R's lavaan or semTools is not installed")
    copy = tmp_path / "repo"
    (copy / "tests" / "data" / "lavaan").mkdir(parents=True)
    (copy / "instruments" / "data").mkdir(parents=True)
    shutil.copy(ROOT / "instruments" / "data" / "iri_briganti2018_keyed.csv", copy / "instruments" / "data")
    shutil.copy(ROOT / "tests" / "data" / "lavaan" / "invariance.R", copy / "tests" / "data" / "lavaan")
    subprocess.run(["Rscript", "tests/data/lavaan/invariance.R", "."], cwd=copy, check=True, capture_output=True)
    fresh = json.loads((copy / "tests" / "data" / "lavaan" / "invariance_out.json").read_text())
    assert fresh["versions"] == LAVAAN["versions"]
    for estimator in ("ml", "mlr", "wlsmv"):
        for subscale in SUBSCALES:
            for old, new in zip(LAVAAN[estimator][subscale]["steps"], fresh[estimator][subscale]["steps"]):
                assert new["fit"] == pytest.approx(old["fit"], rel=1e-6, abs=1e-8)
    assert fresh["partial_FS"]["final_state"] == LAVAAN["partial_FS"]["final_state"]
