"""Text that reaches a terminal: control characters escaped so none can act there; pure."""

from __future__ import annotations

import re

# C0 controls (newline and tab included: every escaped string is shown on one line), DEL
# and the C1 controls, which some terminals act on as the ESC sequences they stand for.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def printable(text: str) -> str:
    """``text`` with each control character shown as ``\\xNN``; anything else unchanged."""
    return _CONTROL.sub(_escape, text)
