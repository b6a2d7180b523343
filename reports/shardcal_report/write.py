"""The report's text: one list of sections rendered twice, as summary.md and as index.html."""

from __future__ import annotations

import html
from dataclasses import dataclass, field


@dataclass
class Section:
    title: str
    blocks: list = field(default_factory=list)  # ("p", text) | ("table", headers, rows) | ("fig", Figure)

    def p(self, text: str) -> "Section":
        self.blocks.append(("p", text))
        return self

    def table(self, headers, rows) -> "Section":
        self.blocks.append(("table", list(headers), [list(r) for r in rows]))
        return self

    def fig(self, f) -> "Section":
        self.blocks.append(("fig", f))
        return self


def _md_cell(x) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def markdown(title: str, sections: list) -> str:
    out = [f"# {title}", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if b[0] == "p":
                out += [b[1], ""]
            elif b[0] == "table":
                out.append("| " + " | ".join(_md_cell(h) for h in b[1]) + " |")
                out.append("|" + "---|" * len(b[1]))
                out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in b[2]]
                out.append("")
            elif b[0] == "fig":
                out += [f"![{b[1].title}]({b[1].file})", "", f"*{b[1].caption}*", ""]
    return "\n".join(out).rstrip() + "\n"


CSS = """
body { font-family: system-ui, sans-serif; max-width: 1400px; margin: 1.5em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #444; max-width: 1100px; }
nav a { margin-right: 1em; }
"""


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def html_page(title: str, sections: list) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">", f"<title>{e(title)}</title>",
           f"<style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>", "<nav>"]
    out += [f"<a href=\"#{_anchor(s.title)}\">{e(s.title)}</a>" for s in sections]
    out.append("</nav>")
    for s in sections:
        out.append(f"<h2 id=\"{_anchor(s.title)}\">{e(s.title)}</h2>")
        for b in s.blocks:
            if b[0] == "p":
                out.append(f"<p>{e(b[1])}</p>")
            elif b[0] == "table":
                out.append("<table><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in b[1]) + "</tr>")
                out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in b[2]]
                out.append("</table>")
            elif b[0] == "fig":
                f = b[1]
                out.append(f"<figure><a href=\"{e(f.file)}\"><img src=\"{e(f.file)}\" alt=\"{e(f.title)}\"></a>"
                           f"<figcaption><b>{e(f.title)}.</b> {e(f.caption)}</figcaption></figure>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
