"""Storage administration of the configured tiers: schemas, the embedded files' integrity
check, and their backup and restore.

A restore of the embedded files keeps the forgets made since the backup: the tombstones and
the audit of the replaced ledger file are carried into the restored one, and
:meth:`StorageAdmin.reapply_forgets` then forgets again, for every user concerned, what the
restored files hold that they had forgotten.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agent.app.memory import MemoryControls
from agent.app.tiers import Tiers
from memory.identity import Principal

if TYPE_CHECKING:
    from agent.app.memory_backup import Carried
    from memory.backup import Copied
    from memory.health import FileCheck

#: The name a restore's copy of the files it replaces starts with (then a UTC timestamp).
BEFORE_RESTORE = "before-restore-"


class StorageAdmin:
    """Schemas, checks, backups and restores of the storage ``tiers`` use; ``memory`` (the
    principal's memory controls) reapplies forgets after a restore."""

    def __init__(self, tiers: Tiers, memory: MemoryControls) -> None:
        self.tiers = tiers
        self.memory = memory
        #: The tombstones and audit a :meth:`restore` carried over, until :meth:`reapply_forgets`.
        self._carried: Carried | None = None

    async def setup_checkpointer(self) -> str:
        """Create or migrate the checkpointer's schema (idempotent); say what was done."""
        from memory.checkpoint import setup_checkpointer

        return await setup_checkpointer(self.tiers.settings.checkpointer)

    async def setup_facts(self, app_roles: list[str] | tuple[str, ...] = ()) -> list[int]:
        """Create or upgrade the fact ledger's schema; return the migrations applied now."""
        from memory.facts import setup_fact_store

        return await setup_fact_store(self.tiers.settings.facts, app_roles=app_roles)

    def check_storage(self) -> list[FileCheck]:
        """The state of every embedded file; nothing is written or created."""
        from memory.backup import check

        return check(self.tiers.embedded_files())

    def backup(self, dest: str | os.PathLike[str]) -> list[Copied]:
        """A consistent copy of every embedded file in the new folder ``dest``."""
        from memory.backup import backup

        return backup(self.tiers.embedded_files(), dest)

    def restore(self, src: str | os.PathLike[str]) -> tuple[list[Copied], str]:
        """Restore the backup in ``src``; returns what was restored and where the replaced
        files were kept."""
        from datetime import UTC, datetime

        from agent.app.memory_backup import carry, put_back
        from memory.backup import prune_kept, restore

        settings = self.tiers.settings
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%f")  # two restores in a second
        keep = settings.data_dir / "backups" / f"{BEFORE_RESTORE}{stamp}"
        files = self.tiers.embedded_files()
        ledger = next((f.path for f in files if f.name == "facts.sqlite"), None)
        self._carried = carry(ledger)  # the forgets made since the backup are not undone
        restored = restore(files, src, keep)
        put_back(self._carried)
        # Only once this restore's copy is complete: the oldest copies beyond the setting go.
        prune_kept(keep.parent, BEFORE_RESTORE, settings.keep_before_restore)
        return restored, str(keep)

    async def reapply_forgets(self) -> dict[str, dict[str, int]]:
        """After :meth:`restore`: forget again, for every user with tombstones or deletes
        made at their request, what the restored files hold that they had forgotten
        (:func:`agent.app.memory_backup.reapply_forgets`). Answers counts per user and tier."""
        done: dict[str, dict[str, int]] = {}
        carried, self._carried = self._carried, None
        settings = self.tiers.settings
        for tenant_id, user_id in [] if carried is None else carried.principals():
            principal = Principal(tenant_id, user_id)
            if principal == self.tiers.principal:
                counts = await self.memory.reapply_forgets()
            else:
                async with Tiers.open(settings, principal) as other:
                    counts = await MemoryControls(other).reapply_forgets()
            if counts:
                done[f"{tenant_id}/{user_id}"] = counts
        return done
