"""The report as markdown: the sections' text and tables (the charts are HTML only)."""

from __future__ import annotations

from bench.report.model import Report
from bench.report.sections import build_sections


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    lines = [f"# {report.title}", "", (f"Runs: {', '.join(report.runs)}. Bootstrap: {report.bootstrap['resamples']} "
             f"resamples, seed {report.bootstrap['seed']}, clusters = {report.bootstrap['cluster']}."), ""]
    for section in build_sections(report):
        if section.chart and not section.tables and not section.text:
            continue  # chart-only sections exist in the HTML
        lines += [f"## {section.title}", ""]
        for text in section.text:
            lines += [text, ""]
        for table in section.tables:
            lines.append("| " + " | ".join(_md_cell(h) for h in table.headers) + " |")
            lines.append("|" + "|".join("---:" if i >= table.numeric_from else "---"
                                        for i in range(len(table.headers))) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
