"""Templates built with a wrong size, dtype or argument say which parameter is wrong, at the
user's line."""
import pytest

from tilelang.carver import (ElementwiseTemplate, GEMVTemplate, GeneralReductionTemplate,
                             MatmulTemplate)
from tilelang.carver.template import TemplateParameterError


@pytest.mark.parametrize("kw,name", [(dict(M=0, N=8, K=8), "M"), (dict(M=8, N=-1, K=8), "N"),
                                     (dict(M=8, N=8, K=2.5), "K"), (dict(M=8, N=8), "K")])
def test_matmul_sizes(kw, name):
    with pytest.raises(TemplateParameterError, match=f"parameter `{name}`") as ei:
        MatmulTemplate(**kw)
    assert isinstance(ei.value, AssertionError) and isinstance(ei.value, ValueError)
    assert "test_errors.py" in str(ei.value)   # located at the user's line


def test_unknown_dtype_names_the_parameter():
    with pytest.raises(TemplateParameterError, match="parameter `accum_dtype`.*floot32") as ei:
        MatmulTemplate(M=8, N=8, K=8, accum_dtype="floot32")
    assert "float32" in str(ei.value)   # the hint suggests the close name
    with pytest.raises(TemplateParameterError, match="parameter `in_dtype`"):
        GEMVTemplate(N=8, K=8, in_dtype="half16x")


def test_shapes_and_structure():
    with pytest.raises(TemplateParameterError, match="parameter `shape`"):
        ElementwiseTemplate(shape=[4, 0])
    with pytest.raises(TemplateParameterError, match="parameter `structure`"):
        GeneralReductionTemplate(structure="SXR", shape=[2, 2, 2])
    with pytest.raises(TemplateParameterError, match="parameter `shape` has 2 axes"):
        GeneralReductionTemplate(structure="SSR", shape=[2, 2])


def test_topk_and_arch():
    t = MatmulTemplate(M=64, N=64, K=64)
    with pytest.raises(TemplateParameterError, match="topk"):
        t.recommend_hints(topk=0)
    with pytest.raises(TemplateParameterError, match="arch must be a device description"):
        t.with_arch("sm_90")
