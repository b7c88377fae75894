"""Set-up and checks the clinic's scenarios call (``setup:`` and ``expect.checks:``): each run gets its own
appointment book in the run's work folder, and the checks read what the call left in it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from . import database


def fresh_database(call: Any, full_days: Sequence[str] = ()) -> None:
    """A new appointment book for this run (``CLINIC_DB`` points at it), with ``full_days`` booked out."""
    path = call.workdir / "clinic.sqlite3"
    os.environ["CLINIC_DB"] = str(path)
    call.state["clinic_db"] = path
    database.reset(path, full_days)


def appointment_booked(call: Any, patient: str, day: str, time: str) -> None:
    """The appointment book has ``patient`` on ``day`` at ``time``."""
    found = database.bookings(patient, call.state.get("clinic_db"))
    assert any(slot.day == day and slot.time == time for slot in found), (
        f"no booking for {patient} on {day} at {time} in the appointment book "
        f"(bookings of {patient}: {[f'{slot.day} {slot.time}' for slot in found] or 'none'})"
    )


def no_bookings(call: Any) -> None:
    """Nobody was booked during the call."""
    found = database.bookings(path=call.state.get("clinic_db"))
    assert not found, f"the call booked {[f'{slot.patient}: {slot.day} {slot.time}' for slot in found]}"
