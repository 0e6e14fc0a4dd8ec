"""The differential-privacy wrapper of any federated method, where privacy's users look.

:class:`PrivateMethod` is defined beside the round hooks it installs
(:mod:`topofl_lib.federated.private_training`), since the federated layer cannot import
this one; it is the same class.
"""

from ..federated.private_training import PrivateMethod

__all__ = ["PrivateMethod"]
