"""Privacy: the paper's proxies, real attacks, differentially private descriptors and
models (client-level DP-FedAvg, DP-SGD), and the accounting of every release.

Attributes load on first use.
"""

from .._lazy import attach

__all__ = [
    "ATTACK_DESCRIPTORS",
    "ClientLevelDP",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivacyAccountant",
    "SampleLevelDP",
    "analytic_gaussian_sigma",
    "calibrate_noise_multiplier",
    "clip_norm",
    "descriptor_inversion_experiment",
    "descriptor_map",
    "dp_utility_experiment",
    "gradient_inversion_experiment",
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
]

__getattr__, __dir__ = attach(__name__, {
    ".accounting": ["PrivacyAccountant", "calibrate_noise_multiplier"],
    ".attacks": ["ATTACK_DESCRIPTORS", "descriptor_map", "invert_batch_gradient",
                 "invert_descriptor", "invert_single_gradient", "logistic_data_gradient",
                 "membership_inference", "reconstruction_metrics"],
    ".evaluation": ["descriptor_inversion_experiment", "dp_utility_experiment",
                    "gradient_inversion_experiment", "membership_experiment",
                    "proxy_table"],
    ".mechanisms": ["GaussianMechanism", "LaplaceMechanism", "analytic_gaussian_sigma",
                    "clip_norm"],
    ".model_channel": ["ClientLevelDP", "SampleLevelDP"],
    ".proxies": ["mi_proxy_bits", "reconstruction_risk_gradient",
                 "reconstruction_risk_topology"],
})
