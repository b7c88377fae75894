"""Scenario testing: a phone call to test an agent with, written as YAML, run through the real app and checked.

``scenario`` / ``scenario_file`` (the format and its reader), ``scenario_caller`` / ``goal_caller`` (who calls),
``runner`` / ``results`` (placing the calls), ``expectations`` / ``timing_checks`` (the verdict), ``command``
(``voicebot test``), ``phone_call`` (the pytest fixture), ``junit`` (the report for CI), and ``nova_replies`` /
``on_local_nova`` (a scenario's brain on the local Nova Sonic).
"""
