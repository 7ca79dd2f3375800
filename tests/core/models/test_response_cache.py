"""The response cache as a run relies on it: answers stored by one process are found by every
other, whole after any kill, and caches written by earlier versions still answer."""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from pipeline.core.models.response_cache import ANSWERS_DIR, INDEX_FILE, ResponseCache
from tests.core.models.cache_writer import entry_key, write_entries


def index_lines(root: Path) -> list[list[str]]:
    return [line.split(" ") for line in (root / ANSWERS_DIR / INDEX_FILE).read_text().splitlines()]


def segments(root: Path) -> list[Path]:
    return sorted((root / ANSWERS_DIR).glob("*.jsonl"))


def test_answers_are_appended_to_one_segment_and_found_by_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.get(entry_key(0)) is None
    cache.put_many([(entry_key(i), {"text": f"answer {i}"}) for i in range(3)])
    cache.put(entry_key(3), {"text": "answer 3"})
    cache.put(entry_key(3), {"text": "another answer"})  # a key stored already keeps its answer
    for i in range(4):
        assert cache.get(entry_key(i)) == {"key": entry_key(i), "text": f"answer {i}"}
    assert len(segments(tmp_path)) == 1  # no file per answer
    assert [fields[0] for fields in index_lines(tmp_path)] == [entry_key(i) for i in range(4)]
    assert ResponseCache(tmp_path).get(entry_key(2)) == {"key": entry_key(2), "text": "answer 2"}


def test_a_cache_written_by_an_earlier_version_still_answers(tmp_path: Path) -> None:
    """Earlier versions wrote each answer to `<key[:2]>/<key>.json`: those files are read as they are."""
    key = entry_key(7)
    old = tmp_path / key[:2] / f"{key}.json"
    old.parent.mkdir()
    old.write_text(json.dumps({"key": key, "text": "from an old run"}, sort_keys=True))
    cache = ResponseCache(tmp_path)
    assert cache.get(key) == {"key": key, "text": "from an old run"}
    cache.put(entry_key(8), {"text": "new"})
    assert not (tmp_path / entry_key(8)[:2] / f"{entry_key(8)}.json").exists()  # new answers go to a segment
    assert cache.get(entry_key(8)) == {"key": entry_key(8), "text": "new"}


def test_a_torn_index_line_is_skipped_and_its_answer_stored_again(tmp_path: Path, caplog) -> None:
    """A writer killed mid-append leaves a torn index line; it may even parse, pointing at the wrong
    bytes. The entry it names reads as missing (with a warning), and the next answer is stored."""
    cache = ResponseCache(tmp_path)
    cache.put(entry_key(0), {"text": "whole"})
    segment = index_lines(tmp_path)[0][1]
    with (tmp_path / ANSWERS_DIR / INDEX_FILE).open("a") as index:
        index.write(f"{entry_key(1)} {segment} 0 4")  # torn: cut inside the length, no newline
    cache.put(entry_key(2), {"text": "after the tear"})  # closes the torn line first
    reader = ResponseCache(tmp_path / ".")  # another folder string: still this process's store
    with caplog.at_level(logging.WARNING):
        assert reader.get(entry_key(1)) is None
    assert "ignoring cache entry" in caplog.text
    assert reader.get(entry_key(2)) == {"key": entry_key(2), "text": "after the tear"}
    reader.put(entry_key(1), {"text": "asked again"})
    assert reader.get(entry_key(1)) == {"key": entry_key(1), "text": "asked again"}
    assert ResponseCache(tmp_path).get(entry_key(0)) == {"key": entry_key(0), "text": "whole"}


def test_a_cache_folder_removed_under_a_running_process_is_written_again(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    cache.put(entry_key(0), {"text": "gone soon"})
    shutil.rmtree(tmp_path / "cache")
    assert cache.get(entry_key(0)) is None  # its segment is gone with the folder
    cache.put(entry_key(1), {"text": "kept"})
    assert cache.get(entry_key(1)) == {"key": entry_key(1), "text": "kept"}
    assert len(segments(tmp_path / "cache")) == 1


@pytest.mark.slow
def test_two_processes_writing_the_cache_at_once_leave_it_readable(tmp_path: Path) -> None:
    reader = ResponseCache(tmp_path)
    assert reader.get(entry_key(0)) is None  # this process has read the (empty) cache before
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=write_entries, args=(str(tmp_path), w, 400, 40)) for w in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)  # generous: a spawned interpreter imports the gateway, slow on a loaded machine
        assert w.exitcode == 0
    for i in range(40):  # the other processes' answers, found at this process's next miss
        entry = reader.get(entry_key(i))
        assert entry is not None and entry["text"].startswith(f"answer {i} ")
    assert len(segments(tmp_path)) == 2  # one per writer
    lines = index_lines(tmp_path)
    assert 40 <= len(lines) <= 80 and {fields[0] for fields in lines} == {entry_key(i) for i in range(40)}


@pytest.mark.slow
def test_a_kill_mid_write_leaves_no_corrupt_entry(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    victim = ctx.Process(target=write_entries, args=(str(tmp_path), 0, 10**6, 10**6))
    victim.start()
    index = tmp_path / ANSWERS_DIR / INDEX_FILE
    deadline = time.monotonic() + 180  # the spawned writer's imports are slow on a loaded machine
    while not index.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert victim.is_alive(), "the writer finished before the kill: nothing was tested"
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    assert victim.exitcode == -signal.SIGKILL  # killed while writing, not finished
    written = [fields[0] for fields in index_lines(tmp_path) if len(fields) == 4]
    assert len(written) > 10, "few entries were written before the kill: nothing was tested"
    cache = ResponseCache(tmp_path)
    assert all(cache.get(key) is not None for key in written[:-1])  # every indexed entry whole
    cache.put(entry_key(-1), {"text": "after the kill"})  # and the cache takes new answers
    assert cache.get(entry_key(-1)) == {"key": entry_key(-1), "text": "after the kill"}


def test_a_segment_whose_name_holds_a_space_is_found(tmp_path: Path) -> None:
    """Segments are named after their host, whose name may hold a space: the index still reads."""
    folder = tmp_path / ANSWERS_DIR
    folder.mkdir()
    line = json.dumps({"key": entry_key(5), "text": "from host a b"}, sort_keys=True).encode()
    (folder / "host a b-1-0.jsonl").write_bytes(line + b"\n")
    (folder / INDEX_FILE).write_text(f"{entry_key(5)} host a b-1-0.jsonl 0 {len(line)}\n")
    assert ResponseCache(tmp_path).get(entry_key(5)) == {"key": entry_key(5), "text": "from host a b"}
