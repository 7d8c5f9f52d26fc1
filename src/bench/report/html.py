"""The report as ONE self-contained HTML page: inline CSS, the sections' text and tables, and the
SVG charts; no scripts, no external assets."""

from __future__ import annotations

from bench.report.model import Report
from bench.report.sections import build_sections
from bench.report.svg import CHARTS, esc

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
color:#222;padding:0 1rem;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;vertical-align:top}th{background:#f4f4f4;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}
svg{display:block;margin:.5rem 0;max-width:100%;height:auto}
svg .label{font-size:12px;fill:#222}svg .tick{font-size:11px;fill:#444}svg .grid{stroke:#e4e4e4}
p.meta{color:#666;font-size:.85rem}
""".strip()


def render_html(report: Report, links: dict[tuple[str, str], str] | None = None) -> str:
    """``links``: (config, instance) → href of the instance's explorer page (write_instance_pages)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(report.title)}</title>", f"<style>{CSS}</style></head><body>",
             f"<h1>{esc(report.title)}</h1>",
             (f'<p class="meta">Runs: {esc(", ".join(report.runs))}. Bootstrap: {report.bootstrap["resamples"]} '
             f'resamples, seed {report.bootstrap["seed"]}, clusters = {esc(report.bootstrap["cluster"])}.</p>')]
    for section in build_sections(report, links):
        parts.append(f"<h2>{esc(section.title)}</h2>")
        for text in section.text:
            parts.append(f"<p>{esc(text)}</p>")
        if section.chart:
            svg = CHARTS[section.chart](report)
            if svg:
                parts.append(svg)
        for table in section.tables:
            parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.headers)
                         + "</tr></thead><tbody>")
            for r, row in enumerate(table.rows):
                cells = [f'<a href="{esc(table.links[(r, i)])}">{esc(c)}</a>' if (r, i) in table.links else esc(c)
                         for i, c in enumerate(row)]
                parts.append("<tr>" + "".join(
                    f'<td class="num">{c}</td>' if i >= table.numeric_from else f"<td>{c}</td>"
                    for i, c in enumerate(cells)) + "</tr>")
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
