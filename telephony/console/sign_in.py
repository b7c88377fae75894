"""What a person sees when the console turns them away: a page that says how to sign in, not raw JSON.

Browsers show a 401's body when the operator cancels the password prompt (or after a wrong token);
scripts, which do not ask for HTML, keep getting the JSON ``detail``. The page has no script; its few
lines of style are inline (the console's stylesheet is behind the sign-in too), allowed by their hash alone.
"""

from __future__ import annotations

import base64
import hashlib

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

REALM = 'Basic realm="voicebot console", charset="UTF-8"'
STYLE = (
    "body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1d1d1b;background:#f7f7f5}"
    "main{max-width:40em;margin:2em auto;padding:1.5em;background:#fff;border:1px solid #dcdcd6;border-radius:10px}"
    "h1{font-size:1.3em;margin-top:0}#sign-in-reason{color:#b3261e;font-weight:600}code{font-size:.9em}"
    "a:focus-visible{outline:3px solid #1d4ed8;outline-offset:2px}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
PAGE_HEADERS = {
    "WWW-Authenticate": REALM,
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
}


class SignInRequired(Exception):
    """A browser asked for a console page without the console token (``wrong``: it sent another one)."""

    def __init__(self, wrong: bool) -> None:
        super().__init__("sign-in required")
        self.wrong = wrong


def page(wrong: bool) -> str:
    why = (
        "That password is not the console token." if wrong else "The console needs its token before it shows anything."
    )
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>voicebot · sign in</title><link rel="icon" href="data:,"><style>{STYLE}</style></head>
<body>
<main>
<h1>Sign in to the voicebot console</h1>
<p id="sign-in-reason">{why}</p>
<p>Reload this page and give any user name, with the value of <code>VOICEBOT_CONSOLE_TOKEN</code> (the one
<code>voicebot serve</code> was started with) as the password. Scripts can send
<code>Authorization: Bearer &lt;token&gt;</code> instead.</p>
<p><a href="/console">Try again</a></p>
</main>
</body>
</html>
"""


async def sign_in_page(request: Request, error: Exception) -> Response:
    """The app's handler for :class:`SignInRequired`: the page above, as a 401 that asks for credentials."""
    wrong = isinstance(error, SignInRequired) and error.wrong
    return HTMLResponse(page(wrong), status_code=401, headers=PAGE_HEADERS)
