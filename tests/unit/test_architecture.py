"""The house rules that docs/architecture.md states, checked on the package itself: every
module imports, name dispatch lives on registries only, and the document names every rule
file, every registry and every import layer there is."""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import pkgutil
import re
import sys
import tomllib
import types
from pathlib import Path

import pytest

import fairforge
from fairforge.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

# Module-level dicts that map names to classes or functions but are not dispatch: none today.
# An entry is "module.VARIABLE" with a comment saying why it is data, not a lookup.
NOT_DISPATCH: set[str] = set()


@functools.cache
def all_modules() -> dict[str, types.ModuleType]:
    """Every module of the package, imported; a module that fails to import is an error."""
    out = {"fairforge": fairforge}
    failed: list[str] = []

    def unwalkable(name: str) -> None:  # walk_packages would skip a broken package silently
        failed.append(f"{name}: the package does not import")

    for info in pkgutil.walk_packages(fairforge.__path__, "fairforge.", onerror=unwalkable):
        try:
            module = _import(info.name)
            if module is not None:
                out[info.name] = module
        except Exception as err:  # noqa: BLE001 - every failure is reported below
            failed.append(f"{info.name}: {type(err).__name__}: {err}")
    assert not failed, "modules that do not import:\n" + "\n".join(failed)
    return out


def _import(name: str) -> types.ModuleType | None:
    if name != "fairforge.__main__":
        return importlib.import_module(name)
    # ``python -m fairforge`` runs the command line when imported: ask it for its help.
    argv, sys.argv = sys.argv, ["fairforge", "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as done:
            importlib.import_module(name)
    finally:
        sys.argv = argv
    assert done.value.code == 0, f"python -m fairforge --help exited {done.value.code}"
    return None  # it exited while importing, so it holds nothing to inspect


def _is_dispatch_value(value: object) -> bool:
    return (
        inspect.isclass(value) or inspect.isroutine(value) or isinstance(value, functools.partial)
    )


def name_dicts(module: types.ModuleType) -> list[str]:
    """Module-level dicts (or mapping proxies) of ``module`` keyed by strings whose values
    include two or more classes or functions: a lookup by name outside a registry."""
    found = []
    for var, value in vars(module).items():
        if var.startswith("__") or not isinstance(value, dict | types.MappingProxyType):
            continue
        if len(value) < 2 or not all(isinstance(k, str) for k in value):
            continue
        if sum(_is_dispatch_value(v) for v in value.values()) >= 2:
            found.append(var)
    return found


def registries() -> dict[str, str]:
    """Family name → ``module.VARIABLE`` of every registry the package's modules hold, named
    where it is assigned (not where it is imported to register members on)."""
    out: dict[str, str] = {}
    for name, module in sorted(all_modules().items()):
        source = inspect.getsource(module)
        for var, value in vars(module).items():
            defined = re.search(rf"^{var}\s*(:[^=\n]*)?=\s*Registry\(", source, re.M)
            if isinstance(value, Registry) and defined:
                assert value.family not in out, f"two registries of family {value.family!r}"
                out[value.family] = f"{name}.{var}"
    return out


def section(title: str) -> str:
    """The text of the document's section whose heading contains ``title``."""
    text = DOC.read_text()
    match = re.search(rf"^## [^\n]*{re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"{DOC} has no section titled {title!r}"
    return match.group(1)


def test_every_module_imports():
    assert len(all_modules()) > 50


def test_no_module_outside_the_registry_keeps_a_name_to_object_dict():
    offenders = [
        f"{name}.{var}"
        for name, module in sorted(all_modules().items())
        if name != "fairforge.registry"
        for var in name_dicts(module)
        if getattr(module, var) is not None and f"{name}.{var}" not in NOT_DISPATCH
    ]
    # A dict imported from another module is reported under its owner only.
    owners = {}
    for entry in offenders:
        name, var = entry.rsplit(".", 1)
        owners.setdefault(id(getattr(all_modules()[name], var)), entry)
    assert not owners, (
        "name→class/function dicts outside fairforge.registry (put them on a Registry): "
        + ", ".join(sorted(owners.values()))
    )


def test_the_dict_scan_finds_a_dispatch_dict():
    """The scan above is not vacuous: it flags a toy module that dispatches through a dict."""
    toy = types.ModuleType("toy")
    toy.HANDLERS = {"a": len, "b": sorted, "c": 3}
    toy.PLAIN = {"a": 1, "b": (len,)}
    toy.PROXY = types.MappingProxyType({"x": int, "y": str})
    assert name_dicts(toy) == ["HANDLERS", "PROXY"]


def test_the_document_names_every_rule_file():
    text = DOC.read_text()
    missing = [p.name for p in sorted((ROOT / "rules").glob("*.smk")) if f"`{p.name}`" not in text]
    assert not missing, f"{DOC} does not describe rule files {missing}"


def test_the_document_names_every_registry_with_where_it_lives():
    rows = [line for line in section("The registry").splitlines() if line.startswith("|")]
    found = registries()
    assert {"detector", "operation", "adapter", "forgery method"} <= set(found)
    missing = []
    for family, where in sorted(found.items()):
        where = f"`{where}`"
        if not any(f"`{family}`" in row and where in row for row in rows):
            missing.append(f"{family} ({where})")
    assert not missing, f"{DOC}, section 4, has no table row for registries {missing}"


def test_the_document_names_every_import_layer_in_order():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (layers,) = [
        c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    ]
    text = section("Import layers")
    modules = [m.strip() for layer in layers for m in re.split(r"[:|]", layer)]
    missing = [m for m in modules if f"`{m}`" not in text]
    assert not missing, f"{DOC}, section 3, does not place layers {missing}"
    # The table reads from the top layer down, as pyproject.toml lists them.
    rows = "\n".join(line for line in text.splitlines() if line.startswith("|"))
    spans = []
    for layer in layers:
        found = [rows.find(f"`{m.strip()}`") for m in re.split(r"[:|]", layer)]
        assert min(found) >= 0, f"{DOC}, section 3: layer {layer!r} is not in the table"
        spans.append((min(found), max(found), layer))
    for (_, end, upper), (start, _, lower) in zip(spans, spans[1:], strict=False):
        assert end < start, f"{DOC}, section 3: layer {upper!r} must come before {lower!r}"


def test_the_registry_section_shows_the_registry_api():
    text = section("The registry")
    for api in ("check=", ".register(", ".get(", ".create(", ".registered(", ".unregister("):
        assert api in text, f"{DOC}, section 4, does not show {api}"
        assert api.strip(".(=") == "check" or hasattr(Registry, api.strip(".(="))
