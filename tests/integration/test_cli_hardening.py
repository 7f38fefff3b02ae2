"""What a newcomer runs into on an ordinary afternoon, through the real ``analyst`` CLI.

A thread keeps its publications in view whatever a later request does; oversized input is
refused with the setting to change; every listing is one line per item and fits 80 columns
without cutting an id; thread ids that could name a path are refused and a deleted thread
leaves no chart behind; and the small messages are right: ``--version``, ``--model`` without
an endpoint, the thread id at the end of a chat.
"""

from __future__ import annotations

import dataclasses
import json
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

DATE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
CUT_DATE = re.compile(r"\d{4}-\d\d-\d\d(?! \d\d:\d\d:\d\d)")


def narrow(analyst: Any, width: int = 80) -> Any:
    """The same CLI on a console ``width`` columns wide."""
    return dataclasses.replace(analyst, env={**analyst.env, "COLUMNS": str(width)})


def body_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


# -- item 3: publications stay in view -------------------------------------------------------


def test_a_later_declined_request_keeps_the_thread_s_publications_in_view(analyst: Any) -> None:
    analyst.json("run", "Analyze NVDA", "--thread", "T")
    published = analyst.json("approve", "T")["publication"]
    assert published["path"].endswith(".md")

    noted = analyst.json("run", "Never include TSLA in any analysis", "--thread", "T")
    declined = analyst.json("run", "Analyze TSLA", "--thread", "T")
    assert (noted["status"], declined["status"]) == ("noted", "declined")
    for view in (noted, declined, analyst.json("show", "T")):
        assert view["publication"] == published
        assert view["publications"] == [published]
    [listed] = analyst.json("threads")
    assert listed["publication"] == published

    shown = analyst("show", "T")
    assert shown.code == 0, str(shown)
    assert "declined" in shown.out
    assert "Published earlier in this thread (1):" in shown.out
    assert published["path"] in shown.out

    analyst.json("run", "Analyze MSFT", "--thread", "T")
    second = analyst.json("approve", "T")
    assert second["publications"] == [published, second["publication"]]
    assert second["publication"]["path"] != published["path"]
    again = analyst("show", "T")
    assert "Published earlier in this thread (1):" in again.out
    assert published["path"] in again.out and second["publication"]["path"] in again.out


# -- item 4: size limits -----------------------------------------------------------------------


def test_oversized_input_is_refused_before_anything_is_written(analyst: Any) -> None:
    query, memory = analyst.many(
        ["run", "Analyze NVDA " + "x" * 100_000, "--json"],
        ["memory", "add", "I prefer " + "y" * 125_000],
    )
    assert query.refused and query.code == 2, str(query)
    assert "The query is 100,013 characters long; the limit is 2,000" in query.err
    assert "ANALYST_MAX_QUERY_CHARS" in query.err
    assert memory.refused and memory.code == 2, str(memory)
    assert "ANALYST_MAX_MEMORY_CHARS" in memory.err
    assert not analyst.data_dir.exists()

    tight = dataclasses.replace(analyst, env={**analyst.env, "ANALYST_MAX_QUERY_CHARS": "8"})
    assert "the limit is 8 (ANALYST_MAX_QUERY_CHARS)" in tight.fail("run", "Analyze NVDA").err


def test_oversized_decisions_and_chat_messages_change_nothing(analyst: Any, tmp_path: Path) -> None:
    drafted = analyst.json("run", "Analyze NVDA", "--thread", "T")
    big = tmp_path / "mine.md"
    big.write_text("# My report\n\n" + "z" * 150_000, encoding="utf-8")
    edit = analyst.fail("edit", "T", "--file", str(big))
    assert edit.code == 2 and "ANALYST_MAX_EDIT_CHARS" in edit.err
    reject = analyst.fail("reject", "T", "--feedback", "f" * 3000)
    assert reject.code == 2 and "The feedback is 3,000 characters long" in reject.err
    shown = analyst.json("show", "T")
    assert (shown["status"], shown["revision"]) == ("awaiting_approval", 0)
    assert shown["draft_hash"] == drafted["draft_hash"]
    assert analyst.research_notes() == []

    chat = analyst("chat", input="Analyze NVDA " + "w" * 3000 + "\n/threads\n/quit\n")
    assert chat.code == 0, str(chat)
    assert "error: The query is 3,013 characters long; the limit is 2,000" in chat.out
    assert [v["thread_id"] for v in analyst.json("threads")] == ["T"]


# -- items 4 and 5: listings, one line per item, at 80 columns ---------------------------------


def test_thread_listings_fit_80_columns_and_never_cut_ids_or_dates(analyst: Any) -> None:
    long_id = "nvda-research-for-the-quarterly-review"
    analyst.json(
        "run", "Analyze NVDA:\nfirst the trend,\nthen the risk " + "r" * 300, "--thread", long_id
    )
    analyst.json("run", "quick snapshot of TSLA", "--thread", "T2")
    cli = narrow(analyst)

    threads = cli("threads")
    assert threads.code == 0, str(threads)
    lines = body_lines(threads.out)
    assert len(lines) == 3, threads.out  # a header and one line per thread
    assert all(len(line) <= 80 for line in lines), threads.out
    assert lines[1].startswith("T2  ") and lines[2].startswith(long_id + "  ")
    assert not CUT_DATE.search(threads.out), threads.out  # a date is whole or not shown
    # With short ids there is room for the date, whole.
    analyst.json("run", "quick snapshot of AAPL", "--thread", "B", "--user", "bob")
    bob = body_lines(cli("threads", "--user", "bob").out)
    assert "updated (UTC)" in bob[0] and DATE.search(bob[1]) and len(bob[1]) <= 80, bob

    history = cli("history", long_id)
    assert history.code == 0, str(history)
    checkpoints = [c["checkpoint_id"] for c in analyst.json("history", long_id)]
    rows = body_lines(history.out)[2:]  # a title and a header first
    assert len(rows) == len(checkpoints)
    for row, checkpoint in zip(rows, checkpoints, strict=True):
        assert len(row) <= 80 and checkpoint in row and DATE.search(row), history.out
    assert "ran" in history.out and "router" in history.out


@pytest.mark.slow
def test_memory_listings_fit_80_columns_and_show_whole_keys(analyst: Any) -> None:
    keys = [
        analyst.json("memory", "add", text, "--about", "risk tolerance")["key"]
        for text in ("I prefer conservative positions", "Line one\nline two\n" + "and more " * 150)
    ]
    cli = narrow(analyst)
    for args in (["memory", "list", "--memories"], ["memory", "search", "what risk do I like"]):
        shown = cli(*args)
        assert shown.code == 0, str(shown)
        lines = body_lines(shown.out)
        assert len(lines) == 3, shown.out
        assert all(len(line) <= 80 for line in lines), shown.out
        for key in keys:
            assert sum(key in line for line in lines) == 1, shown.out
        assert "…" in shown.out
    wide = analyst("memory", "search", "what risk do I like")
    assert all(word in wide.out for word in ("recency", "importance", "relevance", "about"))


def test_every_listing_has_json(analyst: Any) -> None:
    analyst.json("run", "Analyze NVDA", "--thread", "T")
    analyst.json("facts", "record", "me", "horizon", '"long-term"')
    for args in (
        ["threads"],
        ["history", "T"],
        ["threads", "prune", "--older-than", "90d", "--dry-run"],
        ["facts", "history", "me", "horizon"],
        ["facts", "profile", "me"],
        ["notes", "list"],
        ["notes", "search", "drawdown"],
    ):
        json.loads(analyst(*args, "--json").out)


def test_fact_listings_show_whole_ids(analyst: Any) -> None:
    stored = analyst.json("facts", "record", "me", "horizon", '"long-term"')
    shown = narrow(analyst)("facts", "history", "me", "horizon")
    assert stored["memory_id"] in shown.out


# -- item 7: thread ids and their files ---------------------------------------------------------


def test_thread_ids_that_could_name_a_path_or_nothing_are_refused(analyst: Any) -> None:
    runs = analyst.many(
        *(["run", "Analyze NVDA", "--thread", bad] for bad in ("", "   ", "..", "a/b", "../x"))
    )
    for run in runs:
        assert run.refused and run.code == 2, str(run)
        assert "thread id" in run.err, str(run)
    assert not analyst.data_dir.exists()


def test_deleting_a_thread_removes_its_charts_but_not_its_publications(analyst: Any) -> None:
    draft = analyst.json("run", "Analyze NVDA", "--thread", "a_b")
    chart = Path(draft["chart_path"])
    assert chart.is_file() and chart.parent.name == "a_b"
    revised = analyst.json("reject", "a_b", "--feedback", "more on risk")
    published = analyst.json("approve", "a_b")["publication"]
    charts = {chart, Path(revised["chart_path"])}
    assert all(c.is_file() for c in charts)

    other = Path(analyst.json("run", "Analyze MSFT", "--thread", "a.b")["chart_path"])
    assert other.parent.name == "a.b"

    deleted = analyst("threads", "delete", "a_b", "--yes")
    assert deleted.code == 0, str(deleted)
    assert not any(c.exists() for c in charts)
    assert not chart.parent.exists()
    assert Path(published["path"]).is_file() and Path(published["chart_path"]).is_file()
    assert other.is_file()  # another thread's charts stay


# -- item 9: messages ----------------------------------------------------------------------------


def test_version(analyst: Any) -> None:
    shown = analyst("--version")
    assert (shown.code, shown.out) == (0, f"analyst {version('analyst')}\n")


def test_a_model_flag_that_cannot_be_honoured_is_an_error(analyst: Any) -> None:
    env = {k: v for k, v in analyst.env.items() if not k.startswith("OPENAI_")}
    offline = dataclasses.replace(analyst, env=env)
    run = offline.fail("run", "Analyze NVDA", "--model", "openai:gpt-4o-mini")
    assert run.code == 2
    assert "--model openai:gpt-4o-mini needs OPENAI_API_KEY or OPENAI_BASE_URL" in run.err
    assert "ANALYST_MODEL" not in run.err
    assert not analyst.data_dir.exists()
    assert offline.json("run", "Analyze NVDA", "--model", "offline")["model"] == "offline"


def test_a_chat_ended_by_eof_says_which_thread_it_was(analyst: Any) -> None:
    run = analyst("chat", input="Analyze NVDA\n")
    assert run.code == 0, str(run)
    drafted = re.search(r"Thread (t-[0-9a-f]+) · awaiting approval", run.out)
    assert drafted, run.out
    assert run.out.rstrip().endswith(f"Bye. This conversation is thread {drafted.group(1)}.")


def test_the_yfinance_provider_fetches_any_ticker_or_says_why_it_cannot(analyst: Any) -> None:
    live = dataclasses.replace(analyst, env={**analyst.env, "ANALYST_MARKET_PROVIDER": "yfinance"})
    run = live("run", "Analyze IBM", "--json", timeout=120)
    assert "Unknown ticker" not in run.err, str(run)
    if run.code == 0:  # a machine with network
        assert run.json()["ticker"] == "IBM"
        return
    # Offline: one clear error naming the ticker, the cause and the fix.
    assert run.refused and run.code == 1, str(run)
    assert "Could not download prices for IBM from Yahoo Finance" in run.err
    assert "ANALYST_MARKET_PROVIDER=sample" in run.err and "--provider" not in run.err
