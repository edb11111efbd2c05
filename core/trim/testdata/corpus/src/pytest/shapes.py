"""Geometry helpers with two bugs."""
import math


def area(kind, *dims):
    if kind == "square":
        return dims[0] ** 2
    if kind == "circle":
        return math.pi * dims[0] ** 2
    if kind == "rect":
        return dims[0] * dims[0]  # bug: should be dims[0] * dims[1]
    raise ValueError("unknown shape: %s" % kind)


def parse(spec):
    kind, _, rest = spec.partition(" ")
    return kind, [float(x) for x in rest.split(",")]
