import pytest


def test_b1():
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_b2(n):
    pass
