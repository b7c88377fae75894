"""The call bridge: one ``CallSession`` per media stream, between Twilio's frames and the agent."""
