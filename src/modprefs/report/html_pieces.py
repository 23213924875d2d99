"""The study report's HTML pieces (:mod:`modprefs.report.study_report` assembles them): escaped text, the answers'
statements with each number's source in its span, the reader tables, the machine tables behind a toggle and the
figures as inline PNG.
"""

from __future__ import annotations

import base64
import html
import math

import pandas as pd

from modprefs.report.answers import Answer, Statement
from modprefs.report.paper_tables import ReaderTable


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def statement_html(s: Statement) -> str:
    """A statement as a list item, marked supported (a tick) or not (a dash) when it is a test."""
    mark = "" if s.supported is None else (' class="yes"' if s.supported else ' class="no"')
    return f"<li{mark}>{statement_inner(s)}</li>"


def statement_inner(s: Statement) -> str:
    """A statement's sentence with each number in a span naming its source (table, row, column, CSV value)."""
    spans = []
    for n in s.numbers:
        row = ";".join(f"{k}={v}" for k, v in n.row)
        spans.append(
            f'<span class="num" data-table="{esc(n.table)}" data-row="{esc(row)}" data-column="{esc(n.column)}" '
            f'data-value="{n.value!r}" data-kind="{esc(n.kind)}">{esc(n.text)}</span>'
        )
    parts = s.template.split("{")
    out = [esc(parts[0])]
    for part in parts[1:]:
        index, _, rest = part.partition("}")
        out.append(spans[int(index)] + esc(rest))
    return "".join(out)


def answer_html(a: Answer) -> str:
    body = [f'<section class="answer" id="answer-{esc(a.key)}"><h2>{esc(a.question)}</h2>']
    if a.missing:
        body.append(f'<p class="missing">{esc(a.missing)}</p>')
    else:
        if a.headline is not None:
            body.append(f'<p class="headline">{statement_inner(a.headline)}</p>')
        body.append("<ul>" + "".join(statement_html(s) for s in a.statements) + "</ul>")
    if a.caveats:
        body.append('<ul class="caveats">' + "".join(f"<li>{esc(c)}</li>" for c in a.caveats) + "</ul>")
    body.append("</section>")
    return "".join(body)


def reader_table_html(t: ReaderTable) -> str:
    cols = list(t.frame.columns)
    groups = dict(t.groups)
    rows = []
    for i, rec in enumerate(t.frame.itertuples(index=False)):
        if i in groups and len(t.groups) > 1:
            rows.append(f'<tr class="group"><td colspan="{len(cols)}">{esc(groups[i])}</td></tr>')
        rows.append("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in rec) + "</tr>")
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in cols)
    table = (
        f'<div class="scroll"><table id="{esc(t.key)}"><caption>{esc(t.title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    caption = f'<p class="tcaption">{esc(t.caption)}</p>' if t.caption else ""
    notes = "".join(f'<p class="tnotes">{esc(n)}</p>' for n in t.notes)
    return table + caption + notes


def _cell(x: object) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return ""
        if x == 0 or 1e-4 <= abs(x) < 1e7:
            return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"
        return f"{x:.3e}"
    return str(x)


def machine_table_html(name: str, table: pd.DataFrame, title: str | None = None) -> str:
    """A machine table behind a toggle: its title (the Markdown twin's) and every column."""
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(_cell(v))}</td>" for v in rec) + "</tr>" for rec in table.itertuples(index=False)
    )
    label = f"{title} ({name}.csv, {len(table)} rows)" if title else f"{name}.csv ({len(table)} rows)"
    if name in ("method check", "software versions"):
        label = title or name
    return (
        f'<details class="machine"><summary>{esc(label)}</summary><div class="scroll"><table>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></details>"
    )


def figure_html(key: str, png: bytes, caption: str, title: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure id="fig-{esc(key)}"><img alt="{esc(title)}" src="data:image/png;base64,{data}">'
        f"<figcaption><strong>{esc(title)}.</strong> {esc(caption)}</figcaption></figure>"
    )
