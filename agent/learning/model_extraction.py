"""Extraction by a chat model: :class:`ModelExtractor` and the transcript it reads.

The episodes reach the prompt only as quoted, untrusted data; the model's output is a
proposal that :func:`agent.learning.grounding.ground` checks before anything is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent.learning import profile
from agent.learning.extraction import Extraction
from agent.reasoning.chat_model import no_usage, structured

if TYPE_CHECKING:
    from agent.state import Usage
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
        return await structured(self.model, Extraction, messages, where="memory extraction")


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
