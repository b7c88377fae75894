"""Tests of the Twilio integration."""
