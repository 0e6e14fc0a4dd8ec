"""Privacy: the paper's proxies, real attacks, and differentially private descriptors."""

from .attacks import (
    invert_batch_gradient,
    invert_descriptor,
    invert_single_gradient,
    logistic_data_gradient,
    membership_inference,
    reconstruction_metrics,
)
from .evaluation import (
    descriptor_inversion_experiment,
    dp_utility_experiment,
    gradient_inversion_experiment,
    membership_experiment,
    privacy_claim_values,
    proxy_table,
)
from .mechanisms import GaussianMechanism, LaplaceMechanism, analytic_gaussian_sigma, clip_norm
from .proxies import mi_proxy_bits, reconstruction_risk_gradient, reconstruction_risk_topology

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "analytic_gaussian_sigma",
    "clip_norm",
    "descriptor_inversion_experiment",
    "dp_utility_experiment",
    "gradient_inversion_experiment",
    "invert_batch_gradient",
    "invert_descriptor",
    "invert_single_gradient",
    "logistic_data_gradient",
    "membership_experiment",
    "membership_inference",
    "mi_proxy_bits",
    "privacy_claim_values",
    "proxy_table",
    "reconstruction_metrics",
    "reconstruction_risk_gradient",
    "reconstruction_risk_topology",
]
