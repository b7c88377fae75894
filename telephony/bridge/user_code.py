"""Importing the user's own code by ``module:attribute`` (agent factories, scenario checks), as uvicorn does.

``voicebot`` runs as a console script, so Python puts the script's folder (a virtualenv's ``bin``) first on
``sys.path``, not the folder it was started from: ``--agent mybot:make_agent`` beside ``mybot.py`` would not
import, although ``uvicorn mybot:app`` would. :func:`import_current_folder` puts the working folder on the
path, as uvicorn does, and :func:`load_target` says what to do when an import still fails.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__all__ = ["UserCodeError", "import_current_folder", "load_target"]


class UserCodeError(RuntimeError):
    """``module:attribute`` cannot be loaded; the message says what to fix."""


def import_current_folder() -> None:
    """Make modules in the working folder importable (first on ``sys.path``), as ``uvicorn module:app`` does."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def load_target(spec: str, what: str) -> Any:
    """The object ``package.module:attribute`` names; ``what`` (e.g. "the agent factory") is for messages."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UserCodeError(f"{what} {spec!r} must look like 'package.module:function'")
    module = _import(module_name, spec, what)
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UserCodeError(
                f"{what} {spec!r}: module {module_name!r} ({getattr(module, '__file__', '?')}) has no attribute "
                f"{attribute!r}; it defines {', '.join(_functions_of(module)) or 'no functions'}"
            )
        target = getattr(target, part)
    return target


def _import(module_name: str, spec: str, what: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise UserCodeError(_not_found(module_name, spec, what)) from error
        raise UserCodeError(
            f"importing {module_name!r} for {what} {spec!r} failed: {error} (imported by {module_name}); install "
            f"{error.name!r} in the environment voicebot runs in (e.g. `uv add {error.name}` or "
            f"`pip install {error.name}`)"
        ) from error
    except Exception as error:  # any error in the user's module, named with where it came from
        raise UserCodeError(
            f"importing {module_name!r} for {what} {spec!r} raised {type(error).__name__}: {error}"
        ) from error


def _functions_of(module: Any) -> list[str]:
    """The public functions and classes ``module`` defines itself (not those it imports), for a did-you-mean."""
    return sorted(
        name
        for name, value in vars(module).items()
        if callable(value) and not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    )[:12]


def _not_found(module_name: str, spec: str, what: str) -> str:
    file = module_name.replace(".", "/") + ".py"
    return (
        f"cannot import {module_name!r} for {what} {spec!r}: no {file} in the current folder ({os.getcwd()}) or "
        f"in the installed packages. Run voicebot from the folder that holds {file}, or add that folder to "
        f"PYTHONPATH (e.g. PYTHONPATH=path/to/project)"
    )
