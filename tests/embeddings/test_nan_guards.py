"""`drop_nan_guards`: the exporter's `Where(IsNaN(softmax), 0, softmax)` goes, nothing else does."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from memoryd.embeddings.quantize import drop_nan_guards


def _graph(*, guarded_op: str = "Softmax") -> onnx.ModelProto:
    """x -> guarded_op -> Where(IsNaN(.), 0, .) -> MatMul(w) -> y, as the exported attention does."""
    nodes = [
        helper.make_node(guarded_op, ["x"], ["probs"], name="probs"),
        helper.make_node("IsNaN", ["probs"], ["nan"], name="nan"),
        helper.make_node("Where", ["nan", "zero", "probs"], ["safe"], name="safe"),
        helper.make_node("MatMul", ["safe", "w"], ["y"], name="mix"),
    ]
    graph = helper.make_graph(
        nodes,
        "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[
            helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
            helper.make_tensor("w", TensorProto.FLOAT, [3, 4], np.arange(12, dtype=np.float32).tolist()),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_the_guard_after_a_softmax_goes_and_the_output_stays() -> None:
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], dtype=np.float32)
    model = _graph()
    before = _run(model, x)
    assert drop_nan_guards(model) == 2
    assert [node.op_type for node in model.graph.node] == ["Softmax", "MatMul"]
    assert list(model.graph.node[1].input) == ["probs", "w"]
    onnx.checker.check_model(model)
    assert np.array_equal(_run(model, x), before)
    assert drop_nan_guards(model) == 0  # nothing left to drop


def test_a_guard_on_anything_but_a_softmax_is_kept() -> None:
    model = _graph(guarded_op="Relu")  # a NaN there could be real
    assert drop_nan_guards(model) == 0
    assert [node.op_type for node in model.graph.node] == ["Relu", "IsNaN", "Where", "MatMul"]
