"""Speed of the label-aware descriptors beside the paper's 48-dim descriptor.

Run (under the heavy lock): ``python benchmarks/label_descriptors.py``. Everything is
timed in this one process on the same clients (the 8 hospitals of the healthcare
scenario, seed 0), and each figure is printed as a ratio to the 48-dim descriptor:

* per client: the 48-dim descriptor (exact ripser, ``n_sub=80``), the class-conditional
  descriptor (joint cloud + one block per class), and the model-anchored descriptor
  against one model (k-NN graph, exact lower-star H0/H1, margins included);
* a whole pTopoFL run (15 rounds) with each descriptor option; the model-anchored one
  recomputes its descriptors every round against both cluster models.
"""

from __future__ import annotations

from run_benchmarks import best_of  # this folder is on sys.path when the script runs

from topofl_lib.data import make_healthcare
from topofl_lib.federated import FedAvg, PTopoFL
from topofl_lib.federated.local import LogisticLearner
from topofl_lib.topology import (
    anchor_margins,
    class_conditional_descriptor,
    model_anchored_descriptor,
    topological_descriptor,
)


def per_client(repeat: int = 10) -> None:
    scen = make_healthcare(random_state=0)
    w = FedAvg(n_rounds=3, random_state=0).fit(scen).coef_
    learner = LogisticLearner()
    clients = scen.clients

    def paper():
        for k, c in enumerate(clients):
            topological_descriptor(c.X_train, 80, strict=False, random_state=k)

    def class_conditional():
        for k, c in enumerate(clients):
            class_conditional_descriptor(c.X_train, c.y_train, random_state=k)

    def model_anchored():
        for k, c in enumerate(clients):
            m = anchor_margins(learner, w, c.X_train, c.y_train)
            model_anchored_descriptor(c.X_train, m, random_state=k)

    base = best_of(paper, repeat)
    sizes = [c.n_train for c in clients]
    print(f"per client ({len(clients)} hospitals, {min(sizes)}-{max(sizes)} records, "
          f"20 features), best of {repeat}")
    print(f"{'descriptor':>18} {'ms/client':>10} {'x 48-dim':>9}")
    for name, fn in (("48-dim (paper)", paper), ("class-conditional", class_conditional),
                     ("model-anchored", model_anchored)):
        t = base if fn is paper else best_of(fn, repeat)
        print(f"{name:>18} {t / len(clients) * 1e3:>10.2f} {t / base:>9.2f}")


def whole_runs(repeat: int = 3) -> None:
    scen = make_healthcare(random_state=0)
    print("\npTopoFL, healthcare seed 0, 15 rounds, best of", repeat)
    print(f"{'descriptor':>18} {'seconds':>8} {'x paper':>8}")
    base = None
    for option in ("paper", "class_conditional", "model_anchored"):
        t = best_of(lambda o=option: PTopoFL(descriptor=o, random_state=0).fit(scen), repeat)
        base = base or t
        print(f"{option:>18} {t:>8.2f} {t / base:>8.2f}")


if __name__ == "__main__":
    per_client()
    whole_runs()
