"""pTopoFL on real federated clients with Flower (SuperLink + SuperNodes).

``pip install -e .[flower]`` installs Flower. :mod:`~topofl_lib.flower.server_app` and
:mod:`~topofl_lib.flower.client_app` are the Flower App (its ``app/pyproject.toml``
names them); :mod:`~topofl_lib.flower.secure_server_app` and
:mod:`~topofl_lib.flower.secure_client_app` the ``secure-dp`` App (``secure_app/``:
DP-FedAvg with distributed noise under Flower's SecAgg+);
:class:`~topofl_lib.flower.federation.LocalFederation` starts a SuperLink
(:mod:`~topofl_lib.flower.superlink`) and one SuperNode per client
(:mod:`~topofl_lib.flower.node`) on this machine, secured with the credentials of
:mod:`~topofl_lib.flower.security`, and runs it on an unpatched Flower;
:mod:`~topofl_lib.flower.polling` holds topofl's own waits (Flower's public API), and
:mod:`~topofl_lib.flower.fast_waits` the opt-in, version-checked adapter that shortens
waits inside Flower's modules and runs ClientApps from a long-lived executor.
:mod:`~topofl_lib.flower.cli` is ``python -m topofl_lib flower``. Names are imported on
first use, so the ClientApp's process imports only the ClientApp.
"""

from .._lazy import attach

__getattr__, __dir__ = attach(__name__, {
    ".federation": ["APPS", "FLOWER_METHODS", "LocalFederation", "app_dir", "in_process_reference",
                    "write_partitions"],
    ".security": ["TLSFiles", "make_node_key", "make_tls"],
})

__all__ = ["APPS", "FLOWER_METHODS", "LocalFederation", "TLSFiles", "app_dir",
           "in_process_reference", "make_node_key", "make_tls", "write_partitions"]
