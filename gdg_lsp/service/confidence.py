"""When to stay silent (``gdg.showThreshold``, issue 28 item 4).

A suggestion the model itself found unlikely is more often one the user dismisses. The score
is the model's log-probability of the suggestion's first statement, its tokens together
(natural log): a mean per token alone hid short right answers with one doubtful token as
readily as long wrong ones, while the sum weighs how much of the line the model was unsure
of (``bench quality``'s threshold table, docs/EVALUATION.md). The first statement, because
that is what each preset's threshold was calibrated on (one line per suggestion, the
default ``gdg.maxLines``) and what the user reads first.

The threshold is the preset's, per language, measured at a line's end: a middle inside a
line is scored over tokens the decode went on with past where it was cut (``first_fit``), so
``auto`` leaves mid-line holes alone; so does a model that is no preset (nothing measured it).
"""

from __future__ import annotations

from gdg_lsp.backends import presets
from gdg_lsp.executor import Execution
from gdg_lsp.languages.base import Hole
from gdg_lsp.settings import Settings

LOW_CONFIDENCE = "low-confidence"


def threshold(settings: Settings, language: str, hole: Hole, model: str | None) -> float | None:
    """The log-probability below which a suggestion at ``hole`` is not shown (None: every one
    is); ``model``: the name of the weights that decode (``Backend.name``): ``auto`` is the
    threshold measured for them, so another checkpoint given the preset's name has none."""
    value = settings.show_threshold
    if value == "off":
        return None
    if value != "auto":
        return float(value)
    preset = presets.by_label(model) if settings.backend == "local" else None
    if preset is None or hole.suffix:
        return None
    return dict(preset.show_thresholds).get(language)


def score(execution: Execution) -> float | None:
    """The model's log-probability of the first kept statement (None: the engine did not say)."""
    first = next((s for s in execution.statements if s.text), None)
    return first.logprob if first is not None else None


def doubted_because(execution: Execution, limit: float | None) -> str | None:
    """Why ``execution`` is below ``limit`` (the reason the answer carries), or None."""
    value = score(execution)
    if limit is None or value is None or value >= limit:
        return None
    return f"{LOW_CONFIDENCE}: the model's log-probability of it, {value:.2f}, is below gdg.showThreshold ({limit:g})"
