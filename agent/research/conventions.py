"""Project conventions from document memory, as typed values.

Contract
- ``conventions/analysis-format.md`` gives the report's required sections: the numbered (or
  bulleted) list under a ``## Required sections`` heading, one section per item, written
  ``Name — what it holds`` (the separator may also be `` - `` or ``: ``). An optional
  ``## Optional sections`` list names sections a report may add after them.
- ``conventions/data-sources.md`` gives the allowed sources: one ``### <id>`` heading per
  source under ``## Allowed sources``, in order of preference, each followed by
  ``- Key: value`` bullets (``Name``, ``Provider``, ``Cite as`` (required), ``Use for``). In a
  "Cite as" line ``<ANYTHING>`` is a placeholder for any text.
- Only those lists change behaviour, and only through the typed values parsed here; the rest of
  the text is shown to models by :meth:`Conventions.quoted` as untrusted reference material.
  No convention can grant anything (approval, publishing): the parser has no such field.
- A missing, unreadable or malformed file never stops a run: :func:`load_conventions` falls
  back to the built-in defaults for that file (sections = ``agent.research.report.REQUIRED_SECTIONS``,
  sources = the bundled data, yfinance and the offline analytics) and says why in
  ``Conventions.warnings``, for the caller to surface.

The run log in ``PROGRESS.md`` is :mod:`agent.research.progress`; quoting for prompts is
:func:`agent.reasoning.prompts.quote_reference`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent.reasoning.prompts import quote_reference
from agent.research.report import REQUIRED_SECTIONS
from memory.errors import DocumentNotFoundError, DocumentPathError
from memory.markdown import HEADING, outside_fences

if TYPE_CHECKING:
    from memory.documents import FileMemory

ANALYSIS_FORMAT_PATH = "conventions/analysis-format.md"
DATA_SOURCES_PATH = "conventions/data-sources.md"
DEFAULT_OPTIONAL_SECTIONS: tuple[str, ...] = ("Revision notes", "Memory context")
#: The section in which a report states what memory said about its reader.
MEMORY_SECTION = "Memory context"
#: Longest accepted section name; a longer list item is prose, not a section.
MAX_SECTION_NAME = 60


# -- typed conventions ---------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One way a report breaks the conventions. ``error``: the report is incomplete (a
    required section missing or empty); ``warning``: layout or citation form."""

    severity: Literal["error", "warning"]
    message: str


@dataclass(frozen=True)
class SectionRule:
    name: str
    guidance: str = ""


@dataclass(frozen=True)
class ReportConventions:
    """The report's layout: required sections in order, and the optional ones."""

    sections: tuple[SectionRule, ...]
    optional: tuple[SectionRule, ...] = ()
    origin: str = "built-in defaults"

    @property
    def required_sections(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sections)

    @property
    def optional_sections(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.optional)

    def guidance(self, section: str) -> str:
        """What the conventions say a section holds ('' when they say nothing)."""
        for rule in (*self.sections, *self.optional):
            if rule.name.casefold() == section.casefold():
                return rule.guidance
        return ""

    def check(self, markdown: str) -> list[Problem]:
        """A report's ``##`` sections against the rules: missing or empty required sections
        (errors), then sections out of order or not in the conventions (warnings)."""
        found = [h.casefold() for h in report_headings(markdown)]
        bodies = _markdown_sections(markdown, keep_code=True)
        problems: list[Problem] = []
        required = self.required_sections
        for name in required:
            if name.casefold() not in found:
                problems.append(
                    Problem(
                        "error",
                        f"Missing required section '{name}' ({self.origin} requires: "
                        f"{', '.join(required)}).",
                    )
                )
            elif not "".join(bodies.get(name.casefold(), [])).strip():
                problems.append(Problem("error", f"Section '{name}' is empty."))
        present = [name for name in required if name.casefold() in found]
        order = sorted(present, key=lambda name: found.index(name.casefold()))
        if order != present:
            problems.append(
                Problem(
                    "warning",
                    f"Sections are out of order: found {', '.join(order)}; {self.origin} "
                    f"requires {', '.join(present)}.",
                )
            )
        allowed = {n.casefold() for n in (*required, *self.optional_sections)}
        original = report_headings(markdown)
        problems += [
            Problem(
                "warning",
                f"Unexpected section '{original[i]}': not a required or optional section in "
                f"{self.origin}.",
            )
            for i, name in enumerate(found)
            if name not in allowed
        ]
        return problems


@dataclass(frozen=True)
class SourceRule:
    """One allowed data source and how a report cites it."""

    id: str
    cite_as: str
    name: str = ""
    provider: str | None = None
    use_for: str = ""

    def matches(self, citation: str) -> bool:
        """Whether a citation line follows this source's "Cite as" form."""
        return _citation_regex(self.cite_as).fullmatch(_clean_citation(citation)) is not None


@dataclass(frozen=True)
class SourceConventions:
    """Allowed sources in order of preference."""

    sources: tuple[SourceRule, ...]
    origin: str = "built-in defaults"

    @property
    def preferred(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.sources)

    def rule_for(self, citation: str) -> SourceRule | None:
        """The first allowed source whose "Cite as" form the citation follows."""
        return next((s for s in self.sources if s.matches(citation)), None)

    def allows_provider(self, provider: str) -> bool:
        """Whether a market-data provider (``ANALYST_MARKET_PROVIDER``) is an allowed source."""
        key = provider.strip().lower()
        return any((s.provider or "").lower() == key for s in self.sources)

    def check(self, citations: Sequence[str]) -> list[Problem]:
        """A warning for each citation that follows no allowed source's form."""
        return [
            Problem(
                "warning",
                f"Source '{_clean_citation(c)}' is not cited in an allowed form ({self.origin}); "
                f"allowed: {'; '.join(s.cite_as for s in self.sources)}.",
            )
            for c in citations
            if self.rule_for(c) is None
        ]


@dataclass(frozen=True)
class ReferenceText:
    """A convention file's exact text, to be shown to a model as quoted reference material."""

    path: str
    text: str


@dataclass(frozen=True)
class Conventions:
    """Everything the planner, reporter and critic take from the conventions files."""

    report: ReportConventions
    data_sources: SourceConventions
    references: tuple[ReferenceText, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def required_sections(self) -> tuple[str, ...]:
        return self.report.required_sections

    @property
    def sources(self) -> tuple[SourceRule, ...]:
        return self.data_sources.sources

    def check_report(self, markdown: str) -> list[Problem]:
        """Problems of a draft: its sections, and each bullet of its Sources section."""
        return self.report.check(markdown) + self.data_sources.check(
            report_section_bullets(markdown, "Sources")
        )

    def quoted(self) -> str:
        """The conventions as quoted, untrusted reference blocks for a prompt."""
        blocks = [quote_reference(r.text, source=r.path) for r in self.references]
        if not self.references:
            blocks.append(quote_reference(render_defaults(self), source="built-in defaults"))
        return "\n\n".join(blocks)


def default_report_conventions() -> ReportConventions:
    return ReportConventions(
        sections=tuple(SectionRule(name) for name in REQUIRED_SECTIONS),
        optional=tuple(SectionRule(name) for name in DEFAULT_OPTIONAL_SECTIONS),
    )


def default_conventions() -> Conventions:
    """The built-in conventions: what applies when the project has no conventions files."""
    return Conventions(
        report=default_report_conventions(), data_sources=default_source_conventions()
    )


def default_source_conventions() -> SourceConventions:
    return SourceConventions(
        sources=(
            SourceRule(
                "sample",
                "Bundled sample dataset: daily OHLCV, split-adjusted (agent/market/data/<FILE>)",
                name="Bundled sample dataset",
                provider="sample",
            ),
            SourceRule(
                "sample-folder",
                "Sample dataset: daily OHLCV (<PATH>)",
                name="Sample dataset from a local folder",
                provider="sample",
            ),
            SourceRule(
                "yfinance",
                "Yahoo Finance via yfinance: daily OHLCV adjusted for splits and dividends "
                "(period=<PERIOD>, downloaded <DATE>)",
                name="Yahoo Finance via yfinance",
                provider="yfinance",
            ),
            SourceRule(
                "computations",
                "Computations: analyst analytics (<METHODS>).",
                name="analyst analytics",
            ),
        )
    )


def render_defaults(conventions: Conventions) -> str:
    """The built-in conventions written out as Markdown (what the prompt quotes then)."""
    lines = ["# Report conventions (built-in defaults)", "", "## Required sections", ""]
    lines += [f"{n}. {name}" for n, name in enumerate(conventions.required_sections, start=1)]
    lines += ["", "## Allowed sources", ""]
    for s in conventions.sources:
        lines += [f"### {s.id}", f"- Cite as: {s.cite_as}", ""]
    return "\n".join(lines).rstrip() + "\n"


# -- loading -------------------------------------------------------------------------------


def load_conventions(documents: FileMemory) -> Conventions:
    """Parse both conventions files; fall back per file, with a warning, when unusable."""
    warnings: list[str] = []
    references: list[ReferenceText] = []

    report = default_report_conventions()
    text = _read_convention(documents, ANALYSIS_FORMAT_PATH, warnings)
    if text is not None:
        references.append(ReferenceText(ANALYSIS_FORMAT_PATH, text))
        parsed, problems = parse_analysis_format(text, origin=ANALYSIS_FORMAT_PATH)
        warnings += problems
        if parsed is not None:
            report = parsed

    sources = default_source_conventions()
    text = _read_convention(documents, DATA_SOURCES_PATH, warnings)
    if text is not None:
        references.append(ReferenceText(DATA_SOURCES_PATH, text))
        parsed_sources, problems = parse_data_sources(text, origin=DATA_SOURCES_PATH)
        warnings += problems
        if parsed_sources is not None:
            sources = parsed_sources

    return Conventions(report, sources, tuple(references), tuple(warnings))


def _read_convention(documents: FileMemory, path: str, warnings: list[str]) -> str | None:
    try:
        return documents.read_text(path)
    except DocumentNotFoundError:
        warnings.append(f"{path} not found in {documents.root}; using the built-in defaults.")
    except DocumentPathError as e:  # outside link, too large, not UTF-8
        warnings.append(f"{path} cannot be used ({e}); using the built-in defaults.")
    return None


def parse_analysis_format(
    text: str, *, origin: str = ANALYSIS_FORMAT_PATH
) -> tuple[ReportConventions | None, list[str]]:
    """(conventions, warnings); None when the required-sections list is missing or empty."""
    sections = _markdown_sections(text)
    body = sections.get("required sections")
    if body is None:
        return None, [
            f"{origin} has no '## Required sections' heading; using the built-in sections "
            f"({', '.join(REQUIRED_SECTIONS)})."
        ]
    warnings: list[str] = []
    required = _section_rules(body, origin, "Required sections", warnings)
    if not required:
        return None, [
            *warnings,
            f"{origin} lists no sections under '## Required sections'; using the built-in "
            f"sections ({', '.join(REQUIRED_SECTIONS)}).",
        ]
    optional: tuple[SectionRule, ...] = ()
    if "optional sections" in sections:
        optional = _section_rules(sections["optional sections"], origin, "Optional sections", [])
        names = {r.name.casefold() for r in required}
        optional = tuple(r for r in optional if r.name.casefold() not in names)
    return ReportConventions(required, optional, origin), warnings


def _section_rules(
    lines: list[str], origin: str, heading: str, warnings: list[str]
) -> tuple[SectionRule, ...]:
    rules: list[SectionRule] = []
    seen: set[str] = set()
    for item in _list_items(lines):
        name, guidance = _split_item(item)
        if not name:
            continue
        if len(name) > MAX_SECTION_NAME or "\n" in name:
            warnings.append(
                f"{origin}: ignored list item under '{heading}' that is not a section name "
                f"({name[:40]!r}…); write 'Name — what it holds'."
            )
            continue
        if name.casefold() in seen:
            warnings.append(f"{origin}: section '{name}' is listed twice; keeping the first.")
            continue
        seen.add(name.casefold())
        rules.append(SectionRule(name, guidance))
    return tuple(rules)


def parse_data_sources(
    text: str, *, origin: str = DATA_SOURCES_PATH
) -> tuple[SourceConventions | None, list[str]]:
    """(conventions, warnings); None when no usable source is listed."""
    lines = _markdown_sections(text).get("allowed sources")
    if lines is None:
        return None, [f"{origin} has no '## Allowed sources' heading; using the built-in sources."]
    warnings: list[str] = []
    rules: list[SourceRule] = []
    for source_id, body in _subsections(lines):
        fields = {}
        for item in _list_items(body):
            key, sep, value = item.partition(":")
            if sep:
                fields[key.strip().casefold()] = value.strip()
        cite_as = _clean_citation(fields.get("cite as", ""))
        if not cite_as:
            warnings.append(
                f"{origin}: source '{source_id}' has no '- Cite as: ...' line; it is ignored."
            )
            continue
        if any(r.id == source_id for r in rules):
            warnings.append(f"{origin}: source '{source_id}' is listed twice; keeping the first.")
            continue
        provider_match = re.match(r"[`\s]*([\w.-]+)", fields.get("provider", ""))
        provider = provider_match.group(1).lower() if provider_match else None
        rules.append(
            SourceRule(
                id=source_id,
                cite_as=cite_as,
                name=fields.get("name", ""),
                provider=provider,
                use_for=fields.get("use for", ""),
            )
        )
    if not rules:
        return None, [
            *warnings,
            f"{origin} lists no usable source under '## Allowed sources'; using the built-in "
            "sources.",
        ]
    return SourceConventions(tuple(rules), origin), warnings


# -- Markdown helpers ----------------------------------------------------------------------

_ITEM = re.compile(r"^(?:\d{1,3}[.)]|[-*+])[ \t]+(.*)$")


def _markdown_sections(text: str, *, keep_code: bool = False) -> dict[str, list[str]]:
    """Level-2 sections by lower-cased title: their lines up to the next level-1/2 heading.

    Lines inside fenced code are blanked unless ``keep_code`` (a section holding only a code
    block is not empty)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line, code in outside_fences(text):
        match = None if code else HEADING.match(line)
        if match and len(match.group(1)) <= 2:
            title = _plain(match.group(2)).casefold()
            current = None
            if len(match.group(1)) == 2 and title not in sections:
                current = sections[title] = []
            continue
        if current is not None:
            current.append(line if keep_code or not code else "")
    return sections


def _subsections(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """``###`` subsections of a section: (id from the heading, their lines)."""
    current: tuple[str, list[str]] | None = None
    for line in lines:
        match = HEADING.match(line)
        if match and len(match.group(1)) == 3:
            if current:
                yield current
            current = (_plain(match.group(2)).strip().lower().replace(" ", "-"), [])
        elif match:
            if current:
                yield current
            current = None
        elif current is not None:
            current[1].append(line)
    if current:
        yield current


def _list_items(lines: list[str]) -> Iterator[str]:
    """Top-level list items, each with its indented continuation lines joined."""
    item: list[str] | None = None
    for line in lines:
        if not line.strip():
            if item is not None:
                yield " ".join(item)
                item = None
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        match = _ITEM.match(line.strip()) if indent < 2 else None
        if match:
            if item is not None:
                yield " ".join(item)
            item = [match.group(1).strip()]
        elif item is not None and indent >= 2 and not _ITEM.match(line.strip()):
            item.append(line.strip())
        elif item is not None and indent < 2:
            yield " ".join(item)
            item = None
    if item is not None:
        yield " ".join(item)


def _split_item(item: str) -> tuple[str, str]:
    for sep in (" — ", " – ", " - ", ": "):
        name, found, rest = item.partition(sep)
        if found:
            return _plain(name), rest.strip()
    return _plain(item), ""


def _plain(text: str) -> str:
    """Markdown inline text without emphasis or code marks."""
    return re.sub(r"[*_`]+", "", text).strip().rstrip(".:")


def _clean_citation(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "`\"'":
        text = text[1:-1].strip()
    return text


def _citation_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"<[^<>]+>", template)
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


def report_headings(markdown: str) -> list[str]:
    """The ``## `` section titles of a report, in order (fenced code ignored)."""
    out = []
    for line, code in outside_fences(markdown):
        match = None if code else HEADING.match(line)
        if match and len(match.group(1)) == 2:
            out.append(_plain(match.group(2)))
    return out


def report_section_bullets(markdown: str, title: str) -> list[str]:
    """The top-level bullets of one ``##`` section of a report."""
    lines = _markdown_sections(markdown).get(title.casefold(), [])
    return list(_list_items(lines))
