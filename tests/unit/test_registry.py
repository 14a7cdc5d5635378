"""The one registry every family uses: names, metadata, and the two errors."""

import pytest

from fairforge.registry import DuplicateName, Registry, UnknownName


def test_register_create_and_list():
    toys = Registry("toy")

    @toys.register("b", colour="red")
    class B:
        def __init__(self, size=1):
            self.size = size

    toys.register("a", lambda: "made", colour="blue")
    assert toys.names() == ["a", "b"]
    assert toys.names(colour="red") == ["b"]
    assert toys.create("b", size=3).size == 3
    assert toys.create("a") == "made"
    assert toys.metadata("b") == {"colour": "red"}
    assert "a" in toys and "c" not in toys and len(toys) == 2


def test_unknown_name_lists_the_valid_ones():
    toys = Registry("toy")
    toys.register("x", object())
    with pytest.raises(UnknownName, match=r"unknown toy 'y'; valid: x") as err:
        toys.get("y")
    # Callers that caught KeyError or ValueError before keep working.
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    assert str(err.value) == "unknown toy 'y'; valid: x"


def test_duplicate_name_is_an_error_but_reregistering_the_same_object_is_not():
    toys = Registry("toy")
    member = object()
    toys.register("x", member)
    toys.register("x", member)
    with pytest.raises(DuplicateName, match="toy 'x' is registered twice"):
        toys.register("x", object())
