"""A test that fails on its assertion."""


def answer():
    return 1


def test_message():
    assert answer() == 2, "the answer should be two"
