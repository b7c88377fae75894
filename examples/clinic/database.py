"""The clinic's appointment book: a small SQLite database, created and filled with a week of slots on first use.

Where it lives: ``CLINIC_DB`` (a file path), else ``<temp dir>/voicebot-clinic/clinic.sqlite3``. Every
function here blocks (sqlite3): the tools call them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
TIMES = ("9:00", "9:30", "10:00", "11:30", "14:00", "15:30")
DOCTORS = ("Doctor Patel", "Doctor Okafor")

SCHEMA = """
CREATE TABLE IF NOT EXISTS slots (
    id INTEGER PRIMARY KEY,
    day TEXT NOT NULL,
    time TEXT NOT NULL,
    doctor TEXT NOT NULL,
    patient TEXT,
    phone TEXT,
    UNIQUE (day, time)
);
"""


@dataclass(frozen=True)
class Slot:
    day: str
    time: str
    doctor: str
    patient: str | None = None


def database_path() -> Path:
    configured = os.environ.get("CLINIC_DB")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "voicebot-clinic" / "clinic.sqlite3"


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating and seeding if needed) the appointment book."""
    path = path or database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=5.0)
    connection.executescript(SCHEMA)
    if connection.execute("SELECT COUNT(*) FROM slots").fetchone()[0] == 0:
        seed(connection)
    return connection


def seed(connection: sqlite3.Connection, full_days: Iterable[str] = ()) -> None:
    """A week of free slots, two doctors alternating; ``full_days`` are booked out already."""
    full = {day.capitalize() for day in full_days}
    rows = []
    for day in DAYS:
        for index, time in enumerate(TIMES):
            rows.append((day, time, DOCTORS[index % 2], "another patient" if day in full else None))
    with connection:
        connection.execute("DELETE FROM slots")
        connection.executemany("INSERT INTO slots (day, time, doctor, patient) VALUES (?, ?, ?, ?)", rows)


def reset(path: Path, full_days: Iterable[str] = ()) -> None:
    with closing(connect(path)) as connection:
        seed(connection, full_days)


def normal_day(day: str) -> str | None:
    """``tuesday``, ``Tue`` → ``Tuesday``; None for anything else."""
    word = day.strip().lower()[:3]
    return next((name for name in DAYS if name.lower().startswith(word)), None) if word else None


def normal_time(time: str) -> str:
    """``9.30``, ``9:30 am``, ``09:30`` → ``9:30``; ``2 pm`` → ``14:00``."""
    text = time.strip().lower().replace(".", ":").replace(" ", "")
    afternoon = text.endswith("pm")
    text = text.removesuffix("am").removesuffix("pm")
    hours, _, minutes = text.partition(":")
    try:
        hour, minute = int(hours), int(minutes or 0)
    except ValueError:
        return time.strip()
    if afternoon and hour < 12:
        hour += 12
    return f"{hour}:{minute:02d}"


def open_slots(day: str) -> list[Slot]:
    with closing(connect()) as connection:
        rows = connection.execute(
            "SELECT day, time, doctor FROM slots WHERE day = ? AND patient IS NULL ORDER BY id", (day,)
        ).fetchall()
    return [Slot(*row) for row in rows]


def book(day: str, time: str, patient: str, phone: str = "") -> Slot | None:
    """Book the slot if it is free (one statement, so two callers cannot both get it); None if it is not."""
    with closing(connect()) as connection, connection:
        changed = connection.execute(
            "UPDATE slots SET patient = ?, phone = ? WHERE day = ? AND time = ? AND patient IS NULL",
            (patient, phone, day, time),
        ).rowcount
        if not changed:
            return None
        row = connection.execute(
            "SELECT day, time, doctor, patient FROM slots WHERE day = ? AND time = ?", (day, time)
        ).fetchone()
    return Slot(*row)


def bookings(patient: str | None = None, path: Path | None = None) -> list[Slot]:
    """Booked slots (of one patient, matched without regard to case), for checks and the front desk."""
    with closing(connect(path)) as connection:
        rows = connection.execute(
            "SELECT day, time, doctor, patient FROM slots WHERE patient IS NOT NULL AND patient != 'another patient'"
            " ORDER BY id"
        ).fetchall()
    slots = [Slot(*row) for row in rows]
    return [slot for slot in slots if patient is None or (slot.patient or "").lower() == patient.lower()]
