"""Server-side pieces shared by the distillation baselines (FedDF, FedGen, FedFTG).

* :func:`server_stream`: the server's own random stream, spawned from the fit's
  generator without advancing it, so a method whose server part is switched off draws
  exactly FedAvg's numbers (the bit-for-bit tests rely on it).
* :func:`make_generator`: a small conditional generator ``G(z, y)`` (an MLP on the
  noise and the one-hot label), built with a seed, so a seed fixes its weights.
* :func:`ensemble_logits`: the (class-weighted) mean logits of several models.
* :func:`adam_on_vector`: Adam steps on a flat parameter vector, the gradient read
  through a :class:`~topofl_lib.deep.TorchLearner` (the student's loss is any
  function of the loaded network).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from ..core.seeds import draw_seed
from ..federated.fedavg import FedAvg
from .learner import TorchLearner

__all__ = ["GeneratorFedAvg", "NetworkFedAvg", "adam_on_vector", "diversity_loss",
           "draw_labels_and_noise", "ensemble_logits", "generate", "generator_vector",
           "kl_to_teacher", "label_weights", "make_generator", "model_logits", "network_params",
           "optimise", "server_stream", "torch_stream"]


class NetworkFedAvg(FedAvg):
    """FedAvg that needs a network (the base of the deep-only baselines).

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`; ``model`` is required.
    solver, evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FedAvg` (a ``model_dp`` this
        class's server rule or gradient would bypass is refused when the fit starts).

    Attributes
    ----------
    coef_ : ndarray
        The global model.
    local_models_ : ndarray (n_clients, n_params)
        The clients' models of the last round.
    """

    def _check_params(self):
        super()._check_params()
        if self.model is None:
            raise ValueError(f"{type(self).__name__} needs a network: pass "
                             "model=TorchModel(...)")


class GeneratorFedAvg(NetworkFedAvg):
    """A :class:`NetworkFedAvg` whose server trains a conditional generator (FedGen,
    FedFTG); subclasses define ``noise_dim``, ``hidden`` and ``gen_lr``.

    Parameters
    ----------
    n_rounds, lr, local_epochs, batch_size, C, model, random_state, rng_streams
        As in :class:`~topofl_lib.federated.FederatedAlgorithm`; ``model`` is required.
    solver, evaluate_on, standardise, model_dp
        As in :class:`~topofl_lib.federated.FedAvg` (a ``model_dp`` this
        class's server rule or gradient would bypass is refused when the fit starts).

    Attributes
    ----------
    coef_ : ndarray
        The global model.
    generator_ : ndarray (n_generator_params,)
        The generator's weights (after the last round).
    """

    def _start_generator(self, out_dim: int) -> None:
        """Build the seeded generator, its Adam optimiser and its noise stream."""
        rng = server_stream(self._rng)
        self._generator = make_generator(self.noise_dim, self.learner_.n_classes,
                                         self.hidden, out_dim, rng).to(self.learner_.device)
        self._gen_opt = torch.optim.Adam(self._generator.parameters(), lr=self.gen_lr)
        self._noise = torch_stream(rng)
        self.generator_ = generator_vector(self._generator)

    def _label_counts(self) -> np.ndarray:
        """Training labels per client and class, shape (n_clients, n_classes)."""
        C = self.learner_.n_classes
        return np.array([np.bincount(self._data[k][1].cpu().numpy(), minlength=C)
                         for k in range(self.n_clients_)], dtype=float)


def server_stream(rng: np.random.Generator) -> np.random.Generator:
    """A child stream of ``rng`` that leaves ``rng``'s own draws unchanged.

    Parameters
    ----------
    rng : numpy.random.Generator
        The fit's generator.

    Returns
    -------
    numpy.random.Generator
        Independent of ``rng``'s future draws; the same for the same seed.
    """
    return rng.spawn(1)[0]


def torch_stream(rng: np.random.Generator) -> torch.Generator:
    """A CPU torch generator seeded with one draw of ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the seed.

    Returns
    -------
    torch.Generator
    """
    return torch.Generator().manual_seed(int(draw_seed(rng)))


def make_generator(noise_dim: int, n_classes: int, hidden: int, out_dim: int,
                   rng: np.random.Generator) -> nn.Module:
    """A conditional generator: ``[z, onehot(y)] -> Linear -> ReLU -> Linear``.

    Parameters
    ----------
    noise_dim : int
        Dimension of the noise ``z``.
    n_classes : int
        Number of labels ``y``.
    hidden : int
        Width of the hidden layer.
    out_dim : int
        Dimension of a generated sample (a feature vector, or a flattened image).
    rng : numpy.random.Generator
        Draws the seed of the initial weights.

    Returns
    -------
    torch.nn.Module
        Call it as ``G(torch.cat([z, onehot], dim=1))``.
    """
    state = torch.random.get_rng_state()
    torch.manual_seed(int(draw_seed(rng)))
    net = nn.Sequential(nn.Linear(noise_dim + n_classes, hidden), nn.ReLU(),
                        nn.Linear(hidden, out_dim))
    torch.random.set_rng_state(state)
    return net


def generator_vector(net: nn.Module) -> np.ndarray:
    """The generator's weights as a flat float32 array (what a fit stores).

    Parameters
    ----------
    net : torch.nn.Module
        The generator.

    Returns
    -------
    ndarray of shape (n_params,)
    """
    return parameters_to_vector(net.parameters()).detach().cpu().numpy().astype(np.float32)


def generate(net: nn.Module, y: torch.Tensor, z: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Samples ``G(z, y)`` of a conditional generator.

    Parameters
    ----------
    net : torch.nn.Module
        The generator (:func:`make_generator`).
    y : torch.Tensor of shape (n,), long
        Labels.
    z : torch.Tensor of shape (n, noise_dim)
        Noise.
    n_classes : int
        As in :func:`make_generator`.

    Returns
    -------
    torch.Tensor of shape (n, out_dim)
    """
    onehot = nn.functional.one_hot(y, n_classes).to(z.dtype)
    return net(torch.cat([z, onehot], dim=1))


def draw_labels_and_noise(prior: torch.Tensor, n: int, noise_dim: int,
                          gen: torch.Generator, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labels drawn from ``prior`` and standard normal noise, from ``gen``.

    Parameters
    ----------
    prior : torch.Tensor of shape (n_classes,)
        Label probabilities (on the CPU).
    n : int
        Number of draws.
    noise_dim : int
        Dimension of the noise.
    gen : torch.Generator
        A CPU generator (:func:`torch_stream`).
    device : torch.device
        Where the draws are moved.

    Returns
    -------
    y : torch.Tensor of shape (n,), long
    z : torch.Tensor of shape (n, noise_dim)
    """
    y = torch.multinomial(prior, n, replacement=True, generator=gen)
    z = torch.randn(n, noise_dim, generator=gen)
    return y.to(device), z.to(device)


def diversity_loss(z: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``exp(-mean_ij ||out_i - out_j|| * ||z_i - z_j||)``: small when different noise
    gives different samples (a mode-seeking diversity term).

    Parameters
    ----------
    z : torch.Tensor of shape (n, noise_dim)
        The noise.
    out : torch.Tensor of shape (n, ...)
        The generated samples.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    flat = out.reshape(out.shape[0], -1)
    d_out = (flat[:, None, :] - flat[None, :, :]).abs().mean(dim=2)
    d_z = (z[:, None, :] - z[None, :, :]).pow(2).mean(dim=2)
    return torch.exp(-(d_out * d_z).mean())


def label_weights(counts: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The label prior and the class-level ensemble weights from label counts.

    Parameters
    ----------
    counts : ndarray of shape (n_clients, n_classes)
        Training labels per client and class.

    Returns
    -------
    prior : torch.Tensor of shape (n_classes,)
        ``p(y) = n_y / n`` (float64, CPU).
    weights : torch.Tensor of shape (n_clients, n_classes)
        ``n_{k,y} / n_y`` (0 for a class no client holds; float32, CPU).
    """
    per_class = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.nan_to_num(counts / per_class)
    return (torch.as_tensor(per_class / per_class.sum()),
            torch.as_tensor(weights, dtype=torch.float32))


def network_params(learner: TorchLearner, w) -> dict[str, torch.Tensor]:
    """The flat vector ``w`` as the network's named parameters (views of one tensor), for
    :func:`torch.func.functional_call`: several models can then sit in one autograd
    graph, which loading them one after the other into the learner's network would
    corrupt (the graph would see the last one's weights).

    Parameters
    ----------
    learner : TorchLearner
        Whose network names the parameters.
    w : ndarray or torch.Tensor of shape (n_params,)
        Flat parameter vector (a tensor keeps its autograd history).

    Returns
    -------
    dict of str to torch.Tensor
    """
    vec = w if isinstance(w, torch.Tensor) else torch.as_tensor(
        np.asarray(w, dtype=np.float32), device=learner.device)
    out, start = {}, 0
    for name, p in learner.net.named_parameters():
        out[name] = vec[start:start + p.numel()].view_as(p)
        start += p.numel()
    return out


def model_logits(learner: TorchLearner, w, x: torch.Tensor,
                 head_only: bool = False) -> torch.Tensor:
    """Logits of the model ``w`` on ``x`` without loading ``w`` into the network.

    Parameters
    ----------
    learner : TorchLearner
        Whose network computes them.
    w : ndarray or torch.Tensor of shape (n_params,)
        Flat parameter vector.
    x : torch.Tensor
        Images (n, C, H, W), or penultimate features (n, d) when ``head_only``.
    head_only : bool, default=False
        Apply only the classifier head.

    Returns
    -------
    torch.Tensor of shape (n, n_classes)
    """
    params = network_params(learner, w)
    if not head_only:
        return torch.func.functional_call(learner.net, params, (x,))
    head = {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith("classifier.")}
    return torch.func.functional_call(learner.net.classifier, head, (x,))


def ensemble_logits(learner: TorchLearner, models: np.ndarray, x: torch.Tensor,
                    weights: torch.Tensor | None = None, head_only: bool = False,
                    ) -> torch.Tensor:
    """The mean logits of ``models`` on ``x`` (gradient flows to ``x``, not to the models).

    Parameters
    ----------
    learner : TorchLearner
        Whose network computes the logits (:func:`model_logits`).
    models : ndarray of shape (n_models, n_params)
        The teachers.
    x : torch.Tensor
        Images (n, C, H, W), or penultimate features (n, d) when ``head_only``.
    weights : torch.Tensor of shape (n_models, n) or None
        Per-sample weights of each teacher (columns summing to one); ``None``: uniform.
    head_only : bool, default=False
        Apply only the classifier head (``x`` is a feature vector).

    Returns
    -------
    torch.Tensor of shape (n, n_classes)
    """
    total = 0.0
    for i, w in enumerate(models):
        z = model_logits(learner, w, x, head_only)
        share = 1.0 / len(models) if weights is None else weights[i][:, None]
        total = total + share * z
    return total


def kl_to_teacher(student: torch.Tensor, teacher: torch.Tensor,
                  temperature: float = 1.0) -> torch.Tensor:
    """``T^2 KL(softmax(teacher / T) || softmax(student / T))``, averaged over the batch.

    Parameters
    ----------
    student, teacher : torch.Tensor of shape (n, n_classes)
        Logits.
    temperature : float, default=1.0
        Softening temperature ``T``.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    t = temperature
    return nn.functional.kl_div(nn.functional.log_softmax(student / t, dim=1),
                                nn.functional.softmax(teacher / t, dim=1),
                                reduction="batchmean") * t * t


def adam_on_vector(learner: TorchLearner, w: np.ndarray, loss: Callable, steps: int,
                   lr: float) -> tuple[np.ndarray, list[float]]:
    """``steps`` Adam steps on the flat vector ``w`` minimising ``loss(net, step)``.

    Parameters
    ----------
    learner : TorchLearner
        Loads the vector into its network and reads the gradient back.
    w : ndarray of shape (n_params,)
        The starting model (not modified).
    loss : callable
        ``loss(net, step) -> scalar tensor`` with the vector loaded in ``net``.
    steps : int
        Number of Adam steps.
    lr : float
        Adam's step size.

    Returns
    -------
    w : ndarray of shape (n_params,), float32
        The final model.
    losses : list of float
        The loss before each step.
    """
    vec = learner.to_work(np.asarray(w, dtype=np.float32)).requires_grad_(True)
    opt = torch.optim.Adam([vec], lr=lr)
    losses = []
    for step in range(steps):
        net = learner.load(vec)
        net.zero_grad(set_to_none=True)
        value = loss(net, step)
        value.backward()
        losses.append(float(value.detach()))
        vec.grad = learner.grad_vector(host=False)
        opt.step()
    return learner.from_work(vec), losses


def optimise(opt: torch.optim.Optimizer, steps: int, loss: Callable) -> list[float]:
    """``steps`` steps of ``opt`` on ``loss()`` (a generator's training).

    Parameters
    ----------
    opt : torch.optim.Optimizer
        Holds the parameters trained.
    steps : int
        Number of steps.
    loss : callable
        ``loss() -> scalar tensor``, drawing its own batch.

    Returns
    -------
    list of float
        The loss before each step.
    """
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        value = loss()
        value.backward()
        opt.step()
        losses.append(float(value.detach()))
    return losses
