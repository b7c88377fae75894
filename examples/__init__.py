"""Example agents a business would run, each with the scenarios that test it (``voicebot test examples/...``)."""
