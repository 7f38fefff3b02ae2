"""Extraction by a chat model: :class:`ModelExtractor`, the transcript it reads and the
schema it answers in.

The episodes reach the prompt only as quoted, untrusted data; the model's output is a
proposal that :func:`agent.learning.grounding.ground` checks before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, create_model
from typing_extensions import TypedDict

from agent.learning import profile
from agent.learning.extraction import (
    ExtractedFact,
    Extraction,
    NotableEvent,
    OpenItem,
    PreferenceSignal,
)
from agent.reasoning.chat_model import no_usage, structured

if TYPE_CHECKING:
    from agent.records import Usage
    from memory.journal.records import Episode


class ModelExtractor:
    """Extraction by a chat model, through structured output (:func:`agent.reasoning.chat_model.structured`).

    ``make_model`` builds the chat model on first use (importing the SDK costs about a second).
    Each episode reaches the prompt as a quoted, untrusted data block labelled
    ``episode <id>``; the system prompt (:data:`agent.reasoning.prompts.EXTRACTOR`) lists the profile
    attributes and asks for verbatim quotes only. The output is a proposal: run :func:`~agent.learning.grounding.ground`
    on it before anything is stored. Failures are the model adapter's:
    :class:`~agent.errors.ModelTransientError` (worth retrying), ``ModelAuthError``,
    ``ModelOutputError`` (invalid twice).
    """

    def __init__(self, make_model: Callable[[], Any], label: str) -> None:
        self._make_model = make_model
        self._model: Any = None
        self.label = label

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self._make_model()
        return self._model

    async def extract(self, episodes: Sequence[Episode]) -> tuple[Extraction, Usage]:
        if not episodes:
            return Extraction(topic="", summary=""), no_usage()
        from langchain_core.messages import HumanMessage, SystemMessage

        from agent.reasoning import prompts

        system = f"{prompts.EXTRACTOR}\n\nProfile attributes:\n{profile.describe()}"
        messages = [SystemMessage(system), HumanMessage(transcript(episodes))]
        schema = extraction_schema([e.episode_id for e in episodes])
        return await structured(self.model, schema, messages, where="memory extraction")


def transcript(episodes: Sequence[Episode]) -> str:
    """The episodes for a prompt, oldest first: a header line each (id, who, kind, time and
    the decision's ticker and rating), then the text as a quoted data block."""
    from agent.reasoning import prompts

    parts = ["Episodes of the conversation, oldest first:"]
    for episode in sorted(episodes, key=lambda e: e.at):
        parts.append(
            f"Episode {episode.episode_id}: {episode.role} {episode.kind} at "
            f"{episode.at.isoformat()}{_meta_note(episode.meta)}"
        )
        parts.append(prompts.quote_data(f"episode {episode.episode_id}", episode.text))
    return "\n\n".join(parts)


def _meta_note(meta: Mapping[str, Any]) -> str:
    notes = [
        f"{key} {' '.join(str(meta[key]).split())[:40]}"
        for key in ("ticker", "rating")
        if isinstance(meta.get(key), str | int | float)
    ]
    return f" ({', '.join(notes)})" if notes else ""


def _text(most: int) -> Any:
    """The type of a non-empty string of at most ``most`` characters."""
    return Annotated[str, Field(min_length=1, max_length=most)]


class _ExcludeTicker(TypedDict):
    exclude_ticker: Annotated[str, Field(min_length=1, max_length=10)]


class _Mode(TypedDict):
    mode: Literal["flash", "deep"]


class _IncludeSection(TypedDict):
    include_section: Annotated[str, Field(min_length=1, max_length=40)]


def extraction_schema(episode_ids: Sequence[str]) -> type[Extraction]:
    """:class:`Extraction` narrowed for a constraining decoder (llama.cpp, Ollama, vLLM), as
    :mod:`agent.reasoning.narrowing` does for the analyst's own schemas: episode ids from this
    transcript, attributes from the profile registry, rules of the three shapes code enforces
    (:data:`agent.learning.grounding.RULE_KEYS`), values of plain JSON types, and bounded
    strings and lists (two items a kind, more for a long conversation), so a small model
    cannot loop until the server's token cap cuts the JSON off. Grounding still checks every
    quote and value."""
    ids: Any = Literal[tuple(dict.fromkeys(episode_ids))]
    names: Any = Literal[tuple(a.name for a in profile.ATTRIBUTES)]
    symbol, words = _text(12), _text(120)
    symbols: Any = list[symbol]  # type: ignore[valid-type]
    value: Any = _text(60) | float | bool | Annotated[symbols, Field(max_length=10)]
    rule: Any = _ExcludeTicker | _Mode | _IncludeSection | None
    tickers: Any = Annotated[symbols, Field(max_length=5)]

    def field(base: type[Any], name: str, kind: Any, **bounds: Any) -> tuple[Any, Any]:
        """``kind`` for ``base``'s field ``name``, keeping its description and default."""
        info = base.model_fields[name]
        if info.default_factory is not None:
            bounds["default_factory"] = info.default_factory
        elif not info.is_required():
            bounds["default"] = info.default
        return kind, Field(description=info.description, **bounds)

    def item(base: type[Any], **kinds: Any) -> Any:
        fields: dict[str, Any] = {name: field(base, name, kind) for name, kind in kinds.items()}
        fields["quote"] = field(base, "quote", words)
        fields["episode_ids"] = field(
            base, "episode_ids", list[ids], min_length=1, max_length=min(3, len(set(episode_ids)))
        )
        return create_model(base.__name__, __base__=base, **fields)

    most = max(2, min(6, len(episode_ids) // 2))
    items: dict[str, Any] = {
        "notable_events": item(NotableEvent, text=words, tickers=tickers),
        "new_facts": item(
            ExtractedFact,
            attribute=names,
            value=value,
            source=Annotated[str, Field(max_length=40)],
            removed=tickers,
        ),
        "preference_signals": item(PreferenceSignal, text=words, rule=rule),
        "open_items": item(OpenItem, text=words),
    }
    fields: dict[str, Any] = {
        name: field(Extraction, name, list[model], max_length=most)  # type: ignore[valid-type]
        for name, model in items.items()
    }
    fields["topic"] = field(Extraction, "topic", _text(60))
    fields["summary"] = field(Extraction, "summary", _text(300))
    return create_model(
        "Extraction", __base__=_WireExtraction, __doc__=Extraction.__doc__, **fields
    )


def _every_key_required(schema: dict[str, Any]) -> None:
    schema["required"] = list(schema.get("properties") or {})


class _WireExtraction(Extraction):
    """:class:`Extraction` whose JSON schema requires every key, item lists included, while
    validation keeps their defaults. A constraining decoder writes only the required keys when
    a small model would rather stop, so optional lists came back absent every time (SmolLM2
    "proposed 0 items"); required, the model writes each one ("[]" is an answer). A server
    that does not constrain (function calling on a hosted model) may still leave a list out,
    and that answer stays valid."""

    model_config = ConfigDict(json_schema_extra=_every_key_required)
