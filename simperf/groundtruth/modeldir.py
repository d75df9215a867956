"""A model directory SGLang can serve with `--load-format dummy`: config.json, a tokenizer, generation_config.json.

Random weights run the same kernels at the same speed as real ones, and need no download. The tokenizer is a
word-level one whose vocabulary is `t0 .. t{V-1}` split on whitespace, with no special tokens, so ids round-trip
exactly and bench_serving's `--tokenize-prompt` sends exactly the input lengths it asks for. Greedy decoding of
random weights repeats tokens, which does not matter: bench_serving sets `ignore_eos`, so output lengths are exact.

Also: a stand-in for the ShareGPT file that bench_serving's `random` dataset samples its prompt words from (the GPU
hosts have no network), made of independent random word sequences so that no two prompts share a prefix.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from simperf.models.zoo import zoo_names

# Fields a real checkpoint's config.json carries that the zoo's subsets leave out, per HF model_type
# (values from the public Qwen3 / Llama-3.1 / DeepSeek-V2 config.json files).
_CHECKPOINT_FIELDS: dict[str, dict[str, Any]] = {
    "qwen3": dict(
        bos_token_id=151643,
        eos_token_id=151645,
        attention_dropout=0.0,
        initializer_range=0.02,
        sliding_window=None,
        use_sliding_window=False,
        use_cache=True,
    ),
    "qwen3_moe": dict(
        bos_token_id=151643,
        eos_token_id=151645,
        attention_dropout=0.0,
        initializer_range=0.02,
        sliding_window=None,
        use_sliding_window=False,
        use_cache=True,
        output_router_logits=False,
        router_aux_loss_coef=0.001,
    ),
    "llama": dict(
        bos_token_id=128000,
        eos_token_id=[128001, 128008, 128009],
        attention_dropout=0.0,
        initializer_range=0.02,
        pretraining_tp=1,
        use_cache=True,
    ),
    "deepseek_v2": dict(
        bos_token_id=100000,
        eos_token_id=100001,
        initializer_range=0.02,
        use_cache=True,
        attention_dropout=0.0,
    ),
    "deepseek_v3": dict(
        bos_token_id=0, eos_token_id=1, initializer_range=0.02, use_cache=True, attention_dropout=0.0
    ),
}


# the shipped model zoo (simperf/models/zoo/*.json), where a plan's or the command line's zoo names are read from
ZOO_DIR = Path(__file__).resolve().parents[1] / "models" / "zoo"


class ModelDirError(ValueError):
    """A model that cannot be turned into a servable directory."""


def source_config(model: str, zoo_dir: Path = ZOO_DIR) -> dict[str, Any]:
    """The HF config of a plan's `model`: a zoo name, a directory with config.json, or a config.json file."""
    path = Path(model)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" and path.exists():
        return _checked_config(path)
    if model in zoo_names():
        return json.loads((zoo_dir / f"{model}.json").read_text(encoding="utf-8"))
    raise ModelDirError(
        f"model {model!r}: neither a zoo name ({', '.join(zoo_names())}) nor a directory/config.json that exists"
    )


def _checked_config(path: Path) -> dict[str, Any]:
    """A user's config.json, read as predict reads model.config: a JSON list ended in an internal error, a missing
    or textual vocab_size in "error: vocab_size" after config.json was written, vocab_size 0 in a 0-word tokenizer,
    and malformed counts (num_key_value_heads 0) in a directory SGLang cannot serve."""
    from simperf.capabilities import family_of_architecture
    from simperf.models.zoo import UnknownModelError, arch_from_hf_config
    from simperf.strictyaml import read_error

    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ModelDirError(f"{path}: cannot read ({read_error(e)})") from None
    except json.JSONDecodeError as e:
        raise ModelDirError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise ModelDirError(f"{path}: a config.json holds one JSON object, got {type(config).__name__}")
    vocab = config.get("vocab_size")
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 1:
        raise ModelDirError(
            f"{path}: vocab_size: got {'nothing' if vocab is None else repr(vocab)}; the tokenizer's word count, "
            "a whole number of at least 1"
        )
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str) and family_of_architecture(archs[0]):
        try:
            arch_from_hf_config(path.parent.name or str(path), config, source=str(path))
        except UnknownModelError as e:
            raise ModelDirError(str(e)) from None
    return config


def checkpoint_config(config: dict[str, Any]) -> dict[str, Any]:
    """The zoo subset completed with the fields SGLang reads from a real checkpoint's config.json."""
    out = dict(config)
    for key, value in _CHECKPOINT_FIELDS.get(config.get("model_type", ""), {}).items():
        out.setdefault(key, value)
    out.setdefault("torch_dtype", "bfloat16")
    return out


MODEL_DIR_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def write_model_dir(config: dict[str, Any], out_dir: Path) -> Path:
    """config.json, generation_config.json and the word-level tokenizer; returns out_dir. Idempotent."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = checkpoint_config(config)
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    generation = {k: cfg.get(k) for k in ("bos_token_id", "eos_token_id")}
    (out_dir / "generation_config.json").write_text(json.dumps(generation, indent=1), encoding="utf-8")
    # kept only when it is this vocabulary's: another model's (Qwen3's 151,936 words under Llama's 128,256-row
    # embedding) sent token ids past the model's vocabulary
    if _word_tokenizer_size(out_dir / "tokenizer.json") != int(cfg["vocab_size"]):
        write_word_tokenizer(int(cfg["vocab_size"]), out_dir)
    return out_dir


def _word_tokenizer_size(path: Path) -> int | None:
    """Words of a tokenizer.json write_word_tokenizer wrote; None when there is none or it is another kind."""
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return len(vocab) if isinstance(vocab, dict) else None


def foreign_files(out_dir: Path) -> list[str]:
    """Names in `out_dir` that write_model_dir does not write: a real checkpoint's directory (its config.json and
    tokenizer would be replaced), a calibration directory, ..."""
    if not out_dir.is_dir():
        return []
    return sorted(p.name for p in out_dir.iterdir() if p.name not in MODEL_DIR_FILES)


def write_word_tokenizer(vocab_size: int, out_dir: Path) -> None:
    # The `tokenizers` library's own serialisation of a WordLevel model with a WhitespaceSplit pre-tokenizer (as
    # Tokenizer.to_str() writes it, tokenizers 0.22), written directly so that nothing here needs the library.
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {f"t{i}": i for i in range(vocab_size)}, "unk_token": "t0"},
    }
    (out_dir / "tokenizer.json").write_text(json.dumps(tokenizer, separators=(",", ":")), encoding="utf-8")
    # No bos/eos/unk declared: HF would treat those words as special and drop them when decoding, and a streamed
    # chunk with empty text would delay bench_serving's first-token time. Stopping is off anyway (ignore_eos).
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 1 << 20,
        "clean_up_tokenization_spaces": False,
        "add_bos_token": False,
        "add_eos_token": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=1), encoding="utf-8")


def is_prompt_source(path: Path) -> bool:
    """Whether an existing file is a ShareGPT-format prompt source (a JSON list of {conversations: [...]}), which
    write_prompt_source keeps as it is."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, list) and all(isinstance(d, dict) and "conversations" in d for d in data[:10])


def write_prompt_source(path: Path, vocab_size: int, conversations: int = 2000, seed: int = 0) -> Path:
    """A ShareGPT-format file of independent random word sequences (200-600 words each) for bench_serving's
    `random` dataset, which cuts or repeats them to the sampled input lengths."""
    if path.exists():
        return path
    rng = random.Random(seed)
    data = []
    for i in range(conversations):
        human = " ".join(f"t{rng.randrange(1, vocab_size)}" for _ in range(rng.randint(200, 600)))
        gpt = " ".join(f"t{rng.randrange(1, vocab_size)}" for _ in range(50))
        data.append(
            {
                "id": str(i),
                "conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": gpt}],
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)
    return path
