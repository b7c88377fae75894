"""``python -m telephony.simulation.local_twilio``: the local Twilio REST API as a process."""

from .api import main

if __name__ == "__main__":
    main()
