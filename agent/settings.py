"""Settings: where data lives and which backends to use, from the environment and flags.

``Settings.from_env()`` only reads variables; it never touches the disk or the network, so
importing and constructing are free of side effects. A value that cannot be used (a delay that
is not a number, an unknown durability mode) is a :class:`ConfigurationError` naming the
variable and the fix.

| variable | default | meaning |
|---|---|---|
| ANALYST_DATA_DIR | ./.data | runtime data: checkpoints, thread index, draft charts, local stores |
| ANALYST_MEMORY_DIR | ./.agent-memory | Markdown document memory (research notes land here) |
| ANALYST_CHECKPOINTER | sqlite:///<data dir>/checkpoints.sqlite | checkpointer URL (a relative sqlite:/// path is inside the data dir) |
| ANALYST_DURABILITY | sync | when checkpoints are written: sync, async or exit |
| ANALYST_CHECKPOINT_KEY | (none) | AES key (16/24/32 bytes, or base64 of them) to encrypt checkpoints |
| ANALYST_MEMORY_KEY | (none) | AES key (same formats) sealing memory content at rest: journal text, fact values, store values (vectors stay as they are) |
| ANALYST_STORE | qdrant://local | long-term store URL (cold memory) |
| QDRANT_URL / QDRANT_API_KEY | (none) | a Qdrant server instead of local mode |
| ANALYST_FACTS | sqlite:///<data dir>/facts.sqlite | fact ledger URL |
| ANALYST_AUDIT_KEY | (the database's own) | key (16+ characters) of the memory audit's content hashes |
| ANALYST_EMBEDDINGS | minilm | embedder: minilm (local, offline) or openai:<model> |
| ANALYST_MODEL | auto | offline, openai:<model>, or auto (a model when OPENAI_API_KEY or OPENAI_BASE_URL is set) |
| OPENAI_API_KEY / OPENAI_BASE_URL | (none) | credentials / any OpenAI-compatible endpoint |
| ANALYST_TEMPERATURE | 0 | model temperature |
| ANALYST_MODEL_TIMEOUT | 60 | seconds per model request |
| ANALYST_MODEL_MAX_TOKENS | 4096 | longest answer per model request (max_tokens): a small local model that runs on into its context window stops there, and its cut-off answer is repaired once, then reported |
| ANALYST_MODEL_RETRIES | 3 | attempts per model call (429, 5xx, timeouts) |
| ANALYST_MODEL_BACKOFF | 1.0 | seconds before the first retry (doubles each time, with jitter) |
| ANALYST_STRUCTURED_OUTPUT | function_calling | how the model returns structured answers: function_calling (a forced tool call; OpenAI) or json_schema (response_format with a JSON schema; llama.cpp, Ollama, vLLM constrain decoding to it) |
| ANALYST_TOOL_ITERATIONS | 4 | model turns per executor step before it stops with what it has |
| ANALYST_HISTORY_MAX_MESSAGES | 24 | conversation messages kept before older ones are summarised |
| ANALYST_HISTORY_KEEP | 6 | most recent messages kept verbatim after a summary |
| ANALYST_MARKET_PROVIDER | sample | market data: sample (bundled) or yfinance |
| ANALYST_TENANT / ANALYST_USER | default / $USER | the principal the CLI acts for: 1-64 letters, digits and `._-@`, starting with a letter or digit, upper case read as lower case (memory.identity); any other id is refused (exit 2) |
| ANALYST_STEP_DELAY | 0 | seconds to pause before each executor step (demos, crash drills) |
| ANALYST_MAX_QUERY_CHARS | 2000 | longest request (`run`, a chat message, reject feedback) |
| ANALYST_MAX_MEMORY_CHARS | 2000 | longest long-term memory (`memory add`) |
| ANALYST_MAX_EDIT_CHARS | 100000 | longest report text published with `edit` |
| ANALYST_RETENTION | episodes=365d,summaries=90d,events=180d,memories=365d,candidates=90d,jobs=30d,fact_history=365d,procedures=365d,threads=90d | how long each memory type is kept (`type=age` pairs override these); current facts, active procedures and memories of importance 8+ are never deleted by age: past their review date (ANALYST_REVIEW_DAYS) `analyst memory sweep` lists them as due for review (see memory.retention) |
| ANALYST_SWEEP_ON_START | 1 | sweep expired memory when the app first opens memory, at most once a day per principal |
| ANALYST_KEEP_BEFORE_RESTORE | 3 | how many `before-restore-*` copies (the files each `db restore-snapshot` replaced) stay in `<data dir>/backups`; older ones are removed |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from agent.errors import ConfigurationError, InvalidPrincipalError
from memory.identity import IdKind, Principal, normal_id
from memory.retention import RetentionPolicy
from memory.urls import resolve_sqlite_url

Durability = Literal["sync", "async", "exit"]
DURABILITIES: tuple[Durability, ...] = ("sync", "async", "exit")
StructuredOutput = Literal["function_calling", "json_schema"]
STRUCTURED_OUTPUTS: tuple[StructuredOutput, ...] = ("function_calling", "json_schema")


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(".data")
    memory_dir: Path = Path(".agent-memory")
    checkpointer_url: str | None = None
    durability: Durability = "sync"
    checkpoint_key: str | None = None
    #: Seals memory content at rest: journal text, fact values, store values (memory.sealing).
    memory_key: str | None = None
    store_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    facts_url: str | None = None
    embeddings: str = "minilm"
    model: str = "auto"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    temperature: float = 0.0
    model_timeout: float = 60.0
    model_max_tokens: int = 4096
    model_retries: int = 3
    model_backoff: float = 1.0
    #: How the model returns structured answers (see :data:`STRUCTURED_OUTPUTS`).
    structured_output: StructuredOutput = "function_calling"
    tool_iterations: int = 4
    history_max_messages: int = 24
    history_keep: int = 6
    market_provider: str = "sample"
    tenant_id: str = "default"
    user_id: str = "local"
    step_delay: float = 0.0
    max_query_chars: int = 2000
    max_memory_chars: int = 2000
    max_edit_chars: int = 100_000
    #: Tokens of remembered context (profile, procedures, recent sessions, open items) a new
    #: session loads.
    context_tokens: int = 800
    #: Minutes without a message after which a conversation counts as ended (its summary is
    #: written by the next ``analyst memory worker`` run or the next message).
    session_idle_minutes: int = 30
    #: Whether the CLI runs extraction jobs itself right after a run (else: ``memory worker``).
    extract_inline: bool = True
    #: Days after which a confirmed procedure or fact is due for review.
    review_days: int = 180
    #: The memory audit's hash key (else the database's own; see memory.journal.audit).
    audit_key: str | None = None
    #: How long each memory type is kept (``ANALYST_RETENTION``; see memory.retention).
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    #: Whether the app sweeps expired memory when it first opens memory (once a day).
    sweep_on_start: bool = True
    #: How many copies of the files replaced by a ``db restore-snapshot`` are kept (newest).
    keep_before_restore: int = 3

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = dict(os.environ if env is None else env)
        durability = (env.get("ANALYST_DURABILITY") or "sync").strip().lower()
        if durability not in DURABILITIES:
            raise ConfigurationError(
                f"ANALYST_DURABILITY='{durability}' is not one of {', '.join(DURABILITIES)}."
            )
        structured = (env.get("ANALYST_STRUCTURED_OUTPUT") or "function_calling").strip().lower()
        if structured not in STRUCTURED_OUTPUTS:
            raise ConfigurationError(
                f"ANALYST_STRUCTURED_OUTPUT='{structured}' is not one of "
                f"{', '.join(STRUCTURED_OUTPUTS)} (json_schema for llama.cpp, Ollama or vLLM)."
            )
        settings = cls(
            data_dir=Path(env.get("ANALYST_DATA_DIR") or ".data"),
            memory_dir=Path(env.get("ANALYST_MEMORY_DIR") or ".agent-memory"),
            checkpointer_url=env.get("ANALYST_CHECKPOINTER") or None,
            durability=cast(Durability, durability),
            checkpoint_key=env.get("ANALYST_CHECKPOINT_KEY") or None,
            memory_key=env.get("ANALYST_MEMORY_KEY") or None,
            store_url=env.get("ANALYST_STORE") or None,
            qdrant_url=env.get("QDRANT_URL") or None,
            qdrant_api_key=env.get("QDRANT_API_KEY") or None,
            facts_url=env.get("ANALYST_FACTS") or None,
            embeddings=env.get("ANALYST_EMBEDDINGS") or "minilm",
            model=env.get("ANALYST_MODEL") or "auto",
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            openai_base_url=env.get("OPENAI_BASE_URL") or None,
            temperature=_number(env, "ANALYST_TEMPERATURE", 0.0),
            model_timeout=_number(env, "ANALYST_MODEL_TIMEOUT", 60.0),
            model_max_tokens=_limit(env, "ANALYST_MODEL_MAX_TOKENS", 4096, "tokens"),
            model_retries=max(1, int(_number(env, "ANALYST_MODEL_RETRIES", 3))),
            model_backoff=_number(env, "ANALYST_MODEL_BACKOFF", 1.0),
            structured_output=cast(StructuredOutput, structured),
            tool_iterations=max(1, int(_number(env, "ANALYST_TOOL_ITERATIONS", 4))),
            history_max_messages=max(2, int(_number(env, "ANALYST_HISTORY_MAX_MESSAGES", 24))),
            history_keep=max(1, int(_number(env, "ANALYST_HISTORY_KEEP", 6))),
            market_provider=env.get("ANALYST_MARKET_PROVIDER") or "sample",
            tenant_id=_identity(env, overrides, "tenant"),
            user_id=_identity(env, overrides, "user"),
            step_delay=_number(env, "ANALYST_STEP_DELAY", 0.0),
            max_query_chars=_limit(env, "ANALYST_MAX_QUERY_CHARS", 2000),
            max_memory_chars=_limit(env, "ANALYST_MAX_MEMORY_CHARS", 2000),
            max_edit_chars=_limit(env, "ANALYST_MAX_EDIT_CHARS", 100_000),
            context_tokens=_limit(env, "ANALYST_CONTEXT_TOKENS", 800, "tokens"),
            session_idle_minutes=_limit(env, "ANALYST_SESSION_IDLE_MINUTES", 30, "minutes"),
            extract_inline=_flag(env, "ANALYST_EXTRACT_INLINE", True),
            review_days=_limit(env, "ANALYST_REVIEW_DAYS", 180, "days"),
            audit_key=env.get("ANALYST_AUDIT_KEY") or None,
            retention=RetentionPolicy.parse(env.get("ANALYST_RETENTION")),
            sweep_on_start=_flag(env, "ANALYST_SWEEP_ON_START", True),
            keep_before_restore=_limit(env, "ANALYST_KEEP_BEFORE_RESTORE", 3, "copies"),
        )
        clean = {k: v for k, v in overrides.items() if v is not None}
        clean.pop("tenant_id", None)
        clean.pop("user_id", None)
        return replace(settings, **clean)

    def __post_init__(self) -> None:
        # One identity rule for every tier: a Settings made in code is normalised like one
        # made from the environment (memory.identity.normal_id).
        object.__setattr__(self, "tenant_id", normal_id(self.tenant_id, "tenant"))
        object.__setattr__(self, "user_id", normal_id(self.user_id, "user"))

    @property
    def principal(self) -> Principal:
        """Who the process acts for: ``tenant_id`` and ``user_id`` (flags, else environment)."""
        return Principal(self.tenant_id, self.user_id)

    @property
    def checkpointer(self) -> str:
        if self.checkpointer_url:
            return resolve_sqlite_url(self.checkpointer_url, self.data_dir)
        return f"sqlite:///{self.data_dir / 'checkpoints.sqlite'}"

    @property
    def store(self) -> str:
        if self.store_url:
            return self.store_url
        return "qdrant://local"

    @property
    def facts(self) -> str:
        if self.facts_url:
            return resolve_sqlite_url(self.facts_url, self.data_dir)
        return f"sqlite:///{self.data_dir / 'facts.sqlite'}"

    @property
    def threads_path(self) -> Path:
        return self.data_dir / "threads.sqlite"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def qdrant_path(self) -> Path:
        """Folder of Qdrant local mode (one process at a time may open it)."""
        return self.data_dir / "qdrant"


def _identity(env: Mapping[str, str], overrides: Mapping[str, Any], kind: IdKind) -> str:
    """The tenant or user id from its flag, else the environment, checked and normalised by
    the one identity rule (memory.identity); a refusal names where the id came from."""
    flag = overrides.get(f"{kind}_id")
    if flag is not None:
        return normal_id(flag, kind, f"--{kind}")
    if kind == "tenant":
        given = env.get("ANALYST_TENANT")
        return normal_id(given, kind, "ANALYST_TENANT") if given else "default"
    if env.get("ANALYST_USER"):
        return normal_id(env["ANALYST_USER"], kind, "ANALYST_USER")
    if not env.get("USER"):
        return "local"
    try:
        return normal_id(env["USER"], kind, "$USER")
    except InvalidPrincipalError as e:
        raise InvalidPrincipalError(f"{e} Set ANALYST_USER or pass --user.") from None


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None or text.strip() == "":
        return default
    try:
        return float(text)
    except ValueError as e:
        raise ConfigurationError(f"{name}='{text}' is not a number; use e.g. {default}") from e


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    text = (env.get(name) or "").strip().lower()
    if not text:
        return default
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name}='{env.get(name)}' is not a yes/no value; use 1 or 0.")


def _limit(env: Mapping[str, str], name: str, default: int, unit: str = "characters") -> int:
    """A size limit: a whole number of ``unit``, at least 1."""
    value = _number(env, name, default)
    if value < 1 or value != int(value):
        raise ConfigurationError(
            f"{name}='{env.get(name)}' is not a positive whole number of {unit}; "
            f"use e.g. {default}."
        )
    return int(value)
