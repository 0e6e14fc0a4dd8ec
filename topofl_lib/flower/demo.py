"""``python -m topofl_lib flower``: the healthcare scenario on a real local federation.

Checks its arguments (and that the ``flower`` extra is installed) before anything is
written or started, writes one data file per hospital, starts a SuperLink and eight
SuperNodes on 127.0.0.1 (secure unless ``secure=False``: see
:class:`~topofl_lib.flower.LocalFederation`), runs the chosen method for the chosen
rounds, runs the in-process engine on the same data and seed, prints both per-client
AUC columns, the round times and what travelled over the wire, and stops every process
it started.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_bool, check_choice, check_int
from ..core.seeds import SEED_BOUND
from ..data.scenarios import make_healthcare
from .federation import (
    FLOWER_METHODS,
    LocalFederation,
    check_workdir,
    in_process_reference,
    require_flower,
    write_partitions,
)

__all__ = ["MAX_ROUNDS", "MAX_SEED", "flower_demo"]

#: Largest ``rounds``: the in-process engine keeps per-round, per-client scores, and a
#: Flower round of the demo takes about a second, so 10,000 rounds are hours already.
MAX_ROUNDS = 10_000

#: Largest ``seed``: what scikit-learn's ``random_state`` and torch's generators accept on
#: every platform (:data:`topofl_lib.core.seeds.SEED_BOUND`, exclusive). Flower's run
#: configuration is TOML, whose integers stop at 2**63 - 1.
MAX_SEED = SEED_BOUND - 1


def flower_demo(method: str = "pTopoFL", rounds: int = 15, seed: int = 0,
                workdir="build/flower", secure: bool = True, fast_waits: bool = False) -> dict:
    """Run the demo (see the module docstring); returns the Flower run's results.

    Parameters
    ----------
    method : {"pTopoFL", "FedAvg", "FedProx"}, default="pTopoFL"
        The federated method to run.
    rounds : int, default=15
        Number of communication rounds (1 to :data:`MAX_ROUNDS`).
    seed : int, default=0
        Seed of the healthcare scenario and of the run (0 to :data:`MAX_SEED`).
    workdir : str or Path, default="build/flower"
        Folder for the client partitions, keys, certificates and logs (created if missing).
    secure : bool, default=True
        Use TLS and registered SuperNode keys; ``False`` runs the federation insecure.
    fast_waits : bool, default=False
        Opt into the adapter :mod:`~topofl_lib.flower.fast_waits` (shorter waits inside
        Flower's modules and a long-lived ClientApp executor, on the flwr version it was
        verified with); off, Flower runs unpatched with its own executor.

    Returns
    -------
    dict
        The Flower run's results (``server_app``'s JSON: per-round entries with ``seconds`` and
        ``scores``, ``seconds``, ``descriptor_bytes``, ``model_bytes``, ...).

    Raises
    ------
    TypeError, ValueError
        A bad argument (the message names it and its value); nothing is written.
    FlowerNotInstalled
        ``flwr`` or ``cryptography`` is missing; nothing is written.
    """
    check_choice(method, "method", FLOWER_METHODS)
    check_int(rounds, "rounds", low=1, high=MAX_ROUNDS)
    check_int(seed, "seed", low=0, high=MAX_SEED)
    secure = check_bool(secure, "secure")
    fast_waits = check_bool(fast_waits, "fast_waits")
    workdir = check_workdir(workdir)
    require_flower()
    scenario = make_healthcare(random_state=seed)
    paths = write_partitions(scenario, workdir / "clients")
    cfg = {"num-rounds": rounds, "seed": seed, "eval-every": 5}
    t0 = time.perf_counter()
    ref = in_process_reference(scenario, method, **cfg)
    t_ref = time.perf_counter() - t0
    print(f"in-process engine: {rounds} rounds in {t_ref:.2f} s")
    mode = ("TLS, registered SuperNode keys" if secure else "INSECURE") + (
        "; fast-waits adapter" if fast_waits else "")
    print(f"starting a SuperLink and {len(paths)} SuperNodes ({mode}; logs in {workdir}) ...")
    with LocalFederation(paths, workdir, secure=secure, fast_waits=fast_waits) as fed:
        res = fed.run(method, timeout=3600, method=method, **cfg)
    times = [r["seconds"] for r in res["rounds"]]
    print(f"Flower: {rounds} rounds in {res['seconds']:.1f} s (median training round "
          f"{np.median(times):.2f} s; clients evaluate every 5th round and the last)")
    scores = res["rounds"][-1]["scores"]
    print("client  adversarial  AUC (Flower)  AUC (in-process)")
    final = ref.history_["client_auc"][-1]
    for k, c in enumerate(scenario.clients):
        flw = scores.get(str(k), [float("nan")])[0]
        print(f"{k:6d}  {str(c.adversarial):11s}  {flw:12.6f}  {final[k]:16.6f}")
    print(f"over the wire: descriptor {res['descriptor_bytes']} bytes once per client; "
          f"model {res['model_bytes']} bytes per message, two messages per client per round "
          "(plus one per evaluation)")
    return res
