"""The completion service: (document, position, settings) -> suggestion, over a local or remote model.

``build(settings)`` is the way in (``build.py``); ``local.py`` runs the model in
this process, ``remote.py`` uses a shared engine with a local fallback.
Importing this package loads no model code: torch comes with ``build``'s call.
"""

from gdg_lsp.service.build import (
    ModelInfo,
    ModelResolver,
    PreparedModel,
    Service,
    build,
    cache_root,
    install_model,
    local_model,
    model_info,
    model_presets,
    prepare_model,
    rebatch,
    with_random_models,
)
from gdg_lsp.service.status import Status

__all__ = ["ModelInfo", "ModelResolver", "PreparedModel", "Service", "Status", "build", "cache_root", "install_model",
           "local_model", "model_info", "model_presets", "prepare_model", "rebatch", "with_random_models"]
