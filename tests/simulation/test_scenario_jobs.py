"""``voicebot test --jobs N``: calls side by side in worker processes, each run with its own work folder (the
clinic's database), reported in file order as a serial run would; ``--keep-workdirs`` keeps a failed run's."""

from __future__ import annotations

import contextlib
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from examples.clinic import database
from telephony.cli import main

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "scenarios"


def test_calls_run_side_by_side_each_on_its_own_data_and_print_in_file_order(tmp_path: Path) -> None:
    """The broken clinic (another clinic's name in its prompt) fails the booking's greeting but books; the
    no-slot scenario, at the same time, must find its own appointment book empty of bookings."""
    booking, no_slot = SCENARIOS / "booking.yaml", SCENARIOS / "no_slot.yaml"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "test",
                str(no_slot),
                str(booking),
                "--agent",
                "tests.simulation.broken_clinic:create_agent",
                "--jobs",
                "2",
                "--keep-workdirs",
                "--out",
                str(tmp_path / "recordings"),
                "--junit",
                str(tmp_path / "junit.xml"),
            ]
        )
    output = out.getvalue()
    assert code == 1, output
    assert "2 calls at once" in output
    assert output.index("[1/2] no slot available") < output.index("[2/2] booking succeeds")
    assert re.search(r"\[1/2\] no slot available +PASS", output), output
    assert re.search(r"\[2/2\] booking succeeds +FAIL", output), output
    assert "expect.bot_says[0]: expected bot turn 1" in output and "Hillside Dental" in output
    # Only the failed run's work folder is kept, with what the call left in it.
    [kept] = re.findall(r"work folder kept: (\S+)", output)
    booked = database.bookings("Jane Doe", Path(kept) / "clinic.sqlite3")
    assert [(slot.day, slot.time) for slot in booked] == [("Tuesday", "9:30")]
    # Side by side: the calls together took less than one after the other.
    calls, wall = map(float, re.search(r"in ([\d.]+) s of calls, ([\d.]+) s from first to last", output).groups())  # type: ignore[union-attr]
    assert wall < calls * 0.85, output
    cases = [case.get("name") for case in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")]
    assert cases == ["no slot available", "booking succeeds"]
