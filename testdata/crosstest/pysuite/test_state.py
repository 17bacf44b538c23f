"""A suite whose tests pass only in this order: test_a leaves state.json
in the project, and test_b reads it. test_own reads only what it wrote
itself."""


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
