"""The scenario fields of the call itself: the scenario, the call, functions, the caller and the brain
(declared for the parser and the reference; see ``schema``)."""

from __future__ import annotations

from telephony.simulation.scenarios.schema import CALLER, REQUIRED, STEPS, Field, Section

SCENARIO = Section(
    "scenario",
    "The scenario",
    "The top level of a scenario file. Only `caller:` is required.",
    "{example}\n{sibling}\n",
    (
        Field("name", "text", "the file's name", "What the results call the scenario.", "name: booking succeeds"),
        Field("description", "text", '""', "A note for readers; not used.", "description: books a check-up"),
        Field(
            "agent",
            "`module:function`",
            "`--agent`, else `VOICEBOT_AGENT`",
            "The agent factory to call. `voicebot test --agent` wins over it. Modules in the folder voicebot "
            "runs from are importable, as with uvicorn.",
            "agent: examples.clinic.agent:create_agent",
        ),
        Field(
            "call",
            "mapping (below)",
            "",
            "Who calls whom, and the stream's parameters.",
            "call: {from: '+15551230000'}",
        ),
        Field(
            "greeting",
            "text",
            "`VOICEBOT_GREETING`",
            "The text the agent is sent when the call starts (so that it speaks first).",
            "greeting: Greet the caller.",
        ),
        Field(
            "setup",
            "list of function calls (below)",
            "[]",
            "Your functions, run before the call with the call's `CallOutcome` (its `workdir` and `state`).",
            "setup: [{call: examples.clinic.testing:fresh_database}]",
        ),
        Field(
            "caller",
            "list of steps, a goal, or a recording (below)",
            REQUIRED,
            "What the caller does.",
            "caller: [{say: Goodbye.}]",
        ),
        Field(
            "brain",
            "list of turns, or a mapping (below)",
            "none: the agent's own model",
            "The model's part, played by the scripted brain (or a local server with `--local`). Without it "
            "the call runs on the model your factory builds, and `voicebot test` says so first.",
            "brain: [{on: caller, say: Goodbye!}]",
        ),
        Field(
            "expect",
            "mapping (below)",
            "{}",
            "What must happen, beyond what every call must do.",
            "expect: {no_apology: true}",
        ),
        Field("runs", "whole number, at least 1", "1", "How many calls to place.", "runs: 5"),
        Field(
            "pass_threshold",
            "number, 0 to 1",
            "1",
            "The share of runs that must pass (for real models, which vary).",
            "pass_threshold: 0.8",
        ),
        Field("timeout_s", "seconds, at least 1", "120", "The longest a call may last.", "timeout_s: 60"),
        Field(
            "patience_s",
            "seconds, at least 0.5",
            "10",
            "How long the caller waits for an answer before going on with its next step anyway.",
            "patience_s: 5",
        ),
        Field(
            "line",
            "mapping (below)",
            "a clean line",
            "How bad the phone line is (noise, lost and late packets, a quiet or clipping caller, another voice). "
            "`voicebot test --line` goes over it, field by field.",
            "line: {noise: {kind: babble, level_dbfs: -45}, packet_loss: 0.02}",
        ),
    ),
    sibling="caller: [{say: Hello.}]",
)

CALL = Section(
    "call",
    "call",
    "The simulated call.",
    "call:\n  {example}\n" + CALLER,
    (
        Field("from", "text", "+15005550006", "The caller's number (`CallInfo.from_number`).", "from: '+15551230000'"),
        Field("to", "text", "+15005550001", "The number called (`CallInfo.to_number`).", "to: '+15559870000'"),
        Field(
            "parameters",
            "mapping of text",
            "{}",
            "The stream's `<Parameter>`s (`CallInfo.parameters`); pre-warming is off for such a call.",
            "parameters: {purpose: confirm}",
        ),
    ),
)

FUNCTION = Section(
    "function",
    "setup and expect.checks: function calls",
    "Your own function, called as `function(call, **with)` with the call's `CallOutcome`. Checked before any "
    "call: it must import and take those keywords. A check fails by raising `AssertionError`, or by "
    "returning `False` or a message.",
    "setup:\n  - {example}\n" + CALLER,
    (
        Field("call", "`module:function`", REQUIRED, "The function.", "call: examples.clinic.testing:fresh_database"),
        Field(
            "with",
            "mapping",
            "{}",
            "Keyword arguments.",
            "{call: examples.clinic.testing:fresh_database, with: {full_days: [Friday]}}",
        ),
    ),
)

CALLER_STEP = Section(
    "caller step",
    "caller: steps",
    "A list; each step does exactly one of `say`, `play`, `press`, `silence_s` or `hang_up` (also written "
    "`- hang_up`). A step waits for the bot to finish and be quiet a moment first, unless `wait: false`.",
    "caller:\n  - say: Hello.\n  - {example}\n",
    (
        Field(
            "say",
            "text",
            "",
            "Words the caller speaks (espeak-ng, in a voice unlike the bot's).",
            "say: I would like to book a check-up.",
        ),
        Field(
            "play",
            "path of a WAV file",
            "",
            "Audio the caller plays, relative to the scenario file.",
            "play: clip.wav",
        ),
        Field("press", "keypad digits (0-9, *, #)", "", "Keys the caller presses (DTMF).", "press: '12#'"),
        Field("silence_s", "seconds", "", "The caller says nothing this long (without waiting first).", "silence_s: 2"),
        Field("hang_up", "true", "", "The caller hangs up.", "hang_up: true"),
        Field(
            "over_the_bot_ms",
            "milliseconds",
            "none",
            "With `say` or `play`: talk over the bot this far into its reply (a barge-in) instead of waiting.",
            "{say: Stop please., over_the_bot_ms: 1500}",
        ),
        Field(
            "wait",
            "true or false",
            "true",
            "Wait for the bot to finish before this step.",
            "{say: And another thing., wait: false}",
        ),
    ),
)

GOAL_CALLER = Section(
    "goal caller",
    "caller: a goal",
    "Instead of steps, a caller with a goal: with `--text-model` a text model plays it; offline, `offline` "
    "rules stand in.",
    "caller:\n  {example}\n  {sibling}\n",
    (
        Field("goal", "text", REQUIRED, "What the caller wants.", "goal: Book a check-up on Wednesday."),
        Field("persona", "text", '""', "Who the caller is.", "persona: Alex Kim, a busy parent"),
        Field("opening", "text", '""', "The caller's first words.", "opening: Hi, I need an appointment."),
        Field("max_turns", "whole number, at least 1", "8", "The most the caller says.", "max_turns: 4"),
        Field(
            "offline",
            "mapping (below)",
            "{}",
            "The stand-in for a text model, for runs without `--text-model`.",
            "offline: {replies: [{when: which time, say: The first one.}], done_when: booked}",
        ),
    ),
    sibling="goal: Book a check-up.",
)

GOAL_OFFLINE = Section(
    "goal caller offline",
    "caller.offline",
    "The goal caller's offline stand-in (no text model).",
    "caller:\n  goal: Book a check-up.\n  offline:\n    {example}\n",
    (
        Field(
            "replies",
            "list of replies (below)",
            "[]",
            "Answers to the bot's last turn, the first that matches.",
            "replies: [{when: which time, say: The first one please.}]",
        ),
        Field(
            "done_when",
            "regular expression",
            "never",
            "Once the bot has said something matching it, the caller says goodbye and hangs up.",
            "done_when: booked",
        ),
    ),
)

OFFLINE_REPLY = Section(
    "offline reply",
    "caller.offline.replies",
    "",
    "caller:\n  goal: Book a check-up.\n  offline:\n    replies:\n      - {example}\n",
    (
        Field(
            "when",
            "regular expression",
            REQUIRED,
            "Searched in the bot's last turn.",
            "{when: which time, say: Nine please.}",
        ),
        Field("say", "text", REQUIRED, "What the caller says then.", "{when: 'name\\?', say: Alex Kim.}"),
    ),
)

RECORDING_CALLER = Section(
    "recording caller",
    "caller: a recording",
    "The caller is a recorded call, replayed frame by frame (`voicebot test --from-recording` writes these).",
    "caller:\n  {example}\n",
    (
        Field(
            "recording",
            "path",
            REQUIRED,
            "A recording folder, its `events.jsonl`, or a WAV, relative to the scenario file.",
            "recording: calls/CA0123",
        ),
    ),
)

BRAIN = Section(
    "brain",
    "brain: as a mapping",
    "`brain:` is a list of turns, or a mapping with the turns and what to say when none is left.",
    CALLER + "brain:\n  {example}\n",
    (
        Field("turns", "list of turns (below)", "[]", "The turns.", "turns: [{on: caller, say: Hi.}]"),
        Field(
            "otherwise",
            "text",
            '""',
            "Said for an input no turn is left for (empty: stay silent).",
            "otherwise: Sorry?",
        ),
    ),
)

BRAIN_TURN = Section(
    "brain turn",
    "brain: turns",
    "What the model does in answer to one input, turns taken in order. Each does at least one of `say`, "
    "`tools`, `then`. `{tool_name}` or `{result}` in `say` is a tool's result in this turn; `{prompt:Name}` "
    "is the value of a `Name: value` line of the agent's system prompt (checked before any call).",
    STEPS + "brain:\n  - {example}\n",
    (
        Field(
            "on",
            "greeting, caller, key or text",
            REQUIRED,
            "What the turn answers: the greeting text, a caller utterance (by voice activity: the words are "
            "not recognised), a keypress, or another text input containing `contains`.",
            "{on: greeting, say: Hello!}",
        ),
        Field(
            "key",
            "a keypad digit",
            "any",
            "`on: key`: the key (empty: any key).",
            "{on: key, key: '1', say: 'Which day?'}",
        ),
        Field(
            "contains",
            "text",
            REQUIRED + " for `on: text`",
            "`on: text`: text the input holds (e.g. a failed transfer's notice).",
            "{on: text, contains: transfer failed, say: 'Sorry, nobody is free.'}",
        ),
        Field(
            "heard",
            "text",
            '""',
            "`on: caller`: what the model understood. It is the caller's line in the transcript, and it is "
            "checked: the caller's words this turn answers must contain it (ignoring case and punctuation), "
            "before the call (the nth `on: caller` turn answers the nth `say`) and after it (what the caller "
            "had said when the brain answered).",
            "{on: caller, heard: Hello., say: Hi!}",
        ),
        Field(
            "tools",
            "list of tool calls (below)",
            "[]",
            "Tools called before speaking, each result awaited.",
            "{on: caller, tools: [{name: find_open_slots, input: {day: Monday}}], say: '{find_open_slots}.'}",
        ),
        Field(
            "say",
            "text",
            '""',
            "What the model says.",
            "{on: caller, say: 'Thank you for calling {prompt:Clinic name}.'}",
        ),
        Field(
            "then",
            "list of tool calls (below)",
            "[]",
            "Tools called once the reply has been said in full (e.g. `end_conversation`).",
            "{on: caller, say: Bye!, then: [{name: end_conversation, input: {reason: bye}}]}",
        ),
        Field(
            "if_unavailable",
            "text",
            "I'm sorry, I can't do that right now.",
            "Said instead when a tool fails or the agent does not offer it.",
            "{on: caller, tools: [find_open_slots], say: '{result}', if_unavailable: The diary is down.}",
        ),
    ),
)

TOOL_CALL = Section(
    "tool call",
    "brain: tool calls",
    "A tool the model calls: a name alone, or a mapping.",
    CALLER + "brain:\n  - on: caller\n    tools:\n      - {example}\n",
    (
        Field("name", "text", REQUIRED, "The tool.", "name: find_open_slots"),
        Field("input", "mapping", "{}", "Its arguments.", "{name: find_open_slots, input: {day: Monday}}"),
    ),
)

LINE = Section(
    "line",
    "line",
    "A bad line between the simulated caller and the bridge, done to the caller's audio as Twilio would receive "
    "it. Everything random comes from `seed`, so a line is the same on every run (run n of `runs:` gets its own). "
    "The caller's record of what it said stays clean: false barge-ins are judged against it "
    "(`expect.barge_in.max_false_clears`).",
    CALLER + "line:\n  {example}\n",
    (
        Field(
            "noise",
            "mapping (below)",
            "none",
            "Background noise added to the caller's audio.",
            "noise: {kind: babble, level_dbfs: -45}",
        ),
        Field(
            "packet_loss",
            "share, 0 to below 1",
            "0",
            "The share of the caller's 20 ms packets that never arrive.",
            "packet_loss: 0.02",
        ),
        Field(
            "jitter_ms",
            "milliseconds",
            "0",
            "Each packet arrives up to this much late (in order).",
            "jitter_ms: 40",
        ),
        Field(
            "loudness",
            "normal, quiet, clipping, or a gain in dB (-60 to 40)",
            "normal",
            "The caller's loudness: `quiet` is -20 dB (a phone held away), `clipping` +20 dB (peaks cut flat).",
            "loudness: quiet",
        ),
        Field(
            "voice",
            "an espeak-ng voice",
            "the usual caller voice",
            "Another caller voice (checked before any call: espeak-ng must have it).",
            "voice: en+m3",
        ),
        Field("seed", "whole number", "0", "Another seed, another (reproducible) bad line.", "seed: 7"),
    ),
)

LINE_NOISE = Section(
    "line noise",
    "line.noise",
    "Levels are RMS dBFS; the bridge calls a frame above -45 dBFS speech.",
    CALLER + "line:\n  noise: {example}\n",
    (
        Field(
            "kind",
            "white, babble or hum",
            REQUIRED,
            "Hiss, a room of talkers, or mains hum.",
            "{kind: hum, level_dbfs: -50}",
        ),
        Field(
            "level_dbfs",
            "dBFS, -100 to 0",
            REQUIRED,
            "How loud the noise is.",
            "{kind: babble, level_dbfs: -35}",
        ),
    ),
)

CALL_SECTIONS = (
    SCENARIO,
    CALL,
    LINE,
    LINE_NOISE,
    FUNCTION,
    CALLER_STEP,
    GOAL_CALLER,
    GOAL_OFFLINE,
    OFFLINE_REPLY,
    RECORDING_CALLER,
    BRAIN,
    BRAIN_TURN,
    TOOL_CALL,
)
"""In the order the reference lists them."""
