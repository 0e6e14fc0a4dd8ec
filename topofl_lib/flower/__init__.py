"""pTopoFL on real federated clients with Flower (SuperLink + SuperNodes).

``pip install -e .[flower]`` installs Flower. :mod:`~topofl_lib.flower.server_app` and
:mod:`~topofl_lib.flower.client_app` are the Flower App (its ``app/pyproject.toml``
names them); :class:`~topofl_lib.flower.federation.LocalFederation` starts a
SuperLink and one SuperNode per client on this machine and runs it.
"""

from .federation import (
    FLOWER_METHODS,
    LocalFederation,
    app_dir,
    in_process_reference,
    write_partitions,
)

__all__ = ["FLOWER_METHODS", "LocalFederation", "app_dir", "in_process_reference",
           "write_partitions"]
