"""The evaluation of one release as a JSON document (re-exported for reports).

The document is built in :mod:`ppdm.experiments.document`, below the report layer, so that
the library's :func:`ppdm.experiments.evaluate.evaluate` returns it too; the verdicts are
the library's single judge, :mod:`ppdm.metrics.judgement`. Every name importable from here
before stays importable.
"""

from __future__ import annotations

from ppdm.experiments.document import (
    JSON_FORMAT_VERSION,
    evaluation_document,
    json_header,
    table_json,
)
from ppdm.metrics.judgement import ATTACKS, UNCERTAIN, Verdict, fmt_number, verdict, verdicts

__all__ = ["ATTACKS", "JSON_FORMAT_VERSION", "UNCERTAIN", "Verdict", "evaluation_document", "fmt_number", "json_header",
           "table_json", "verdict", "verdicts"]
