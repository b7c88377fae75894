"""Speech recognition of a small phrase set with pocketsphinx, at telephone bandwidth.

Measured choices (see benchmarks/offline_model.py and tests/agent/test_offline_audio.py):

* **16 kHz features on band-limited audio.** The en-us acoustic model was trained on 16 kHz cepstra
  (filters up to 6.8 kHz). Telephone audio upsampled to 16 kHz simply leaves the top filters empty, and
  recognises 22-23 of 24 phrases; re-deriving the features for 8 kHz (filters cut at 3.5-3.8 kHz) moves
  every cepstral coefficient away from what the model knows and recognised almost nothing (0-7 of 24).
* **A noise floor.** Digital silence (μ-law 0xFF decodes to exact zeros) starves pocketsphinx's noise
  estimate and the decoder then hears nothing at all: 6-12 of 24 phrases. A faint, seeded noise
  (about -60 dBFS, far below any line noise) restores 22-23 of 24.
* **Two searches over one decoder.** A grammar of the phrases is accurate but maps anything said to some
  phrase; a free loop over the same words keeps it honest (see ``matcher.Heard``).
* **A dictionary cut to the phrases' words**, looked up in the wheel's CMUdict without loading it.
* **A second listen, half a frame later.** pocketsphinx cuts audio into 10 ms frames, so where the
  utterance starts against that grid changes what it hears: over the phone the final ``it`` of "what time
  is it" is faint, and for one start in four the free search then heard noise ("what can hi me can") and
  the phrase was refused. When nothing matches, :meth:`listen` decodes again 5 ms in. Measured on 60
  takes of that phrase: 46/60 understood on one listen, 60/60 with the second. Across the script (3 voices,
  6 start offsets) it moves 445/480 to 450/480, and out-of-script rejection from 30/72 to 28/72.

Decoding is blocking (~3 % of real time for the utterance): run :meth:`recognize` in a worker thread.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pocketsphinx
from pocketsphinx.lm import ArpaBoLM

from .lexicon import pronunciations, words_of
from .matcher import Heard, Match, PhraseMatcher

__all__ = ["SAMPLE_RATE", "PhraseRecognizer"]

SAMPLE_RATE = 16000
"""The acoustic model's rate: input must be PCM16 mono at 16 kHz (band-limited is fine)."""
NOISE_FLOOR_RMS = 30.0
"""About -61 dBFS: enough for the noise estimate, inaudible next to any real line noise."""
_CONSTRAINED, _FREE = "phrases", "words"
SECOND_LISTEN_OFFSET_S = 0.005
"""Half of pocketsphinx's 10 ms frame: the second listen sees every frame boundary moved."""


class PhraseRecognizer:
    """Recognises utterances (whole, end-pointed) against a fixed set of phrases.

    Building it loads the acoustic model (~6 MB) and takes a few tens of milliseconds. Build one
    per call; a lock serialises decoding all the same.
    """

    def __init__(self, phrases: Iterable[str], extra_pronunciations: Mapping[str, str] | None = None) -> None:
        self.phrases = sorted({" ".join(words_of(phrase)) for phrase in phrases} - {""})
        if not self.phrases:
            raise ValueError("the recogniser needs at least one phrase")
        vocabulary = {word for phrase in self.phrases for word in phrase.split()}
        lexicon = pronunciations(vocabulary, extra_pronunciations)
        self._decoder = pocketsphinx.Decoder(
            hmm=pocketsphinx.get_model_path("en-us/en-us"), dict=None, lm=None, loglevel="FATAL"
        )
        for word, variants in sorted(lexicon.items()):
            for index, phones in enumerate(variants):
                self._decoder.add_word(word if index == 0 else f"{word}({index + 1})", phones, False)
        self._decoder.add_jsgf_string(_CONSTRAINED, _grammar("phrases", [f"( {p} )" for p in self.phrases]))
        self._add_word_model(self.phrases)
        self._lock = threading.Lock()  # a thread left over from a stopped call may still be decoding

    def _add_word_model(self, phrases: list[str]) -> None:
        """A bigram model of the phrases' words (pocketsphinx loads language models from files only)."""
        model = ArpaBoLM(text="\n".join(phrases) + "\n", add_start=True)
        model.compute()
        with tempfile.TemporaryDirectory(prefix="voicebot-lm-") as folder:
            path = Path(folder) / "words.arpa"
            with path.open("w", encoding="utf-8") as file:
                model.write(file)
            self._decoder.add_lm_file(_FREE, str(path))

    def recognize(self, pcm16: bytes) -> Heard:
        """Both searches' transcriptions of one utterance (16 kHz PCM16, with a little silence around)."""
        with self._lock:
            audio = self._with_noise_floor(pcm16)
            return Heard(constrained=self._decode(_CONSTRAINED, audio), free=self._decode(_FREE, audio))

    def listen(self, pcm16: bytes, matcher: PhraseMatcher) -> tuple[Heard, Match | None]:
        """What was heard and the phrase it supports, listening a second time if the first finds none."""
        heard = self.recognize(pcm16)
        match = matcher.match_heard(heard)
        if match is not None:
            return heard, match
        offset = round(SECOND_LISTEN_OFFSET_S * SAMPLE_RATE) * 2
        again = self.recognize(pcm16[offset:])
        second = matcher.match_heard(again)
        return (again, second) if second is not None else (heard, None)

    def _decode(self, search: str, audio: bytes) -> str:
        self._decoder.activate_search(search)
        self._decoder.start_utt()
        self._decoder.process_raw(audio, False, True)
        self._decoder.end_utt()
        hypothesis = self._decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""

    def _with_noise_floor(self, pcm16: bytes) -> bytes:
        samples = np.frombuffer(pcm16[: len(pcm16) & ~1], dtype="<i2").astype(np.float64)
        samples += np.random.default_rng(0).normal(0.0, NOISE_FLOOR_RMS, samples.size)  # same audio, same result
        return np.clip(np.rint(samples), -32768, 32767).astype("<i2").tobytes()


def _grammar(name: str, alternatives: list[str]) -> bytes:
    """A JSGF grammar whose sentences are exactly the ``alternatives``."""
    return f"#JSGF V1.0;\ngrammar {name};\npublic <{name}> = {' | '.join(alternatives)};\n".encode()
