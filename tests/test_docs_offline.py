"""The built docs load nothing from the network, bundle MathJax (docs/check_offline.py), and show
the docstrings' Sphinx roles as links or code spans, never literally (docs/hooks.py).

Needs the `docs` extra (mkdocs, mkdocs-material, mkdocstrings, django-static-mathjax), which
`make test` installs (so CI builds the site and runs this check); skipped only where a user runs
pytest without it. The build takes about 5 s.
"""

import importlib.util
import os
import re
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


def load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
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


def test_no_page_shows_a_sphinx_role_literally(site):
    assert load_hooks().literal_roles(site) == []


def test_roles_link_to_an_anchor_that_exists(site):
    page = (site / "api" / "stats" / "index.html").read_text(encoding="utf-8")
    # jcalib/stats/cumulative.py: ":func:`jcalib.stats.consistency_test` of :func:`ks_calibration_error`"
    # names the re-export; the anchor is the defining module's path.
    assert ('href="#jcalib.stats.consistency.consistency_test"><code>jcalib.stats.consistency_test'
            "</code></a> of ") in page
    assert 'href="#jcalib.stats.cumulative.ks_calibration_error"><code>ks_calibration_error' in page
    # A role opening a `Returns:` entry reaches the HTML without its leading colon.
    assert "class:<code>" not in page
    assert '<p><a class="autorefs autorefs-internal jcalib-role" title="jcalib.stats.resampling.BootstrapResult"' in page
    links = 0
    for path in sorted(site.rglob("*.html")):
        html = path.read_text(encoding="utf-8")
        for href in re.findall(r'<a class="[^"]*jcalib-role" title="[^"]*" href="([^"]*)">', html):
            target, _, anchor = href.partition("#")
            assert anchor.startswith("jcalib") and "://" not in target and not target.startswith("/")
            dest = (path.parent / target).resolve() if target else path
            assert dest.is_file(), (path, href)
            assert f'id="{anchor}"' in dest.read_text(encoding="utf-8"), (path, href)
            links += 1
    assert links > 300


def test_role_resolution_order():
    hooks = load_hooks()
    anchors = {i: ["p/index.html"] for i in (
        "jcalib.metrics.binary.binned_ece", "jcalib.metrics.binary.Model.fit",
        "jcalib.other.Model.fit", "jcalib.other.Model.predict", "jcalib.a.dup", "jcalib.b.dup",
        "jcalib.a.m.deep", "jcalib.b.m.deep",
    )}
    resolve = hooks.RoleResolver(anchors).resolve
    assert resolve("jcalib.metrics.binary.binned_ece", None) == "jcalib.metrics.binary.binned_ece"
    assert resolve("fit", "jcalib.other.Model.predict") == "jcalib.other.Model.fit"
    assert resolve("binned_ece", "jcalib.other") == "jcalib.metrics.binary.binned_ece"
    assert resolve("jcalib.metrics.binned_ece()", None) == "jcalib.metrics.binary.binned_ece"
    assert resolve("Model.fit", None) is None  # two candidates, no context to choose
    assert resolve("dup", "jcalib.c") is None and resolve("dup", "jcalib.b.x") == "jcalib.b.dup"
    # several suffix matches: the one sharing the longest prefix with the context
    assert resolve("deep", "jcalib.b.other") == "jcalib.b.m.deep" and resolve("deep", "jcalib.c") is None
    assert resolve("nothing", "jcalib.other") is None
    assert hooks._split("~jcalib.core.Mixture") == ("Mixture", "jcalib.core.Mixture")
    # the literal forms the pass rewrites:
    html = '<p>class:<code>A</code> and :func:<code>~jcalib.b.c</code>; a class: <code>x</code></p>'
    assert [m.group(1) for m in hooks.ROLE_RE.finditer(html)] == ["A", "~jcalib.b.c"]


def test_roles_counted_linked_and_unlinked(site, capsys):
    linked = unlinked = 0
    for path in site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        linked += len(re.findall(r'<a class="[^"]*jcalib-role"', html))
        unlinked += html.count('<code class="jcalib-role">')
    with capsys.disabled():
        print(f"\nSphinx roles in the built docs: {linked} linked, {unlinked} left as code")
    assert linked > 10 * unlinked


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.mark.parametrize("page", ["concepts", "tutorials/aosa", "api/metrics_binary"])
def test_maths_renders_in_a_headless_browser_offline(site, page):
    """Open a page in headless Chromium with every host name unresolvable (no network) and let
    MathJax run: every maths span becomes a rendered ``mjx-container`` and none is an error."""
    import shutil

    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        pytest.skip("no Chromium on this machine: the headless rendering check needs one")
    html = site / page / "index.html"
    spans = html.read_text(encoding="utf-8").count('class="arithmatex"')
    assert spans > 0, f"{page} has no maths to render"
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--dump-dom", html.as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout
    assert dom.count("<mjx-container") == spans, f"{page}: {spans} maths spans, {dom.count('<mjx-container')} rendered"
    assert "<mjx-merror" not in dom
