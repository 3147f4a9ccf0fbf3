"""The documentation agrees with the code: every relative link of README.md and docs/
resolves (to a file, and to a heading where it names one), and every ``ringcast``
command line the docs show names sub-commands and options the parser has."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from ringcast.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m) for m in re.findall(r"^#{1,6}\s+(.*?)\s*#*$", text, flags=re.M)}


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # a link inside a code span is code
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    assert not broken, f"{_rel(page)}: " + "; ".join(broken)


def command_lines(page: Path) -> list[str]:
    """The ``ringcast ...`` command lines of a page: in its code blocks (continuation
    lines joined) and in its code spans."""
    text = page.read_text()
    out = []
    for block in FENCE.findall(text):
        body = re.sub(r"\\\n\s*", " ", block)
        for line in body.splitlines()[1:-1]:
            line = re.sub(r"^\$\s+|^[A-Z_]+=\S+\s+", "", line.strip())
            if line.startswith("ringcast "):
                out.append(line)
    out += re.findall(r"`(ringcast [^`\n]+)`", FENCE.sub("", text))
    # "ringcast lab: ..." is what a command prints, not a command
    return [line for line in out if not re.match(r"ringcast [\w-]+:", line)]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def problems(line: str, parser: argparse.ArgumentParser) -> list[str]:
    """What of ``line`` the parser does not have: sub-commands, then options."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    words = [w.strip("[]|(),;") for w in words[1:]]
    words = [w for w in words if w and w != "..."]
    bad = []
    path = ["ringcast"]
    while words and (subs := _subparsers(parser)):
        if words[0] not in subs:
            if words[0].isupper() or words[0].startswith("-"):  # a placeholder, or help
                break
            return [f"`{' '.join(path)}` has no sub-command {words[0]!r}"]
        path.append(words[0])
        parser = subs[words.pop(0)]
    known = _options(parser)
    for w in words:
        if w.startswith("-") and not re.fullmatch(r"-\d.*", w):
            opt = w.split("=", 1)[0]
            if opt not in known:
                bad.append(f"`{' '.join(path)}` has no option {opt}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_commands_shown_exist(page: Path) -> None:
    parser = build_parser()
    bad = [f"{line!r}: {p}" for line in command_lines(page) for p in problems(line, parser)]
    assert not bad, f"{_rel(page)}: " + "; ".join(bad)


def test_the_checker_finds_what_is_wrong() -> None:
    parser = build_parser()
    assert problems("ringcast lab chek out", parser) == ["`ringcast lab` has no sub-command 'chek'"]
    assert problems("ringcast status --config C --jsn", parser) == [
        "`ringcast status` has no option --jsn"
    ]
    assert problems("ringcast node --config C --id N [--rate R --size S]", parser) == []
    assert slug("Running on a cluster") == "running-on-a-cluster"
    assert slug("`lab check`: what it checks") == "lab-check-what-it-checks"


REPO_PATH = re.compile(r"`((?:docs|src|tests|bench|scenarios|sweeps|examples)/[\w./-]*)`")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_repository_paths_named_exist(page: Path) -> None:
    """A file of the repository named in a code span (``docs/benchmarks.md``) exists."""
    text = FENCE.sub("", page.read_text())
    missing = [p for p in REPO_PATH.findall(text) if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"{_rel(page)} names files that do not exist: {', '.join(missing)}"
