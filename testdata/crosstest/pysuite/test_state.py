"""A suite whose tests pass only in this order: test_a leaves state.json
in the project, and test_b reads it. test_own reads only what it wrote
itself. test_c and test_d read what their own fixture, of module scope,
wrote when test_c set it up: no order between tests."""

import pytest


def test_a():
    with open("state.json", "w") as f:
        f.write('{"ready": true}')


def test_b():
    with open("state.json") as f:
        assert f.read() == '{"ready": true}'


def test_own():
    with open("own.txt", "w") as f:
        f.write("mine")
    for _ in range(3):
        with open("own.txt") as f:
            assert f.read() == "mine"


@pytest.fixture(scope="module")
def workspace():
    with open("workspace.txt", "w") as f:
        f.write("set up")
    return "workspace.txt"


def test_c(workspace):
    with open(workspace) as f:
        assert f.read() == "set up"


def test_d(workspace):
    with open(workspace) as f:
        assert f.read() == "set up"
