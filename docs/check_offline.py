"""Check that a built docs site loads nothing from the network and bundles its maths renderer.

Usage: ``python docs/check_offline.py [SITE_DIR]`` (default ``site``); exits 1 and lists every
problem found. For each HTML page it flags

* a ``<script src>``, or an ``<img>``/``<iframe>``/``<embed>``/``<source>``/``<video>``/
  ``<audio>``/``<track>`` ``src``, or an ``<object data>``, that is an ``http(s)://`` or
  protocol-relative ``//`` URL;
* a ``<link href>`` that loads something (stylesheet, preload, modulepreload, prefetch,
  preconnect, dns-prefetch, icon, manifest, …) from such a URL;
* ``@import`` or ``url(…)`` of such a URL in an inline ``<style>`` or ``style=""`` attribute;
* a local ``<script src>`` or stylesheet that does not exist in the site.

It flags the same ``@import``/``url(…)`` in every ``.css`` file of the site, and checks that
the pages with maths (pymdownx.arithmatex's ``class="arithmatex"``) reference a MathJax script
that exists in the site, next to its CommonHTML fonts. Links in page text (``<a href>``) and
``rel="canonical"``/``alternate``-style links are fine: a browser does not load them.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
CSS_REMOTE = re.compile(
    r"""@import\s+(?:url\(\s*)?["']?\s*((?:https?:)?//[^"')\s;]+)"""
    r"""|url\(\s*["']?\s*((?:https?:)?//[^"')\s]+)""",
    re.IGNORECASE,
)
SRC_TAGS = {"script", "img", "iframe", "embed", "source", "video", "audio", "track", "input"}
#: ``<link rel>`` values a browser does not fetch on its own.
LINK_NO_LOAD = {
    "canonical", "alternate", "author", "license", "next", "prev", "search", "help",
    "bookmark", "external", "nofollow", "noopener", "noreferrer", "me", "tag",
}
MATHJAX_SCRIPT = re.compile(r"(?:^|/)(?:tex|mml)-[a-z-]*(?:chtml|svg)[a-z-]*\.js$")
KATEX_SCRIPT = re.compile(r"(?:^|/)katex(?:\.min)?\.js$")


def is_remote(url: str | None) -> bool:
    return bool(url) and bool(REMOTE.match(url)) and not url.strip().lower().startswith("data:")


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.remote: list[str] = []
        self.scripts: list[str] = []
        self.stylesheets: list[str] = []
        self.has_math = False
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if "arithmatex" in a.get("class", "").split():
            self.has_math = True
        if tag in SRC_TAGS and is_remote(a.get("src")):
            self.remote.append(f"<{tag} src={a['src']}>")
        if tag in {"img", "source"} and any(
            is_remote(part.split()[0]) for part in a.get("srcset", "").split(",") if part.strip()
        ):
            self.remote.append(f"<{tag} srcset={a['srcset']}>")
        if tag == "object" and is_remote(a.get("data")):
            self.remote.append(f"<object data={a['data']}>")
        if tag == "script" and a.get("src"):
            self.scripts.append(a["src"])
        if tag == "link":
            rels = set(a.get("rel", "").lower().split())
            href = a.get("href")
            if is_remote(href) and not rels <= LINK_NO_LOAD:
                self.remote.append(f"<link rel={a.get('rel', '')} href={href}>")
            if "stylesheet" in rels and href:
                self.stylesheets.append(href)
        if "style" in a:
            self.remote += [f"style=\"…{m.group(0)}…\"" for m in CSS_REMOTE.finditer(a["style"])]
        if tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.remote += [f"<style>…{m.group(0)}…" for m in CSS_REMOTE.finditer(data)]


def local_target(site: Path, page: Path, url: str) -> Path | None:
    """The file a local URL on ``page`` points at (``None`` for data: and other schemes)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    if not path:
        return None
    target = site / path.lstrip("/") if path.startswith("/") else page.parent / path
    return target.resolve()


def check(site: Path) -> list[str]:
    site = site.resolve()
    problems: list[str] = []
    pages = sorted(site.rglob("*.html"))
    if not pages:
        return [f"{site}: no HTML pages (was the site built?)"]
    math_pages = 0
    for page in pages:
        rel = page.relative_to(site)
        parser = Page()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        parser.close()
        problems += [f"{rel}: loads from the network: {r}" for r in parser.remote]
        for url in parser.scripts + parser.stylesheets:
            target = local_target(site, page, url)
            if target is not None and not target.is_file():
                problems.append(f"{rel}: {url} is not in the site")
        if parser.has_math:
            math_pages += 1
            renderers = [
                url for url in parser.scripts
                if MATHJAX_SCRIPT.search(urlsplit(url).path) or KATEX_SCRIPT.search(urlsplit(url).path)
            ]
            local = [(u, local_target(site, page, u)) for u in renderers]
            local = [(u, t) for u, t in local if t is not None and t.is_file()]
            if not local:
                problems.append(f"{rel}: has maths but no MathJax/KaTeX script in the site")
            for url, target in local:
                if MATHJAX_SCRIPT.search(urlsplit(url).path) and "chtml" in target.name:
                    fonts = target.parent / "output" / "chtml" / "fonts" / "woff-v2"
                    if not any(fonts.glob("*.woff")):
                        problems.append(f"{rel}: {url} has no CommonHTML fonts next to it")
    for css in sorted(site.rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        problems += [
            f"{css.relative_to(site)}: loads from the network: {m.group(0)}"
            for m in CSS_REMOTE.finditer(text)
        ]
    if math_pages == 0:
        problems.append("no page has maths (class=\"arithmatex\"): is pymdownx.arithmatex on?")
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    site = Path(argv[0] if argv else "site")
    problems = check(site)
    for p in problems:
        print(p, file=sys.stderr)
    n_pages = len(list(site.rglob("*.html")))
    if problems:
        print(f"check_offline: {len(problems)} problem(s) in {site}", file=sys.stderr)
        return 1
    print(f"check_offline: {n_pages} pages in {site} load nothing from the network; maths bundled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
