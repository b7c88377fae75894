"""`voicebot demo`: a simulated call to the offline bot, printed and recorded (real speech both ways)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from telephony.config import Settings
from telephony.simulation.demo.demo import CallerLine, run_demo


async def test_the_demo_call_is_printed_recorded_and_ends_with_the_goodbye(tmp_path: Path) -> None:
    out = io.StringIO()
    script = (CallerLine("what time is it"), CallerLine("goodbye"))
    assert await run_demo(Settings(), tmp_path, out=out, script=script) == 0
    text = out.getvalue()
    assert "caller: what time is it" in text and "[tool call: current_time" in text and "bot   : It is" in text
    assert "caller: goodbye" in text and "[call ended by agent" in text
    assert "hung up by: bot" in text
    [folder] = list(tmp_path.iterdir())
    assert {"events.jsonl", "caller.wav", "bot.wav", "call.wav", "transcript.json"} <= {
        p.name for p in folder.iterdir()
    }
    turns = json.loads((folder / "transcript.json").read_text())
    assert turns
