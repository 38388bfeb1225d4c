"""The public API under a bad-input fuzz (``tests/fuzz.py``, examples in ``tests/fuzz_examples.py``).

Every public callable (the ``__all__`` of every subpackage) has a valid example; the fuzz calls
it with one argument at a time mutated — NaN, ±inf, out-of-range values, wrong shapes and dtypes,
empty and length-1 arrays, lists, NumPy scalars and 0-d arrays, huge sizes, wrong key types,
strings, bools for numbers — plainly and under ``jax.jit``, and requires a clear error naming the
argument for every invalid input and a value for every valid one: never a silent number, never an
obscure error from inside JAX or NumPy, never a crash or a hang (huge sizes run in a child
process with a timeout).

CI runs a fixed-seed sample of the inputs (``fuzz.CI_SAMPLE``); the full run is ``slow``.
``benchmarks/fuzz_counts.py`` prints the counts.
"""

import fuzz
import fuzz_examples
import pytest

CI_CASES = fuzz.ci_sample(fuzz.all_cases())


@pytest.fixture(scope="module")
def isolated():
    with fuzz.Isolated() as iso:
        yield iso


def test_every_public_callable_has_a_valid_example():
    public = [t for t, _ in fuzz.public_callables()]
    missing = [t for t in public if t not in fuzz_examples.EXAMPLES]
    assert not missing, f"public callables without an example in tests/fuzz_examples.py: {missing}"
    stale = [t for t in fuzz_examples.EXAMPLES if t.split(".")[0] in fuzz.PACKAGES and t not in fuzz.targets()]
    assert not stale, f"examples of names that are not public any more: {stale}"
    unexplained = [t for t in public if fuzz_examples.EXAMPLES[t].fn is None and not fuzz_examples.EXAMPLES[t].why]
    assert not unexplained, f"examples with nothing to call and no reason: {unexplained}"


def test_the_sample_covers_every_kind_of_input():
    assert len(CI_CASES) == min(fuzz.CI_SAMPLE, len(fuzz.all_cases()))
    assert {c.mode for c in CI_CASES} == {"plain", "jit"}
    assert {c.valid for c in CI_CASES} == {True, False}


@pytest.mark.parametrize("case", CI_CASES, ids=[c.id for c in CI_CASES])
def test_sampled_inputs(case, isolated):
    out = isolated.classify(case) if case.isolate else fuzz.classify(case)
    assert out.kind in ("clear", "accepted"), f"{out.kind}: {out.detail}"


def test_the_classifier_tells_the_kinds_apart():
    import numpy as np

    from jcalib.metrics import ece

    def case(valid=False, param="probs"):
        return fuzz.Case("t", param, "m", "plain", valid, False)

    def outcome(fn, c):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            return fuzz.judge(c, e).kind
        return fuzz.judge(c, None).kind

    assert outcome(lambda: 1.0, case()) == "silent"
    assert outcome(lambda: np.asarray([1, 2]).reshape(3), case()) == "obscure"  # from inside NumPy
    assert outcome(lambda: ece(np.array([1.5]), np.array([1])), case()) == "clear"
    assert outcome(lambda: ece(np.array([1.5]), np.array([1])), case(param="n_bins")) == "obscure"  # names another argument
    assert outcome(lambda: ece(np.array([1.5]), np.array([1])), case(valid=True)) == "refused"
    assert outcome(lambda: 1.0, case(valid=True)) == "accepted"


def test_a_crash_and_a_hang_in_the_child_are_counted():
    with fuzz.Isolated(timeout=3.0) as iso:
        crash = iso.classify(fuzz.Case("_selftest.abort", "*", "valid example", "plain", True, True))
        hang = iso.classify(fuzz.Case("_selftest.sleep", "*", "valid example", "plain", True, True))
        fine = iso.classify(fuzz.Case("_selftest.value", "*", "valid example", "plain", True, True))
    assert (crash.kind, hang.kind, fine.kind) == ("crash", "hang", "accepted"), (crash, hang, fine)


@pytest.mark.slow  # every input (about 8,000): most of an hour on 2 cores
def test_full_fuzz():
    bad = fuzz.failures(fuzz.run_cases(fuzz.all_cases()))
    assert not bad, f"{len(bad)} failing inputs:\n" + "\n".join(bad)
