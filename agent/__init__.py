"""The agent side: building the ``BidiAgent`` (model, voice, prompt, tools) for each call."""
