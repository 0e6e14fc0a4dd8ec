"""Differential privacy as a wrapper around any method (:class:`PrivateMethod`).

Properties checked: the wrapper fits exactly the numbers of a method's own ``model_dp``
(the same hooks); hooks that do nothing change nothing; every method of the registry
runs privately at one level at least, without privacy code of its own, and is refused,
naming why, where the accountant cannot cover it; the epsilons depend on the option and
the data sizes only, never on the method; the base class holds no privacy code.
"""

from __future__ import annotations

import ast
import inspect
import json

import numpy as np
import pytest

from topofl_lib import FedAvg, PTopoFL, make_healthcare, make_method
from topofl_lib.federated import FederatedAlgorithm, RoundHooks
from topofl_lib.federated.methods import ALL_METHODS
from topofl_lib.privacy import ClientLevelDP, GaussianMechanism, PrivateMethod, SampleLevelDP

pytest.importorskip("opacus")

CLIENT, SAMPLE = ClientLevelDP(1.0, clip=0.5), SampleLevelDP(1.0, clip=1.0)

#: The level each registered method cannot run at, and why (the refusal's words).
REFUSED = {
    **{name: {"client": "its server rule is its own"}
       for name in ("SCAFFOLD", "Median", "TrimmedMean", "Krum", "FedAvgM", "FedNova",
                    "FedDyn", "FedDC", "Local-only")},
    "pFedMe": {"sample": "a local solver of its own"},
    "pTopoFL": {"sample": "augment=True builds every record"},
}


@pytest.fixture(scope="module")
def healthcare():
    return make_healthcare(n_clients=5, n_adversarial=1, random_state=2)


def _same_fit(a, b) -> None:
    assert a.history_.keys() == b.history_.keys()
    for key in a.history_:
        np.testing.assert_array_equal(a.history_[key], b.history_[key], err_msg=key)
    for mine, theirs in zip(a.accountants_, b.accountants_, strict=True):
        assert json.dumps(mine.events(), default=str) == json.dumps(theirs.events(), default=str)


@pytest.mark.parametrize("make", [
    lambda dp: FedAvg(n_rounds=3, random_state=4, model_dp=dp),
    lambda dp: PTopoFL(n_rounds=3, random_state=4, augment=False, model_dp=dp,
                       descriptor_mechanism=GaussianMechanism(1.0)),
], ids=["FedAvg", "pTopoFL"])
@pytest.mark.parametrize("dp", [CLIENT, SAMPLE], ids=["client", "sample"])
def test_the_wrapper_fits_the_numbers_of_the_methods_own_option(healthcare, make, dp):
    own = make(dp).fit(healthcare)
    wrapped = PrivateMethod(make(None), dp).fit(healthcare)
    _same_fit(own, wrapped)
    np.testing.assert_array_equal(own.predict_proba(healthcare.clients[1].X_test, 1),
                                  wrapped.predict_proba(healthcare.clients[1].X_test, 1))
    assert wrapped.name == f"DP-{own.name}" and wrapped.n_clients_ == 5


def test_hooks_that_do_nothing_change_nothing(healthcare):
    plain = make_method("SCAFFOLD", n_rounds=2, random_state=1).fit(healthcare)
    hooked = make_method("SCAFFOLD", n_rounds=2, random_state=1).fit(healthcare,
                                                                    hooks=RoundHooks())
    assert plain.history_.keys() == hooked.history_.keys()
    for key in plain.history_:
        np.testing.assert_array_equal(plain.history_[key], hooked.history_[key])
    np.testing.assert_array_equal(plain.coef_, hooked.coef_)


@pytest.mark.parametrize("name", sorted(ALL_METHODS))
def test_every_registered_method_runs_privately_or_is_refused_naming_why(healthcare, name):
    """Each method runs at every level the accountant covers for it (a finite, positive
    model epsilon after every round, growing), and is refused before it starts at the
    others; every method runs at one level at least."""
    refused = REFUSED.get(name, {})
    assert len(refused) < 2
    for dp in (CLIENT, SAMPLE):
        private = PrivateMethod(make_method(name, n_rounds=2, random_state=0), dp)
        if dp.level in refused:
            with pytest.raises(ValueError, match=refused[dp.level]):
                private.check_params()
            continue
        private.fit(healthcare)
        spent = private.history_["epsilon_model"]
        assert np.all(np.isfinite(spent)) and 0 < spent[0] < spent[1], (name, dp.level)
        assert np.all(np.isfinite(private.history_["auc"]))


@pytest.mark.parametrize("dp", [CLIENT, SAMPLE], ids=["client", "sample"])
def test_the_epsilon_depends_on_the_option_never_on_the_method(healthcare, dp):
    """The accountant sees the option, the rounds and the clients' sizes only: pFedMe
    (client level) and SCAFFOLD (sample level) spend what FedAvg spends."""
    other = "pFedMe" if dp.level == "client" else "SCAFFOLD"
    fedavg = FedAvg(n_rounds=3, random_state=0, model_dp=dp).fit(healthcare)
    wrapped = PrivateMethod(make_method(other, n_rounds=3, random_state=0), dp).fit(healthcare)
    np.testing.assert_array_equal(fedavg.history_["client_epsilon"],
                                  wrapped.history_["client_epsilon"])


def test_the_wrapper_refuses_what_it_cannot_wrap(healthcare):
    with pytest.raises(TypeError, match="method must be a FederatedAlgorithm.*got str"):
        PrivateMethod("FedAvg", SAMPLE).fit(healthcare)
    with pytest.raises(ValueError, match="model_dp must be a ClientLevelDP.*got None"):
        PrivateMethod(FedAvg(), None).check_params()
    with pytest.raises(ValueError, match="has its own model_dp=.*give the option once"):
        PrivateMethod(FedAvg(model_dp=CLIENT), SAMPLE).check_params()
    with pytest.raises(TypeError, match="model_dp must be None, a ClientLevelDP.*got float"):
        PrivateMethod(FedAvg(), 1.0).check_params()
    with pytest.raises(TypeError, match="hooks must be a RoundHooks, got dict"):
        FedAvg(n_rounds=1).fit(healthcare, hooks={})
    with pytest.raises(ValueError, match="FedAvg builds round hooks of its own "
                                         r"\(PrivateTraining"):  # its model_dp is kept
        FedAvg(n_rounds=1, model_dp=CLIENT).fit(healthcare, hooks=RoundHooks())
    with pytest.raises(ValueError, match="not fitted yet"):
        PrivateMethod(FedAvg(), SAMPLE).predict_proba(np.zeros((1, 3)))


def test_the_base_class_holds_no_privacy_code():
    """No name of the privacy code appears in ``FederatedAlgorithm``'s code (docstrings
    aside)."""
    source = inspect.getsource(FederatedAlgorithm)
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    privacy = {name for name in names
               if any(word in name.lower() for word in ("dp", "privacy", "private", "account",
                                                        "epsilon", "clip", "noisy"))}
    assert privacy == set()  # its size: tests/test_layers.py


def test_the_wrapper_refuses_what_couples_records_as_the_option_does(healthcare):
    """pTopoFL's augmentation is refused under the wrapper's DP-SGD exactly as under its
    own ``model_dp`` (the method's traits, not its option, carry the coupling)."""
    match = r"augment=True builds every record's four extra features .* pass augment=False"
    with pytest.raises(ValueError, match=match):
        PrivateMethod(PTopoFL(augment=True), SAMPLE).check_params()
    with pytest.raises(ValueError, match=match):
        PTopoFL(augment=True, model_dp=SAMPLE).check_params()
    with pytest.raises(ValueError, match="standardise=True scales every record"):
        PrivateMethod(make_method("FedNova", n_rounds=1, standardise=True), SAMPLE).fit(
            healthcare)
