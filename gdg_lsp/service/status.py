"""The state of the model behind the service, as the editor is told it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Status:
    """What the editor is told: ``state`` as in gdg/status (ready | loading | failed),
    and ``notice``, a message to show the user, when the situation changed."""

    state: str
    message: str
    notice: str | None = None
    model: str | None = None
    device: str | None = None
    notice_level: str = "warning"  # "info" for good news
