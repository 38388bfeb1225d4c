"""MkDocs hooks: bundle MathJax with the built site so the maths renders offline.

MathJax 3 comes from the ``django-static-mathjax`` package (the ``docs`` extra), which ships
MathJax's own ``es5/`` build (Apache-2.0). After the build, the TeX-to-CommonHTML component and
the files it loads on demand (TeX extensions, CHTML woff-v2 fonts, the menu, the accessibility
extensions and their speech-rule engine) are copied into ``site/javascripts/mathjax/``, which
``extra_javascript`` in ``mkdocs.yml`` points at. Nothing is fetched from the network.

The same hook turns the Sphinx roles the docstrings use (``:func:`binned_ece```, ``:class:`~x.Y```,
``:mod:``, ``:meth:``, ``:data:``, ``:attr:``, ...), which mkdocstrings would show literally, into
links to the object's documentation anchor, or into a plain code span where nothing documents the
object (see :func:`link_roles`).
"""

from __future__ import annotations

import bisect
import importlib.util
import json
import os
import posixpath
import re
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError

#: Where the bundle goes inside the built site (``extra_javascript`` names DEST/tex-chtml.js).
DEST = Path("javascripts") / "mathjax"

#: The parts of MathJax's ``es5/`` build that ``tex-chtml.js`` uses; the other combined
#: components (SVG output, MathML/AsciiMath input, the node entry point) are left out.
PARTS = (
    "tex-chtml.js",
    "input/tex",
    "output/chtml",
    "ui",
    "a11y",
    "sre",
)


def mathjax_es5() -> Path:
    """The ``es5/`` directory of the installed MathJax 3 (from ``django-static-mathjax``)."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise PluginError(
            "MathJax is not installed: the docs need the `docs` extra "
            '(pip install -e ".[docs]", which installs django-static-mathjax)'
        )
    for location in spec.submodule_search_locations:
        es5 = Path(location) / "static" / "mathjax" / "es5"
        if (es5 / "tex-chtml.js").is_file():
            return es5
    raise PluginError(
        "the installed `mathjax` package has no static/mathjax/es5/tex-chtml.js; "
        "install django-static-mathjax (the `docs` extra)"
    )


def on_post_build(config, **kwargs) -> None:
    es5 = mathjax_es5()
    dest = Path(config["site_dir"]) / DEST
    if dest.exists():
        shutil.rmtree(dest)
    for part in PARTS:
        src = es5 / part
        if src.is_dir():
            shutil.copytree(src, dest / part)
        elif src.is_file():
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / part)
        else:
            raise PluginError(f"MathJax's es5 build has no {part} ({es5})")
    licence = es5.parent / "LICENSE"
    if licence.is_file():
        shutil.copy2(licence, dest / "LICENSE")
    link_roles(Path(config["site_dir"]))


# --- Sphinx roles -> links ---------------------------------------------------------------------

#: The roles a docstring may use; mkdocstrings renders ``:func:`x``` as ``:func:<code>x</code>``.
ROLES = ("func", "class", "meth", "mod", "data", "attr", "exc", "obj", "const")

#: A role as it appears in the built HTML (the backticks have become a code span). A role that
#: opens a Google-style ``Returns:`` entry loses its leading colon to the ``type: description``
#: split, so at the start of a paragraph the colon is optional (``<p>class:<code>X</code>``).
ROLE_RE = re.compile(r"(?::|(?<=<p>))(?:py:)?(?:%s):<code>([^<]*)</code>" % "|".join(ROLES))

#: The anchor mkdocstrings gives each documented object: its dotted path.
ID_RE = re.compile(r'\sid="(jcalib(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"')

#: Marks the spans this pass wrote (tests count them; it has no style of its own).
CLASS = "jcalib-role"


def _split(text: str) -> tuple[str, str]:
    """``(display, target)`` of a role's text: ``~a.b.c`` shows ``c``; ``title <a.b>`` shows title."""
    text = text.strip()
    m = re.fullmatch(r"(.*?)\s*&lt;(.+)&gt;", text)
    if m:
        return m.group(1), m.group(2).strip().lstrip("~")
    if text.startswith("~"):
        target = text[1:]
        return target.rsplit(".", 1)[-1], target
    return text, text


def _is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(part in it for part in needle)


class RoleResolver:
    """Resolves a role's target to a documented id (``anchors``: id -> pages that hold it)."""

    def __init__(self, anchors: dict[str, list[str]]):
        self.anchors = anchors
        self.by_name: dict[str, list[str]] = {}
        for ident in sorted(anchors):
            self.by_name.setdefault(ident.rsplit(".", 1)[-1], []).append(ident)

    def resolve(self, target: str, context: str | None) -> str | None:
        """The id ``target`` names, read from inside the docstring of ``context`` (an id), or None.

        In order: the exact dotted path; the path relative to the context and each of its parents
        (``fit`` inside ``jcalib.x.Model.predict`` finds ``jcalib.x.Model.fit``); the ids whose last
        parts are the target's (``….binned_ece``), or, for a path through a package's re-export
        (``jcalib.stats.consistency_test``), whose parts contain the target's in order and end with
        its last: one such id, or the one sharing the longest prefix with the context; else None.
        """
        target = target.strip()
        if target.endswith("()"):
            target = target[:-2]
        if not target or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", target):
            return None
        if target in self.anchors:
            return target
        if context:
            scope = context.split(".")
            while scope:
                candidate = ".".join(scope + [target])
                if candidate in self.anchors:
                    return candidate
                scope.pop()
        parts = target.split(".")
        pool = self.by_name.get(parts[-1], [])
        suffix = [i for i in pool if i.endswith("." + target)]
        matches = suffix or [i for i in pool if _is_subsequence(parts, i.split("."))]
        if len(matches) > 1 and context:
            ctx = context.split(".")

            def shared(ident: str) -> int:
                n = 0
                for a, b in zip(ctx, ident.split(".")):
                    if a != b:
                        break
                    n += 1
                return n

            best = max(shared(i) for i in matches)
            matches = [i for i in matches if shared(i) == best]
        return matches[0] if len(matches) == 1 else None


def _html_pages(site: Path) -> list[Path]:
    pages = []
    for root, dirs, files in os.walk(site):
        dirs[:] = sorted(d for d in dirs if not (root == str(site) and d in ("assets", "javascripts", "search")))
        pages.extend(Path(root) / f for f in sorted(files) if f.endswith(".html"))
    return pages


def link_roles(site: Path) -> dict[str, int]:
    """Rewrite every Sphinx role in the built ``site`` as a relative link, or a code span.

    A role becomes ``<a class="autorefs autorefs-internal jcalib-role" href="…#id"><code>…</code></a>``
    when :class:`RoleResolver` finds the object's anchor (the page's nearest ``jcalib…`` id before the
    role gives the docstring it sits in); otherwise ``<code class="jcalib-role">…</code>``. Links
    are relative (``../stats/index.html#jcalib.stats…``), so the site works from ``file://`` and
    under any base path. The search index loses the role prefixes too. Returns the counts
    ``{"linked": …, "unlinked": …}``.
    """
    pages = {path: path.read_text(encoding="utf-8") for path in _html_pages(site)}
    anchors: dict[str, list[str]] = {}
    for path, html in pages.items():
        rel = path.relative_to(site).as_posix()
        for ident in ID_RE.findall(html):
            anchors.setdefault(ident, []).append(rel)
    resolver = RoleResolver(anchors)
    counts = {"linked": 0, "unlinked": 0}
    for path, html in pages.items():
        if ":<code>" not in html:
            continue
        rel = path.relative_to(site).as_posix()
        here = posixpath.dirname(rel)
        spans = [(m.start(), m.group(1)) for m in ID_RE.finditer(html)]
        starts = [s for s, _ in spans]

        def replace(m: re.Match) -> str:
            display, target = _split(m.group(1))
            k = bisect.bisect_right(starts, m.start()) - 1
            context = spans[k][1] if k >= 0 else None
            ident = resolver.resolve(target, context)
            if ident is None:
                counts["unlinked"] += 1
                return f'<code class="{CLASS}">{display}</code>'
            counts["linked"] += 1
            owners = anchors[ident]
            page = rel if rel in owners else owners[0]
            href = "#" + ident if page == rel else posixpath.relpath(page, here or ".") + "#" + ident
            return (f'<a class="autorefs autorefs-internal {CLASS}" title="{ident}" href="{href}">'
                    f"<code>{display}</code></a>")

        new = ROLE_RE.sub(replace, html)
        if new != html:
            path.write_text(new, encoding="utf-8")
    index = site / "search" / "search_index.json"
    if index.is_file():
        text = index.read_text(encoding="utf-8")
        new = ROLE_RE.sub(lambda m: "<code>" + _split(m.group(1))[0] + "</code>", text)
        if new != text:
            json.loads(new)
            index.write_text(new, encoding="utf-8")
    return counts


def literal_roles(site: Path) -> list[str]:
    """``page: snippet`` for each Sphinx role still shown literally in the built ``site``."""
    literal = re.compile(r"(?::|<p>)(?:py:)?(?:%s):(?:<code>|`)" % "|".join(ROLES))
    found = []
    for path in _html_pages(Path(site)):
        html = path.read_text(encoding="utf-8")
        for m in literal.finditer(html):
            found.append(f"{path.relative_to(site).as_posix()}: {html[m.start():m.start() + 80]}")
    return found
