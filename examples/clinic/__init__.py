"""A clinic's appointment line: look up and book slots (SQLite), answer policy questions (a sub-agent),
transfer to the front desk, hang up. ``voicebot serve --agent examples.clinic.agent:create_agent``."""
