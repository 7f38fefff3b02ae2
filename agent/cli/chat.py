"""``analyst chat``: a chat-style REPL over one thread per conversation.

The loop only parses lines and renders; every turn and slash command goes through ``call``, a
callback that runs one body against the session's :class:`~agent.app.AnalystApp` (the
command opens one app for the whole conversation: :class:`agent.cli.common.AppSession`). The
loop never touches storage itself. Decisions typed here are bound to the draft this session
last displayed, so an approval can never land on a draft the user has not seen.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agent.app import ThreadView, new_thread_id
from agent.cli import common, render
from agent.cli.common import Terminated
from agent.errors import AnalystError, ModelError

if TYPE_CHECKING:
    from rich.console import Console

    from agent.app.memory import RememberAs
    from agent.cli.common import AppCall
    from memory.identity import Principal

HELP = """\
Type a request such as "Analyze NVDA" or "quick snapshot of TSLA". Commands:
  /approve [name]        approve the draft shown and publish it
  /reject <feedback>     send the draft back with feedback for a revision
  /edit <file.md>        publish your own version of the report instead
  /show                  show this conversation's thread again
  /resume                continue this thread if it stopped mid-run
  /threads               list your threads
  /memories              what I remember about you, and how to remove each item
  /why                   what the last plan or answer used from memory
  /remember TEXT [as fact|preference|procedure]
                         remember TEXT in every conversation (default: a preference)
  /new                   start a new conversation thread
  /help                  this help
  /quit                  leave (threads are saved; approve later with `analyst approve`)"""


class ChatSession:
    def __init__(
        self,
        call: AppCall,
        principal: Principal,
        *,
        thread_id: str | None = None,
        console: Console | None = None,
        read_line: Callable[[str], str] = input,
        idle_minutes: float = 30,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.call = call
        self.idle_seconds = idle_minutes * 60
        self.clock = clock
        self.last_turn: float | None = None
        self.principal = principal
        self.console = console or common.console()
        self.read_line = read_line
        self.thread_id = thread_id
        self.shown_hash: str | None = None

    def run(self) -> int:
        """The loop; returns the exit code. SIGTERM ends it as :class:`Interrupted` (143) with
        the conversation's thread id."""
        try:
            return self._loop()
        except Terminated:
            message = common.interrupted_message(self.thread_id, "Terminated")
            raise common.Interrupted(message, Terminated.exit_code) from None

    def _loop(self) -> int:
        self.console.print(
            f"[bold]analyst chat[/] · user {self.principal.user_id} · tenant "
            f"{self.principal.tenant_id}. /help for commands, /quit to leave."
        )
        while True:
            try:
                line = self.read_line("you> ").strip()
            except EOFError:
                self.console.print()
                self._end_session()
                self._bye()
                return 0
            except KeyboardInterrupt:
                self.console.print("\n(/quit to leave)")
                continue
            if not line:
                continue
            try:
                if self.handle(line) is False:
                    return 0
            except AnalystError as error:
                self.console.print(f"[bold red]error:[/] {error}")
            except KeyboardInterrupt:
                self.console.print(
                    f"\n[magenta]Interrupted.[/] The thread is saved; /resume continues "
                    f"{self.thread_id}."
                )

    def handle(self, line: str) -> bool:
        """Handle one line; False means quit."""
        if not line.startswith("/"):
            self._ask(line)
            return True
        command, _, rest = line.partition(" ")
        rest = rest.strip()
        if command in ("/quit", "/exit", "/q"):
            self._end_session()
            self._bye()
            return False
        if command == "/help":
            self.console.print(HELP)
        elif command == "/new":
            self._end_session()
            self.thread_id, self.shown_hash = None, None
            self.console.print("New conversation; your next request starts a new thread.")
        elif command == "/threads":
            views = self.call(lambda app: app.threads())
            render.thread_table(self.console, views)
        elif command == "/show":
            thread_id = self._need_thread()
            self._show(self.call(lambda app: app.view(thread_id)))
        elif command == "/resume":
            thread_id = self._need_thread()
            self._show(self.call(lambda app: app.resume(thread_id, on_update=self._progress)))
        elif command == "/memories":
            render.memory_show(self.console, self.call(lambda app: app.memory.show()), compact=True)
        elif command == "/why":
            thread_id = self._need_thread()
            render.memory_why(self.console, self.call(lambda app: app.memory.why(thread_id)))
        elif command == "/remember":
            self._remember(rest)
        elif command == "/approve":
            self._decide({"action": "approve", "approver": rest or self.principal.user_id})
        elif command == "/reject":
            if not rest:
                self.console.print("Usage: /reject <what the next revision must change>")
                return True
            self._decide({"action": "reject", "feedback": rest})
        elif command == "/edit":
            if not rest:
                self.console.print("Usage: /edit <path to your Markdown file>")
                return True
            path = Path(shlex.split(rest)[0]).expanduser()
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                self.console.print(f"[bold red]error:[/] cannot read {path}: {e}")
                return True
            self._decide({"action": "edit", "text": text})
        else:
            self.console.print(f"Unknown command {command}. /help lists the commands.")
        return True

    # -- turns --------------------------------------------------------------------------

    def _ask(self, query: str) -> None:
        now = self.clock()
        if (
            self.thread_id
            and self.last_turn is not None
            and now - self.last_turn > self.idle_seconds
        ):
            # A long silence ends the session (its summary is written) and starts a new one.
            self._end_session()
            self.thread_id, self.shown_hash = None, None
            self.console.print("It has been a while: this is a new conversation.")
        self.last_turn = now
        thread_id = self.thread_id or new_thread_id()
        try:
            view = self.call(
                lambda app: app.start(
                    query, thread_id=thread_id, on_update=self._progress, keep_session=True
                )
            )
        except (ModelError, KeyboardInterrupt):
            # The thread exists and is saved at its last checkpoint: /resume continues it.
            self.thread_id = thread_id
            raise
        first = self.thread_id is None
        self.thread_id = thread_id
        if first and view.context_loaded:
            render.context_loaded(self.console, view.context_loaded)
        self._show(view)

    def _remember(self, rest: str) -> None:
        """``/remember TEXT [as fact|preference|procedure]``: stored at once, citing the
        user's words as an episode of this conversation."""
        text, as_ = remember_args(rest)
        if not text:
            self.console.print("Usage: /remember TEXT [as fact|preference|procedure]")
            return
        thread_id = self.thread_id
        done = self.call(lambda app: app.memory.remember(text, as_=as_, thread_id=thread_id))
        render.remembered(self.console, done)

    def _decide(self, decision: dict[str, Any]) -> None:
        thread_id = self._need_thread()
        if not self.shown_hash:
            raise AnalystError("No draft has been shown in this conversation yet; /show it first.")
        decision = {"approver": self.principal.user_id, **decision, "draft_hash": self.shown_hash}
        view = self.call(
            lambda app: app.decide(thread_id, decision, on_update=self._progress, keep_session=True)
        )
        self._show(view)

    def _show(self, view: ThreadView) -> None:
        render.thread(self.console, view)
        self.shown_hash = view.draft_hash if view.status == "awaiting_approval" else None
        if view.status == "awaiting_approval":
            self.console.print("Reply with /approve, /reject <feedback> or /edit <file>.")
        elif view.status == "awaiting_confirmation" and view.confirmation:
            self._confirm(view.thread_id, view.confirmation)

    def _confirm(self, thread_id: str, request: dict[str, Any]) -> None:
        """The agent's question at a natural pause: confirm, reject or leave for later each
        thing it proposes to remember (the answer resumes the paused thread)."""
        self.console.print(f"[bold]analyst:[/] {request['question']}")
        answer: dict[str, list[str]] = {"confirm": [], "reject": []}
        for candidate in request["candidates"]:
            self.console.print(
                f"  [{candidate['kind']}] {candidate['text']!r} — you said: "
                f'"{candidate["quote"]}" ({candidate["reason"]})',
                soft_wrap=True,
                markup=False,  # the user's own words, never markup
            )
            try:
                reply = self.read_line("  remember it? [y]es / [n]o / [l]ater: ").strip().lower()
            except (EOFError, KeyboardInterrupt):
                reply = "later"
            if reply in ("y", "yes"):
                answer["confirm"].append(candidate["candidate_id"])
            elif reply in ("n", "no"):
                answer["reject"].append(candidate["candidate_id"])
        view = self.call(lambda app: app.answer_confirmation(thread_id, answer))
        for message in ("confirm", "reject"):
            if answer[message]:
                verb = "Confirmed" if message == "confirm" else "Rejected"
                self.console.print(f"{verb} {len(answer[message])}.")
        if view.status == "awaiting_confirmation" and view.confirmation:
            self._confirm(thread_id, view.confirmation)

    def _progress(self, node: str, update: dict[str, Any]) -> None:
        render.progress(self.console, node, update)

    def _end_session(self) -> None:
        """The conversation ends: queue and run its session-end extraction (its summary,
        events, candidates). A failure is shown; the job stays queued for the worker."""
        if not self.thread_id:
            return
        thread_id = self.thread_id
        try:
            jobs = self.call(lambda app: app.memory.end_session(thread_id))
        except AnalystError as error:
            self.console.print(
                f"[bold red]memory:[/] the session's extraction did not complete: {error} "
                "It stays queued: analyst memory worker retries it."
            )
            return
        for job in jobs:
            result = job.get("result") or {}
            if job["kind"] == "session_end" and result.get("session_id"):
                self.console.print(f"Session summarised as {result['session_id']}.", soft_wrap=True)

    def _bye(self) -> None:
        if self.thread_id:
            self.console.print(f"Bye. This conversation is thread {self.thread_id}.")

    def _need_thread(self) -> str:
        if not self.thread_id:
            raise AnalystError(
                'No thread in this conversation yet; ask for an analysis first, e.g. "Analyze NVDA".'
            )
        return self.thread_id


_REMEMBER_AS = re.compile(r"\s+as\s+(fact|preference|procedure)\s*$", re.IGNORECASE)


def remember_args(rest: str) -> tuple[str, RememberAs]:
    """``TEXT [as fact|preference|procedure]`` → (text, kind); a preference by default."""
    found = _REMEMBER_AS.search(rest)
    if found is None:
        return rest.strip(), "preference"
    return rest[: found.start()].strip(), cast("RememberAs", found.group(1).lower())
