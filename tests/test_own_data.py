"""The own-data study (topofl_lib.studies.own_data): the comparison over seeds, the
cluster summaries against known values, and the claim ids of the bundled table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topofl_lib.notebook_params import NOTEBOOKS, notebook_parameters
from topofl_lib.results import claim_rows, load_paper_claims
from topofl_lib.studies.own_data import (
    OWN_DATA_SOURCE,
    association_summary,
    cluster_assignments,
    cluster_association,
    co_clustering,
    method_table,
    own_data_claim_values,
    own_data_comparison,
    own_data_records,
    paired_table,
    partition_counts,
)
from topofl_lib.studies.table1 import TABLE1_VARIANTS


def _records_csv(path) -> str:
    rng = np.random.default_rng(0)
    rows = []
    for k, n in enumerate((50, 70, 40, 60)):
        x = rng.normal(size=n) + 0.3 * k
        y = np.where(x + rng.normal(0, 0.7, size=n) > 0.3 * k, "dead", "alive")
        y[:2], y[2:4] = "dead", "alive"
        rows.append(pd.DataFrame({"site": f"S{k}", "x": x, "z": rng.normal(size=n),
                                  "ward": rng.choice(["a", "b"], size=n), "outcome": y}))
    pd.concat(rows).to_csv(path, index=False)
    return str(path)


def _assignments(clusters: dict[int, list[int]], values: dict[str, list[float]]):
    """Assignments of sites A-D over seeds: ``clusters[seed]`` per site, attributes fixed."""
    sites = ["A", "B", "C", "D"]
    return pd.DataFrame([{"seed": s, "site": site, "cluster": c[i],
                          **{a: v[i] for a, v in values.items()}}
                         for s, c in clusters.items() for i, site in enumerate(sites)])


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    path = _records_csv(tmp_path_factory.mktemp("own") / "wards.csv")
    records = own_data_records(path, "site", "outcome")
    return records, own_data_comparison(records, [0, 1], protocols=("ours",), n_rounds=2,
                                        methods=["pTopoFL", "FedAvg", "Local-only"],
                                        progress=False)


def test_records_of_a_file_with_all_features_and_an_inferred_positive(comparison):
    records, _ = comparison
    assert records.name == "wards" and records.sites == ("S0", "S1", "S2", "S3")
    assert records.feature_names == ("x", "z", "ward=b")
    assert records.info["positive"] == "dead" and records.info["positive_inferred"]


def test_comparison_tables_and_cluster_assignments(comparison):
    records, results = comparison
    assert list(results) == ["ours"]
    table = method_table(results)
    assert table.index.names == ["protocol", "metric", "method"]
    auc = table.xs(("ours", "auc"), level=("protocol", "metric"))
    assert set(auc.index) == {"pTopoFL", "FedAvg", "Local-only"}
    assert (table["n_seeds"] == 2).all()
    paired = paired_table(results)
    assert set(paired.index.get_level_values(0)) == {"ours, auc", "ours, accuracy"}
    assert (paired["family_size"] <= 4).all()
    a = cluster_assignments(results["ours"])
    assert len(a) == 2 * len(records.sites) and set(a["site"]) == set(records.sites)
    sizes = a[a["seed"] == 0].set_index("site")["records"]
    assert sizes.to_dict() == {s: c.n_train for s, c in zip(records.sites, records(0).clients,
                                                            strict=True)}
    assert set(a["cluster"]) <= {0, 1} and a["trust"].between(0, 1).all()


def test_comparison_is_deterministic(comparison):
    records, results = comparison
    again = own_data_comparison(records, [0, 1], protocols=("ours",), n_rounds=2,
                                methods=["pTopoFL", "FedAvg", "Local-only"], progress=False)
    pd.testing.assert_frame_equal(again["ours"].final, results["ours"].final)


def test_co_clustering_and_partitions_known_values():
    a = _assignments({0: [0, 0, 1, 1], 1: [0, 0, 0, 1], 2: [1, 1, 0, 1]},
                     {"records": [1, 2, 3, 4]})
    co = co_clustering(a)
    assert co.loc["A", "B"] == 1.0 and co.loc["C", "D"] == pytest.approx(1 / 3)
    assert co.loc["A", "D"] == pytest.approx(1 / 3) and co.loc["B", "C"] == pytest.approx(1 / 3)
    np.testing.assert_array_equal(np.diag(co), 1.0)
    np.testing.assert_allclose(co.to_numpy(), co.to_numpy().T)
    counts = partition_counts(a)
    assert counts.set_index("partition")["seeds"].to_dict() == {
        "{A, B} {C, D}": 1, "{A, B, C} {D}": 1, "{A, B, D} {C}": 1}


def test_cluster_association_known_values_and_null():
    """Clusters {A, B} {C, D}: sizes 10, 20 | 30, 40 give eta^2 = 0.8, reached by the 8 of
    24 orderings that keep {10, 20} together (p = 1/3); rates split evenly across the
    clusters give eta^2 = 0; the null mean is (M - 1) / (K - 1) = 1/3 either way."""
    a = _assignments({0: [0, 0, 1, 1]}, {"records": [10, 20, 30, 40],
                                         "positive_rate": [0.1, 0.3, 0.1, 0.3]})
    assoc = cluster_association(a).set_index("attribute")
    assert assoc.loc["records", "eta2"] == pytest.approx(0.8)
    assert assoc.loc["records", "p_value"] == pytest.approx(1 / 3)
    assert assoc.loc["positive_rate", "eta2"] == pytest.approx(0.0)
    assert assoc.loc["positive_rate", "p_value"] == pytest.approx(1.0)
    np.testing.assert_allclose(assoc["null_mean"], 1 / 3)
    singleton = cluster_association(_assignments({0: [0, 0, 0, 1]}, {"records": [1, 2, 3, 9]}),
                                    attributes=("records",))
    # mean 3.75: between 3 (2 - 3.75)^2 + (9 - 3.75)^2 = 36.75 of a total 38.75
    assert singleton["eta2"].iloc[0] == pytest.approx(36.75 / 38.75)
    assert singleton["null_mean"].iloc[0] == pytest.approx(1 / 3)
    assert singleton["p_value"].iloc[0] == pytest.approx(0.25)
    together = cluster_association(_assignments({0: [0, 0, 0, 0]}, {"records": [1, 2, 3, 4]}),
                                   attributes=("records",))
    assert np.isnan(together["eta2"].iloc[0])
    with pytest.raises(ValueError, match=r"attributes \['age'\] are not columns"):
        cluster_association(a, attributes=("age",))


def test_cluster_association_does_not_depend_on_cluster_names_or_site_order():
    a = _assignments({0: [0, 0, 1, 1], 1: [0, 1, 1, 1]}, {"records": [5, 9, 2, 7]})
    renamed = a.assign(cluster=1 - a["cluster"]).sample(frac=1.0, random_state=3)
    pd.testing.assert_frame_equal(cluster_association(a, ("records",)),
                                  cluster_association(renamed, ("records",)))


def test_association_summary_excess_and_interval():
    assoc = pd.DataFrame({"seed": [0, 1, 2, 3], "attribute": "records",
                          "eta2": [0.5, 0.7, np.nan, 0.6], "null_mean": 1 / 3,
                          "p_value": [0.5, 0.04, np.nan, 0.3]})
    s = association_summary(assoc).loc["records"]
    assert s["eta2"] == pytest.approx(0.6) and s["excess"] == pytest.approx(0.6 - 1 / 3)
    assert s["n_seeds"] == 3 and s["seeds_p05"] == 1
    assert s["ci_low"] < s["excess"] < s["ci_high"]


def test_claim_ids_of_the_bundled_table(comparison):
    """Every id is in the claims table and carries per-seed values in seed order."""
    _, results = comparison
    a = _assignments({0: [0, 0, 1, 1], 1: [0, 1, 1, 1]},
                     {"records": [5, 9, 2, 7], "positive_rate": [0.1, 0.2, 0.3, 0.4]})
    values = own_data_claim_values(results, cluster_association(a))
    final = results["ours"].final
    expected = final[final["method"] == "Local-only"].sort_values("seed")["auc"].to_numpy()
    np.testing.assert_array_equal(values["topofl.own_data.opt.ours.auc.localonly"], expected)
    assert set(values) >= {"topofl.own_data.opt.ours.acc.ptopofl",
                           "topofl.own_data.opt.cluster.size.eta2",
                           "topofl.own_data.opt.cluster.rate.eta2_null"}
    assert set(values) <= set(load_paper_claims().index)
    assert (claim_rows(values, "quick")["n_seeds"] == 2).all()
    ids = [c for c in load_paper_claims().index if c.startswith("topofl.own_data.")]
    labels = list(TABLE1_VARIANTS["ours"])
    assert len(ids) == 2 * 2 * len(labels) + 4


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"records": "opt.csv"}, TypeError, "records must be FederatedRecords"),
    ({"protocols": ("ours", "ours")}, ValueError, "protocols must be distinct"),
    ({"protocols": ("theirs",)}, ValueError, "unknown protocol 'theirs'"),
    ({"methods": ["pTopoFL", "Krum"]}, ValueError, "methods must be a non-empty list of"),
])
def test_comparison_bad_input(comparison, kwargs, error, message):
    args = {"records": comparison[0], "seeds": [0], "n_rounds": 1, "progress": False,
            **kwargs}
    with pytest.raises(error, match=message):
        own_data_comparison(**args)


def test_cluster_assignments_need_kept_models(comparison):
    from topofl_lib.runner import ComparisonResult

    res = comparison[1]["ours"]
    with pytest.raises(ValueError, match="no fitted 'pTopoFL' models"):
        cluster_assignments(ComparisonResult(res.curves, res.final, {}))


def test_notebook_parameters_of_own_data(tmp_path):
    """The bundled table is the profiles' source; a user's file makes the run custom; a
    features value is "all" or a list of names."""
    assert NOTEBOOKS["own_data"].values("cpu") == NOTEBOOKS["own_data"].values("paper")
    assert NOTEBOOKS["own_data"].values("paper")["n_seeds"] == 20
    cfg = notebook_parameters("own_data", {"output_dir": tmp_path})
    assert cfg.records_path == OWN_DATA_SOURCE and cfg.profile == "quick"
    own = notebook_parameters("own_data", {"records_path": "mine.csv", "features": "all",
                                           "output_dir": tmp_path})
    assert own.profile == "custom" and own.features == "all"
    with pytest.raises(ValueError, match="features: input should be 'all', got 'some'; "
                                         "features: input should be a valid list"):
        notebook_parameters("own_data", {"features": "some", "output_dir": tmp_path})
    with pytest.raises(TypeError, match="site: input should be a valid string, got 3"):
        notebook_parameters("own_data", {"site": 3, "output_dir": tmp_path})
    with pytest.raises(ValueError, match=r"methods: must contain \['pTopoFL'\]"):
        notebook_parameters("own_data", {"methods": ["FedAvg"], "output_dir": tmp_path})


def test_notebook_runs_on_a_users_csv(tmp_path, monkeypatch):
    """The notebook takes a user's file and columns through papermill: a numeric 0/1 label
    with the positive class inferred, every other column a feature, missing values
    imputed; it writes its figures under the file's name and no claim row."""
    import os
    from pathlib import Path

    import nbformat
    import papermill as pm

    repo = Path(__file__).resolve().parents[1]
    path = _records_csv(tmp_path / "wards.csv")
    frame = pd.read_csv(path)
    frame.loc[[3, 50], "z"] = np.nan
    frame.assign(outcome=(frame["outcome"] == "dead").astype(int)).to_csv(path, index=False)
    out = tmp_path / "out"
    monkeypatch.setenv("TOPOFL_OUTPUT_DIR", str(out))
    monkeypatch.setenv("TOPOFL_CACHE_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(repo), *filter(None, [os.environ.get("PYTHONPATH")])]))
    executed = tmp_path / "executed.ipynb"
    pm.execute_notebook(str(repo / "notebooks" / "own_data.ipynb"), str(executed),
                        parameters={"records_path": path, "site": "site", "label": "outcome",
                                    "positive": "auto", "features": "all", "n_seeds": 2,
                                    "protocols": ["ours"]},
                        cwd=str(repo / "notebooks"), progress_bar=False)
    text = "".join(o.get("text", "") for c in nbformat.read(executed, as_version=4).cells
                   if c.cell_type == "code" for o in c.outputs)
    assert "wards: 4 sites, 3 encoded features, 2 seeds, 15 rounds" in text
    assert (out / "figures" / "own_data_wards_co_clustering.html").exists()
    claims = pd.read_csv(out / "results" / "claims" / "own_data.csv")
    assert claims.empty and list(claims.columns)[:2] == ["id", "measured_mean"]
