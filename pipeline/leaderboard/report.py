"""A small document model (headings, paragraphs, tables) rendered as Markdown or standalone HTML,
so `diff` and `compare` print the same content both ways. HTML escapes every value."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from pipeline.leaderboard.assets import SITE_CSS
from pipeline.leaderboard.markdown import md_cell


@dataclass
class Table:
    header: list[str]
    rows: list[list[object]]


@dataclass
class Report:
    title: str
    blocks: list[tuple[str, object]] = field(default_factory=list)  # ("h2"|"p"|"table", content)

    def heading(self, text: str) -> None:
        self.blocks.append(("h2", text))

    def paragraph(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, header: list[str], rows: list[list[object]], empty: str = "(none)") -> None:
        self.blocks.append(("table", Table(header, rows)) if rows else ("p", empty))

    def markdown(self) -> str:
        lines = [f"# {self.title}", ""]
        for kind, content in self.blocks:
            if kind == "h2":
                lines += [f"## {content}", ""]
            elif kind == "p":
                lines += [str(content), ""]
            else:
                assert isinstance(content, Table)
                lines.append("| " + " | ".join(md_cell(h) for h in content.header) + " |")
                lines.append("|" + "|".join("---" for _ in content.header) + "|")
                lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in content.rows]
                lines.append("")
        return "\n".join(lines)

    def html(self) -> str:
        esc = html.escape
        parts = [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<link rel="icon" href="data:,">',
            f"<title>{esc(self.title)}</title>",
            f"<style>{SITE_CSS}</style>",
            "</head><body><main>",
            f"<h1>{esc(self.title)}</h1>",
        ]
        for kind, content in self.blocks:
            if kind == "h2":
                parts.append(f"<h2>{esc(str(content))}</h2>")
            elif kind == "p":
                parts.append(f'<p class="text">{esc(str(content))}</p>')
            else:
                assert isinstance(content, Table)
                parts.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in content.header) + "</tr>")
                parts += ["<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in content.rows]
                parts.append("</table>")
        parts.append("</main></body></html>\n")
        return "\n".join(parts)
