"""`python -m pipeline site TAG`: an earlier published version's site, from its tag.

The site is a DVC output, so its files come from this machine's DVC cache or, failing that, the DVC
remote the tag's commit names (`dvc get`); the workspace is not touched.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.leaderboard.vcs import PublishError, open_repo

SITE_PATH = "results/leaderboard/site"


def fetch_site(tag: str, workspace: Path, out: Path | None) -> Path:
    """Write the site of `tag` under `out` (default .cache/sites/TAG) and return its index.html."""
    repo = open_repo(workspace)
    if repo.git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}", check=False).returncode != 0:
        published = sorted(repo.leaderboard_tags())
        raise PublishError(f"no git revision {tag!r}; published versions: {', '.join(published) or 'none yet'}")
    target = (out or repo.root / ".cache" / "sites" / tag).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    done = repo.dvc("get", str(repo.root), SITE_PATH, "--rev", tag, "-o", str(target), "--force", check=False)
    if done.returncode != 0:
        raise PublishError(
            f"the site of {tag} is neither in this machine's DVC cache nor on the DVC remote ({done.stderr.strip()[-600:]}); "
            "whoever published it must `dvc push` (publish does when a remote is configured)"
        )
    return target / "index.html"
