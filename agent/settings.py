"""Settings: where data lives and which backends to use, from the environment and flags.

``Settings.from_env()`` only reads variables; it never fails for a missing one and never
touches the disk, so importing and constructing are free of side effects.

| variable | default | meaning |
|---|---|---|
| ANALYST_DATA_DIR | ./.data | runtime data: checkpoints, thread index, draft charts |
| ANALYST_MEMORY_DIR | ./.agent-memory | Markdown document memory (research notes land here) |
| ANALYST_CHECKPOINTER | sqlite:///<data dir>/checkpoints.sqlite | checkpointer URL |
| ANALYST_MARKET_PROVIDER | sample | market data: sample (bundled) or yfinance |
| ANALYST_TENANT / ANALYST_USER | default / $USER | the principal the CLI acts for |
| ANALYST_STEP_DELAY | 0 | seconds to pause after each executor step (demos, crash drills) |
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.errors import ConfigurationError


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(".data")
    memory_dir: Path = Path(".agent-memory")
    checkpointer_url: str | None = None
    market_provider: str = "sample"
    tenant_id: str = "default"
    user_id: str = "local"
    step_delay: float = 0.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        env = dict(os.environ if env is None else env)
        delay_text = env.get("ANALYST_STEP_DELAY", "0") or "0"
        try:
            delay = float(delay_text)
        except ValueError as e:
            raise ConfigurationError(
                f"ANALYST_STEP_DELAY='{delay_text}' is not a number of seconds; use e.g. 0.5"
            ) from e
        settings = cls(
            data_dir=Path(env.get("ANALYST_DATA_DIR") or ".data"),
            memory_dir=Path(env.get("ANALYST_MEMORY_DIR") or ".agent-memory"),
            checkpointer_url=env.get("ANALYST_CHECKPOINTER") or None,
            market_provider=env.get("ANALYST_MARKET_PROVIDER") or "sample",
            tenant_id=env.get("ANALYST_TENANT") or "default",
            user_id=env.get("ANALYST_USER") or env.get("USER") or "local",
            step_delay=delay,
        )
        clean = {k: v for k, v in overrides.items() if v is not None}
        return replace(settings, **clean)

    @property
    def checkpointer(self) -> str:
        if self.checkpointer_url:
            return self.checkpointer_url
        return f"sqlite:///{self.data_dir / 'checkpoints.sqlite'}"

    @property
    def threads_path(self) -> Path:
        return self.data_dir / "threads.sqlite"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"
