"""Plumbing shared by every ``analyst`` command group: options, errors, settings, consoles.

Only typer and the standard library are imported at module level so ``analyst --help`` stays
fast; Rich, settings and storage are imported when a command runs. Errors the user can act on
(:class:`~agent.errors.AnalystError`) become one ``error:`` line on stderr and the error's exit
code; nothing else is caught.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from agent.settings import Settings

T = TypeVar("T")

UserOpt = Annotated[
    str | None, typer.Option("--user", help="User to act as (default: $ANALYST_USER or $USER).")
]
TenantOpt = Annotated[
    str | None, typer.Option("--tenant", help="Tenant (default: $ANALYST_TENANT or 'default').")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def group(name: str, help: str) -> typer.Typer:
    """A command group with the house defaults."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


def err(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)


def note(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[dim]{message}[/]", highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` as an error and return the exit to raise: ``raise fail(...)``."""
    err(message)
    return typer.Exit(code)


def console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def settings(user: str | None = None, tenant: str | None = None, **overrides: Any) -> Settings:
    """Settings from the environment plus command-line overrides (None means 'not given')."""
    from agent.errors import AnalystError
    from agent.settings import Settings

    try:
        return Settings.from_env(user_id=user, tenant_id=tenant, **overrides)
    except AnalystError as error:
        raise fail(str(error), error.exit_code) from None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion; an AnalystError becomes its message and exit code."""
    from agent.errors import AnalystError

    try:
        return asyncio.run(coro)
    except AnalystError as error:
        raise fail(str(error), error.exit_code) from None
