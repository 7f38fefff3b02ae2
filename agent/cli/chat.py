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

import agent.cli.common as common
import agent.cli.render as render
from agent.cli.common import Terminated
from agent.cli.terminal import literal
from agent.errors import AnalystError, ModelError

if TYPE_CHECKING:
    from rich.console import Console

    from agent.app import ThreadView
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
  /forget WHAT           forget ID [ID ...], topic TEXT, about TEXT, from DATE to DATE, or
                         everything: shows what would go, then asks before deleting
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
        # The prompt is on its way: load the app in the background while the user types.
        warm_up = getattr(self.call, "warm_up", None)
        if warm_up is not None:
            warm_up()
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
                self.console.print(f"[bold red]error:[/] {literal(error)}")
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
        elif command == "/forget":
            self._forget(rest)
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
                self.console.print(f"[bold red]error:[/] cannot read {literal(path)}: {literal(e)}")
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
        if self.thread_id and self.shown_hash and self._set_aside(query):
            thread_id = new_thread_id()
            self.thread_id, self.shown_hash = None, None
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
            render.context_loaded(self.console, view.context_loaded, view.memories_used)
        self._show(view)

    def _set_aside(self, query: str) -> bool:
        """A research request while this conversation's draft awaits a decision: ask whether
        to set the draft aside (it stays approvable) and research this in a new thread. No:
        the message is answered beside the draft, and /approve still publishes it."""
        if self.call(lambda app: app.understand(query)) != "research":
            return False
        pending = self.thread_id
        try:
            reply = self.read_line(
                "A draft awaits your decision. Set it aside and start this request in a new "
                "thread? [y/N]: "
            )
        except (EOFError, KeyboardInterrupt):
            reply = ""
        if reply.strip().lower() not in ("y", "yes"):
            return False
        self.console.print(
            f"The draft on thread {pending} is set aside; it stays approvable: analyst approve "
            f"{pending}",
            soft_wrap=True,
        )
        return True

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

    def _forget(self, rest: str) -> None:
        """``/forget WHAT``: the plan first (what would be deleted, per tier, what is kept and
        why), then the question; only a yes (or, for a topic or range, the listed ids to
        forget) deletes, and the receipt says what went."""
        what = forget_args(rest)
        if what is None:
            self.console.print(FORGET_USAGE)
            return
        everything = what.pop("everything", False)
        if everything:
            plan = self.call(lambda app: app.memory.forget_account(confirm=False))
        else:
            plan = self.call(lambda app: app.memory.forget(**what))
        render.forget_receipt(self.console, plan, done=False)
        listing = not everything and not what.get("ids")
        if listing and not plan["found"]:
            self.console.print("Nothing of yours matches; nothing to forget.")
            return
        question = (
            "Forget these? [y]es (every keyword match) / the ids to forget only those / [N]o: "
            if listing
            else "Forget these? [y/N]: "
        )
        try:
            reply = self.read_line(question).strip()
        except (EOFError, KeyboardInterrupt):
            reply = ""
        choice = common.forget_answer(reply, allow_ids=listing)
        if not choice:
            self.console.print("Nothing was forgotten.")
            return
        only = choice if isinstance(choice, list) else None
        if everything:
            receipt = self.call(lambda app: app.memory.forget_account(confirm=True))
        else:
            drafts = self._drafts_too(plan.get("drafts", []))
            receipt = self.call(
                lambda app: app.memory.forget(
                    **what, only=only, confirm=only is None, drafts=drafts
                )
            )
        render.forget_receipt(self.console, receipt, done=True)
        self._thread_gone(receipt.get("deleted", {}).get("threads", {}).get("ids", []))

    def _drafts_too(self, drafts: list[dict[str, Any]]) -> bool:
        """Asked apart, for each thread a forget would take whose draft awaits a decision:
        delete it with its draft too? Only a yes to every one deletes them; otherwise they
        are kept and the rest is forgotten."""
        yes = bool(drafts)
        for draft in drafts:
            try:
                reply = self.read_line(
                    f"Thread {draft['thread_id']} has a pending {draft['ticker']} draft "
                    f"({draft['hash']}): delete the thread and its draft too? [y/N]: "
                ).strip()
            except (EOFError, KeyboardInterrupt):
                reply = ""
            yes = yes and reply.lower() in ("y", "yes")
        if drafts and not yes:
            self.console.print("Kept the threads with pending drafts; forgetting the rest.")
        return yes

    def _thread_gone(self, deleted: list[str]) -> None:
        """After a forget: if it deleted this conversation's thread (it held forgotten
        words), say so; the next message starts a new thread."""
        if self.thread_id and self.thread_id in deleted:
            self.console.print(
                f"This conversation's thread {self.thread_id} was deleted with what you "
                "forgot; your next message starts a new one."
            )
            self.thread_id, self.shown_hash = None, None

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
        if view.pending is not None:
            self._show_aside(view)
            return
        render.thread(self.console, view, commands=False)
        self.shown_hash = view.draft_hash if view.status == "awaiting_approval" else None
        if view.status == "awaiting_approval":
            self.console.print("Reply with /approve, /reject <feedback> or /edit <file>.")
        elif view.status == "awaiting_confirmation" and view.confirmation:
            self._confirm(view.thread_id, view.confirmation)

    def _show_aside(self, view: ThreadView) -> None:
        """A message answered beside the paused run: the answer, and the draft still waiting
        (its hash unchanged, so /approve still publishes the draft shown). "forget ..." then
        asks what to forget, as /forget does."""
        render.said(self.console, view.reply)
        if view.intent == "forget" and view.forget_proposed and view.topic:
            self._forget(f"about {view.topic}")
        pending = view.pending or {}
        if pending.get("status") == "awaiting_approval" and self.shown_hash:
            self.console.print("Reply with /approve, /reject <feedback> or /edit <file>.")

    def _confirm(self, thread_id: str, request: dict[str, Any]) -> None:
        """The agent's question at a natural pause: confirm, reject or leave for later each
        thing it proposes to remember (the answer resumes the paused thread); or whether to
        forget what the model proposed to forget (:meth:`_confirm_forget`)."""
        if request.get("kind") == "forget_confirmation":
            self._confirm_forget(thread_id, request)
            return
        self.console.print(f"[bold]analyst:[/] {literal(request['question'])}")
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

    def _confirm_forget(self, thread_id: str, request: dict[str, Any]) -> None:
        """Whether to forget what the model proposed (the items were shown with the thread):
        y forgets all of them, ids only those, anything else none. The run finishes, then the
        forget runs; if it deleted this thread, the next message starts a new one."""
        ids = list(request.get("ids") or [])
        plan = self.call(lambda app: app.memory.forget(ids)) if ids else {"found": []}
        for row in plan["found"]:  # what goes with them: the conversations holding it
            self.console.print(
                f"  and {row['tier']} {row['id']}: {row['text']}", soft_wrap=True, markup=False
            )
        try:
            reply = self.read_line(
                "Forget these? [y]es / the ids to forget only those / [N]o: "
            ).strip()
        except (EOFError, KeyboardInterrupt):
            reply = ""
        choice = common.forget_answer(reply, allow_ids=True)
        answer: dict[str, Any] = {"forget": choice}
        if choice:
            answer["drafts"] = self._drafts_too(plan.get("drafts", []))
        view = self.call(lambda app: app.answer_confirmation(thread_id, answer))
        if view.forgotten is None:
            self.console.print("Nothing was forgotten.")
        else:
            render.forget_receipt(self.console, view.forgotten, done=True)
        if view.thread_deleted:
            self._thread_gone([thread_id])
        elif view.status == "awaiting_confirmation" and view.confirmation:
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
                f"[bold red]memory:[/] the session's extraction did not complete: "
                f"{literal(error)} "
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


def new_thread_id() -> str:
    """A new thread id (imported when first needed: the app loads in the background)."""
    from agent.app import new_thread_id as new

    return new()


_REMEMBER_AS = re.compile(r"\s+as\s+(fact|preference|procedure)\s*$", re.IGNORECASE)


def remember_args(rest: str) -> tuple[str, RememberAs]:
    """``TEXT [as fact|preference|procedure]`` → (text, kind); a preference by default."""
    found = _REMEMBER_AS.search(rest)
    if found is None:
        return rest.strip(), "preference"
    return rest[: found.start()].strip(), cast("RememberAs", found.group(1).lower())


FORGET_USAGE = (
    "Usage: /forget ID [ID ...] | /forget topic TEXT | /forget about TEXT | /forget from "
    "YYYY-MM-DD to YYYY-MM-DD | /forget everything   (ids: /memories, or analyst memory list)"
)
_RANGE = re.compile(r"^from\s+(\S+)\s+to\s+(\S+)$", re.IGNORECASE)


def forget_args(rest: str) -> dict[str, Any] | None:
    """``/forget``'s WHAT as keyword arguments of ``app.memory.forget`` (``everything``: of
    ``forget_account``); None when it is none of the forms (the caller prints the usage). A
    date that is not ``YYYY-MM-DD`` is a :class:`~agent.cli.common.CommandError`."""
    words = rest.split()
    if not words:
        return None
    head = words[0].lower()
    if head == "everything" and len(words) == 1:
        return {"everything": True}
    if head in ("topic", "about"):
        text = rest.strip()[len(head) :].strip()
        return {head: text} if text else None
    ranged = _RANGE.match(rest.strip())
    if ranged:
        return {
            "since": common.day(ranged.group(1), "from"),
            "until": common.day(ranged.group(2), "to", end=True),
        }
    if head in ("everything", "topic", "about", "from"):
        return None
    return {"ids": words}
