"""Shipped datasets (``ppdm.datasets.load(name)``); see :mod:`ppdm.data.datasets`."""

from ppdm.data.datasets import info, load, names

__all__ = ["load", "names", "info"]
