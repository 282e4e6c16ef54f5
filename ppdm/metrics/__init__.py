"""Utility and risk measures. Importing this package registers every measure."""

from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, register_measure

__all__ = ["MEASURES", "EvaluationContext", "MeasureResult", "register_measure"]
