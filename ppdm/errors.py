"""Errors a user can act on.

Every problem caused by the input (a file, a column, a parameter) is raised as
:class:`PPDMError` with one sentence naming the problem. The CLI turns it into
exit code 2 without a traceback; anything else is an internal error (exit 1).
"""

from __future__ import annotations


class PPDMError(ValueError):
    """Bad input or impossible parameters, described in one clear sentence."""


class SchemaError(PPDMError):
    """A table does not fit the schema (missing column, wrong type, NaN/inf...)."""


class ParameterError(PPDMError):
    """A technique or measure was given an unknown or impossible parameter."""


class MeasureNotApplicable(PPDMError):
    """A measure cannot be computed on this table or with these inputs (no quasi-identifiers
    declared, no control set, a constant column...). An evaluation reports the measure as
    skipped with this message as its reason instead of aborting."""


class ScenarioNotApplicable(MeasureNotApplicable):
    """The intruder scenario a risk measure models does not apply to this release (every
    quasi-identifier a key-variable measure would count is perturbed in it). Skipped like any
    :class:`MeasureNotApplicable`; a search judges the release by its policy's lines whose
    scenario applies instead."""
