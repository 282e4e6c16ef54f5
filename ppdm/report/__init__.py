"""Tables, plots and self-contained HTML reports of comparisons and evaluations."""

from ppdm.report.html import render_evaluation_html, render_html, write_evaluation_html, write_html
from ppdm.report.measure_info import MEASURE_INFO, MeasureInfo, describe_measure

__all__ = ["render_html", "render_evaluation_html", "write_html", "write_evaluation_html", "MEASURE_INFO", "MeasureInfo",
           "describe_measure"]
