"""Recording calls and reading them back: the recorder, the file format, transcripts, call audio, the call library."""
