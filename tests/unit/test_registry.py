"""The one registry every family uses: names, metadata, and the two errors."""

import sys

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


def test_unregister_frees_the_name_and_unknown_names_stay_errors():
    toys = Registry("toy")
    member = object()
    toys.register("x", member, colour="red")
    assert toys.unregister("x") is member
    assert "x" not in toys and toys.names() == [] and toys.names(colour="red") == []
    with pytest.raises(UnknownName, match="unknown toy 'x'"):
        toys.unregister("x")
    toys.register("x", object())  # free again: no DuplicateName


def test_registered_lasts_for_the_with_block_only_even_on_error():
    toys = Registry("toy")
    toys.register("kept", object())
    member = object()
    with toys.registered("tmp", member, colour="blue") as got:
        assert got is member and toys.get("tmp") is member
        assert toys.names(colour="blue") == ["tmp"]
    assert toys.names() == ["kept"]
    with pytest.raises(RuntimeError), toys.registered("tmp", member):
        raise RuntimeError("boom")
    assert "tmp" not in toys
    with pytest.raises(DuplicateName, match="toy 'kept' is already registered"):
        with toys.registered("kept", object()):
            pass
    assert "kept" in toys


def test_a_family_check_validates_members_and_gives_their_metadata():
    def check(name, cls, meta):
        if not isinstance(cls, type):
            raise TypeError(f"{name}: a class, please")
        cls.name = name  # the class learns its name
        return {"size": 1, **meta}

    toys = Registry("toy", check=check)

    @toys.register("b", colour="red")
    class B:
        pass

    assert B.name == "b" and toys.metadata("b") == {"size": 1, "colour": "red"}
    with pytest.raises(TypeError, match="c: a class"):
        toys.register("c", object())
    assert "c" not in toys
    with toys.registered("d", type("D", (), {}), size=2):
        assert toys.get("d").name == "d" and toys.names(size=2) == ["d"]


def test_deferred_modules_are_imported_on_the_first_name_the_family_lacks(tmp_path, monkeypatch):
    """A family's heavy members register when first needed (as the trainable encoders do):
    asking for a member it holds imports nothing; a name it lacks, a listing or a test's
    own member imports the modules, once, so that no member is hidden or left out."""
    (tmp_path / "toy_family.py").write_text(
        "from fairforge.registry import Registry\n"
        "FAMILY = Registry('toy', deferred=('toy_heavy',))\n"
        "FAMILY.register('light', object())\n"
    )
    (tmp_path / "toy_heavy.py").write_text(
        "from toy_family import FAMILY\nFAMILY.register('heavy', object(), size=9)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("toy_family", "toy_heavy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from toy_family import FAMILY

    FAMILY.get("light")
    assert "light" in FAMILY and "toy_heavy" not in sys.modules
    with FAMILY.registered("toy", object()):  # a test's member cannot hide a real one
        assert "toy_heavy" in sys.modules
    assert FAMILY.metadata("heavy") == {"size": 9}
    assert FAMILY.names() == ["heavy", "light"] and len(FAMILY) == 2
    with pytest.raises(UnknownName, match="valid: heavy, light"):
        FAMILY.get("other")


def test_a_deferred_module_that_fails_to_import_fails_every_lookup(tmp_path, monkeypatch):
    """A family never lists itself without its deferred members: a module that cannot be
    imported raises on each lookup that needs it, not only the first."""
    (tmp_path / "toy_broken.py").write_text("raise ImportError('no torch here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    family = Registry("toy", deferred=("toy_broken",))
    family.register("light", object())
    assert family.get("light") is not None
    for _ in range(2):
        with pytest.raises(ImportError, match="no torch here"):
            family.names()
