"""``python -m topofl_lib flower``: the healthcare scenario on a real local federation.

Checks its arguments, writes one data file per hospital, starts a SuperLink and eight
SuperNodes on 127.0.0.1 (secure unless ``secure=False``: see
:class:`~topofl_lib.flower.LocalFederation`), runs the chosen method for the chosen
rounds, runs the in-process engine on the same data and seed, prints both per-client
AUC columns, the round times and what travelled over the wire, and stops every process
it started.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_int
from ..data.scenarios import make_healthcare
from .federation import FLOWER_METHODS, LocalFederation, in_process_reference, write_partitions

__all__ = ["flower_demo"]


def flower_demo(method: str = "pTopoFL", rounds: int = 15, seed: int = 0,
                workdir="build/flower", secure: bool = True) -> dict:
    """Run the demo (see the module docstring); returns the Flower run's results.

    Parameters
    ----------
    method : {"pTopoFL", "FedAvg", "FedProx"}, default="pTopoFL"
        The federated method to run.
    rounds : int, default=15
        Number of communication rounds (at least 1).
    seed : int, default=0
        Seed of the healthcare scenario and of the run.
    workdir : str or Path, default="build/flower"
        Folder for the client partitions, keys, certificates and logs.
    secure : bool, default=True
        Use TLS and registered SuperNode keys; ``False`` runs the federation insecure.

    Returns
    -------
    dict
        The Flower run's results (``server_app``'s JSON: per-round entries with ``seconds`` and
        ``scores``, ``seconds``, ``descriptor_bytes``, ``model_bytes``, ...).
    """
    check_choice(method, "method", FLOWER_METHODS)
    check_int(rounds, "rounds", low=1)
    check_int(seed, "seed", low=0)
    workdir = Path(workdir)
    scenario = make_healthcare(random_state=seed)
    paths = write_partitions(scenario, workdir / "clients")
    cfg = {"num-rounds": rounds, "seed": seed, "eval-every": 5}
    t0 = time.perf_counter()
    ref = in_process_reference(scenario, method, **cfg)
    t_ref = time.perf_counter() - t0
    print(f"in-process engine: {rounds} rounds in {t_ref:.2f} s")
    mode = "TLS, registered SuperNode keys" if secure else "INSECURE"
    print(f"starting a SuperLink and {len(paths)} SuperNodes ({mode}; logs in {workdir}) ...")
    with LocalFederation(paths, workdir, secure=secure) as fed:
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
