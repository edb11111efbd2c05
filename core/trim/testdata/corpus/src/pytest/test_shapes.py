import pytest

import shapes


@pytest.mark.parametrize("n", range(200))
def test_square(n):
    assert shapes.area("square", n) == n * n


def test_rect():
    assert shapes.area("rect", 2, 5) == 10


def test_parse_spec():
    kind, dims = shapes.parse("rect 2;5")
    assert kind == "rect"


@pytest.mark.parametrize("n", range(100))
def test_circle(n):
    assert shapes.area("circle", n) >= 0


def test_unknown():
    with pytest.raises(KeyError):
        shapes.area("hexagon", 1)
