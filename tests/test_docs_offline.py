"""The built docs load nothing from the network and bundle MathJax (docs/check_offline.py).

Needs the `docs` extra (mkdocs, mkdocs-material, mkdocstrings, django-static-mathjax), which
`make test` installs (so CI builds the site and runs this check); skipped only where a user runs
pytest without it. The build takes about 5 s.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")

ROOT = Path(__file__).resolve().parents[1]


def load_checker():
    spec = importlib.util.spec_from_file_location("check_offline", ROOT / "docs" / "check_offline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def test_built_site_loads_nothing_from_the_network(site):
    assert load_checker().check(site) == []


def test_pages_with_maths_use_the_bundled_mathjax(site):
    page = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    assert 'class="arithmatex"' in page
    assert "cdn.jsdelivr" not in page and "fonts.googleapis" not in page
    assert '<script src="../javascripts/mathjax/tex-chtml.js">' in page
    assert (site / "javascripts" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()


def test_the_check_flags_network_loads(tmp_path):
    check = load_checker().check
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<html><head><link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<link rel="canonical" href="https://example.org/a/">'
        '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>'
        '<style>@import url("//example.org/x.css");</style></head>'
        '<body><span class="arithmatex">\\(x\\)</span>'
        '<a href="https://example.org/paper.pdf">the paper</a></body></html>',
        encoding="utf-8",
    )
    (tmp_path / "theme.css").write_text(
        "@font-face { src: url(https://fonts.gstatic.com/r.woff2) }", encoding="utf-8"
    )
    problems = "\n".join(check(tmp_path))
    assert "fonts.googleapis" in problems and "cdn.jsdelivr" in problems
    assert "//example.org/x.css" in problems and "fonts.gstatic" in problems
    assert "no MathJax/KaTeX script in the site" in problems
    assert "paper.pdf" not in problems and "example.org/a/" not in problems
