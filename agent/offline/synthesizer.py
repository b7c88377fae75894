"""Text to speech with espeak-ng, loaded from the ``espeakng-loader`` wheel through ctypes.

espeak-ng is a formant synthesiser: robotic, but tiny, fast (hundreds of times real time) and shipped
with its data inside a PyPI wheel, so nothing is downloaded at run time. Its C library keeps one global
state (voice, parameters, callback), so every synthesis runs under one process-wide lock; callers on an
event loop must run :meth:`Synthesizer.synthesize` in a worker thread.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import espeakng_loader

from telephony.codec import Resampler

__all__ = ["BOT_VOICE", "CALLER_VOICE", "Synthesizer", "Voice", "VoiceError"]

# espeak-ng's classic API (speak_lib.h).
_AUDIO_OUTPUT_SYNCHRONOUS = 2  # synthesise in the calling thread, audio handed to the callback
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_RATE, _PITCH = 1, 3  # espeak_PARAMETER values
_EE_OK = 0
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


class VoiceError(ValueError):
    """An espeak-ng voice name that the bundled data does not have."""


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice: language (``en-us``, ``en`` for British) plus an optional variant (``+f3``, ``+m3``).

    ``words_per_minute`` 175 is espeak's default; slower speech is easier to follow on a phone line.
    """

    name: str = "en-us"
    words_per_minute: int = 165
    pitch: int = 50


BOT_VOICE = Voice("en-us", 165, 45)
"""The bot's voice: US English, espeak's default male."""
CALLER_VOICE = Voice("en-us+f2", 160, 50)
"""A clearly different voice for simulated callers (demos and tests)."""


class _Espeak:
    """The process-wide espeak-ng library: initialised once, used under a lock."""

    _instance: _Espeak | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        try:
            lib = ctypes.CDLL(espeakng_loader.get_library_path())
            data = espeakng_loader.get_data_path()
        except (OSError, RuntimeError) as error:
            raise RuntimeError(
                f"espeak-ng could not be loaded ({error}): "
                "reinstall it with `uv sync --reinstall-package espeakng-loader`"
            ) from error
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        self.rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data.encode(), 0)
        if self.rate <= 0:
            raise RuntimeError(f"espeak-ng failed to initialise with its data at {data}: reinstall espeakng-loader")
        self._lib = lib
        self._lock = threading.Lock()
        self._chunks: list[bytes] = []
        self._callback = _CALLBACK(self._collect)  # kept referenced: the library holds the pointer
        lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def shared(cls) -> _Espeak:
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _collect(self, wav: ctypes._Pointer[ctypes.c_short], samples: int, _events: int | None) -> int:
        if wav and samples > 0:
            self._chunks.append(ctypes.string_at(wav, samples * 2))
        return 0  # 0: go on synthesising

    def has_voice(self, name: str) -> bool:
        with self._lock:
            return self._lib.espeak_SetVoiceByName(name.encode()) == _EE_OK

    def synthesize(self, text: str, voice: Voice) -> bytes:
        """PCM16 at ``self.rate``.

        Seeding fixes espeak's noise generator, but not its pitch flutter, whose phase carries on from
        the previous utterance (a static in the wave generator that no call resets): the same text comes
        out a little different each time, and so differs between test runs. Tests of hearing must hold
        for many takes, not one.
        """
        encoded = text.encode() + b"\0"
        with self._lock:
            if self._lib.espeak_SetVoiceByName(voice.name.encode()) != _EE_OK:
                raise VoiceError(f"espeak-ng has no voice {voice.name!r}")
            self._lib.espeak_SetParameter(_RATE, voice.words_per_minute, 0)
            self._lib.espeak_SetParameter(_PITCH, voice.pitch, 0)
            self._lib.espeak_ng_SetRandSeed(1)
            self._chunks = []
            status = self._lib.espeak_Synth(encoded, len(encoded), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            audio, self._chunks = b"".join(self._chunks), []
        if status != _EE_OK:
            raise RuntimeError(f"espeak-ng could not synthesise {text!r} (status {status})")
        return audio


class Synthesizer:
    """Speaks text in one voice as PCM16 mono at ``sample_rate`` (espeak's 22050 Hz, resampled).

    Construction checks the voice, so a typo in a voice name fails at start-up, not mid-call.
    """

    def __init__(self, voice: Voice = BOT_VOICE, sample_rate: int = 16000) -> None:
        self.voice = voice
        self.sample_rate = sample_rate
        self._espeak = _Espeak.shared()
        if not self._espeak.has_voice(voice.name):
            raise VoiceError(
                f"espeak-ng has no voice {voice.name!r}: use a language such as 'en-us' or 'en' (British), optionally "
                "with a variant such as 'en-us+f3' (variants are in espeakng_loader's espeak-ng-data/voices/!v)"
            )

    def synthesize(self, text: str) -> bytes:
        """The whole utterance (blocking: a few milliseconds per second of speech)."""
        pcm = self._espeak.synthesize(text, self.voice)
        resampler = Resampler(self._espeak.rate, self.sample_rate)
        return resampler.process(pcm) + resampler.flush()
