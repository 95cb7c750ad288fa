"""The faster local model: the packaged graph rewritten once into a dynamically quantised one, in a child.

The packaged ONNX graph stores int8 weights but computes in fp32. `quantized_model` rewrites it into
int8 matrix products (~1.5x the chunks/s) once, into the model cache. The rewrite runs in a child
process (`python -m memoryd.embeddings.quantize SOURCE TARGET`): folding and quantising hold the whole
graph several times over (a daemon's first start peaked at ~570 MB for it and stayed ~30 MB larger
for good, glibc keeping the freed pages), and `onnx` itself is then never imported by the daemon. A
child that exits gives every byte back; a start with the file already in the cache spawns nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from memoryd.errors import EmbeddingError
from memoryd.runtime.private import make_private_dirs

if TYPE_CHECKING:
    import onnx

    from memoryd.embeddings.models import ModelFiles, ModelSpec

log = structlog.get_logger(__name__)

QUANTIZE_RECIPE = "dynint8pc-v2"
"""Names the derived file; bump it whenever `rewrite` would write a different graph."""

ALREADY_DYNAMIC = "already-dynamic"
"""What the child prints when the source graph needs no rewrite (it quantises at run time already)."""
WRITTEN = "written"

CHILD_TIMEOUT_S = 600.0
"""The rewrite takes ~10 s on a 2-core laptop; ten minutes means the child is stuck, not slow."""

_QUANTIZED_OPS = frozenset({"DynamicQuantizeLinear", "MatMulInteger", "DynamicQuantizeMatMul", "QAttention"})


def derived_path(files: ModelFiles, cache_dir: Path, spec: ModelSpec) -> Path:
    """Where the rewritten graph of `files.onnx` lives in the cache (named by the source's checksum)."""
    from memoryd.embeddings.models import sha256_file  # noqa: PLC0415 - models imports httpx; keep this light

    source_sha = files.onnx_sha256 or sha256_file(files.onnx)
    return cache_dir / spec.name / "derived" / f"{source_sha[:16]}-{QUANTIZE_RECIPE}.onnx"


def quantized_model(files: ModelFiles, cache_dir: Path, spec: ModelSpec | None = None) -> Path:
    """A dynamically quantised copy of `files.onnx` in the cache (made once, by a child), or the graph itself.

    Blocking; raises `EmbeddingError` when the graph cannot be read or rewritten, with the child's reason.
    """
    from memoryd.embeddings.models import ALL_MINILM_L6_V2  # noqa: PLC0415 - see derived_path

    try:
        target = derived_path(files, cache_dir, spec or ALL_MINILM_L6_V2)
    except OSError as exc:
        raise EmbeddingError(f"cannot read the local model {files.onnx}: {exc}") from exc
    if target.is_file():
        return target
    verdict = _run_child(files.onnx, target)
    if verdict == ALREADY_DYNAMIC:
        return files.onnx
    _remove_older_recipes(target)
    return target


def _remove_older_recipes(target: Path) -> None:
    """Graphs derived from the same source by an earlier recipe are never read again: free their space."""
    source_key = target.name.split("-", 1)[0]
    for older in target.parent.glob(f"{source_key}-*.onnx"):
        if older != target:
            try:
                older.unlink(missing_ok=True)
            except OSError as exc:  # a cache shared read-only: the old file only costs space
                log.warning("cannot remove a model graph of an earlier recipe", path=str(older), error=str(exc))


def _run_child(source: Path, target: Path) -> str:
    log.info("preparing the local model in a child process", source=str(source), target=str(target))
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module, paths as separate arguments
            [sys.executable, "-m", "memoryd.embeddings.quantize", str(source), str(target)],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbeddingError(f"cannot prepare the local model {source}: the rewriting process failed ({exc})") from exc
    verdict = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode == 1 and done.stderr.strip():  # the child's own EmbeddingError, said whole
        raise EmbeddingError(done.stderr.strip())
    if done.returncode != 0 or verdict not in (ALREADY_DYNAMIC, WRITTEN):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EmbeddingError(
            f"cannot prepare the local model {source}: the rewriting process exited with status "
            f"{done.returncode} ({last})"
        )
    return verdict


def is_dynamically_quantized(onnx_file: Path) -> bool:
    """Whether the graph already quantises activations at run time (needs the `onnx` package)."""
    import onnx  # noqa: PLC0415 - heavy, and only the child (or a test) needs it

    model = onnx.load(str(onnx_file), load_external_data=False)
    return any(node.op_type in _QUANTIZED_OPS for node in model.graph.node)


def rewrite(source: Path, target: Path) -> str:
    """The child's work: write `target` from `source`, or say the source needs no rewrite.

    Recipe (measured in bench/local_model.py): fold the stored weights to fp32 with onnxruntime's
    basic optimiser, then quantise every MatMul with a constant weight (and the embedding tables) to
    int8 per channel, except the feed-forward down-projections (weights with more inputs than
    outputs): their inputs are GELU outputs with a long tail that 8-bit activations cannot hold, and
    keeping those six products in fp32 lifts the worst cosine to the unmodified model from 0.989 to
    0.996 on documentation prose, at ~15% of the throughput (55 instead of 65 chunks/s here).
    The exporter's NaN guards after each softmax are dropped first (see `drop_nan_guards`).
    """
    try:
        import onnx  # noqa: PLC0415
        import onnxruntime as ort  # noqa: PLC0415
        from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415
    except ImportError as exc:
        raise EmbeddingError(
            f"quantising the local model needs the onnx package ({exc}): pip install onnx, or turn quantisation off"
        ) from exc
    try:
        if is_dynamically_quantized(source):
            return ALREADY_DYNAMIC
        make_private_dirs(target.parent)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".quantize-") as scratch:
            folded = Path(scratch) / "folded.onnx"
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            graph = onnx.load(str(folded))
            keep_fp32 = _down_projections(graph)
            if drop_nan_guards(graph):
                onnx.save(graph, str(folded))
            del graph
            quantized = Path(scratch) / "quantized.onnx"
            quantize_dynamic(
                folded,
                quantized,
                op_types_to_quantize=["MatMul", "Gather"],
                per_channel=True,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=keep_fp32,
            )
            os.replace(quantized, target)
    except Exception as exc:  # onnx/onnxruntime raise assorted RuntimeError/ValueError/protobuf errors
        raise EmbeddingError(
            f"cannot quantise the local model {source}: {exc}; replace the file (or delete it from "
            f"{target.parent.parent} so it is downloaded again)"
        ) from exc
    return WRITTEN


def drop_nan_guards(model: onnx.ModelProto) -> int:
    """Remove `Where(IsNaN(x), c, x)` after a Softmax, in place; returns how many nodes went.

    The exported graph zeroes attention rows that came out NaN, which only a row whose every key is
    masked produces. No run of the encoder has one: every text it runs carries at least [CLS] and [SEP]
    (blank texts get a zero row without a run), padding masks only the keys past a text's own tokens, and
    the quantised model runs one unpadded text at a time. So the guard never fires, yet each layer held
    two more sequence-squared tensors for it. Measured in-process on 256-token runs
    of all-MiniLM-L6-v2: vectors the same to the last bit (cosine 1.0 on 40 source files), a run's peak
    ~10 MB lower (46 vs 55-60 MB above the loaded model) and ~10% more runs per second.
    """
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    kept_outputs = {out.name for out in graph.output}
    replaced: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in kept_outputs:
            continue
        test, guarded = producer.get(node.input[0]), producer.get(node.input[2])
        if test is None or test.op_type != "IsNaN" or test.input[0] != node.input[2]:
            continue
        if guarded is not None and guarded.op_type == "Softmax":
            replaced[node.output[0]] = node.input[2]
    if not replaced:
        return 0
    before = len(graph.node)
    survivors = [node for node in graph.node if not (node.op_type == "Where" and node.output[0] in replaced)]
    for node in survivors:
        for k, name in enumerate(node.input):
            node.input[k] = replaced.get(name, name)
    read = {name for node in survivors for name in node.input} | kept_outputs
    survivors = [node for node in survivors if node.op_type != "IsNaN" or node.output[0] in read]
    del graph.node[:]
    graph.node.extend(survivors)
    return before - len(survivors)


def _down_projections(model: onnx.ModelProto) -> list[str]:
    """Names of MatMul nodes whose constant weight narrows the hidden state (the FFN outputs)."""
    graph = model.graph
    shapes = {init.name: list(init.dims) for init in graph.initializer}
    names: list[str] = []
    for node in graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2:
            continue
        shape = shapes.get(node.input[1])
        if shape is not None and len(shape) == 2 and shape[0] > shape[1]:
            names.append(node.name)
    return names


def main(argv: list[str]) -> int:
    """`python -m memoryd.embeddings.quantize SOURCE TARGET`: prints the verdict; errors on stderr, exit 1."""
    if len(argv) != 2:
        sys.stderr.write("usage: python -m memoryd.embeddings.quantize SOURCE TARGET\n")
        return 2
    try:
        sys.stdout.write(rewrite(Path(argv[0]), Path(argv[1])) + "\n")
    except EmbeddingError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
