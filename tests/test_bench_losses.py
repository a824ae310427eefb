"""bench_losses: each reading lands in one place, and the table counts what it was given."""

from benchmarks.bench_losses import place, table


def test_place_names_the_stage_a_reading_is_lost_in() -> None:
    assert place(3, True, True) == "shown"
    assert place(None, False, False) == "not found in the top 10"
    assert place(1, False, True) == "ranked 1, not shown, its file shown"
    assert place(4, False, False) == "ranked 2-5, not shown"
    assert place(7, False, True) == "ranked 6-10, not shown, its file shown"


def test_table_tallies_yes_partly_no_per_kind_and_place() -> None:
    rows = [{"kind": "code", "place": "shown", "satisfied": "yes"},
            {"kind": "code", "place": "shown", "satisfied": "partly"},
            {"kind": "code", "place": "ranked 2-5, not shown", "satisfied": "no"},
            {"kind": "docs", "place": "not found in the top 10", "satisfied": "no"}]
    text = table(rows)
    assert "| code | shown | 2 | 1 / 1 / 0 |" in text
    assert "| code | ranked 2-5, not shown | 1 | 0 / 0 / 1 |" in text
    assert "| docs | not found in the top 10 | 1 | 0 / 0 / 1 |" in text
    assert text.index("| code | shown") < text.index("| code | ranked")
