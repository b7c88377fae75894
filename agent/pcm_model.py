"""What every ``BidiModel`` of this project shares: a config dict and mono PCM rates.

The offline model, the replay model and the test fakes differ in what they say, not in how they
declare themselves to the Strands agent and the bridge (``get_audio_config()``).
"""

from __future__ import annotations

from typing import Any

from strands.bidi.models import BidiModel
from strands.bidi.models.configs import AudioConfig, AudioStreamConfig


class PcmModel(BidiModel):
    def __init__(self, model_id: str, input_rate: int, output_rate: int) -> None:
        self._config: dict[str, Any] = {"model_id": model_id}
        self.input_rate = input_rate
        self.output_rate = output_rate

    def get_config(self) -> Any:
        return self._config

    def update_config(self, **model_config: Any) -> None:
        self._config.update(model_config)

    def get_audio_config(self) -> AudioConfig:
        """Mono PCM16 at the rates this model hears and speaks: the bridge transcodes to them."""
        return AudioConfig(
            input=AudioStreamConfig(sample_rate=self.input_rate, channels=1, format="pcm"),
            output=AudioStreamConfig(sample_rate=self.output_rate, channels=1, format="pcm"),
        )
