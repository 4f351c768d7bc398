"""Print a Hugging Face folder of the default model (for engines that cannot read GGUF, e.g. vLLM).

gdg-lsp's converted-model cache is such a folder (GGUF de-quantized by transformers,
quantization_config dropped); convert it first when it is missing. Usage:
    python scripts/hf_model_dir.py [MODEL]     (default: the default model)
"""

from __future__ import annotations

import json
import sys

from gdg_lsp.backends import models


def main(argv: list[str]) -> int:
    spec = models.resolve(argv[0] if argv else "default")
    if spec.path.is_dir():
        print(spec.path)
        return 0
    folder = models.converted_dir(spec)
    if not (folder / "config.json").is_file():
        models.load(spec, "cpu")  # converts and caches
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("quantization_config"):
        print(f"{folder} still declares a quantization_config; engines would refuse it", file=sys.stderr)
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
