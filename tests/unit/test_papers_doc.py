"""docs/papers.md's "What reproduces each table and figure", read against the code.

Each paper's "paper | fairforge output" table must have a row for every numbered table and
figure of the paper, and every result file a row names must be a file the workflow writes
(an output of :data:`fairforge.paths.OUTPUTS`), so the doc cannot point at a file that no
rule produces. A row without an output says why in its notes. The config keys the tables
name (``metrics.thresholds``, ...) must be keys of the config schema.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fairforge.config import load_schema
from fairforge.paths import OUTPUTS

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "papers.md"

# The numbered tables and figures of each paper, main text and appendix, as the papers'
# captions number them (FairFD: Tables 1-7, Figs. 1-7 with A.6-A.7; Assessment: Tables 1-6,
# Figs. 1-8; Exposure: Tab. 1, Figs. 1-5).
PAPER_ITEMS = {
    "FairFD": {"Table": range(1, 8), "Fig": range(1, 8)},
    "Assessment": {"Table": range(1, 7), "Fig": range(1, 9)},
    "Exposure": {"Table": range(1, 2), "Fig": range(1, 6)},
}
# A row's "paper" cell: "Table 4", "Tab. 1", "Fig. 3", "Figs. 6, 7", "Table 7 and Fig. 5 (A.6)".
ITEM = re.compile(r"\b(Tables?|Tab\.|Figs?\.|Figures?)\s*(\d+(?:\s*(?:,|and)\s*\d+)*)")
# A result file in a backticked name: a path ending in one of the workflow's file types.
RESULT_FILE = re.compile(r"^[\w{}<>@+.\-/]+\.(?:csv|png|parquet|pt|dot|html|yml)$")
# A backticked config key: dotted lowercase words from a top-level key, e.g. metrics.thresholds.
CONFIG_KEY = re.compile(r"^[a-z_]+(?:\.[a-z_]+)+$")
NO_OUTPUT = {"none", "—", "-", ""}


def output_tables() -> dict[str, list[list[str]]]:
    """Paper -> the rows (cells) of its "paper | fairforge output" table in "What
    reproduces each table and figure"."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## What reproduces each table and figure", 1)[1]
    section = re.split(r"^## ", section, flags=re.MULTILINE)[0]
    out = {}
    for sub in re.split(r"^### ", section, flags=re.MULTILINE)[1:]:
        paper = sub.split()[0]
        rows, inside = [], False
        for line in sub.splitlines():
            if line.startswith("| paper | fairforge output"):
                inside = True
            elif inside and line.startswith("|"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if not set(cells[0]) <= {"-", " "}:
                    rows.append(cells)
            elif inside:
                break
        out[paper] = rows
    return out


def items(cell: str) -> set[tuple[str, int]]:
    """The numbered tables and figures a "paper" cell names: {("Table", 4), ("Fig", 6)}."""
    found = set()
    for kind, numbers in ITEM.findall(cell):
        kind = "Table" if kind.startswith("Tab") else "Fig"
        found |= {(kind, int(n)) for n in re.findall(r"\d+", numbers)}
    return found


def output_pattern(template: str) -> re.Pattern:
    """An OUTPUTS template under the results root as a regex; a wildcard matches one path
    part (a name, or the doc's own ``{dataset}``)."""
    relative = template.removeprefix("{results}/")
    parts = re.split(r"(\{\w+\})", relative)
    return re.compile(
        "".join(r"[^/]+" if re.fullmatch(r"\{\w+\}", p) else re.escape(p) for p in parts) + "$"
    )


OUTPUT_PATTERNS = [output_pattern(t) for t in OUTPUTS.values()]


def is_output(name: str) -> bool:
    return any(p.match(name) for p in OUTPUT_PATTERNS)


def named(cells: list[str], pattern: re.Pattern) -> list[str]:
    return [t for cell in cells for t in re.findall(r"`([^`]+)`", cell) if pattern.match(t)]


def test_the_doc_has_a_table_per_paper():
    tables = output_tables()
    assert {"FairFD", "Benchmark", "Assessment", "Exposure"} <= set(tables)
    assert all(tables[paper] for paper in PAPER_ITEMS)


@pytest.mark.parametrize("paper", sorted(PAPER_ITEMS))
def test_every_table_and_figure_of_the_paper_has_a_row(paper):
    rows = output_tables()[paper]
    listed = set().union(*(items(row[0]) for row in rows))
    expected = {(kind, n) for kind, numbers in PAPER_ITEMS[paper].items() for n in numbers}
    assert expected - listed == set(), f"docs/papers.md, {paper}: no row for these"


@pytest.mark.parametrize("paper", sorted(PAPER_ITEMS))
def test_a_row_without_an_output_says_why(paper):
    for row in output_tables()[paper]:
        assert len(row) == 3, row
        if row[1].lower() in NO_OUTPUT:
            assert len(row[2]) > 10, (
                f"docs/papers.md, {paper}: {row[0]} has no output and no reason"
            )


def test_every_result_file_the_tables_name_is_a_workflow_output():
    names = {
        (paper, name)
        for paper, rows in output_tables().items()
        for row in rows
        for name in named(row[1:], RESULT_FILE)
    }
    assert len(names) > 40  # the tables name their files in backticks
    unknown = sorted((p, n) for p, n in names if not is_output(n))
    assert unknown == [], "docs/papers.md names files that fairforge.paths.OUTPUTS does not write"


def test_every_config_key_the_tables_name_is_in_the_schema():
    schema = load_schema()
    keys = {
        name
        for rows in output_tables().values()
        for row in rows
        for name in named(row, CONFIG_KEY)
        if name.split(".")[0] in schema["properties"] and not RESULT_FILE.match(name)
    }
    assert keys
    for key in sorted(keys):
        node = schema
        for part in key.split("."):
            props = node.get("properties", {})
            assert part in props, f"docs/papers.md names config key {key!r}: not in the schema"
            node = props[part]


def test_the_matcher_tells_outputs_from_other_files():
    assert is_output("fairness_table.csv")
    assert is_output("rfw/samples.parquet")
    assert is_output("{dataset}/compression_bpp/{variant}.csv")
    assert is_output("figures/rfw/forgery_examples.png")
    assert not is_output("fairness_tables.csv")
    assert not is_output("figures/nothing.png")
    assert items("Table 7 and Fig. 5 (A.6)") == {("Table", 7), ("Fig", 5)}
    assert items("Figs. 6, 7: AUC against severity") == {("Fig", 6), ("Fig", 7)}
    assert items("Tab. 1: the datasets") == {("Table", 1)}
