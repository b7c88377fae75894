"""The scenario fields under ``expect:`` (declared for the parser and the reference; see ``schema``)."""

from __future__ import annotations

from telephony.simulation.scenarios.schema import CALLER, REQUIRED, STEPS, Field, Section

EXPECT = Section(
    "expect",
    "expect",
    "What must happen. Every call must also do what [every call must do](#what-every-call-must-do), with "
    "or without `expect:`.",
    STEPS + "expect:\n  {example}\n",
    (
        Field(
            "bot_says",
            "list of texts or matchers (below)",
            "[]",
            "The bot says each, in one turn or anywhere.",
            "bot_says: [Riverside Family Clinic]",
        ),
        Field(
            "bot_never_says",
            "list of texts or matchers (below)",
            "[]",
            "The bot says none of them.",
            "bot_never_says: [{matches: 'no (slots|appointments)'}]",
        ),
        Field(
            "no_apology",
            "true or false",
            "false",
            'The bot says no "sorry", "unfortunately", "went wrong"… in any turn.',
            "no_apology: true",
        ),
        Field(
            "tools",
            "list of tool expectations (below)",
            "[]",
            "Tools called (and each successful).",
            "tools: [find_open_slots, end_conversation]",
        ),
        Field(
            "tools_in_order",
            "true or false",
            "true",
            "The `tools` were called in the order listed.",
            "tools_in_order: false",
        ),
        Field("no_tools", "list of tool names", "[]", "Tools never called.", "no_tools: [transfer_call]"),
        Field(
            "transfer",
            "true, false or the destination",
            "",
            "The call was (not) transferred (there).",
            "transfer: '+15005550010'",
        ),
        Field(
            "hang_up",
            "mapping (below)",
            "",
            "Who ended the call, and how soon.",
            "hang_up: {by: bot, within_s: 2.5}",
        ),
        Field(
            "keys",
            "keypad digits (0-9, *, #)",
            "",
            "Each key, in order, reached the agent and the bot answered it (began a reply before the next key).",
            "keys: '12'",
        ),
        Field(
            "barge_in",
            "mapping (below)",
            "",
            "How the bot stopped when the caller talked over it, and that it did not stop when nobody did.",
            "barge_in: {clear_within_ms: 600, nothing_stale: true}",
        ),
        Field(
            "latency",
            "mapping (below)",
            "",
            "Response latency (needs a caller who speaks).",
            "latency: {turn_max_s: 3.0, p50_max_s: 2.0}",
        ),
        Field(
            "dead_air",
            "mapping (below)",
            "",
            "How long the caller was left hearing nothing while the bot owed an answer.",
            "dead_air: {max_s: 3}",
        ),
        Field("duration", "mapping (below)", "", "How long the call lasted.", "duration: {max_s: 60}"),
        Field(
            "checks",
            "list of function calls (above)",
            "[]",
            "Your functions, run with the finished call (transcript, tool calls, recording, work folder).",
            "checks: [{call: examples.clinic.testing:no_bookings}]",
        ),
        Field(
            "judge",
            "mapping (below)",
            "",
            "Graded against a rubric.",
            "judge: {rubric: [{criterion: The bot offered times., offline: '^bot: Open on'}]}",
        ),
    ),
)

SAID = Section(
    "said",
    "expect.bot_says and bot_never_says",
    "Text alone means `contains`. Matching ignores case.",
    STEPS + "expect:\n  bot_says:\n    - {example}\n",
    (
        Field("contains", "text", "", "Text the bot's turn contains.", "contains: Riverside"),
        Field(
            "matches",
            "regular expression",
            "",
            "A regular expression searched in the turn.",
            "matches: 'booked.*9:30'",
        ),
        Field(
            "turn",
            "whole number, at least 1",
            "any turn",
            "Only this bot turn (1 is the first).",
            "{contains: Riverside, turn: 1}",
        ),
    ),
)

TOOL_EXPECTATION = Section(
    "tool expectation",
    "expect.tools",
    "A tool name alone, or a mapping. How arguments match: [argument matching](#argument-matching).",
    CALLER + "expect:\n  tools:\n    - {example}\n",
    (
        Field("name", "text", REQUIRED, "The tool.", "name: book_appointment"),
        Field(
            "input",
            "mapping",
            "{}",
            "Arguments the call must have (others may be there too).",
            "{name: book_appointment, input: {day: Tuesday, time: 're:^9[:.]?30'}}",
        ),
        Field(
            "ordered_lists",
            "true or false",
            "false",
            "List arguments must be in the same order (otherwise they match as sets).",
            "{name: pick, input: {days: [Monday, Tuesday]}, ordered_lists: true}",
        ),
    ),
)

HANG_UP = Section(
    "expect.hang_up",
    "expect.hang_up",
    "",
    CALLER + "expect:\n  hang_up:\n    {example}\n",
    (
        Field("by", "bot, caller or server", "anyone", "Who ended the call (server: a limit or a failure).", "by: bot"),
        Field(
            "within_s",
            "seconds",
            "no limit",
            "How soon after the end of the bot's last words the line closed.",
            "within_s: 2.5",
        ),
    ),
)

BARGE_IN = Section(
    "expect.barge_in",
    "expect.barge_in",
    "`clear_within_ms` and `nothing_stale` are timed from the first frame of a caller step with "
    "`over_the_bot_ms` that reached the bridge (a caller replaying a recording: from where it talked over the bot); "
    "a scenario with either and no such step is refused. `max_false_clears` needs no such step: it counts the "
    "`clear`s sent while the caller was silent, judged against what the caller really said (its clean audio, "
    "before any `line:` noise).",
    STEPS + "expect:\n  barge_in:\n    {example}\n",
    (
        Field(
            "clear_within_ms",
            "milliseconds",
            "no limit",
            "Twilio told to `clear` within this.",
            "clear_within_ms: 600",
        ),
        Field(
            "nothing_stale",
            "true or false",
            "false",
            "No frame of the interrupted reply after the `clear`.",
            "nothing_stale: true",
        ),
        Field(
            "max_false_clears",
            "whole number, at least 0",
            "no limit",
            "At most this many `clear`s with the caller silent (the model took the line's noise for the caller "
            "talking over it). A clear within a second of the caller's speech counts as that speech's.",
            "max_false_clears: 0",
        ),
    ),
)

LATENCY = Section(
    "expect.latency",
    "expect.latency",
    "From the end of the caller's speech to the first bot audio heard.",
    STEPS + "expect:\n  latency:\n    {example}\n",
    (
        Field("turn_max_s", "seconds", "no limit", "Each turn's limit.", "turn_max_s: 3.0"),
        Field("p50_max_s", "seconds", "no limit", "The median's limit.", "p50_max_s: 2.0"),
        Field("max_s", "seconds", "no limit", "The slowest turn's limit.", "max_s: 4.0"),
    ),
)

DEAD_AIR = Section(
    "expect.dead_air",
    "expect.dead_air",
    "Dead air as the bridge measures it on every call: from when the caller's silence began while an answer was "
    "owed (after their turn, a tool's start or result, the greeting, a check-in, a goodbye, or in an answer that "
    "stalled) to the first bot audio heard (the hold sound counts) or the caller speaking up. Every wait is in the "
    "recording (`transcript.json`'s `dead_air`); a failure names the longest, what it came after and when.",
    CALLER + "expect:\n  dead_air:\n    {example}\n",
    (Field("max_s", "seconds", REQUIRED, "The call's longest dead air lasted at most this.", "max_s: 3"),),
)

DURATION = Section(
    "expect.duration",
    "expect.duration",
    "",
    CALLER + "expect:\n  duration:\n    {example}\n",
    (
        Field("max_s", "seconds", "no limit", "The call lasted at most this.", "max_s: 60"),
        Field("min_s", "seconds", "no limit", "The call lasted at least this.", "min_s: 5"),
    ),
)

JUDGE = Section(
    "expect.judge",
    "expect.judge",
    "Graded by a text model with `--text-model`; offline, each criterion's `offline` expression must match "
    "a line of the transcript (`bot: …` or `caller: …`).",
    CALLER + "expect:\n  judge:\n    {example}\n",
    (
        Field(
            "rubric",
            "list of criteria (below), at least one",
            REQUIRED,
            "What the call is graded on.",
            "rubric: [{criterion: The bot offered times., offline: '^bot: Open on'}]",
        ),
    ),
)

CRITERION = Section(
    "judge criterion",
    "expect.judge.rubric",
    "",
    CALLER + "expect:\n  judge:\n    rubric:\n      - {example}\n",
    (
        Field("criterion", "text", REQUIRED, "What a grader checks.", "criterion: The bot confirmed the booking."),
        Field(
            "offline",
            "regular expression",
            '""',
            "The offline stand-in: searched in each transcript line.",
            "{criterion: The bot confirmed the booking., offline: '^bot: Booked'}",
        ),
    ),
)

EXPECT_SECTIONS = (
    EXPECT,
    SAID,
    TOOL_EXPECTATION,
    HANG_UP,
    BARGE_IN,
    LATENCY,
    DEAD_AIR,
    DURATION,
    JUDGE,
    CRITERION,
)
"""In the order the reference lists them."""
