"""Release notes: what changed between a published leaderboard version and the one before it.

A release record is generated from the diff against the previous tag (`diff.compute_diff`) plus
what git knows between the two commits: params fields changed, benchmark code changed. Records live
in `results/leaderboard/releases.json` (newest first); `CHANGELOG.md` and the site's
`releases.html` are rendered from them. No date is written: the same inputs give the same bytes
(the tag carries the date).
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from pipeline.leaderboard.diff import Version, compute_diff, fmt_rank, read_file
from pipeline.leaderboard.vcs import TAG_PREFIX, Repo, tag_name, version_key

RELEASES_FILE = "releases.json"
CHANGELOG_FILE = "CHANGELOG.md"
VALUE_CHARS = 80


def bump_kind(previous: str | None, version: str) -> str:
    if previous is None:
        return "first"
    return "major" if version_key(version)[0] != version_key(previous)[0] else "minor"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys; a list of named entries (the roster) as `roster[name]`, so an
    added model reads as one field; other lists and scalars are leaves (compared whole)."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, list) and value and all(isinstance(i, dict) and "name" in i for i in value):
        return {f"{prefix}[{item['name']}]": item for item in value}
    return {prefix: value}


def short_value(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def params_changes(repo: Repo, since: str, params_dir: str) -> list[dict[str, str]]:
    """Every params field whose value differs between `since` and HEAD, file by file."""
    changes = []
    for path in repo.changed_paths(since, params_dir):
        if not path.endswith((".yaml", ".yml")):
            continue
        before = flatten(yaml.safe_load(read_file(repo.root, since, path) or "") or {})
        after = flatten(yaml.safe_load(read_file(repo.root, "HEAD", path) or "") or {})
        for field in sorted(set(before) | set(after)):
            if PurePosixPath(path).name == "leaderboard.yaml" and field == "version":
                continue  # the version bump has its own line
            if before.get(field) != after.get(field):
                changes.append(
                    {
                        "file": path,
                        "field": field,
                        "old": short_value(before.get(field)),
                        "new": short_value(after.get(field)),
                    }
                )
    return changes


def code_changes(repo: Repo, since: str) -> dict[str, int]:
    """Changed files under pipeline/, by part: a benchmark's folder, `core`, `leaderboard`, ..."""
    parts: dict[str, int] = {}
    for path in repo.changed_paths(since, "pipeline"):
        pieces = PurePosixPath(path).parts
        part = pieces[1] if len(pieces) > 2 else "pipeline"
        parts[part] = parts.get(part, 0) + 1
    return dict(sorted(parts.items()))


def release_record(
    repo: Repo,
    previous: Version | None,
    current: Version,
    params_dir: str,
    benchmarks: list[str],
    *,
    previous_tag: str | None = None,
    bumped_from: str | None = None,
) -> dict[str, Any]:
    """The record of the version being published (`current`) against the previous tag's.

    `previous_tag`: the previous tag even when its leaderboard could not be read (`previous` None:
    the record names it, without a comparison); `bumped_from`: the params' version that `--bump` raised."""
    version = str(current.stamp["leaderboard_version"])
    if previous is not None:
        previous_version: str | None = str(previous.stamp.get("leaderboard_version"))
    else:
        previous_version = previous_tag[len(TAG_PREFIX) :] if previous_tag else None
    kind = bump_kind(previous_version, version)
    record: dict[str, Any] = {
        "version": version,
        "tag": tag_name(version),
        "built_from": current.stamp.get("git_commit"),
        "inputs_id": current.stamp.get("inputs_id"),
        "models": len(current.board),
        "benchmarks": benchmarks,
        "previous": previous.label if previous is not None else previous_tag,
        "previous_version": previous_version,
        "bump": kind,
        "bumped_from": bumped_from,
        "compared": previous is not None,
        "comparable": kind != "major",
        "models_added": [],
        "models_removed": [],
        "rank_changes": [],
        "benchmarks_added": [],
        "benchmarks_removed": [],
        "params_changed": [],
        "code_changed": {},
        "warnings": [],
        "anchor": current.stamp.get("anchor"),
        "score_changes": [],
    }
    if previous is None:
        if previous_tag:
            record["warnings"].append(f"no comparison with {previous_tag}: its leaderboard files could not be read")
        return record
    diff = compute_diff(previous, current)
    before = [str(b) for b in previous.stamp.get("benchmarks", [])]
    record.update(
        models_added=diff["entered"],
        models_removed=diff["left"],
        rank_changes=[
            {**c, "rank_a": fmt_rank(tuple(c["rank_a"])), "rank_b": fmt_rank(tuple(c["rank_b"]))}
            for c in diff["rank_changes_beyond_intervals"]
        ],
        benchmarks_added=sorted(set(benchmarks) - set(before)),
        benchmarks_removed=sorted(set(before) - set(benchmarks)),
        params_changed=params_changes(repo, previous.label, params_dir),
        code_changed=code_changes(repo, previous.label),
        score_changes=[
            {"model": model, "score_a": c["rating_a"], "score_b": c["rating_b"], "delta": c["delta"]}
            for model, changes in diff["models"].items()
            if (c := changes.get("combined")) is not None and c["delta"] is not None
        ],
    )
    if previous.stamp.get("anchor") != current.stamp.get("anchor"):
        record["warnings"].append(
            f"the anchor changed ({previous.stamp.get('anchor') or 'none'} → {current.stamp.get('anchor') or 'none'}): "
            "combined scores of the two versions are on different scales"
        )
    if kind == "minor":
        ruled = [part for part in record["code_changed"] if part in benchmarks or part == "core"]
        if ruled:
            record["warnings"].append(
                f"code changed since {previous.label} in {', '.join(ruled)}: if a game's rules, prompts or "
                "scoring changed, this should be a MAJOR version (publish --bump major): ratings across "
                "such a change are not comparable"
            )
    return record


def bump_sentence(record: dict[str, Any]) -> str:
    raised = record.get("bumped_from")  # records written before it was kept have no such key
    if record["bump"] == "first":
        if raised:
            return (
                f"First published version; --bump {bump_kind(raised, record['version'])} raised the version from "
                f"{raised} to {record['version']}: no earlier version was published."
            )
        return "First published version."
    previous = f"v{record['previous_version']}"
    # the params said another number than the previous tag's (a version bumped by hand in between)
    bumped = raised and raised != record["previous_version"]
    also = f" (--bump raised the version from {raised} to {record['version']})" if bumped else ""
    if record["bump"] == "major":
        return (
            f"MAJOR version after {previous}{also}: rules, prompts or scoring changed; ratings are not "
            f"comparable with {previous}."
        )
    return (
        f"Minor version after {previous}{also}: same rules, more games or models; ratings comparable with {previous}."
    )


def named(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{i['model']} (combined rank {i.get('combined_rank') or '–'})" for i in items) or "none"


def record_lines(record: dict[str, Any]) -> list[str]:
    """The bullet lines of one release (Markdown; the site escapes and shows the same text)."""
    commit = str(record.get("built_from") or "no git")
    lines = [
        f"Built from commit {commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''} · "
        f"{record['models']} models over {len(record['benchmarks'])} benchmarks "
        f"({', '.join(record['benchmarks']) or 'none'}) · inputs {record.get('inputs_id')}.",
        bump_sentence(record),
    ]
    if record["bump"] == "first" or record.get("compared") is False:  # nothing to compare with
        return lines + [f"- Warning: {w}" for w in record["warnings"]]
    lines.append(f"- Models added: {named(record['models_added'])}")
    lines.append(f"- Models removed: {named(record['models_removed'])}")
    changes = "; ".join(f"{c['ranking']}: {c['model']} {c['rank_a']} → {c['rank_b']}" for c in record["rank_changes"])
    lines.append(f"- Rank changes beyond the intervals: {changes or 'none'}")
    if record["benchmarks_added"] or record["benchmarks_removed"]:
        lines.append(
            f"- Benchmarks added: {', '.join(record['benchmarks_added']) or 'none'}; removed: "
            f"{', '.join(record['benchmarks_removed']) or 'none'}"
        )
    params = [f"{c['file']} `{c['field']}`: {c['old']} → {c['new']}" for c in record["params_changed"]]
    lines.append(f"- Params changed: {'; '.join(params) if params else 'none'}")
    code = ", ".join(f"{part} ({n} file{'s' if n != 1 else ''})" for part, n in record["code_changed"].items())
    lines.append(f"- Code changed: {code or 'none'}")
    if record.get("score_changes"):
        anchor = record.get("anchor")
        scale = f"anchor {anchor} = 1000" if anchor else "mean of the full-coverage models = 1000; no anchor set"
        moves = "; ".join(
            f"{c['model']} {c['delta']:+.0f} ({c['score_a']:.0f} → {c['score_b']:.0f})"
            for c in sorted(record["score_changes"], key=lambda c: (-abs(c["delta"]), c["model"]))
        )
        lines.append(f"- Combined score changes (scale: {scale}): {moves}")
    lines += [f"- Warning: {w}" for w in record["warnings"]]
    return lines


def render_changelog(records: list[dict[str, Any]]) -> str:
    lines = [
        "# Release notes",
        "",
        "Every published leaderboard version, newest first. `python -m pipeline publish` writes this "
        "file from `releases.json`; get a version with `git clone --branch TAG URL`, then `dvc pull`.",
        "",
    ]
    for record in records:
        lines += [f"## v{record['version']} · {record['tag']}", "", *record_lines(record), ""]
    if not records:
        lines += ["No version published yet.", ""]
    return "\n".join(lines)


def load_releases(folder: Path) -> list[dict[str, Any]]:
    path = folder / RELEASES_FILE
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return [r for r in data if isinstance(r, dict) and str(r.get("tag", "")).startswith(TAG_PREFIX)]


def with_release(records: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """`record` first, replacing an unpublished earlier attempt at the same version."""
    return [record, *[r for r in records if r.get("version") != record["version"]]]
