"""Scenario testing: a phone call to test an agent with, written as YAML, run through the real app and checked.

``scenario`` / ``scenario_file`` / ``expect_reader`` (the format and its reader, the fields declared in
``schema``, ``call_fields`` and ``expect_fields``, written out by ``reference``), ``consistency`` and
``preflight`` (every mistake, before any call), ``scenario_caller`` / ``goal_caller`` (who calls), ``runner`` /
``results`` (placing the calls), ``expectations`` / ``timing_checks`` / ``arguments`` / ``call_checks`` (the
verdict), ``command`` (``voicebot test``), ``phone_call`` (the pytest fixture), ``junit`` (the report for CI),
and ``nova_replies`` / ``on_local_nova`` / ``on_local_model`` (a scenario's brain on a local model server).
"""
