"""benchmarks/conformance.py sorts failures into classes: a TargetFeatureError (a located
error saying the target lacks an instruction) is our rejection, not an internal error."""
import importlib.util
import pathlib

_PATH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "conformance.py"
_spec = importlib.util.spec_from_file_location("conformance_script", _PATH)
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)


def test_target_feature_error_is_a_rejection():
    msg = ("tilelang.ir.errors.TargetFeatureError: k.py:372:13: TargetFeatureError: T.tma_copy(A -> A_shared): "
           "an FP4 unpack load needs sm_100")
    assert conformance.classify(msg) == "rejected"


def test_other_classes_unchanged():
    assert conformance.classify("ModuleNotFoundError: No module named 'tilelang.x'") == "missing name"
    assert conformance.classify("KeyError: 'x'") == "internal error"
    assert conformance.classify("AssertionError: Expected cp_async_gs<16> in generated CUDA source") == "source check"
