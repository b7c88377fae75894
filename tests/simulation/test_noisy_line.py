"""A noisy line, end to end: the clinic's waiting-room scenario (babble, lost and late packets, another caller
voice) passes with no false clear on the scripted brain's voice detector, and the same room 15 dB louder makes
that detector cut the bot off while the caller says nothing, which ``max_false_clears`` catches."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from telephony.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clinic" / "bad_line" / "noisy_waiting_room.yaml"


def test_false_clears_are_counted_and_fail_a_louder_room(tmp_path: Path) -> None:
    louder = tmp_path / "louder_waiting_room.yaml"
    text = EXAMPLE.read_text(encoding="utf-8")
    louder.write_text(
        text.replace("level_dbfs: -45", "level_dbfs: -30").replace("name: noisy waiting room", "name: louder room"),
        encoding="utf-8",
    )
    assert "level_dbfs: -30" in louder.read_text(encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["test", str(EXAMPLE), str(louder), "--jobs", "2", "--out", str(tmp_path / "recordings")])
    output = out.getvalue()
    assert code == 1, output
    quiet_room = re.search(r"\[1/2\] noisy waiting room +PASS .*false clears 0\)", output)
    assert quiet_room is not None, output
    loud_room = re.search(r"\[2/2\] louder room +FAIL .*false clears (\d+)\)", output)
    assert loud_room is not None and int(loud_room.group(1)) >= 1, output
    assert re.search(
        r"expect\.barge_in\.max_false_clears: \d+ clear\(s\) with the caller silent on babble noise at -30 dBFS, "
        r"2% packet loss, 40 ms jitter, voice en\+m3 \(at ",
        output,
    ), output
