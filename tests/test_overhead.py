"""The rows of pTopoFL's printed costs and formulas (topofl_lib.studies.overhead) and of
Section 4.2's derived numbers (topofl_lib.studies.table1.table1_text_claims)."""

import numpy as np
import pandas as pd
import pytest

from topofl_lib import PTopoFL, make_healthcare
from topofl_lib.results import load_paper_claims
from topofl_lib.studies.overhead import (
    BYTES_PER_NUMBER,
    overhead_claims,
    persistence_exponent,
)
from topofl_lib.studies.table1 import table1_text_claims
from topofl_lib.theory import clustering_stability


@pytest.fixture(scope="module")
def runs():
    models, stability = {}, []
    for seed in range(2):
        est = PTopoFL(n_rounds=2, random_state=seed).fit(make_healthcare(random_state=seed))
        models[seed] = est
        stability.append(clustering_stability(est.descriptors_, est.n_clusters, [0.01],
                                              n_trials=2, random_state=seed).assign(seed=seed))
    return models, pd.concat(stability, ignore_index=True)


def test_every_cost_and_formula_id_gets_a_row(runs):
    values, not_run = overhead_claims(*runs, n_rounds=4)
    ids = {c for c in load_paper_claims().index
           if c.startswith(("ptopofl.comm.", "ptopofl.theory."))} | {"ptopofl.privacy.dim_topo"}
    assert set(values) | set(not_run) == ids and not set(values) & set(not_run)
    assert all(note.startswith("not run: ") for note in not_run.values())


def test_the_values_are_the_formulas_on_the_runs_quantities(runs):
    models, stability = runs
    values, _ = overhead_claims(models, stability, n_rounds=4)
    m, p = 48, models[0].local_models_.shape[1]
    assert values["ptopofl.comm.payload_dim"].tolist() == [m, m]
    # FedAvg sends d weights and a bias; pTopoFL's model also has its 4 augmented features
    assert values["ptopofl.comm.cost_fedavg"].tolist() == [BYTES_PER_NUMBER * (p - 4)] * 2
    # the model every round, the descriptor and its weight once in 4 rounds
    assert values["ptopofl.comm.cost_ptopofl"][0] == pytest.approx(8 * (p + 49 / 4))
    assert values["ptopofl.theory.thm7_mi_ratio"][0] == pytest.approx(m / p)
    # Theorem 5 at its own condition: eps^2 / ((1 - eps)^2 + eps^2), above eps^2
    eps = 2 / 8  # make_healthcare's default: 2 adversarial hospitals of 8
    bound = values["ptopofl.theory.thm5_adv_weight"][0]
    assert bound == pytest.approx(eps**2 / ((1 - eps) ** 2 + eps**2)) and bound > eps**2
    margins = stability.groupby("seed")["margin"].first().to_numpy()
    np.testing.assert_allclose(values["ptopofl.theory.cor4_perturbation_tolerance"],
                               margins / 2)
    assert 0 < values["ptopofl.theory.thm5_fedavg_adv_weight"].min() < 1


def test_persistence_time_grows_faster_than_linearly():
    X = np.random.default_rng(0).normal(size=(400, 3))
    assert persistence_exponent(X, sizes=(50, 100, 200, 400), repeats=1) > 1.0


def test_section_4_2_numbers_come_from_table_1s_rows_and_curves():
    values = {"ptopofl.t1.hc.auc.ptopofl": np.array([0.84, 0.86]),
              "ptopofl.t1.hc.auc.fedprox": np.array([0.83, 0.84])}
    curves = pd.DataFrame([{"method": m, "seed": s, "round": r, "auc": a + 0.01 * s}
                           for m, series in (("pTopoFL", (0.7, 0.8, 0.8)),
                                             ("SCAFFOLD", (0.6, 0.7, 0.65)))
                           for s in range(2) for r, a in enumerate(series, start=1)])
    got, missing = table1_text_claims(values, curves, "hc")
    np.testing.assert_allclose(got["ptopofl.comp.gain_hc_vs_fedprox"], [1.0, 2.0])
    np.testing.assert_allclose(got["ptopofl.comp.ptopofl_auc_band"], [np.sqrt(0.5) * 0.01])
    assert missing == {}
    got, missing = table1_text_claims({}, curves, "bm")
    assert got["ptopofl.comp.scaffold_bm_oscillation_onset"].tolist() == [3.0]
    assert "ptopofl.comp.gain_bm_vs_fedprox" in missing
    flat = curves[curves["method"] == "pTopoFL"].replace({"pTopoFL": "SCAFFOLD"})
    _, missing = table1_text_claims({}, flat, "bm")
    assert "never fell in the 3 rounds" in missing["ptopofl.comp.scaffold_bm_oscillation_onset"]
