"""Privacy: the paper's proxies, real attacks, differentially private descriptors and
models (client-level DP-FedAvg, DP-SGD), the accounting of every release, and the audit
of a guarantee by attack.

Attributes load on first use.
"""

from .._lazy import attach

__all__ = [
    "ATTACK_DESCRIPTORS",
    "DP_LEVELS",
    "ClientLevelDP",
    "NOISE_PLACEMENTS",
    "RELATIONS",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivacyAccountant",
    "PrivateMethod",
    "SampleLevelDP",
    "analytic_gaussian_sigma",
    "calibrate_noise_multiplier",
    "clip_norm",
    "clopper_pearson",
    "descriptor_inversion_experiment",
    "descriptor_map",
    "dp_utility_experiment",
    "empirical_epsilon",
    "epsilon_from_rates",
    "gaussian_mechanism_audit",
    "gradient_inversion_experiment",
    "held_out_epsilon",
    "invert_batch_gradient",
    "invert_descriptor",
    "invert_single_gradient",
    "logistic_data_gradient",
    "membership_experiment",
    "membership_inference",
    "mi_proxy_bits",
    "proxy_table",
    "reconstruction_metrics",
    "reconstruction_risk_gradient",
    "reconstruction_risk_topology",
    "split_budget",
]

__getattr__, __dir__ = attach(__name__, {
    ".accounting": ["RELATIONS", "PrivacyAccountant", "calibrate_noise_multiplier"],
    ".budget": ["split_budget"],
    ".wrapper": ["PrivateMethod"],
    ".audit": ["clopper_pearson", "empirical_epsilon", "epsilon_from_rates",
               "gaussian_mechanism_audit", "held_out_epsilon"],
    ".attacks": ["ATTACK_DESCRIPTORS", "descriptor_map", "invert_batch_gradient",
                 "invert_descriptor", "invert_single_gradient", "logistic_data_gradient",
                 "membership_inference", "reconstruction_metrics"],
    ".evaluation": ["descriptor_inversion_experiment", "dp_utility_experiment",
                    "gradient_inversion_experiment", "membership_experiment",
                    "proxy_table"],
    ".mechanisms": ["GaussianMechanism", "LaplaceMechanism", "analytic_gaussian_sigma",
                    "clip_norm"],
    ".model_channel": ["DP_LEVELS", "NOISE_PLACEMENTS", "ClientLevelDP", "SampleLevelDP"],
    ".proxies": ["mi_proxy_bits", "reconstruction_risk_gradient",
                 "reconstruction_risk_topology"],
})
