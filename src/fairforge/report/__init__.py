"""The report of a run: one self-contained HTML page with every table and figure, captions
and a verdict.

- :mod:`.inputs`: where the report reads each table and figure (:func:`report_inputs`) and
  the captions, package data under ``captions/`` (:func:`caption_path` for the rules).
- :mod:`.verdict`: the statistics behind the verdict (which detector is fairest, how sure).
- :mod:`.views`: the tables reshaped as the page shows them.
- :mod:`.html`: building the page (:func:`build_report`, :func:`write_report`).
- :mod:`.figures`: the report's figures (imported on its own: it needs matplotlib).
"""

from fairforge.report.html import build_report, write_report
from fairforge.report.inputs import (
    caption_path,
    caption_text,
    paths_from_rule_inputs,
    ranking_enabled,
    read_input,
    report_inputs,
)
from fairforge.report.verdict import ALPHA, VERDICT_METRICS, exposure_verdict, verdict

__all__ = [
    "ALPHA",
    "VERDICT_METRICS",
    "build_report",
    "caption_path",
    "caption_text",
    "exposure_verdict",
    "paths_from_rule_inputs",
    "ranking_enabled",
    "read_input",
    "report_inputs",
    "verdict",
    "write_report",
]
