"""The run report: the paper's views of every configuration of a run, as markdown and as ONE
self-contained HTML file (inline CSS and SVG; no scripts, no external assets).

Views: headline metrics with 95% cluster-bootstrap CIs, per-project tables, the outcome-stage
ladder, efficiency (time, calls, tokens, money; cost per pass and per kill-complete pass), cost vs
KillComplete@1 with its Pareto frontier, and best-of-n vs single for arms with several candidates.
The output is deterministic: fixed bootstrap seeds, no timestamps.

Layout: ``model`` (the pydantic models, the report as data), ``statistics`` (computing them from
run directories), ``sections`` (what the report says, independent of the format), ``markdown``,
``svg`` and ``html`` (the two renderings). This module re-exports what callers import, so
``from bench.report import build_report, render_html, render_markdown`` keeps working.
"""

from bench.report.html import render_html
from bench.report.markdown import render_markdown
from bench.report.model import (
    BestOfGroup,
    BestOfRow,
    ConfigSummary,
    Efficiency,
    EpochRow,
    Estimate,
    InstanceRow,
    LanguageGroup,
    LanguagePair,
    LanguageRow,
    PairedRow,
    ProjectMetrics,
    Report,
)
from bench.report.statistics import build_report, pareto_frontier

__all__ = ["BestOfGroup", "BestOfRow", "ConfigSummary", "Efficiency", "EpochRow", "Estimate", "InstanceRow",
           "LanguageGroup", "LanguagePair", "LanguageRow", "PairedRow", "ProjectMetrics", "Report", "build_report", "pareto_frontier", "render_html",
           "render_markdown"]
