"""The scripted brain (which turn answers which input, what it says) and the offline text model for sub-agents."""

from __future__ import annotations

import pytest
from strands import Agent

from agent.scripted import BrainScript, BrainTurn, ExtractiveTextModel, ScriptedBrain, ToolStep, prompt_fields

SCRIPT = BrainScript(
    turns=(
        BrainTurn("greeting", say="Welcome to {prompt:Clinic name}."),
        BrainTurn("caller", heard="book me", tools=(ToolStep("find_open_slots", {"day": "Tuesday"}),), say="{result}"),
        BrainTurn("key", key="2", say="Policies."),
        BrainTurn("key", say="Any other key."),
        BrainTurn("text", contains="transfer failed", say="Sorry, I could not transfer you."),
        BrainTurn("caller", say="Goodbye!", then=(ToolStep("end_conversation", {"reason": "bye"}),)),
    )
)


def test_inputs_take_the_next_turn_of_their_kind_in_order() -> None:
    brain = ScriptedBrain(SCRIPT, "Clinic name: Riverside")
    assert brain.on_text("The caller has just been connected. Greet them.") is SCRIPT.turns[0]
    assert brain.on_caller_turn() is SCRIPT.turns[1]
    assert brain.on_text("The caller pressed 7 on their keypad.") is SCRIPT.turns[3]  # any-key turn
    assert brain.on_text("The caller pressed 2 on their keypad.") is SCRIPT.turns[2]
    assert brain.on_text("The transfer failed: no credentials.") is SCRIPT.turns[4]
    assert brain.on_caller_turn() is SCRIPT.turns[5]
    assert brain.on_caller_turn() is None
    assert brain.on_text("The caller pressed 5 on their keypad.") is None
    assert brain.unanswered == ["caller turn 3", "keypress 'The caller pressed 5 on their keypad.'"]


def test_the_greeting_answers_only_the_first_text() -> None:
    brain = ScriptedBrain(SCRIPT)
    assert brain.on_text("The caller pressed 2 on their keypad.") is SCRIPT.turns[2]
    assert brain.on_text("Note: wrap up now.") is None


def test_what_it_says_comes_from_tool_results_and_the_prompt() -> None:
    brain = ScriptedBrain(SCRIPT, "You answer the phone.\nClinic name: Riverside Family Clinic\n")
    assert brain.render("Welcome to {prompt:clinic NAME}.", {}) == "Welcome to Riverside Family Clinic."
    assert (
        brain.render("{find_open_slots} / {result}", {"find_open_slots": "9:30.", "result": "9:30."}) == "9:30 / 9:30"
    )
    assert brain.render("Welcome to {prompt:Opening hours}.", {}) == "Welcome to ."
    assert brain.missing == ["prompt field 'Opening hours'"]
    assert brain.render("{not_a_tool} stays", {}) == "{not_a_tool} stays"


def test_prompt_fields_are_name_value_lines() -> None:
    fields = prompt_fields("Intro text, no field\nClinic name: A\n  Opening hours :  9 to 5 \nClinic name: B")
    assert fields == {"clinic name": "A", "opening hours": "9 to 5"}


def test_a_turn_needs_a_known_trigger() -> None:
    with pytest.raises(ValueError, match="triggered by one of"):
        BrainTurn("whenever", say="hi")


POLICIES = (
    "Cancellations: cancel at least 24 hours ahead or pay a 25 dollar fee.\n"
    "Opening hours: Monday to Friday, 8 am to 6 pm.\n"
    "Parking: free parking behind the clinic."
)


def test_the_offline_text_model_answers_from_its_prompt() -> None:
    model = ExtractiveTextModel(max_sentences=1)
    assert model.answer("What are your opening hours?", POLICIES) == "Opening hours: Monday to Friday, 8 am to 6 pm."
    assert "24 hours" in model.answer("Is there a fee if I cancel?", POLICIES)
    assert model.answer("Do you sell bicycles?", POLICIES) == "I don't have information about that."


def test_a_strands_agent_runs_on_the_offline_text_model() -> None:
    agent = Agent(model=ExtractiveTextModel(), system_prompt=POLICIES, callback_handler=None)
    assert "free parking" in str(agent("Where can I park?"))
