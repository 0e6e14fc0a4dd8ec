"""scikit-learn's estimator checks on the descriptor and the clustering estimators.

Their ``X`` is a list of point clouds (:class:`TopologicalDescriptor`: one cloud per
client), of per-client pairs (:class:`ClassConditionalDescriptor`: ``(features,
labels)``; :class:`ModelAnchoredDescriptor`: ``(points, margins)``) or of client
datasets (GFC, k-FED, MUFC, NN-FC: ``fit(client_datasets)``), so
every check that feeds a single 2-D array to ``fit`` cannot apply: such an array is
refused by design, with a message saying to wrap it in a list. Those checks are listed
in :func:`expected_failed_checks` with the reason, strictly (a listed check that starts
passing fails the test, so the list stays true). The properties they guard are checked
by hand below on valid input: ``fit`` returns ``self``, leaves the parameters alone and
adds only ``_``-suffixed attributes, refitting and pickling change no output, a clone
with the same seed gives the same output, NaN and empty input are refused, and an
unfitted estimator raises ``NotFittedError``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from topofl_lib.clustering import MUFC, NNFC, GravitationalFederatedClustering, KFed
from topofl_lib.topology import (
    ClassConditionalDescriptor,
    ModelAnchoredDescriptor,
    TopologicalDescriptor,
)

LIST_INPUT = ("X is a list of point clouds, per-client pairs or client datasets (one entry "
              "per client); the check fits a single 2-D array, which is refused by design")
#: The transformers whose samples are clients.
TRANSFORMERS = (TopologicalDescriptor, ClassConditionalDescriptor, ModelAnchoredDescriptor)
#: Checks that fit on a single 2-D array (or sparse / object / complex versions of it).
LIST_INPUT_CHECKS = (
    "check_complex_data", "check_dict_unchanged", "check_dont_overwrite_parameters",
    "check_dtype_object", "check_estimators_dtypes", "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1feature", "check_fit2d_1sample",
    "check_fit2d_predict1d", "check_fit_check_is_fitted", "check_fit_idempotent",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in",
    "check_n_features_in_after_fitting", "check_pipeline_consistency",
    "check_readonly_memmap_input",
)
#: Checks whose error-type expectation assumes a 2-D array input.
WRONG_INPUT_TYPE = {
    "check_estimators_empty_data_messages":
        "an empty 2-D array is the wrong type here (TypeError: not a list); an empty "
        "list or an empty client raises ValueError (test_refuses_bad_input)",
    "check_estimators_nan_inf":
        "the check's NaN array is refused as a single 2-D array (TypeError) before its "
        "values are read; NaN inside a client raises ValueError (test_refuses_bad_input)",
    "check_positive_only_tag_during_fit":
        "negative values are fine, but the check's single 2-D array is refused (TypeError)",
    "check_estimator_sparse_array": "sparse input is a single matrix, not a list of clients",
    "check_estimator_sparse_matrix": "sparse input is a single matrix, not a list of clients",
    "check_estimator_sparse_tag": "sparse input is a single matrix, not a list of clients",
}


def _estimators():
    return [
        TopologicalDescriptor(n_sub=30, random_state=0),
        ClassConditionalDescriptor(n_sub=30, random_state=0),
        ModelAnchoredDescriptor(n_sub=30, random_state=0),
        GravitationalFederatedClustering(2, n_local=5, random_state=0),
        KFed(2, n_local=5, random_state=0),
        MUFC(2, n_local=5, random_state=0),
        NNFC(2, n_local=5, random_state=0),
    ]


def expected_failed_checks(estimator) -> dict[str, str]:
    """The checks that cannot apply to ``estimator``, each with its reason."""
    out = {name: LIST_INPUT for name in LIST_INPUT_CHECKS}
    out.update(WRONG_INPUT_TYPE)
    if isinstance(estimator, TRANSFORMERS):
        out.update({name: LIST_INPUT for name in (
            "check_transformer_data_not_an_array", "check_transformer_general",
            "check_transformer_preserve_dtypes")})
    else:
        out["check_clustering"] = LIST_INPUT
    return out


@parametrize_with_checks(_estimators(), expected_failed_checks=expected_failed_checks,
                         xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _clients(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.2, 0.2], [-0.2, -0.2]])
    return [centres[k % 2] + 0.03 * rng.normal(size=(40, 2)) for k in range(4)]


def _input(est, clients):
    """What ``est`` takes: the clouds, or one pair per cloud (labels or margins)."""
    if isinstance(est, ClassConditionalDescriptor):
        return [(c, (c[:, 0] > c[:, 0].mean()).astype(int)) for c in clients]
    if isinstance(est, ModelAnchoredDescriptor):
        return [(c, c[:, 0] - c[:, 1]) for c in clients]
    return clients


def _output(est, clients):
    if isinstance(est, TRANSFORMERS):
        return est.transform(_input(est, clients))
    return est.predict(np.vstack(clients))


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_fit_contract_on_list_input(est):
    """The properties of the checks that cannot apply, on valid (list) input."""
    clients = _clients()
    X = _input(est, clients)
    params = est.get_params()
    before = set(vars(est))
    assert est.fit(X) is est
    assert est.get_params() == params
    added = set(vars(est)) - before
    assert added and all(a.endswith("_") or a.startswith("_") for a in added), added
    out = _output(est, clients)
    np.testing.assert_array_equal(_output(est.fit(X), clients), out)  # idempotent
    np.testing.assert_array_equal(_output(pickle.loads(pickle.dumps(est)), clients), out)
    np.testing.assert_array_equal(_output(clone(est).fit(X), clients), out)


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_refuses_bad_input(est):
    """NaN in a client and an empty list raise ValueError; unfitted use NotFittedError."""
    clients = _clients()
    with pytest.raises(NotFittedError, match="not fitted"):
        _output(clone(est), clients)
    bad = [c.copy() for c in clients]
    bad[1][3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clone(est).fit(_input(est, bad))
    with pytest.raises(ValueError):
        clone(est).fit([])
