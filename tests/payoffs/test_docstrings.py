"""The docstring examples of the modules implementing Marx et al. (2024) run and give what they show."""

import doctest

import pytest

from jcalib.forecasters import blackwell, orca
from jcalib.payoffs import base, binary, interval


@pytest.mark.parametrize("module", [base, binary, interval, blackwell, orca], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    assert doctest.testmod(module, raise_on_error=True).attempted > 0
