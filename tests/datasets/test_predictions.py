"""Tests of jcalib.datasets.predictions: round trips through .npz and .csv, logits, and clear
ValueErrors for every kind of malformed file; pickles are never loaded."""

import doctest
import pickle

import numpy as np
import pytest
import scipy.special

from jcalib.datasets import load_predictions, save_predictions
from jcalib.datasets import predictions as predictions_module


def _preds(n=7, c=3, seed=0):
    rng = np.random.default_rng(seed)
    probs = scipy.special.softmax(rng.normal(size=(n, c)), axis=1).astype(np.float32)
    return probs, rng.integers(0, c, size=n)


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_round_trip(tmp_path, suffix):
    probs, labels = _preds()
    path = tmp_path / f"val{suffix}"
    save_predictions(path, probs, labels)
    got_p, got_y = load_predictions(path)
    np.testing.assert_array_equal(np.asarray(got_p), probs)  # exact: %.9g round-trips float32
    np.testing.assert_array_equal(np.asarray(got_y), labels)
    assert got_y.dtype == np.int32


def test_round_trip_float64(tmp_path, x64):
    probs, labels = _preds()
    probs = probs.astype(np.float64) / probs.astype(np.float64).sum(axis=1, keepdims=True)
    for suffix in (".npz", ".csv"):
        save_predictions(tmp_path / f"v{suffix}", probs, labels)
        got_p, _ = load_predictions(str(tmp_path / f"v{suffix}"))  # str paths work too
        np.testing.assert_array_equal(np.asarray(got_p), probs)  # exact: %.17g round-trips float64


def test_npz_logits_are_softmaxed(tmp_path):
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    np.savez(tmp_path / "l.npz", logits=logits, labels=np.array([0, 2]), extra=np.arange(3))
    probs, labels = load_predictions(tmp_path / "l.npz")
    np.testing.assert_allclose(probs, scipy.special.softmax(logits, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(labels, [0, 2])


def test_csv_logits_any_column_order_and_extra_columns(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text("id,label,logit_1,logit_0\n a,1, 0.5,1.5\nb,0,-1,2\n\n")
    probs, labels = load_predictions(path)
    want = scipy.special.softmax(np.array([[1.5, 0.5], [2.0, -1.0]]), axis=1)
    np.testing.assert_allclose(probs, want, rtol=1e-6)
    np.testing.assert_array_equal(labels, [1, 0])


def test_csv_integral_float_labels_and_atol(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("p_0,p_1,p_2,label\n0.333,0.333,0.333,2.0\n")
    with pytest.raises(ValueError, match="sum to 1"):
        load_predictions(path)  # rows sum to 0.999
    probs, labels = load_predictions(path, atol=1e-2)
    assert probs.shape == (1, 3) and labels.tolist() == [2]


def test_docstring_examples():
    result = doctest.testmod(predictions_module)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------------------------
# Malformed files


def _npz(tmp_path, **arrays):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"probs": np.full((2, 2), 0.5)}, "missing key 'labels'"),
        ({"labels": np.array([0, 1])}, "neither"),
        ({"probs": np.full((2, 2), 0.5), "logits": np.zeros((2, 2)), "labels": np.array([0, 1])}, "both"),
        ({"probs": np.full((2,), 0.5), "labels": np.array([0, 1])}, "shape"),
        ({"probs": np.ones((2, 1)), "labels": np.array([0, 0])}, "C >= 2"),
        ({"probs": np.zeros((0, 2)), "labels": np.zeros(0, int)}, "no samples"),
        ({"probs": np.full((2, 2), 0.5), "labels": np.array([[0, 1]])}, "1-D"),
        ({"probs": np.full((2, 2), 0.5), "labels": np.array([0, 1, 1])}, "mismatched"),
        ({"probs": np.array([[np.nan, 0.5], [0.5, 0.5]]), "labels": np.array([0, 1])}, "NaN"),
        ({"probs": np.array([[0.7, 0.7], [0.5, 0.5]]), "labels": np.array([0, 1])}, "sum to 1"),
        ({"probs": np.array([[1.5, -0.5], [0.5, 0.5]]), "labels": np.array([0, 1])}, "non-negative"),
        ({"probs": np.full((2, 2), 0.5), "labels": np.array([0, 2])}, r"lie in \[0, 2\)"),
        ({"probs": np.full((2, 2), 0.5), "labels": np.array([0, -1])}, "lie in"),
        ({"probs": np.full((2, 2), 0.5), "labels": np.array([0.5, 1.0])}, "integer"),
        ({"logits": np.array([[np.inf, 0.0], [0.0, 0.0]]), "labels": np.array([0, 1])}, "logits"),
        ({"probs": np.array([["a", "b"], ["c", "d"]]), "labels": np.array([0, 1])}, "numeric"),
    ],
)
def test_malformed_npz_raises(tmp_path, arrays, match):
    with pytest.raises(ValueError, match=match):
        load_predictions(_npz(tmp_path, **arrays))


def test_npz_object_arrays_are_not_unpickled(tmp_path):
    obj = np.empty(2, dtype=object)
    obj[:] = [[0.5, 0.5], [0.5, 0.5]]
    path = _npz(tmp_path, probs=obj, labels=np.array([0, 1]))
    with pytest.raises(ValueError, match="pickle"):
        load_predictions(path)


def test_pickle_file_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    path.write_bytes(pickle.dumps({"probs": np.full((2, 2), 0.5), "labels": np.array([0, 1])}))
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_predictions(path)


def test_npy_in_disguise_is_refused(tmp_path):
    path = tmp_path / "single.npz"
    with open(path, "wb") as f:
        np.save(f, np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="not an .npz archive"):
        load_predictions(path)


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty file"),
        ("p_0,p_1\n0.5,0.5\n", "missing column 'label'"),
        ("a,b,label\n1,2,0\n", "neither"),
        ("p_0,p_1,logit_0,logit_1,label\n0.5,0.5,0,0,0\n", "both"),
        ("p_0,p_2,label\n0.5,0.5,0\n", "without gaps"),
        ("p_0,p_1,label\n", "no data rows"),
        ("p_0,p_1,label\n0.5,0.5\n", "fields"),
        ("p_0,p_1,label\n0.5,abc,0\n", "non-numeric"),
        ("p_0,p_1,label\n0.5,nan,0\n", "NaN"),
        ("p_0,p_1,label\n0.6,0.6,0\n", "sum to 1"),
        ("p_0,p_1,label\n0.5,0.5,3\n", "lie in"),
        ("p_0,p_1,label\n0.5,0.5,0.5\n", "integer"),
        ("p_0,p_1,p_1,label\n0.5,0.5,0.5,0\n", "duplicate"),
        ("logit_0,logit_1,label\n1,inf,0\n", "logits"),
    ],
)
def test_malformed_csv_raises(tmp_path, text, match):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_predictions(path)


def test_bad_path_and_suffix(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_predictions(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_predictions(tmp_path / "x.pkl")
    with pytest.raises(ValueError, match="unsupported file type"):
        save_predictions(tmp_path / "x.txt", np.full((1, 2), 0.5), np.array([0]))


def test_save_validates(tmp_path):
    with pytest.raises(ValueError, match="sum to 1"):
        save_predictions(tmp_path / "x.npz", np.full((1, 2), 0.7), np.array([0]))
    with pytest.raises(ValueError, match="lie in"):
        save_predictions(tmp_path / "x.csv", np.full((1, 2), 0.5), np.array([5]))
    assert not (tmp_path / "x.npz").exists() and not (tmp_path / "x.csv").exists()
