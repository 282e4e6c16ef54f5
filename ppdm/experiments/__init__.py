"""Paper reproductions and comparisons of techniques (cross-validation, sweeps).

The comparison engine lives in :mod:`ppdm.experiments.compare` (imported by its full
name; the package does not re-export ``compare`` so the module stays reachable). The
evaluation of one release is :func:`ppdm.experiments.evaluate.evaluate`, imported by its full
name for the same reason.
"""
