"""Pointing a Twilio phone number's voice webhook at the bot.

Reports each field it changes (old → new) so the operator sees what was overwritten, and writes
nothing when the number is already set up.
"""

from __future__ import annotations

from dataclasses import dataclass

from twilio.rest import Client


class NumberNotFound(LookupError):
    """The phone number is not an IncomingPhoneNumber of the account."""


@dataclass(frozen=True)
class NumberChange:
    phone_number: str
    sid: str
    field: str
    old: str | None
    new: str

    def __str__(self) -> str:
        return f"{self.phone_number} {self.field}: {self.old or '(none)'} -> {self.new or '(none)'}"


async def configure_number(
    client: Client,
    phone_number: str,
    voice_url: str,
    status_callback: str | None = None,
) -> list[NumberChange]:
    """Send ``phone_number``'s calls to ``voice_url`` (POST); returns what changed.

    A voice application on the number would take precedence over its voice URL, so it is
    detached (and reported); a SIP trunk would too, but detaching it is left to the operator.
    """
    # The filter also matches longer numbers that start with ours: keep the exact match only.
    candidates = await client.incoming_phone_numbers.list_async(phone_number=phone_number)
    number = next((n for n in candidates if n.phone_number == phone_number), None)
    if number is None or not number.sid:
        raise NumberNotFound(
            f"{phone_number} is not a number in account {client.account_sid}: buy it or check TWILIO_PHONE_NUMBER"
        )
    if number.trunk_sid:
        raise ValueError(
            f"{phone_number} belongs to SIP trunk {number.trunk_sid}, which overrides its voice URL: "
            "remove it from the trunk first"
        )

    wanted: dict[str, str] = {"voice_url": voice_url, "voice_method": "POST"}
    if status_callback:
        wanted.update(status_callback=status_callback, status_callback_method="POST")
    if number.voice_application_sid:
        wanted["voice_application_sid"] = ""

    changes = [
        NumberChange(phone_number, number.sid, field, old, new)
        for field, new in wanted.items()
        if ((old := getattr(number, field)) or "") != new
    ]
    if changes:
        await number.update_async(**{change.field: change.new for change in changes})
    return changes
