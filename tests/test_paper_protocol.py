"""Tests of the paper's released-code protocol: generators, evaluation options, Local-only,
the v1.0.0 SCAFFOLD rule, the lbfgs solver and the Table 1 runner."""

import copy

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from topofl_lib.data import (
    Client,
    FederatedScenario,
    make_benchmark,
    make_healthcare,
    make_scenario,
    paper_benchmark,
    paper_healthcare,
    standardise_clients,
)
from topofl_lib.experiments import (
    PAPER_ROW_OF,
    ComparisonResult,
    paper_gaps,
    robustness_sweep,
    table1,
    table1_comparison,
)
from topofl_lib.federated import (
    FedAvg,
    FedProx,
    LocalOnly,
    PFedMe,
    PTopoFL,
    Scaffold,
    roc_auc,
)
from topofl_lib.results import load_paper_claims

SEEDS = [0, 1, 42]


def _all_records(c):
    return np.vstack([c.X_train, c.X_test]), np.r_[c.y_train, c.y_test]


def _sorted_records(c):
    X, y = _all_records(c)
    rows = np.column_stack([X, y])
    return rows[np.lexsort(rows.T[::-1])]


# -- generators ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_paper_healthcare_sizes_rates_and_split(seed):
    """8 hospitals, sizes in [60, 250), rates a permutation of linspace(0.10, 0.45, 8),
    round(rate * n) positives, test = max(30, round(0.2 n)), adversaries 1 and 5."""
    honest = make_healthcare(n_adversarial=0, random_state=seed, protocol="paper")
    scen = make_healthcare(random_state=seed, protocol="paper")
    assert scen.name == "healthcare" and len(scen.clients) == 8
    assert scen.meta["adversarial"] == [1, 5]
    assert [c.adversarial for c in scen.clients] == [k in (1, 5) for k in range(8)]
    np.testing.assert_allclose(np.sort(scen.meta["rates"]), np.linspace(0.10, 0.45, 8))
    for k, c in enumerate(honest.clients):
        n = c.n_train + c.y_test.size
        assert 60 <= n < 250 and n == scen.meta["sizes"][k]
        assert c.y_test.size == max(30, round(0.2 * n))
        assert c.X_train.shape[1] == 20
        assert int(_all_records(c)[1].sum()) == round(scen.meta["rates"][k] * n)


@pytest.mark.parametrize("seed", SEEDS)
def test_paper_healthcare_flips_30_percent_of_all_labels(seed):
    """The adversaries' records are the honest version's, with exactly round(0.3 n) of
    all their labels flipped (test labels included); other hospitals are unchanged."""
    honest = make_healthcare(n_adversarial=0, random_state=seed, protocol="paper")
    scen = make_healthcare(random_state=seed, protocol="paper")
    for k, (a, h) in enumerate(zip(scen.clients, honest.clients, strict=True)):
        Xa, ya = _all_records(a)
        Xh, yh = _all_records(h)
        np.testing.assert_array_equal(Xa, Xh)
        np.testing.assert_array_equal(a.X_test, h.X_test)
        flipped = int((ya != yh).sum())
        assert flipped == (round(0.3 * ya.size) if k in (1, 5) else 0)
        if k in (1, 5):
            assert np.any(a.y_test != h.y_test)


def test_paper_healthcare_records_follow_the_shift_and_scale_model():
    """Positives are x * scale + shift, negatives x * scale + 0.3 * shift of pooled
    records: with shift 0 and scale 1 every record is a pooled one of its class."""
    from sklearn.datasets import make_classification

    scen = paper_healthcare(n_adversarial=0, shift_sd=0.0, scale_range=(1.0, 1.0),
                            random_state=7)
    X_pool, y_pool = make_classification(n_samples=10_000, n_features=20, n_informative=10,
                                         n_redundant=4, flip_y=0.02, class_sep=1.0,
                                         random_state=7)
    index = {tuple(np.round(x, 10)): y for x, y in zip(X_pool, y_pool, strict=True)}
    for c in scen.clients:
        X, y = _all_records(c)
        assert all(index[tuple(np.round(x, 10))] == t for x, t in zip(X, y, strict=True))


@pytest.mark.parametrize("seed", SEEDS)
def test_paper_benchmark_sizes_fractions_and_split(seed):
    """10 clients of 500 records, 400 training and 100 test, round(f * 500) positives with
    f in [0.1, 0.9], no adversaries."""
    scen = make_benchmark(random_state=seed, protocol="paper")
    assert scen.name == "benchmark" and len(scen.clients) == 10
    assert not any(c.adversarial for c in scen.clients)
    for k, c in enumerate(scen.clients):
        f = scen.meta["fractions"][k]
        assert 0.1 <= f <= 0.9
        assert (c.n_train, c.y_test.size, c.X_train.shape[1]) == (400, 100, 20)
        assert int(_all_records(c)[1].sum()) == round(f * 500)


@pytest.mark.parametrize("maker", [make_healthcare, make_benchmark])
def test_paper_generators_are_deterministic(maker):
    """The same seed gives the same arrays; another seed other ones."""
    a, b = (maker(random_state=3, protocol="paper") for _ in range(2))
    c = maker(random_state=4, protocol="paper")
    for ca, cb in zip(a.clients, b.clients, strict=True):
        for f in ("X_train", "y_train", "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(ca, f), getattr(cb, f))
    assert not np.array_equal(a.clients[0].X_train[:5], c.clients[0].X_train[:5])


def test_make_scenario_passes_the_protocol_and_ours_stays_default():
    """make_scenario(protocol=...) builds the paper's scenario; the default is ours, whose
    scenarios carry no evaluation defaults."""
    paper = make_scenario("healthcare", random_state=0, protocol="paper")
    ours = make_scenario("healthcare", random_state=0)
    assert paper.meta["protocol"] == "paper"
    assert paper.meta["evaluation"] == {"evaluate_on": "all", "standardise": True}
    assert "evaluation" not in ours.meta
    explicit = make_healthcare(random_state=0, protocol="ours")
    for a, b in zip(ours.clients, explicit.clients, strict=True):
        np.testing.assert_array_equal(a.X_train, b.X_train)


@pytest.mark.parametrize(("make", "paper"), [(make_benchmark, paper_benchmark),
                                             (make_healthcare, paper_healthcare)])
def test_too_few_features_name_the_split_not_only_the_default(make, paper):
    """n_features=5 with n_informative=3 used to be refused as "n_redundant must be <= 2",
    a parameter the caller of make_* never passed (the protocol's default is 4)."""
    with pytest.raises(ValueError, match=r"n_informative \+ n_redundant must be <= "
                                         r"n_features, got 3 \+ 4 > 5 \(the paper's"):
        make(protocol="paper", n_features=5, n_informative=3, random_state=0)
    scenario = paper(n_features=5, n_informative=3, n_redundant=2, random_state=0)
    assert scenario.clients[0].X_train.shape[1] == 5


def test_protocol_errors():
    with pytest.raises(ValueError, match="protocol"):
        make_healthcare(random_state=0, protocol="theirs")
    with pytest.raises(ValueError, match="signal"):
        make_healthcare(signal=2.0, random_state=0, protocol="paper")
    with pytest.raises(ValueError, match="continual"):
        make_scenario("continual", random_state=0, protocol="paper")
    with pytest.raises(ValueError, match="n_adversarial"):
        paper_healthcare(n_adversarial=8)
    with pytest.raises(ValueError, match="size_range"):
        paper_healthcare(size_range=(20, 40))


# -- evaluation options ----------------------------------------------------------------


def test_standardise_clients_uses_each_clients_training_statistics():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    X, Xt = rng.normal(3.0, 2.0, size=(40, 3)), rng.normal(size=(10, 3))
    scen = FederatedScenario("s", [Client(X, y, Xt, y[15:25])], {"a": 1})
    out = standardise_clients(scen).clients[0]
    np.testing.assert_allclose(out.X_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(out.X_train.std(axis=0), 1.0)
    np.testing.assert_allclose(out.X_test, (Xt - X.mean(axis=0)) / X.std(axis=0))
    np.testing.assert_array_equal(scen.clients[0].X_train, X)  # input untouched


@pytest.fixture(scope="module")
def paper_hc():
    return make_healthcare(random_state=0, protocol="paper")


def test_paper_scenario_sets_the_evaluation_defaults(paper_hc):
    """Under the paper's protocol the mean covers all clients; evaluate_on overrides it."""
    est = FedAvg(n_rounds=2, random_state=0).fit(paper_hc)
    assert est.evaluation_ == {"evaluate_on": "all", "standardise": True}
    np.testing.assert_allclose(est.history_["auc"],
                               np.nanmean(est.history_["client_auc"], axis=1))
    honest = FedAvg(n_rounds=2, random_state=0, evaluate_on="honest").fit(paper_hc)
    np.testing.assert_array_equal(honest.history_["client_auc"], est.history_["client_auc"])
    np.testing.assert_allclose(honest.history_["auc"],
                               np.nanmean(est.history_["client_auc"][:, paper_hc.honest], axis=1))
    assert not np.allclose(honest.history_["auc"], est.history_["auc"])


@pytest.mark.parametrize("cls", [FedAvg, PTopoFL])
def test_standardise_option_equals_fitting_on_standardised_data(cls, paper_hc):
    """standardise=True is exactly fitting on standardise_clients(scenario)."""
    a = cls(n_rounds=2, random_state=0).fit(paper_hc)
    b = cls(n_rounds=2, random_state=0, standardise=False).fit(standardise_clients(paper_hc))
    np.testing.assert_array_equal(a.history_["client_auc"], b.history_["client_auc"])
    c = cls(n_rounds=2, random_state=0, standardise=False).fit(paper_hc)
    assert not np.array_equal(a.history_["client_auc"], c.history_["client_auc"])


def test_predict_proba_standardises_raw_features(paper_hc):
    """predict_proba on a client's raw test features reproduces its recorded AUC."""
    est = PTopoFL(n_rounds=2, solver="lbfgs", random_state=0).fit(paper_hc)
    for k in (0, 1):
        c = paper_hc.clients[k]
        assert roc_auc(c.y_test, est.predict_proba(c.X_test, client=k)) == \
            est.history_["client_auc"][-1, k]


def test_evaluation_option_errors(paper_hc):
    with pytest.raises(ValueError, match="evaluate_on"):
        FedAvg(n_rounds=1, evaluate_on="everyone").fit(paper_hc)
    with pytest.raises(TypeError, match="standardise"):
        FedAvg(n_rounds=1, standardise="yes").fit(paper_hc)
    with pytest.raises(ValueError, match="solver"):
        FedAvg(n_rounds=1, solver="newton").fit(paper_hc)
    with pytest.raises(ValueError, match="control_update"):
        Scaffold(n_rounds=1, control_update="sum").fit(paper_hc)


# -- solvers ---------------------------------------------------------------------------


def _local_optimum(c, C=1.0):
    m = LogisticRegression(C=C, max_iter=1000).fit(c.X_train, c.y_train)
    return np.r_[m.coef_.ravel(), m.intercept_]


def test_lbfgs_fedavg_is_one_shot_average_of_local_optima(paper_hc):
    """With solver='lbfgs' every round gives the weighted mean of the local optima, so the
    curve is flat."""
    est = FedAvg(n_rounds=3, solver="lbfgs", random_state=0).fit(paper_hc)
    data = standardise_clients(paper_hc).clients
    optima = np.array([_local_optimum(c) for c in data])
    n = np.array([c.n_train for c in data], dtype=float)
    np.testing.assert_allclose(est.coef_, n @ optima / n.sum(), rtol=1e-6, atol=1e-8)
    assert np.all(est.history_["auc"] == est.history_["auc"][0])


def test_full_batch_equals_a_batch_larger_than_every_client(paper_hc):
    """batch_size=None is one gradient step on all the client's data per epoch."""
    a = FedProx(n_rounds=2, lr=0.05, local_epochs=30, batch_size=None, random_state=0)
    b = FedProx(n_rounds=2, lr=0.05, local_epochs=30, batch_size=10**6, random_state=0)
    np.testing.assert_array_equal(a.fit(paper_hc).coef_, b.fit(paper_hc).coef_)
    p = PFedMe(n_rounds=2, lr=0.01, personal_lr=0.01, inner_steps=20, local_epochs=1,
               batch_size=None, random_state=0).fit(paper_hc)
    assert np.all(np.isfinite(p.personal_))


# -- Local-only ------------------------------------------------------------------------


def test_local_only_lbfgs_deploys_each_clients_own_optimum(paper_hc):
    est = LocalOnly(n_rounds=2, solver="lbfgs", random_state=0).fit(paper_hc)
    for k, c in enumerate(standardise_clients(paper_hc).clients):
        np.testing.assert_allclose(est.client_models_[k], _local_optimum(c), rtol=1e-6,
                                   atol=1e-8)


def test_local_only_never_aggregates(paper_hc):
    """Changing one client's data changes no other client's model or metrics."""
    clients = list(paper_hc.clients)
    c0 = clients[0]
    clients[0] = Client(c0.X_train + 5.0, 1 - c0.y_train, c0.X_test, c0.y_test)
    other = FederatedScenario(paper_hc.name, clients, paper_hc.meta)
    kw = dict(n_rounds=3, random_state=0, rng_streams="per_client")
    a, b = LocalOnly(**kw).fit(paper_hc), LocalOnly(**kw).fit(other)
    np.testing.assert_array_equal(a.client_models_[1:], b.client_models_[1:])
    np.testing.assert_array_equal(a.history_["client_auc"][:, 1:], b.history_["client_auc"][:, 1:])
    assert not np.array_equal(a.client_models_[0], b.client_models_[0])
    # FedAvg with the same streams does propagate the change to everyone
    f, g = FedAvg(**kw).fit(paper_hc), FedAvg(**kw).fit(other)
    assert not np.array_equal(f.history_["client_auc"][:, 1:], g.history_["client_auc"][:, 1:])


def test_local_only_ignores_model_poisoning():
    scen = make_healthcare(attack="sign_flip", random_state=0, protocol="paper")
    honest = make_healthcare(n_adversarial=0, random_state=0, protocol="paper")
    a = LocalOnly(n_rounds=2, random_state=0).fit(scen)
    b = LocalOnly(n_rounds=2, random_state=0).fit(honest)
    np.testing.assert_array_equal(a.client_models_, b.client_models_)


# -- SCAFFOLD server rule --------------------------------------------------------------


def test_scaffold_v100_rule_differs_only_in_the_server_control_update(paper_hc):
    """From the same state, both rules give the same client steps, client variates and
    global model; the server variate is c + mean(c_k+ - c_k) vs c + sum(c_k+)."""
    est = Scaffold(n_rounds=2, lr=0.05, local_epochs=5, batch_size=None, random_state=0)
    est.fit(paper_hc)
    full = copy.deepcopy(est).set_params(control_update="add_full")
    c, old = est.control_.copy(), est.client_controls_.copy()
    est._round(2)
    full._round(2)
    np.testing.assert_array_equal(est.coef_, full.coef_)
    np.testing.assert_array_equal(est.client_controls_, full.client_controls_)
    new = est.client_controls_
    np.testing.assert_allclose(est.control_, c + (new - old).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(full.control_, c + new.sum(axis=0), rtol=1e-12)
    assert not np.allclose(est.control_, full.control_)


def test_scaffold_v100_rule_matches_default_after_one_round(paper_hc):
    """Round 1 starts from zero variates, so the model is the same under both rules."""
    a = Scaffold(n_rounds=1, random_state=0).fit(paper_hc)
    b = Scaffold(n_rounds=1, control_update="add_full", random_state=0).fit(paper_hc)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(b.control_, len(paper_hc.clients) * a.control_)


# -- Table 1 runner --------------------------------------------------------------------


def test_table1_comparison_is_deterministic_and_labels_paper_rows():
    kw = dict(seeds=[0, 1], methods=["FedAvg", "Local-only", "SCAFFOLD (v1.0.0 rule)"],
              n_rounds=2, progress=False)
    a = table1_comparison("benchmark", **kw)
    b = table1_comparison("benchmark", **kw)
    pd.testing.assert_frame_equal(a.final, b.final)
    assert set(a.final["protocol"]) == {"paper"}
    single = table1_comparison("benchmark", seeds=[42], methods=kw["methods"], n_rounds=2,
                               progress=False)
    t = table1(a, single_run=single)
    paper = load_paper_claims()["value"]
    assert t.loc[("auc", "Local-only"), "paper"] == paper["ptopofl.t1.bm.auc.fedavg"]
    assert t.loc[("auc", "Local-only"), "paper row"] == PAPER_ROW_OF["Local-only"]
    assert t.loc[("accuracy", "SCAFFOLD (v1.0.0 rule)"), "paper"] == \
        paper["ptopofl.t1.bm.acc.scaffold"]
    assert t.loc[("auc", "FedAvg"), "seed 42"] == single.final.set_index("method").loc[
        "FedAvg", "auc"]
    with pytest.raises(ValueError, match="methods"):
        table1_comparison("benchmark", methods=["FedNova"], seeds=[0], progress=False)
    with pytest.raises(ValueError, match="scenarios"):
        table1_comparison("continual", seeds=[0], progress=False)


def test_paper_gaps_known_values():
    """paper_gaps on a hand-made result: the paper's gap, our paired mean and its z."""
    paper = load_paper_claims()["value"]
    d = np.array([0.01, 0.03, 0.02, 0.04])
    final = pd.DataFrame({
        "scenario": "healthcare", "seed": np.tile(np.arange(4), 3),
        "method": np.repeat(["pTopoFL", "Local-only", "Median"], 4),
        "auc": np.r_[0.8 + d, np.full(4, 0.8), np.full(4, 0.7)], "accuracy": 0.7,
        "convergence_round": 1})
    g = paper_gaps(ComparisonResult(pd.DataFrame(), final, {}), metric="auc")
    assert list(g.index) == ["Local-only"]  # Median has no paper row
    gap = paper["ptopofl.t1.hc.auc.ptopofl"] - paper["ptopofl.t1.hc.auc.fedavg"]
    assert g.loc["Local-only", "paper_gap"] == pytest.approx(gap)
    assert g.loc["Local-only", "mean_diff"] == pytest.approx(d.mean())
    assert g.loc["Local-only", "z"] == pytest.approx((gap - d.mean()) / d.std(ddof=1))
    with pytest.raises(ValueError, match="auc"):
        paper_gaps(ComparisonResult(pd.DataFrame(), final, {}), metric="convergence_round")


def test_robustness_sweep_under_the_paper_protocol():
    """protocol='paper': the paper's generator (adversaries flip 30% of all labels and are
    scored), Table 1 labels with the paper's solvers, tau for pTopoFL, a protocol column."""
    res, t5 = robustness_sweep([0.0, 0.5], [0], methods=["pTopoFL", "Local-only"],
                               n_clients=4, n_rounds=2, tau=1.5, progress=False,
                               protocol="paper")
    assert set(res.final["protocol"]) == {"paper"} and set(t5["protocol"]) == {"paper"}
    assert res.final.groupby("rate")["method"].apply(sorted).to_dict() == {
        0.0: ["Local-only", "pTopoFL"], 0.5: ["Local-only", "pTopoFL"]}
    assert t5.set_index("rate").loc[0.5, "eps"] == 0.5
    # Local-only under the paper's evaluation equals its own fit on the paper's scenario
    scen = make_healthcare(n_clients=4, n_adversarial=2, random_state=0, protocol="paper")
    own = LocalOnly(n_rounds=2, solver="lbfgs", random_state=0).fit(scen)
    got = res.final.set_index(["rate", "method"]).loc[(0.5, "Local-only"), "auc"]
    assert got == own.history_["auc"][-1]
    with pytest.raises(ValueError, match="with protocol='paper', methods must be"):
        robustness_sweep([0.5], [0], methods=["Krum"], protocol="paper", progress=False)
