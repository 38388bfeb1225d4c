"""MkDocs hooks: bundle MathJax with the built site so the maths renders offline.

MathJax 3 comes from the ``django-static-mathjax`` package (the ``docs`` extra), which ships
MathJax's own ``es5/`` build (Apache-2.0). After the build, the TeX-to-CommonHTML component and
the files it loads on demand (TeX extensions, CHTML woff-v2 fonts, the menu, the accessibility
extensions and their speech-rule engine) are copied into ``site/javascripts/mathjax/``, which
``extra_javascript`` in ``mkdocs.yml`` points at. Nothing is fetched from the network.
"""

from __future__ import annotations

import importlib.util
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
