"""A client's WebSocket frames cut whole from the byte stream (RFC 6455, section 5.2): :class:`FrameCutter`.

Twilio sends 50 media messages a second on every call, each one small, final, masked text frame. websockets'
sans-I/O parser reads every frame through a chain of generators (a read per header field, an enum lookup, a
dataclass and its checks): about 6 µs a frame here, where cutting it from the buffer and unmasking it takes
under 1 µs. :class:`FrameCutter` does only the cutting: it finds where each whole frame ends and unmasks the
plain ones (final, no extension bits, text, masked, within the size limit). Every other frame, and anything
after a frame it cannot judge, is for websockets' own parser, whole, so websockets still enforces the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

from websockets.speedups import apply_mask  # type: ignore[attr-defined]  # websockets' C helper

__all__ = ["FINAL_TEXT", "Cut", "FrameCutter", "frame_length"]

FINAL_TEXT = 0x81
"""First byte of a whole text message in one frame: FIN set, no RSV bits, opcode 1."""
_MASKED = 0x80


def frame_length(buffer: bytes | bytearray, start: int) -> int | None:
    """Bytes of the frame that begins at ``start`` (header, mask key and payload); None until its header is in."""
    available = len(buffer) - start
    if available < 2:
        return None
    second = buffer[start + 1]
    header = _length_end(second)
    if available < header:
        return None
    size = second & 0x7F if header == 2 else int.from_bytes(buffer[start + 2 : start + header])
    return header + (4 if second & _MASKED else 0) + size


def _length_end(second: int) -> int:
    """Where a frame's length field ends, from its second byte: 7 bits, or 16 or 64 more (RFC 6455, 5.2)."""
    size = second & 0x7F
    return 2 if size < 126 else 4 if size == 126 else 10


@dataclass(frozen=True, slots=True)
class Cut:
    """One whole frame: its ``raw`` bytes, and ``text`` (the unmasked payload) if it is a plain text frame."""

    raw: bytes
    text: bytes | None = None


class FrameCutter:
    """Cuts a client's byte stream into whole frames; holds the bytes of the frame still arriving."""

    def __init__(self, max_payload: int) -> None:
        self.max_payload = max_payload
        self._partial = bytearray()
        self.oversized = False
        """A frame declared a payload over ``max_payload``: its bytes and everything after are ``rest``."""

    def feed(self, data: bytes) -> list[Cut]:
        """The whole frames ``data`` completes, in order. Stops (``oversized``) at a frame over the limit."""
        buffer = self._partial + data if self._partial else data
        start, end, cuts = 0, len(buffer), []
        while (length := frame_length(buffer, start)) is not None:
            if length - 14 > self.max_payload and _payload_length(buffer, start, length) > self.max_payload:
                self.oversized = True  # (the longest header is 14 bytes: only then can the payload be over)
                break
            if start + length > end:
                break
            cuts.append(_cut(buffer, start, length))
            start += length
        self._partial = bytearray(buffer[start:])
        return cuts

    def rest(self) -> bytes:
        """Bytes not yet cut (a frame still arriving, or all from an oversized frame on), handed over once."""
        rest, self._partial = bytes(self._partial), bytearray()
        return rest


def _payload_length(buffer: bytes | bytearray, start: int, length: int) -> int:
    second = buffer[start + 1]
    return length - _length_end(second) - (4 if second & _MASKED else 0)


def _cut(buffer: bytes | bytearray, start: int, length: int) -> Cut:
    raw = bytes(buffer[start : start + length])
    if raw[0] != FINAL_TEXT or not raw[1] & _MASKED:
        return Cut(raw)
    key_at = _length_end(raw[1])
    return Cut(raw, apply_mask(raw[key_at + 4 :], raw[key_at : key_at + 4]))
