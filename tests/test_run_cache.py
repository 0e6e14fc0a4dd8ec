"""Resumable runs: the run store, its keys, interrupted runs, parallel workers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import topofl_lib.experiments as experiments
import topofl_lib.runner.tasks as tasks
from topofl_lib.data.scenarios import Client
from topofl_lib.deep import TorchModel, deep_variants, load_image_dataset
from topofl_lib.experiments import run_comparison
from topofl_lib.run_cache import DamagedRunError, RunCache, default_cache_dir, fingerprint
from topofl_lib.runner import plan_comparison

TINY = {"seeds": range(2), "methods": ["FedAvg", "FedProx"], "n_rounds": 2,
        "scenario_params": {"n_clients": 4, "n_adversarial": 1}, "progress": False}


class _Counting:
    """make_method that counts fits and fails on the ``fail_at``-th one."""

    def __init__(self, fail_at=None):
        self.calls, self.fail_at = 0, fail_at

    def __call__(self, name, **params):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("interrupted")
        return self.real(name, **params)

    real = staticmethod(tasks.make_method)


def _same(a, b):
    pd.testing.assert_frame_equal(a.curves, b.curves, check_exact=True)
    pd.testing.assert_frame_equal(a.final, b.final, check_exact=True)


# -- keys ------------------------------------------------------------------------------
def test_fingerprint_sees_every_value():
    x = np.arange(6.0).reshape(2, 3)
    base = fingerprint(x, {"lr": 0.01, "model": TorchModel(momentum=0.9)}, 3)
    y = x.copy()
    y[1, 2] = np.nextafter(y[1, 2], 10)
    changed = [
        fingerprint(y, {"lr": 0.01, "model": TorchModel(momentum=0.9)}, 3),  # one ulp
        fingerprint(x.astype(np.float32), {"lr": 0.01, "model": TorchModel(momentum=0.9)}, 3),
        fingerprint(x.reshape(3, 2), {"lr": 0.01, "model": TorchModel(momentum=0.9)}, 3),
        fingerprint(x, {"lr": 0.02, "model": TorchModel(momentum=0.9)}, 3),
        fingerprint(x, {"lr": 0.01, "model": TorchModel(momentum=0.5)}, 3),  # nested
        fingerprint(x, {"lr": 0.01, "model": TorchModel(momentum=0.9)}, 3.0),  # int/float
    ]
    assert len({base, *changed}) == 1 + len(changed)
    # same values, same key: dict order and array identity do not matter
    assert fingerprint(x.copy(), {"model": TorchModel(momentum=0.9), "lr": 0.01}, 3) == base
    client = Client(x, np.array([0, 1]), x, np.array([1, 0]))
    flipped = Client(x, np.array([0, 1]), x, np.array([1, 0]), adversarial=True)
    assert fingerprint(client) != fingerprint(flipped)


def test_fingerprint_refuses_unknown_objects():
    with pytest.raises(TypeError, match="cannot fingerprint a object"):
        fingerprint(object())


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TOPOFL_CACHE_DIR", str(tmp_path))
    assert default_cache_dir("fedtopo", "cpu") == tmp_path / "fedtopo" / "cpu"
    monkeypatch.delenv("TOPOFL_CACHE_DIR")
    assert default_cache_dir("fedtopo", "cpu").parts[-4:] == ("build", "runs", "fedtopo", "cpu")
    with pytest.raises(ValueError, match="profile"):
        default_cache_dir("fedtopo", "")


K1, K2 = "1" * 64, "2" * 64


def _record(**extra):
    curves = pd.DataFrame({"round": [1], "auc": [0.5], "accuracy": [0.5]})
    return {"curves": curves, "final": {"auc": 0.5}, "seconds": 1.0, **extra}


def test_store_is_atomic(tmp_path, monkeypatch):
    cache = RunCache(tmp_path / "runs")
    cache.store(K1, _record())
    assert cache.load(K1)["final"] == {"auc": 0.5} and K1 in cache

    def broken_savez(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("topofl_lib.storage.np.savez", broken_savez)
    with pytest.raises(OSError, match="disk full"):
        cache.store(K2, _record())
    assert K2 not in cache
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f"{K1}.npz"]  # no temp


# -- resuming --------------------------------------------------------------------------
def test_interrupted_comparison_resumes_without_recomputing(tmp_path, monkeypatch):
    plain = run_comparison("healthcare", **TINY)
    first = _Counting(fail_at=3)
    monkeypatch.setattr(tasks, "make_method", first)
    with pytest.raises(RuntimeError, match="interrupted"):
        run_comparison("healthcare", cache_dir=tmp_path, **TINY)
    assert len(list(tmp_path.glob("*.npz"))) == 2  # the two runs that finished
    again = _Counting()
    monkeypatch.setattr(tasks, "make_method", again)
    resumed = run_comparison("healthcare", cache_dir=tmp_path, **TINY)
    assert again.calls == 2  # only the two missing runs
    _same(resumed, plain)
    third = _Counting()
    monkeypatch.setattr(tasks, "make_method", third)
    _same(run_comparison("healthcare", cache_dir=tmp_path, **TINY), plain)
    assert third.calls == 0
    # another configuration is computed, not read from the store
    run_comparison("healthcare", cache_dir=tmp_path, **{**TINY, "n_rounds": 3})
    assert third.calls == 4
    run_comparison("healthcare", cache_dir=tmp_path, **{
        **TINY, "scenario_params": {"n_clients": 4, "n_adversarial": 0}})
    assert third.calls == 8


def test_on_missing_raise_reads_the_store_and_computes_nothing(tmp_path, monkeypatch):
    """``on_missing="raise"``: a store that holds every run is read as with the default;
    one that lacks runs stops the comparison before any fit, naming the missing runs."""
    first = run_comparison("healthcare", cache_dir=tmp_path, **TINY)
    counting = _Counting()
    monkeypatch.setattr(tasks, "make_method", counting)
    _same(run_comparison("healthcare", cache_dir=tmp_path, on_missing="raise", **TINY), first)
    more = {**TINY, "seeds": range(3), "methods": ["FedAvg", "FedProx", "SCAFFOLD"]}
    with pytest.raises(LookupError, match=r"^5 of 9 runs are not stored \(run store .*\): "
                       r"SCAFFOLD seed 0, SCAFFOLD seed 1, FedAvg seed 2, FedProx seed 2, "
                       r"SCAFFOLD seed 2 \(on_missing='raise' computes nothing\)$"):
        run_comparison("healthcare", cache_dir=tmp_path, on_missing="raise", **more)
    with pytest.raises(LookupError,
                       match=r"4 of 4 runs are not stored \(no run store: cache_dir=None\)"):
        run_comparison("healthcare", on_missing="raise", **TINY)
    assert counting.calls == 0
    with pytest.raises(ValueError, match="unknown on_missing 'skip'"):
        run_comparison("healthcare", cache_dir=tmp_path, on_missing="skip", **TINY)


def test_plan_comparison_says_what_would_be_computed_and_computes_nothing(tmp_path,
                                                                          monkeypatch):
    """``plan_comparison`` lists every (seed, run) with its store key and whether the store
    holds it: the keys are the files ``run_comparison`` writes, and it fits nothing."""
    counting = _Counting()
    monkeypatch.setattr(tasks, "make_method", counting)
    kw = {k: v for k, v in TINY.items() if k != "progress"}
    before = plan_comparison("healthcare", cache_dir=tmp_path, **kw)
    assert counting.calls == 0 and not before["stored"].any()
    assert list(before.columns) == ["seed", "label", "method", "key", "stored", "seconds"]
    assert before["seconds"].isna().all()
    monkeypatch.undo()
    run_comparison("healthcare", cache_dir=tmp_path, **TINY)
    after = plan_comparison("healthcare", cache_dir=tmp_path, **kw)
    assert after["stored"].all() and list(after["key"]) == list(before["key"])
    assert set(after["key"]) == {p.stem for p in tmp_path.glob("*.npz")}
    # each stored run's seconds are its record's
    assert list(after["seconds"]) == [RunCache(tmp_path).load(k)["seconds"]
                                      for k in after["key"]]
    more = plan_comparison("healthcare", cache_dir=tmp_path,
                           **{**kw, "methods": [*kw["methods"], "SCAFFOLD"]})
    assert list(more.loc[~more["stored"], "label"]) == ["SCAFFOLD"] * len(list(TINY["seeds"]))
    assert plan_comparison("healthcare", **kw)["key"].isna().all()   # no store, no keys


def test_stored_models_are_slim(tmp_path):
    res = run_comparison("healthcare", cache_dir=tmp_path, keep_models=True, **TINY)
    again = run_comparison("healthcare", cache_dir=tmp_path, keep_models=True, **TINY)
    for key, est in res.models.items():
        np.testing.assert_array_equal(est.coef_, again.models[key].coef_)
        assert not [a for a in vars(est) if a.startswith("_")]


def test_stored_models_keep_no_data_and_get_their_scenario_back(tmp_path):
    """The files hold no ``scenario_`` (the clients' data); the models returned, fresh
    or loaded, carry their seed's scenario again: same data, same predictions, same
    clustering diagnostics as the unstored fit."""
    kw = {**TINY, "methods": ["FedAvg", "pTopoFL"], "keep_models": True}
    plain = run_comparison("healthcare", **kw)
    fresh = run_comparison("healthcare", cache_dir=tmp_path, **kw)
    loaded = run_comparison("healthcare", cache_dir=tmp_path, **kw)
    for path in tmp_path.glob("*.npz"):
        assert not hasattr(RunCache(tmp_path).load(path.stem)["model"], "scenario_")
    for res in (fresh, loaded):
        for (name, seed), est in res.models.items():
            assert est.scenario_ is res.models[("FedAvg", seed)].scenario_
            ref = plain.models[(name, seed)]
            assert fingerprint(est.scenario_) == fingerprint(ref.scenario_)
            if name == "FedAvg":  # pTopoFL predicts with private state a slim model drops
                X = ref.scenario_.clients[0].X_test
                np.testing.assert_array_equal(est.predict_proba(X, client=0),
                                              ref.predict_proba(X, client=0))
        pd.testing.assert_frame_equal(experiments.clustering_diagnostics(res),
                                      experiments.clustering_diagnostics(plain))


# -- parallel workers ------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    return load_image_dataset("digits")


def test_two_workers_give_the_same_numbers(digits, tmp_path):
    """FedAvg and FedTopo (conv1 and conv2) on a tiny image scenario: two worker
    processes give bit-identical results to one, and store every run."""
    variants = deep_variants(["FedAvg", "FedTopo@conv1", "FedTopo@conv2"],
                             architecture="digits_cnn", local_epochs=1,
                             fedtopo={"tal_samples": 16, "tal_batch": 8, "tal_every": 2})
    kw = {"seeds": range(2), "n_rounds": 2, "variants": variants, "progress": False,
          "scenario_params": {"dataset": digits, "partition": "L", "param": 0.5,
                              "n_clients": 3, "n_train": 400}}
    one = run_comparison("image", **kw)
    two = run_comparison("image", n_workers=2, cache_dir=tmp_path, **kw)
    _same(one, two)
    assert len(list(tmp_path.glob("*.npz"))) == 6
    assert not one.final["accuracy"].isna().any()


def test_parallel_needs_picklable_scenarios():
    with pytest.raises(ValueError, match="cannot be pickled"):
        run_comparison(lambda seed: None, seeds=[0], methods=["FedAvg"], n_workers=2)
    with pytest.raises(ValueError, match="n_workers"):
        run_comparison("healthcare", seeds=[0], methods=["FedAvg"], n_workers=0)


def test_models_asked_later_are_computed(tmp_path, monkeypatch):
    run_comparison("healthcare", cache_dir=tmp_path, **TINY)
    counting = _Counting()
    monkeypatch.setattr(tasks, "make_method", counting)
    res = run_comparison("healthcare", cache_dir=tmp_path, keep_models=True, **TINY)
    assert counting.calls == 4 and all(m is not None for m in res.models.values())
    run_comparison("healthcare", cache_dir=tmp_path, keep_models=True, **TINY)
    assert counting.calls == 4


# -- diverged runs ---------------------------------------------------------------------
class _Diverging:
    """make_method whose FedProx fit on seed 1 diverges; counts the fits."""

    def __init__(self):
        self.calls, self.real = 0, tasks.make_method

    def __call__(self, name, **params):
        self.calls += 1
        est = self.real(name, **params)
        if name == "FedProx" and params["random_state"] == 1:
            def fit(data):
                raise FloatingPointError("the model client 2 returned in round 2 contains "
                                         "3 NaN or infinite value(s)")
            est.fit = fit
        return est


def test_a_diverged_run_raises_naming_method_scenario_and_seed(monkeypatch):
    monkeypatch.setattr(tasks, "make_method", _Diverging())
    with pytest.raises(FloatingPointError, match=r"FedProx on healthcare.*seed 1: the model "
                                                 r"client 2.*on_divergence='record'"):
        run_comparison("healthcare", **TINY)
    with pytest.raises(ValueError, match="on_divergence"):
        run_comparison("healthcare", on_divergence="skip", **TINY)


def test_diverged_runs_are_recorded_stored_and_never_recomputed(tmp_path, monkeypatch):
    plain = run_comparison("healthcare", **TINY)
    fake = _Diverging()
    monkeypatch.setattr(tasks, "make_method", fake)
    kw = {**TINY, "cache_dir": tmp_path, "on_divergence": "record"}
    res = run_comparison("healthcare", **kw)
    assert list(res.diverged) == [("FedProx", 1)] and "seed 1" in res.diverged[("FedProx", 1)]
    final = res.final.set_index(["method", "seed"])
    assert np.isnan(final.loc[("FedProx", 1), "accuracy"])
    assert res.curves.query("method == 'FedProx' and seed == 1")["accuracy"].isna().all()
    others = plain.final.set_index(["method", "seed"]).drop(("FedProx", 1))
    pd.testing.assert_series_equal(final.drop(("FedProx", 1))["auc"], others["auc"])
    assert fake.calls == 4 and len(list(tmp_path.glob("*.npz"))) == 4
    again = run_comparison("healthcare", keep_models=True, **{**kw, "n_rounds": 2})
    assert again.diverged == res.diverged and again.models[("FedProx", 1)] is None
    assert fake.calls == 4 + 3  # the three finished runs, for their models; not the diverged
    with pytest.raises(FloatingPointError, match="stored run diverged: FedProx"):
        run_comparison("healthcare", cache_dir=tmp_path, **TINY)


# -- data only: tampered, damaged and legacy files -------------------------------------
class _Payload:
    """Unpickling this writes ``marker``: proof that a file executed code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _run_keys(tmp_path, kw):
    run_comparison("healthcare", cache_dir=tmp_path, **kw)
    return sorted(p.stem for p in tmp_path.glob("*.npz"))


ONE = {**TINY, "seeds": [0], "methods": ["FedAvg"]}


@pytest.mark.parametrize("where", ["npz", "pkl"])
def test_a_planted_pickle_is_never_executed(tmp_path, where):
    """A pickle payload at a run's key, as ``<key>.npz`` (the file the store reads) or as
    the old ``<key>.pkl``: refused (or ignored, with a warning), never executed."""
    import pickle

    store, marker = tmp_path / "runs", tmp_path / "pwned"
    (key,) = _run_keys(store, ONE)
    payload = pickle.dumps(_Payload(marker))
    if where == "npz":
        (store / f"{key}.npz").write_bytes(payload)
        with pytest.raises(DamagedRunError, match=rf"{key}\.npz: not a topofl-data/1 file.*"
                                                  r"on_damaged='recompute'"):
            run_comparison("healthcare", cache_dir=store, **ONE)
        with pytest.raises(DamagedRunError, match=f"{key}.npz"):
            RunCache(store).load(key)
    else:
        (store / f"{key}.npz").unlink()
        (store / f"{key}.pkl").write_bytes(payload)
        with pytest.warns(UserWarning, match=r"1 pickle file\(s\) .* never opened"):
            res = run_comparison("healthcare", cache_dir=store, **ONE)
        _same(res, run_comparison("healthcare", **ONE))
    assert not marker.exists()


def test_an_object_array_inside_a_record_is_refused(tmp_path):
    """An ``.npz`` whose arrays hold pickled objects is not data: refused unopened."""
    store, marker = tmp_path / "runs", tmp_path / "pwned"
    (key,) = _run_keys(store, ONE)
    with open(store / f"{key}.npz", "wb") as fh:
        np.savez(fh, record=np.array([_Payload(marker)], dtype=object))
    with pytest.raises(DamagedRunError, match=r"'record\.npy' is an object array \(pickled "
                                              r"objects\), not data"):
        RunCache(store).load(key)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "wrong type", "another key", "bad class"])
def test_a_damaged_record_is_named_and_recomputed_on_request(tmp_path, damage):
    from topofl_lib import storage

    store = tmp_path / "runs"
    (key,) = _run_keys(store, ONE)
    path = store / f"{key}.npz"
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size * 6 // 10])
    elif damage == "wrong type":
        storage.dump(path, [1, 2, 3])
    elif damage == "another key":
        storage.dump(path, {**storage.load(path), "key": "0" * 64})
    else:  # a document naming a class outside the allow-list: never imported
        doc = '{"format":"topofl-data/1","value":{"__object__":"subprocess:Popen","state":{}}}'
        with open(path, "wb") as fh:
            np.savez(fh, record=np.array(doc))
    expected = {"truncated": "not a topofl-data/1 file", "wrong type": "holds a list",
                "another key": "holds run 0000", "bad class": "not a registered storable"}
    with pytest.raises(DamagedRunError, match=rf"{key}\.npz.*{expected[damage]}"):
        run_comparison("healthcare", cache_dir=store, **ONE)
    with pytest.warns(UserWarning, match=f"recomputing a damaged run.*{key}"):
        res = run_comparison("healthcare", cache_dir=store, on_damaged="recompute", **ONE)
    _same(res, run_comparison("healthcare", **ONE))
    assert RunCache(store).load(key)["key"] == key  # overwritten with a good record
    with pytest.raises(ValueError, match="on_damaged"):
        run_comparison("healthcare", cache_dir=store, on_damaged="ignore", **ONE)


def test_keys_are_fingerprints_so_no_path_escapes_the_store(tmp_path):
    with pytest.raises(ValueError, match="64-digit hex"):
        RunCache(tmp_path).path("../../etc/passwd")


def test_stored_fedtopo_model_is_rebuilt_from_data(digits, tmp_path):
    """A kept FedTopo model goes through the data-only store and back: the network is
    rebuilt from its architecture and weights and predicts as the fitted one."""
    variants = deep_variants(["FedTopo"], architecture="digits_cnn", local_epochs=1,
                             fedtopo={"tal_samples": 16, "tal_batch": 8, "tal_every": 2})
    kw = {"seeds": [0], "n_rounds": 1, "variants": variants, "progress": False,
          "keep_models": True, "scenario_params": {"dataset": digits, "partition": "L",
                                                    "param": 0.5, "n_clients": 3,
                                                    "n_train": 300}}
    fitted = run_comparison("image", cache_dir=tmp_path, **kw).models[("FedTopo", 0)]
    loaded = run_comparison("image", cache_dir=tmp_path, **kw).models[("FedTopo", 0)]
    assert loaded is not fitted and type(loaded.learner_) is type(fitted.learner_)
    X = fitted.scenario_.clients[0].X_test
    np.testing.assert_array_equal(loaded.learner_.logits(loaded.coef_, X),
                                  fitted.learner_.logits(fitted.coef_, X))
    np.testing.assert_array_equal(loaded.tal_log_, fitted.tal_log_)
    assert loaded.get_params()["schedule"].get_params() == fitted.schedule.get_params()


def test_convert_script_turns_trusted_pickles_into_identical_data(tmp_path):
    """The one-off converter of old stores: same key, same values, no pickle left."""
    import importlib.util
    import pickle
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "convert_run_store", Path(__file__).parents[1] / "scripts" / "convert_run_store.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    (key,) = _run_keys(tmp_path, {**ONE, "keep_models": True})
    record = RunCache(tmp_path).load(key)
    (tmp_path / f"{key}.npz").unlink()
    (tmp_path / f"{key}.pkl").write_bytes(pickle.dumps(record))
    with pytest.raises(SystemExit):  # the trust flag is required
        script.main([str(tmp_path)])
    assert script.main(["--i-trust-these-pickles", str(tmp_path)]) == 0
    assert not list(tmp_path.glob("*.pkl"))
    assert script._same(record, RunCache(tmp_path).load(key), "record") == []
