"""Torch networks as learners of the federated engine.

:class:`TorchModel` is what a user passes as ``model=`` to any algorithm of
:mod:`topofl_lib.federated` (FedAvg, FedProx, SCAFFOLD, pFedMe, pTopoFL, the robust
baselines) and to :class:`topofl_lib.fedtopo.FedTopo`. The algorithms keep working on
flat parameter vectors, exactly as with logistic regression; :class:`TorchLearner`
loads a vector into the network to compute a mini-batch gradient (cross-entropy) and
reads the gradient back as a vector, which keeps a single implementation of every
algorithm.

During local training the vectors stay on the learner's device: :class:`TorchLearner`
has a work space (:class:`topofl_lib.core.Workspace`), so a client's model is copied
to the device once when its local training starts and back once when it ends, and
every SGD step works on tensors (the network's parameters are views of the vector:
loading it copies nothing). Tensors keep the NumPy vectors' dtypes (float32, or
float64 once the server has averaged) and torch promotes and rounds as NumPy does, so
on the CPU the results are the same floats as the host path
(:func:`topofl_lib.federated.local.host_vectors`), which moved every step's vector and
gradient through NumPy; on a GPU that path cost two host-device copies and a host
update of every parameter per step.

Determinism: the network's initial weights come from a seed drawn from the
algorithm's ``random_state``; mini-batch orders come from the same generator; on the
CPU every operation used here is deterministic, so a seed fixes every number.
``torch.set_num_threads(n_threads)`` (default 1: on a 2-core machine more threads
are several times slower) is applied when the learner is built. With a CUDA device
present, ``device="auto"`` uses it and the code runs unchanged.

Per-load noise (:attr:`topofl_lib.core.Client.load_noise_sd`): :meth:`TorchLearner.client_data`
given ``noise_sd > 0`` keeps the images clean and attaches a :class:`LoadNoise`, a
``torch.Generator`` on the learner's device seeded with ``noise_seed`` (the engine's
:func:`topofl_lib.federated.local.load_noise_seed` of the run's seed and the client's
index); :meth:`TorchLearner.batch`, which :meth:`TorchLearner.gradient` loads every
mini-batch through, adds ``N(0, sd^2)`` noise of a fresh draw to its images, as a
data-loading transform would. The same seed gives the same draws on the same device
(a GPU's generator draws other numbers than the CPU's).

Networks with BatchNorm (the CIFAR ResNet-18) carry running statistics that are not
parameters; this engine averages parameters only, so such models are built and tested
for shape but not trained federatedly here.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .._validation import as_float_array, check_choice, check_int, check_real
from ..core.device import pinned_device
from ..core.seeds import draw_seed
from ..federated.local import clip_factors
from ..storage import register_storable
from .models import IMAGE_SIZES, MODELS, make_model

__all__ = ["ClientTensors", "LoadNoise", "TorchLearner", "TorchModel", "resolve_device"]


#: The ``device`` values of :class:`TorchModel` and :func:`resolve_device`.
DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto") -> torch.device:
    """``"auto"``: the device this process is pinned to (:func:`topofl_lib.core.device.pin_device`,
    as the workers of :mod:`topofl_lib.runner.executors` are), else CUDA when available,
    else the CPU."""
    check_choice(device, "device", DEVICES)
    if device == "auto":
        device = pinned_device(default=None) or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _image_shape(n_features: int, image_shape) -> tuple[int, int, int]:
    if image_shape is not None:
        shape = tuple(int(s) for s in image_shape)
        if len(shape) != 3 or int(np.prod(shape)) != n_features:
            raise ValueError(f"image_shape={image_shape} does not hold {n_features} features")
        return shape
    for c in (1, 3):
        side = int(round((n_features / c) ** 0.5))
        if c * side * side == n_features:
            return (c, side, side)
    raise ValueError(f"cannot fold {n_features} features into a square image; "
                     "give image_shape=(channels, H, W)")


class LoadNoise:
    """Gaussian noise of standard deviation ``sd`` drawn afresh at every call.

    Parameters
    ----------
    sd : float
        Standard deviation (> 0), in the units of the images.
    seed : int
        Seeds the generator (the same seed gives the same sequence of draws).
    device : torch.device
        Where the generator and the draws live.
    """

    def __init__(self, sd: float, seed: int, device: torch.device):
        self.sd = check_real(sd, "noise_sd", low=0.0, low_open=True)
        self.seed = check_int(seed, "noise_seed", low=0)
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(self.seed)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` plus a new draw of ``N(0, sd^2)`` noise of its shape, dtype and device.

        Parameters
        ----------
        x : torch.Tensor
            A mini-batch of images.

        Returns
        -------
        torch.Tensor
            A new tensor; ``x`` is left as it is.
        """
        z = torch.randn(x.shape, generator=self.generator, device=x.device, dtype=x.dtype)
        return x + self.sd * z


class ClientTensors(tuple):
    """A client's ``(images, labels)`` on the device, and the noise of its mini-batches.

    A tuple of two (``X, y = data`` and ``data[0]`` work as for a plain pair), with the
    attribute ``noise``: a :class:`LoadNoise`, or ``None`` for a client without per-load
    noise.
    """

    noise: LoadNoise | None

    def __new__(cls, images: torch.Tensor, labels: torch.Tensor,
                noise: LoadNoise | None = None) -> ClientTensors:
        out = super().__new__(cls, (images, labels))
        out.noise = noise
        return out


@register_storable
class TorchModel(BaseEstimator):
    """Specification of a torch network for the federated algorithms.

    Parameters
    ----------
    architecture : {"fmnist_cnn", "digits_cnn", "resnet18_cifar"}, default="fmnist_cnn"
    n_classes : int, default=10
    image_shape : tuple (channels, H, W) or None
        ``None`` infers a square grey or RGB image from the number of features.
    momentum : float, default=0.0
        Heavy-ball momentum of the clients' SGD (FedTopo Table C.3: 0.9).
    eval_batch_size : int, default=2048
    device : {"auto", "cpu", "cuda"}, default="auto"
    n_threads : int, default=1
        ``torch.set_num_threads`` on the CPU.
    """

    def __init__(self, architecture: str = "fmnist_cnn", n_classes: int = 10,
                 image_shape=None, momentum: float = 0.0, eval_batch_size: int = 2048,
                 device: str = "auto", n_threads: int = 1):
        self.architecture = architecture
        self.n_classes = n_classes
        self.image_shape = image_shape
        self.momentum = momentum
        self.eval_batch_size = eval_batch_size
        self.device = device
        self.n_threads = n_threads

    def check_params(self) -> TorchModel:
        """``self`` once every parameter is valid, as :meth:`make_learner` checks first.

        An algorithm's ``check_params`` calls it for its ``model``, so a bad network
        parameter stops a comparison before its first run. A ``ValueError`` or
        ``TypeError`` names the parameter.
        """
        check_choice(self.architecture, "architecture", tuple(MODELS))
        check_int(self.n_classes, "n_classes", low=2)
        check_real(self.momentum, "momentum", low=0.0, high=0.999)
        check_int(self.eval_batch_size, "eval_batch_size", low=1)
        check_choice(self.device, "device", DEVICES)
        check_int(self.n_threads, "n_threads", low=1)
        return self

    def make_learner(self, n_features: int, rng: np.random.Generator) -> TorchLearner:
        """Build the network with weights seeded from ``rng``.

        Parameters
        ----------
        n_features : int
            Number of input features (the flattened image size).
        rng : numpy.random.Generator
            Draws the torch seed of the initial weights.

        Returns
        -------
        TorchLearner
            The learner wrapping the new network.
        """
        self.check_params()
        shape = _image_shape(n_features, self.image_shape)
        size = IMAGE_SIZES.get(self.architecture)
        if size is not None and shape[1:] != size:
            raise ValueError(
                f"architecture={self.architecture!r} takes {size[0]}x{size[1]} images, but "
                f"the {n_features} features make images of shape {shape} (image_shape="
                f"{self.image_shape!r}); pick the architecture built for this size")
        torch.set_num_threads(self.n_threads)
        seed = draw_seed(rng)
        torch.manual_seed(seed)
        net = make_model(self.architecture, in_channels=shape[0], n_classes=self.n_classes)
        return TorchLearner(net, shape, self.n_classes, self.momentum, self.eval_batch_size,
                            resolve_device(self.device))


@register_storable
class TorchLearner:
    """A network seen through flat parameter vectors (see the module docstring).

    Parameters
    ----------
    net : torch.nn.Module
        The network (a :class:`~topofl_lib.deep.models.BlockNet`); moved to ``device``.
    image_shape : tuple of int
        ``(channels, height, width)`` of the inputs.
    n_classes : int
        Number of classes.
    momentum : float
        Heavy-ball momentum of the clients' SGD.
    eval_batch_size : int
        Batch size of the gradient-free passes.
    device : torch.device
        Where the network and data live.
    """

    def __init__(self, net: torch.nn.Module, image_shape, n_classes: int, momentum: float,
                 eval_batch_size: int, device: torch.device):
        self.net = net.to(device)
        self.image_shape = tuple(image_shape)
        self.n_classes = n_classes
        self.momentum = momentum
        self.eval_batch_size = eval_batch_size
        self.device = device
        self._params = list(self.net.parameters())
        self.n_params = sum(p.numel() for p in self._params)

    # -- storage (topofl_lib.storage: data only) ---------------------------------------
    def to_data(self) -> dict:
        """The learner as data (:mod:`topofl_lib.storage`): how to rebuild the network,
        and its weights.

        Returns
        -------
        dict
            Architecture, image shape, classes, momentum, evaluation batch size, device
            type and the network's ``state_dict`` as arrays.
        """
        architecture = getattr(self.net, "architecture", None)
        if architecture not in MODELS:
            raise TypeError("only a TorchLearner whose network make_model built can be "
                            f"stored, not one holding a {type(self.net).__qualname__}")
        weights = {k: v.detach().cpu().numpy() for k, v in self.net.state_dict().items()}
        return {"architecture": architecture, "image_shape": list(self.image_shape),
                "n_classes": int(self.n_classes), "momentum": float(self.momentum),
                "eval_batch_size": int(self.eval_batch_size), "device": self.device.type,
                "weights": weights}

    @classmethod
    def from_data(cls, state: dict) -> TorchLearner:
        """Rebuild a stored learner (on the CPU when its CUDA device is absent).

        Parameters
        ----------
        state : dict
            What :meth:`to_data` returned.

        Returns
        -------
        TorchLearner
            The learner, its network holding the stored weights.
        """
        net = make_model(state["architecture"], in_channels=int(state["image_shape"][0]),
                         n_classes=int(state["n_classes"]))
        net.load_state_dict({k: torch.from_numpy(np.array(v))
                             for k, v in state["weights"].items()})
        device = resolve_device("auto" if state["device"] == "cuda" else "cpu")
        return cls(net, state["image_shape"], state["n_classes"], state["momentum"],
                   state["eval_batch_size"], device)

    # -- vectors ---------------------------------------------------------------------
    def init_params(self, data=None) -> np.ndarray:
        return parameters_to_vector(self._params).detach().cpu().numpy().astype(np.float32)

    def to_work(self, w: np.ndarray) -> torch.Tensor:
        """A copy of ``w`` on the device, of the same dtype (the work space of local
        training, :class:`topofl_lib.core.Workspace`).

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Flat parameter vector, or a constant vector of its size.

        Returns
        -------
        torch.Tensor of shape (n_params,)
        """
        return torch.tensor(np.asarray(w), device=self.device)

    def from_work(self, w: torch.Tensor) -> np.ndarray:
        """A host copy of the work vector ``w``, of the same dtype.

        Parameters
        ----------
        w : torch.Tensor of shape (n_params,)
            A work vector.

        Returns
        -------
        ndarray of shape (n_params,)
        """
        return w.detach().to("cpu", copy=True).numpy()

    def load(self, w: np.ndarray | torch.Tensor) -> torch.nn.Module:
        """Put the vector ``w`` into the network and return the network.

        The parameters become views of ``w`` (of its float32 copy on the device if it is
        of another dtype or elsewhere), so loading a float32 tensor on the device
        copies nothing.

        Parameters
        ----------
        w : ndarray or torch.Tensor of shape (n_params,)
            Flat parameter vector.

        Returns
        -------
        torch.nn.Module
            The network.
        """
        if isinstance(w, torch.Tensor):
            vec = w.detach().to(device=self.device, dtype=torch.float32)
        else:
            vec = torch.as_tensor(np.asarray(w, dtype=np.float32), device=self.device)
        vector_to_parameters(vec, self._params)
        return self.net

    def grad_vector(self, host: bool = True) -> np.ndarray | torch.Tensor:
        """The parameters' gradients as one flat vector (zeros where there is none).

        Parameters
        ----------
        host : bool, default=True
            Return a NumPy array; ``False``: a tensor on the device.

        Returns
        -------
        ndarray or torch.Tensor of shape (n_params,), float32
        """
        g = torch.cat([p.grad.reshape(-1) if p.grad is not None
                       else torch.zeros_like(p).reshape(-1) for p in self._params])
        return g.cpu().numpy() if host else g

    def _indices(self, idx) -> torch.Tensor:
        """Mini-batch indices on the device; to a GPU through pinned memory, so that the
        copy does not wait for the queued steps."""
        if isinstance(idx, torch.Tensor):
            return idx.to(self.device)
        if self.device.type != "cuda":
            return torch.as_tensor(idx, device=self.device)
        pinned = torch.as_tensor(np.asarray(idx, dtype=np.int64)).pin_memory()
        return pinned.to(self.device, non_blocking=True)

    # -- data ------------------------------------------------------------------------
    def images(self, X) -> torch.Tensor:
        """Flattened images ``X`` (n, C*H*W) as a tensor (n, C, H, W) on the device.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Flattened images of the size the network was built for.

        Returns
        -------
        torch.Tensor of shape (n_samples, C, H, W)
        """
        X = as_float_array(X, "X", dtype=np.float32)
        size = int(np.prod(self.image_shape))
        if X.ndim != 2 or X.shape[1] != size:
            raise ValueError(f"X must be flattened images of shape (n, {size}) for this "
                             f"network, built for images of shape {self.image_shape}; got "
                             f"shape {X.shape}")
        return torch.as_tensor(X, device=self.device).reshape(-1, *self.image_shape)

    def client_data(self, X: np.ndarray, y: np.ndarray, noise_sd: float = 0.0,
                    noise_seed: int | None = None) -> ClientTensors:
        """A client's data as tensors on the device (labels checked against ``n_classes``).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Flattened images (kept clean, also with per-load noise).
        y : ndarray of shape (n_samples,)
            Labels in ``0..n_classes - 1``.
        noise_sd : float, default=0.0
            Per-load noise (:attr:`topofl_lib.core.Client.load_noise_sd`): every
            mini-batch :meth:`batch` loads gets a fresh ``N(0, noise_sd^2)`` draw.
        noise_seed : int or None
            Seeds that noise (a :class:`LoadNoise` on this learner's device); required
            when ``noise_sd > 0``.

        Returns
        -------
        ClientTensors
            ``(images, labels)``: images of shape (n_samples, C, H, W), labels of shape
            (n_samples,), dtype long; ``noise`` is the :class:`LoadNoise` or ``None``.
        """
        y = np.asarray(y)
        if y.size and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"labels must lie in 0..{self.n_classes - 1}, got "
                             f"{int(y.min())}..{int(y.max())}")
        noise = None
        if check_real(noise_sd, "noise_sd", low=0.0) > 0:
            if noise_seed is None:
                raise ValueError(f"noise_sd={noise_sd} needs a noise_seed (an int), got None")
            noise = LoadNoise(noise_sd, noise_seed, self.device)
        return ClientTensors(self.images(X),
                             torch.as_tensor(y, dtype=torch.long, device=self.device), noise)

    def batch(self, data, idx) -> tuple[torch.Tensor, torch.Tensor]:
        """The mini-batch ``idx`` of a client's data, as the network trains on it.

        Parameters
        ----------
        data : ClientTensors or tuple of torch.Tensor
            ``(images, labels)`` from :meth:`client_data`.
        idx : ndarray of int or torch.Tensor
            Indices of the mini-batch.

        Returns
        -------
        images : torch.Tensor of shape (len(idx), C, H, W)
            With a fresh draw of the client's per-load noise added, if it has any (a
            new draw at every call, also for the same ``idx``).
        labels : torch.Tensor of shape (len(idx),)
        """
        X, y = data
        sel = self._indices(idx)
        x = X[sel]
        noise = getattr(data, "noise", None)
        return (x if noise is None else noise(x)), y[sel]

    # -- learner API -------------------------------------------------------------------
    def gradient(self, w: np.ndarray | torch.Tensor, data, idx: np.ndarray,
                 extra_loss=None, deferred_loss=None) -> np.ndarray | torch.Tensor:
        """Gradient of the mean cross-entropy on samples ``idx`` at ``w``.

        ``extra_loss(net)``, if given, returns a scalar tensor added to the loss before
        the backward pass (FedTopo's weighted TAL). ``deferred_loss(net)`` adds such a
        term in two steps, so that its host work overlaps the device's: it queues the
        term's forward pass, starts its host work and returns ``finish``; the
        cross-entropy's backward pass is queued next, then ``finish()`` returns the term
        and its own backward pass follows. The forward passes run in the same order as
        with ``extra_loss`` and each parameter's gradient is the sum of the same two
        terms, so the gradient is the same, bit for bit (a sum of two floats does not
        depend on their order).

        Parameters
        ----------
        w : ndarray or torch.Tensor of shape (n_params,)
            Flat parameter vector (a tensor: a work vector, :meth:`to_work`).
        data : ClientTensors or tuple of torch.Tensor
            ``(images, labels)`` from :meth:`client_data` (its per-load noise, if any,
            is added to the batch: :meth:`batch`).
        idx : ndarray of int
            Indices of the mini-batch.
        extra_loss : callable, optional
            ``extra_loss(net) -> scalar tensor`` added to the loss.
        deferred_loss : callable, optional
            ``deferred_loss(net) -> finish``, ``finish() -> scalar tensor`` added to the
            loss after the cross-entropy's backward pass; not with ``extra_loss``.

        Returns
        -------
        ndarray or torch.Tensor of shape (n_params,), float32
            The flat gradient; a tensor on the device when ``w`` is a tensor.
        """
        if extra_loss is not None and deferred_loss is not None:
            raise ValueError("pass extra_loss or deferred_loss, not both")
        x, y = self.batch(data, idx)
        net = self.load(w)
        net.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        if extra_loss is not None:
            loss = loss + extra_loss(net)
        finish = deferred_loss(net) if deferred_loss is not None else None
        loss.backward()
        if finish is not None:
            finish().backward()
        return self.grad_vector(host=not isinstance(w, torch.Tensor))

    def clipped_gradient_sum(self, w: np.ndarray | torch.Tensor, data, idx: np.ndarray,
                             clip: float) -> np.ndarray | torch.Tensor:
        """Sum over ``idx`` of each example's cross-entropy gradient clipped to L2 norm
        ``clip`` (DP-SGD, :class:`topofl_lib.privacy.SampleLevelDP`).

        The per-example gradients come from :func:`torch.func.vmap` of
        :func:`torch.func.grad` over the network (:func:`torch.func.functional_call`),
        ``chunk`` examples at a time, in the order of :meth:`grad_vector`.

        Parameters
        ----------
        w : ndarray or torch.Tensor of shape (n_params,)
            Flat parameter vector (a tensor: a work vector).
        data : tuple of torch.Tensor
            ``(images, labels)`` from :meth:`client_data`.
        idx : ndarray of int
            Indices of the examples (may be empty).
        clip : float
            The bound of each example's gradient.

        Returns
        -------
        ndarray or torch.Tensor of shape (n_params,), float32
            A tensor on the device when ``w`` is a tensor.
        """
        from torch.func import functional_call, grad, vmap

        X, y = data
        net = self.load(w)
        params = {name: p.detach() for name, p in net.named_parameters()}

        def loss(p, x, t):
            out = functional_call(net, p, (x.unsqueeze(0),))
            return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

        per_example = vmap(grad(loss), in_dims=(None, 0, 0))
        sel = self._indices(idx)
        total = torch.zeros(self.n_params, dtype=torch.float32, device=self.device)
        chunk = max(1, (1 << 24) // self.n_params)  # at most 16M floats of gradients
        for start in range(0, sel.shape[0], chunk):
            part = sel[start:start + chunk]
            grads = per_example(params, X[part], y[part])
            flat = torch.cat([grads[name].reshape(part.shape[0], -1) for name in params],
                             dim=1)
            norms = torch.linalg.vector_norm(flat, dim=1, dtype=torch.float64)
            total += clip_factors(norms, clip).to(flat.dtype) @ flat  # any float64 clip
        return total if isinstance(w, torch.Tensor) else total.cpu().numpy()

    def penalty_gradient(self, w, data) -> None:
        """None: the cross-entropy has no data-independent part (no weight decay).

        Parameters
        ----------
        w : ndarray or torch.Tensor of shape (n_params,)
            Flat parameter vector.
        data : tuple of torch.Tensor
            Unused.

        Returns
        -------
        None
        """
        return None

    def _batched(self, w, X, fn) -> np.ndarray:
        net = self.load(w)
        net.eval()
        out = []
        with torch.no_grad():
            Xt = self.images(X)
            for s in range(0, Xt.shape[0], self.eval_batch_size):
                out.append(fn(net, Xt[s:s + self.eval_batch_size]).cpu().numpy())
        net.train()
        return np.concatenate(out) if out else np.empty((0,))

    def logits(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Class logits of ``X`` under ``w`` (no gradient, in evaluation batches).

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Flat parameter vector.
        X : ndarray of shape (n_samples, n_features)
            Flattened images.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._batched(w, X, lambda net, x: net(x))

    def predict_proba(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Class probabilities (softmax of :meth:`logits`).

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Flat parameter vector.
        X : ndarray of shape (n_samples, n_features)
            Flattened images.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Rows sum to one.
        """
        z = self.logits(w, X)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def evaluate(self, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Score ``w`` on ``(X, y)``.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Flat parameter vector.
        X : ndarray of shape (n_samples, n_features)
            Flattened images.
        y : ndarray of shape (n_samples,)
            Labels.

        Returns
        -------
        auc : float
            Always NaN (multi-class: no AUC).
        accuracy : float
            Fraction of correct predictions.
        """
        pred = self.logits(w, X).argmax(axis=1)
        return float("nan"), float(np.mean(pred == np.asarray(y)))

    def representation(self, w: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Penultimate-layer activations (pTopoFL's descriptor input).

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            Flat parameter vector.
        X : ndarray of shape (n_samples, n_features)
            Flattened images.

        Returns
        -------
        ndarray of shape (n_samples, n_hidden), dtype float64
        """
        return self._batched(w, X, lambda net, x: net.penultimate(x)).astype(np.float64)

    def block_output(self, w: np.ndarray | None, X, block: str) -> torch.Tensor:
        """Activations of ``block`` for inputs ``X`` under ``w`` (with gradient if enabled).

        Parameters
        ----------
        w : ndarray of shape (n_params,) or None
            Flat parameter vector; ``None`` uses the network's current weights.
        X : ndarray or torch.Tensor
            Flattened images, or image tensors already on the device.
        block : str
            The block's name.

        Returns
        -------
        torch.Tensor
            The block's activations.
        """
        net = self.net if w is None else self.load(w)
        x = X if isinstance(X, torch.Tensor) else self.images(X)
        return net.block_output(x, block)
