"""Load and save a model's held-out predictions: class probabilities (or logits) and labels.

Two file formats, chosen by the file's suffix.

**`.npz`** (NumPy archive, read with `allow_pickle=False`: object arrays are refused):

- `probs`: float array (n, C), rows on the simplex, **or** `logits`: float array (n, C) (a
  softmax over each row turns them into probabilities). Exactly one of the two.
- `labels`: integer array (n,) with values in `[0, C)` (integral floats are accepted).
- Other keys are ignored.

**`.csv`** (comma-separated, one header row, one row per sample):

- `p_0, p_1, …, p_{C-1}`: class probabilities, **or** `logit_0, …, logit_{C-1}`: logits (never
  both). The indices must run from 0 to C−1 without gaps; the columns may come in any order.
- `label`: the integer class of the sample.
- Other columns (an `id`, say) are ignored.

```text
p_0,p_1,p_2,label
0.7,0.2,0.1,0
0.1,0.3,0.6,2
```

Every file is validated with `jcalib._validation`: probabilities must be finite,
non-negative, and each row must sum to 1 within `atol`; logits must be finite; labels must be
integers in `[0, C)`; lengths must agree; at least one sample. Problems raise `ValueError`
with the file name in the message.
"""

from __future__ import annotations

import csv
import os
import re
import zipfile
from pathlib import Path

import jax
import numpy as np
import scipy.special

from .._validation import (
    ClassLabels,
    Custom,
    Real,
    SimplexProbs,
    check_class_labels,
    check_same_length,
    check_simplex_probs,
    declare,
    shown,
)

__all__ = ["load_predictions", "save_predictions"]

_P_COL = re.compile(r"^p_(\d+)$")
_LOGIT_COL = re.compile(r"^logit_(\d+)$")


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".csv"):
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use .npz or .csv")
    return suffix


def _path(path, name, bound) -> Path:
    """A path (``str`` or ``os.PathLike``) ending in ``.npz`` or ``.csv``, as a ``Path``."""
    try:
        path = Path(path)
    except TypeError:
        raise TypeError(f"{name} must be a str or os.PathLike file path, got {type(path).__name__} {shown(path)}") from None
    _suffix(path)
    return path


def _existing_file(path, name, bound) -> Path:
    """A ``.npz`` or ``.csv`` path (:func:`_path`) of a file that exists."""
    path = _path(path, name, bound)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return path


def _softmax(logits: np.ndarray, where: str) -> np.ndarray:
    if logits.ndim != 2 or logits.shape[1] < 2:
        raise ValueError(f"{where}: logits must have shape (n, C) with C >= 2, got {logits.shape}")
    if not np.all(np.isfinite(logits)):
        raise ValueError(f"{where}: logits contain NaN or infinite values")
    return scipy.special.softmax(logits, axis=1)


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray, bool]:
    try:
        archive = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        # numpy raises ValueError for pickled content when allow_pickle=False
        raise ValueError(f"{path}: not a readable .npz archive without pickle ({e})") from e
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: not an .npz archive (a single .npy array?)")
    with archive:
        keys = set(archive.files)
        if "labels" not in keys:
            raise ValueError(f"{path}: missing key 'labels' (found {sorted(keys)})")
        has_p, has_z = "probs" in keys, "logits" in keys
        if has_p == has_z:
            which = "both" if has_p else "neither"
            raise ValueError(f"{path}: need exactly one of the keys 'probs' or 'logits', found {which}")
        name = "probs" if has_p else "logits"
        try:
            scores, labels = archive[name], archive["labels"]
        except (ValueError, OSError, zipfile.BadZipFile) as e:
            # object arrays are refused (allow_pickle=False) with a ValueError
            raise ValueError(f"{path}: cannot read arrays without pickle ({e})") from e
    for key, arr in ((name, scores), ("labels", labels)):
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{path}: {key} must be numeric, got dtype {arr.dtype}")
    return scores.astype(np.float64), labels, has_z


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray, bool]:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path}: empty file; expected a header row") from None
        rows = [row for row in reader if row and any(cell.strip() for cell in row)]
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: duplicate column names in header {header}")
    if "label" not in header:
        raise ValueError(f"{path}: missing column 'label'")
    p_cols = {int(m.group(1)): i for i, h in enumerate(header) if (m := _P_COL.match(h))}
    z_cols = {int(m.group(1)): i for i, h in enumerate(header) if (m := _LOGIT_COL.match(h))}
    if bool(p_cols) == bool(z_cols):
        which = "both" if p_cols else "neither"
        raise ValueError(f"{path}: need columns p_0..p_(C-1) or logit_0..logit_(C-1), found {which}")
    cols = p_cols or z_cols
    if sorted(cols) != list(range(len(cols))):
        raise ValueError(f"{path}: class columns must be numbered 0..C-1 without gaps, got {sorted(cols)}")
    if not rows:
        raise ValueError(f"{path}: no data rows")
    order = [cols[j] for j in range(len(cols))]
    label_col = header.index("label")
    scores = np.empty((len(rows), len(order)), np.float64)
    labels = np.empty((len(rows),), np.float64)
    for r, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {r + 2} has {len(row)} fields, header has {len(header)}")
        try:
            scores[r] = [float(row[i]) for i in order]
            labels[r] = float(row[label_col])
        except ValueError as e:
            raise ValueError(f"{path}: row {r + 2}: non-numeric value ({e})") from e
    return scores, labels, bool(z_cols)


@declare(atol=Real(0.0, static=True), path=Custom(_existing_file, "an existing .npz or .csv file"))
def load_predictions(path: str | os.PathLike, *, atol: float = 1e-4) -> tuple[jax.Array, jax.Array]:
    """Load held-out predictions and labels from a ``.npz`` or ``.csv`` file.

    See the module docstring for the two formats. Logits are turned into probabilities by a
    row-wise softmax (computed in float64). Probabilities are not renormalised: rows must already
    sum to 1 within ``atol``.

    Args:
        path: a ``.npz`` or ``.csv`` file.
        atol: tolerance on the row sums of stored probabilities (default ``1e-4``, enough for
            float32 softmax outputs; raise it for CSVs written with few decimals).

    Returns:
        ``(probs, labels)``: probabilities of shape (n, C) in JAX's default float dtype and
        int32 labels of shape (n,).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: unsupported suffix, unreadable or malformed file, missing keys or columns,
            wrong shapes, NaN or infinite values, rows not summing to 1, labels out of range.

    Examples:
        >>> import jax.numpy as jnp, tempfile, os
        >>> d = tempfile.mkdtemp(); f = os.path.join(d, "val.npz")
        >>> save_predictions(f, jnp.array([[0.7, 0.3], [0.2, 0.8]]), jnp.array([0, 1]))
        >>> probs, labels = load_predictions(f)
        >>> probs.shape, labels.tolist()
        ((2, 2), [0, 1])
    """
    scores, labels, are_logits = _read_npz(path) if _suffix(path) == ".npz" else _read_csv(path)
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise ValueError(f"{path}: predictions must have shape (n, C) with C >= 2, got {scores.shape}")
    if scores.shape[0] == 0:
        raise ValueError(f"{path}: no samples")
    if labels.ndim != 1:
        raise ValueError(f"{path}: labels must be 1-D, got shape {labels.shape}")
    probs = _softmax(scores, str(path)) if are_logits else scores
    try:
        probs = check_simplex_probs(probs, atol=atol)
        labels = check_class_labels(labels, probs.shape[1])
        check_same_length(probs=probs, labels=labels)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e
    return probs, labels


@declare(path=Custom(_path, "a .npz or .csv path"), probs=SimplexProbs(nonempty=False),
         labels=ClassLabels(classes_of="probs", length_of="probs"))
def save_predictions(path: str | os.PathLike, probs, labels) -> None:
    """Write ``probs`` (n, C) and integer ``labels`` (n,) to ``.npz`` or ``.csv``.

    The inverse of `load_predictions`: ``.npz`` stores the arrays under the keys ``probs``
    and ``labels`` with their dtypes; ``.csv`` writes columns ``p_0..p_{C-1},label`` with enough
    digits (``%.17g`` for float64, ``%.9g`` for float32) that reading back gives the same floats.
    Inputs are validated first.

    Args:
        path: destination ending in ``.npz`` or ``.csv`` (overwritten if it exists).
        probs: probabilities (n, C), rows on the simplex.
        labels: integer labels (n,) in ``[0, C)``.
    """
    p_np, y_np = np.asarray(probs), np.asarray(labels)
    if _suffix(path) == ".npz":
        with open(path, "wb") as f:  # a file object keeps numpy from appending another suffix
            np.savez(f, probs=p_np, labels=y_np)
        return
    fmt = "%.17g" if p_np.dtype == np.float64 else "%.9g"
    header = ",".join([f"p_{j}" for j in range(p_np.shape[1])] + ["label"])
    table = np.concatenate([p_np.astype(np.float64), y_np[:, None].astype(np.float64)], axis=1)
    np.savetxt(path, table, fmt=[fmt] * p_np.shape[1] + ["%d"], delimiter=",", header=header, comments="")
