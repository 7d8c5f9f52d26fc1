"""The report's SVG charts, inline in the HTML: Pass@1 split into kill-complete and other passes,
KillComplete@1 with its CI, the outcome-stage ladder, and cost vs KC@1 with the Pareto frontier."""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Callable

from bench.formatting import pct
from bench.report.model import STAGES, Report
from bench.report.sections import est_text, money_text

STAGE_COLORS = {"generation_failure": "#7f7f7f", "build_failure": "#d62728", "binding_failure": "#ff7f0e",
                "execution_failure": "#bcbd22", "assertion_failure": "#9467bd", "pass": "#2ca02c",
                "tampering": "#8c564b", "unstable": "#e377c2", "infrastructure_failure": "#c7c7c7"}
KC_COLOR, OTHER_PASS_COLOR = "#1b7837", "#a6dba0"


def esc(text: str) -> str:
    """Text or an attribute value, escaped for HTML/SVG (also used by the page around the charts)."""
    return html.escape(text, quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}"


def _label_width(names: list[str]) -> int:
    return min(400, 16 + int(7.5 * max((len(n) for n in names), default=4)))


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{esc(label)}">' + "".join(body) + "</svg>")


def _percent_axis(x0: float, width: float, y: float, top: float) -> list[str]:
    out = []
    for tick in (0, 25, 50, 75, 100):
        x = x0 + width * tick / 100
        out.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(y)}" class="grid"/>')
        out.append(f'<text x="{_f(x)}" y="{_f(y + 14)}" class="tick" text-anchor="middle">{tick}%</text>')
    return out


def _chart_pass(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 28
    height = top + rh * len(cs) + 24
    body = [(f'<rect x="{lw}" y="4" width="12" height="12" fill="{KC_COLOR}"/>'
            f'<text x="{lw + 16}" y="14" class="tick">kill-complete passes</text>'
            f'<rect x="{lw + 170}" y="4" width="12" height="12" fill="{OTHER_PASS_COLOR}"/>'
            f'<text x="{lw + 186}" y="14" class="tick">other passes</text>')]
    body += _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 4
        total = c.pass_at_1.value or 0.0
        kc = min(c.kc_part_of_pass or 0.0, total)
        body.append(f'<text x="{lw - 6}" y="{_f(y + 12)}" text-anchor="end" class="label">{esc(c.name)}</text>')
        body.append(f'<rect x="{lw}" y="{_f(y)}" width="{_f(bw * kc)}" height="16" fill="{KC_COLOR}">'
                    f'<title>{esc(c.name)}: kill-complete passes {pct(kc)}</title></rect>')
        body.append(f'<rect x="{_f(lw + bw * kc)}" y="{_f(y)}" width="{_f(bw * (total - kc))}" height="16" '
                    f'fill="{OTHER_PASS_COLOR}"><title>{esc(c.name)}: other passes {pct(total - kc)}</title></rect>')
        body.append(f'<text x="{_f(lw + bw * total + 4)}" y="{_f(y + 12)}" class="tick">{pct(c.pass_at_1.value)}'
                    f'</text>')
    return _svg(lw + bw + 60, height, body, "Pass@1 split into kill-complete and other passes")


def _chart_kc(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 10
    body = _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 12
        body.append(f'<text x="{lw - 6}" y="{_f(y + 4)}" text-anchor="end" class="label">{esc(c.name)}</text>')
        e = c.kill_complete_at_1
        if e.value is None:
            continue
        lo, hi = e.ci_low or 0.0, e.ci_high or 0.0
        body.append(f'<line x1="{_f(lw + bw * lo)}" y1="{_f(y)}" x2="{_f(lw + bw * hi)}" y2="{_f(y)}" '
                    f'stroke="#333" stroke-width="2"/>')
        body.append(f'<circle cx="{_f(lw + bw * e.value)}" cy="{_f(y)}" r="5" fill="{KC_COLOR}">'
                    f'<title>{esc(c.name)}: {est_text(e)}</title></circle>')
        body.append(f'<text x="{_f(lw + bw * hi + 6)}" y="{_f(y + 4)}" class="tick">{est_text(e)}</text>')
    return _svg(lw + bw + 170, top + rh * len(cs) + 24, body, "KillComplete@1 with 95% CI")


def _chart_outcomes(report: Report) -> str:
    cs = report.configs
    lw, bw, rh, top = _label_width([c.name for c in cs]), 420, 24, 48
    body = []
    for i, stage in enumerate(STAGES):
        lx, ly = 8 + (i % 4) * 140, 4 + (i // 4) * 18
        body.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{STAGE_COLORS[stage]}"/>'
                    f'<text x="{lx + 16}" y="{ly + 10}" class="tick">{esc(stage.replace("_", " "))}</text>')
    body += _percent_axis(lw, bw, top + rh * len(cs), top)
    for i, c in enumerate(cs):
        y = top + i * rh + 4
        body.append(f'<text x="{lw - 6}" y="{_f(y + 12)}" text-anchor="end" class="label">{esc(c.name)}</text>')
        x = float(lw)
        total = sum(c.outcomes.values())
        for stage in STAGES:
            count = c.outcomes[stage]
            if not count or not total:
                continue
            w = bw * count / total
            body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="16" fill="{STAGE_COLORS[stage]}">'
                        f'<title>{esc(c.name)}: {esc(stage)} {count}</title></rect>')
            x += w
    return _svg(max(lw + bw + 20, 8 + 4 * 140), top + rh * len(cs) + 24, body, "Outcome stages per configuration")


def _nice_step(value: float) -> tuple[float, int]:
    """Smallest 1/2/5 x 10^k at or above value (an axis tick step), and the decimals it needs."""
    if value <= 0:
        return 1.0, 0
    exp = math.floor(math.log10(value))
    for mantissa in (1, 2, 5, 10):
        if mantissa * 10.0 ** exp >= value:
            step_exp = exp + 1 if mantissa == 10 else exp
            return round(mantissa * 10.0 ** exp, 12), max(0, -step_exp)
    raise AssertionError("unreachable")


def _place(label: str, x: float, y: float, placed: list[tuple[float, float, float]]) -> float:
    """A y for a point label that does not overlap the labels already placed (12 px lines)."""
    width = 6.5 * len(label)
    while any(abs(y - py) < 12 and x < px + pw and px < x + width for px, py, pw in placed):
        y += 12
    placed.append((x, y, width))
    return y


def _chart_scatter(report: Report) -> str:
    points = [(c.name, c.efficiency.cost_per_generation, c.kill_complete_at_1.value) for c in report.configs
              if c.efficiency.cost_per_generation is not None and c.kill_complete_at_1.value is not None]
    if not points:
        return ""
    left, top, pw, ph = 70, 16, 460, 280
    xstep, xdigits = _nice_step(max(p[1] for p in points) * 1.1 / 4)  # type: ignore[operator]
    ystep, _ = _nice_step(max(p[2] for p in points) * 1.1 / 4)  # type: ignore[operator]
    xmax = 4 * xstep
    ymax = min(1.0, 4 * ystep)

    def sx(v: float) -> float:
        return left + pw * v / xmax

    def sy(v: float) -> float:
        return top + ph - ph * v / ymax

    body = [f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for k in range(5):
        xv, yv = xmax * k / 4, ymax * k / 4
        body.append(f'<line x1="{_f(sx(xv))}" y1="{top}" x2="{_f(sx(xv))}" y2="{top + ph}" class="grid"/>')
        body.append(f'<text x="{_f(sx(xv))}" y="{top + ph + 14}" text-anchor="middle" class="tick">'
                    f'${xv:,.{max(2, xdigits)}f}</text>')
        body.append(f'<line x1="{left}" y1="{_f(sy(yv))}" x2="{left + pw}" y2="{_f(sy(yv))}" class="grid"/>')
        body.append(f'<text x="{left - 4}" y="{_f(sy(yv) + 4)}" text-anchor="end" class="tick">{pct(yv)}</text>')
    body.append(f'<text x="{left + pw / 2}" y="{top + ph + 32}" text-anchor="middle" class="label">'
                f'cost per generation (USD)</text>')
    body.append(f'<text x="14" y="{top + ph / 2}" text-anchor="middle" class="label" '
                f'transform="rotate(-90 14 {top + ph / 2})">KillComplete@1</text>')
    by_name = {p[0]: p for p in points}
    front = [by_name[n] for n in report.frontier if n in by_name]
    if front:
        # staircase: what is reachable for a budget is the best KC at or below it
        coords = [(sx(front[0][1]), sy(front[0][2]))]  # type: ignore[arg-type]
        for prev, cur in itertools.pairwise(front):
            coords.append((sx(cur[1]), sy(prev[2])))  # type: ignore[arg-type]
            coords.append((sx(cur[1]), sy(cur[2])))  # type: ignore[arg-type]
        body.append('<polyline fill="none" stroke="#d62728" stroke-width="1.5" stroke-dasharray="5,3" points="'
                    + " ".join(f"{_f(x)},{_f(y)}" for x, y in coords) + '"/>')
    on_front = set(report.frontier)
    placed: list[tuple[float, float, float]] = []
    for name, cost, kc in sorted(points, key=lambda p: (-p[2], p[1], p[0])):  # type: ignore[operator]
        x, y = sx(cost), sy(kc)  # type: ignore[arg-type]
        fill = "#d62728" if name in on_front else "#1f77b4"
        body.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="5" fill="{fill}"><title>{esc(name)}: '
                    f'{esc(money_text(cost))} per generation, KC@1 {pct(kc)}</title></circle>')
        label_y = _place(name, x + 7, y - 6, placed)
        body.append(f'<text x="{_f(x + 7)}" y="{_f(label_y)}" class="tick">{esc(name)}</text>')
    body.append(f'<text x="{left + pw + 12}" y="{top + 12}" class="tick"><tspan fill="#d62728">●</tspan> '
                f'on the frontier</text><text x="{left + pw + 12}" y="{top + 28}" class="tick">'
                f'<tspan fill="#1f77b4">●</tspan> dominated</text>')
    return _svg(left + pw + 200, top + ph + 44, body, "Cost per generation vs KillComplete@1 with Pareto frontier")



# Section.chart keys → the chart drawing them
CHARTS: dict[str, Callable[[Report], str]] = {"pass": _chart_pass, "kc": _chart_kc, "outcomes": _chart_outcomes,
                                             "scatter": _chart_scatter}
