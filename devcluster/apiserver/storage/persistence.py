"""Optional write-through persistence in SQLite (stdlib ``sqlite3``), for ``--data-dir``.

Every committed write is one row upsert or delete plus the new global revision, in the same
transaction, so a restart restores every object and continues the revision sequence: clients
holding resourceVersions from before the restart never see them reused. Watch history is not
persisted; a watch resuming from before the restart gets 410 Expired and relists, exactly what a
client-go reflector does after an apiserver restart.

WAL mode with ``synchronous=NORMAL``: a crash of the machine may lose the last writes, a crash of
the process loses nothing. This is a development cluster; that trade buys write throughput.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SqlitePersistence"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    api_group TEXT NOT NULL, resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (api_group, resource, namespace, name));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class SqlitePersistence:
    def __init__(self, *, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            directory / "devcluster.sqlite3", isolation_level=None, check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def revision(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        return int(row[0]) if row else 0

    def load_all(self) -> list[tuple[tuple[str, str], tuple[str, str], dict[str, Any]]]:
        rows = self._db.execute("SELECT api_group, resource, namespace, name, data FROM objects").fetchall()
        return [((g, r), (ns, n), orjson.loads(data)) for g, r, ns, n, data in rows]

    def put(
        self, *, table: tuple[str, str], key: tuple[str, str], obj: dict[str, Any], revision: int
    ) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)", (*table, *key, orjson.dumps(obj))
            )
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('revision', ?)", (revision,))

    def delete(self, *, table: tuple[str, str], key: tuple[str, str], revision: int) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "DELETE FROM objects WHERE api_group = ? AND resource = ? AND namespace = ? AND name = ?",
                (*table, *key),
            )
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('revision', ?)", (revision,))

    def close(self) -> None:
        self._db.close()
