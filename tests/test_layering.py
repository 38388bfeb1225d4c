"""Import layering: metrics never import recalibration, and no module imports another
module's private (underscore) names across subpackages (nor across modules inside metrics and
recalibration); shared helpers live in the private modules jcalib._kernels, jcalib._simplex,
jcalib._weights, jcalib._validation and jcalib.metrics._groups, under public names."""

import ast
from pathlib import Path

import jcalib

ROOT = Path(jcalib.__file__).parent


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield 0, a.name, []


def _target(path, level, module):
    """Absolute dotted name of an import's source module."""
    if level == 0:
        return module
    pkg = list(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    base = pkg[: len(pkg) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def test_metrics_never_import_recalibration():
    for path in (ROOT / "metrics").glob("*.py"):
        for level, module, _ in _imports(path):
            assert not _target(path, level, module).startswith("jcalib.recalibration"), path.name


def test_no_private_names_across_subpackages():
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        # metrics and recalibration share helpers through public names of their own modules
        # too (jcalib/metrics/_groups.py, jcalib/_validation.py), not through private ones
        own = ".".join(parts[:3] if parts[1] in ("metrics", "recalibration") else parts[:2])
        for level, module, names in _imports(path):
            source = _target(path, level, module)
            if not source.startswith("jcalib.") or source.startswith(own):
                continue  # same subpackage (or outside jcalib)
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{path.relative_to(ROOT)} imports {private} from {source}"
