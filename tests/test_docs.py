"""The documentation stays true of the command line: every ``ppdm`` command shown in a
```bash block of README.md or docs/*.md names an existing subcommand and existing options,
and every relative Markdown link points to an existing file (and heading, when it has an
anchor). Only the command tree is inspected; no command does its real work here."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from ppdm.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```(\w*)\s*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _root_command() -> Any:
    """The click command tree of ``ppdm`` (importing ppdm.cli.app registers every cmd_*.py).
    Typer may ship its own copy of click, so groups and options are recognised by shape."""
    cmd = typer.main.get_command(app)
    assert _is_group(cmd)
    return cmd


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "commands") and hasattr(cmd, "get_command")


def _bash_lines(path: Path) -> list[tuple[int, str]]:
    """Lines of ```bash blocks, with backslash continuations joined, and where each starts."""
    out: list[tuple[int, str]] = []
    in_bash = in_other = False
    pending = ""
    start = last_start = 0
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line.strip())
        if m:
            if in_bash or in_other:
                in_bash = in_other = False
            elif m.group(1) in ("bash", "sh", "shell", "console"):
                in_bash = True
            else:
                in_other = True
            continue
        if not in_bash:
            continue
        text = re.sub(r"(^|\s)#.*$", "", line.strip()).strip()  # shell comments
        if not pending and out and line[:1].isspace() and text and out[-1][0] == last_start:
            # an indented line right after a command continues its synopsis
            out[-1] = (out[-1][0], f"{out[-1][1]} {text}")
            continue
        if not text:
            last_start = -1
            continue
        if not pending:
            start = no
        pending = f"{pending} {text.rstrip(chr(92)).strip()}".strip()
        if not text.endswith("\\"):
            out.append((start, pending))
            last_start = start
            pending = ""
    return out


def _commands() -> list[tuple[str, str]]:
    """(where, command) for every ppdm invocation; chains joined by && or ; are split."""
    found = []
    for path in DOCS:
        for no, line in _bash_lines(path):
            for part in re.split(r"&&|;", line):
                part = part.strip()
                if part.startswith(("ppdm ", "python -m ppdm.cli ")):
                    found.append((f"{path.relative_to(ROOT)}:{no}", part))
    return found


def _resolve(root: Any, words: list[str]) -> tuple[Any, list[str], list[str]]:
    """Walk subcommand words down the click tree; return the command, the path and the rest."""
    cmd = root
    path: list[str] = []
    rest = list(words)
    while _is_group(cmd) and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        sub = cmd.commands.get(name)
        if sub is None:
            raise AssertionError(f"unknown subcommand {' '.join([*path, name])!r}")
        cmd = sub
        path.append(name)
    return cmd, path, rest


def _option_names(cmd: Any) -> set[str]:
    names = {"--help"}
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "option":
            names.update(p.opts)
            names.update(p.secondary_opts)
    return names


COMMANDS = _commands()


def test_docs_show_ppdm_commands() -> None:
    # the check below is only meaningful when the docs are actually parsed
    assert len(COMMANDS) >= 20
    assert any(c.startswith("python -m ppdm.cli ") for _, c in COMMANDS) or any(
        c.startswith("ppdm ") for _, c in COMMANDS
    )


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_doc_command_uses_existing_subcommand_and_options(where: str, command: str) -> None:
    root = _root_command()
    prefix = "python -m ppdm.cli " if command.startswith("python -m ppdm.cli ") else "ppdm "
    # placeholders like [--seed N] or c45|sysfor are shell-like enough for shlex after removing brackets
    body = command[len(prefix):].replace("[", " ").replace("]", " ").replace("…", " ")
    try:
        words = shlex.split(body)
    except ValueError as e:  # unbalanced quotes in a doc command
        raise AssertionError(f"{where}: cannot split {command!r}: {e}") from None
    try:
        cmd, path, rest = _resolve(root, words)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e} in {command!r}") from None
    assert path, f"{where}: no subcommand in {command!r}"
    known = _option_names(cmd)
    for w in rest:
        if w.startswith("--"):
            opt = w.split("=", 1)[0]
            assert opt in known, f"{where}: `ppdm {' '.join(path)}` has no option {opt} ({command!r})"
        elif re.fullmatch(r"-[A-Za-z]", w):
            assert w in known, f"{where}: `ppdm {' '.join(path)}` has no option {w} ({command!r})"


def _anchors(md: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    anchors = set()
    in_code = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        anchors.add(slug)
    return anchors


def _links() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        in_code = False
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            for m in _LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                found.append((str(path.relative_to(ROOT)), f"{path.relative_to(ROOT)}:{no}", target))
    return found


LINKS = _links()


def test_docs_have_relative_links() -> None:
    assert len(LINKS) >= 10


@pytest.mark.parametrize(("source", "where", "target"), LINKS, ids=[f"{w}->{t}" for _, w, t in LINKS])
def test_relative_link_resolves(source: str, where: str, target: str) -> None:
    file_part, _, anchor = target.partition("#")
    base = (ROOT / source).parent
    dest = (base / file_part).resolve() if file_part else (ROOT / source)
    assert dest.exists(), f"{where}: link target {target!r} does not exist"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{where}: {dest.name} has no heading for #{anchor}"


def test_doc_anonymize_params_exist() -> None:
    """``ppdm anonymize --method NAME --param key=value`` in the docs names real parameters."""
    from ppdm.anonymize.registry import TECHNIQUES, _load_all, technique_params

    _load_all()
    checked = 0
    for where, command in COMMANDS:
        words = shlex.split(command.replace("[", " ").replace("]", " "))
        if "anonymize" not in words or "--method" not in words:
            continue
        method = words[words.index("--method") + 1]
        if method.isupper():  # a placeholder such as NAME
            continue
        assert method in TECHNIQUES, f"{where}: unknown technique {method!r}"
        params = technique_params(TECHNIQUES[method])
        for i, w in enumerate(words[:-1]):
            if w in ("--param", "-p") and "=" in words[i + 1]:
                key = words[i + 1].split("=", 1)[0]
                if key.isupper() or key == "key":
                    continue
                assert key in params, f"{where}: {method} has no parameter {key!r}"
                checked += 1
    assert checked >= 5


def test_doc_measure_options_exist() -> None:
    """``ppdm evaluate``/``ppdm compare`` with ``--param``/``-p`` in the docs give only options the
    measures they evaluate declare (as the commands themselves check before any work)."""
    from ppdm.errors import ParameterError
    from ppdm.experiments.evaluation import check_measure_options, resolve_measures
    from ppdm.utils import parse_params

    checked = 0
    for where, command in COMMANDS:
        words = shlex.split(command.replace("[", " ").replace("]", " "))
        if "evaluate" not in words and "compare" not in words:
            continue
        params = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--param", "-p") and "=" in words[i + 1]]
        params = [p for p in params if not p.split("=", 1)[0].replace(".", "_").isupper()
                  and p.split("=", 1)[0] not in ("key", "NAME.key")]
        if not params:
            continue
        names = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--measures", "-m")), None)
        try:
            check_measure_options(resolve_measures(names), parse_params(params))
        except ParameterError as e:
            raise AssertionError(f"{where}: {e}") from None
        checked += 1
    assert checked >= 1
