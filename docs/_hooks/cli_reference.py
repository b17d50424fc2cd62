"""MkDocs hook: the CLI reference page, generated from the click commands at build time.

``docs/cli.md`` holds the marker ``<!-- cli-reference -->``; this hook replaces it with
every command of ``neardup.cli.main`` (groups walked recursively): its usage line, its
help text and a table of its options, all read from click, so the page never drifts from
``neardup COMMAND --help``.
"""

from __future__ import annotations

import inspect

import click

MARKER = "<!-- cli-reference -->"


def _commands(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command, click.Context]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub_ctx = click.Context(command, info_name=name, parent=ctx)
        found.append((sub_ctx.command_path, command, sub_ctx))
        if isinstance(command, click.Group):
            found += _commands(command, sub_ctx)
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_rows(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is None:  # arguments and hidden options
            continue
        names, help_text = record
        rows.append(f"| `{_cell(names)}` | {_cell(help_text)} |")
    return rows


def _arguments(command: click.Command) -> str:
    args = [p.human_readable_name for p in command.params if isinstance(p, click.Argument)]
    return ", ".join(f"`{a}`" for a in args)


def reference() -> str:
    """Markdown for every ``neardup`` command, in the order ``--help`` lists them."""
    from neardup.cli import main

    # With main's context settings (-h): a bare Context would also fix main's cached help
    # option to --help alone, for every later `neardup --help` in this process.
    root = click.Context(main, info_name="neardup", **main.context_settings)
    parts = []
    for path, command, ctx in [("neardup", main, root), *_commands(main, root)]:
        level = "##" if path.count(" ") <= 1 else "###"
        parts.append(f"{level} `{path}`\n")
        usage = " ".join(command.collect_usage_pieces(ctx))
        parts.append(f"```\n{path} {usage}\n```\n")
        if command.help:
            text = inspect.cleandoc(click.unstyle(command.help)).replace("\b\n", "")
            parts.append("```text\n" + text.strip() + "\n```\n")
        if isinstance(command, click.Group):
            subs = [f"`{name}`" for name in command.list_commands(ctx)]
            parts.append("Commands: " + ", ".join(subs) + ".\n")
        arguments = _arguments(command)
        if arguments:
            parts.append(f"Arguments: {arguments}.\n")
        rows = _option_rows(command, ctx)
        if rows:
            parts.append("| option | help |\n|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs hook API)
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
