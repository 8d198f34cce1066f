"""Fragment: (thread, slot) map, replication, repeat on threads/registers,
inferred slots, bijectivity up to replication."""
import numpy as np
import pytest

from tilelang.layout import Fragment, make_fully_replicated_layout_fragment, make_gemm_fragment_8x8


def test_basic_fragment():
    f = Fragment((8, 8), forward_thread_fn=lambda i, j: 4 * i + j // 2, forward_index_fn=lambda i, j: j % 2)
    assert f.thread_extent == 32 and f.num_slots == 2
    assert f.map(3, 5) == (14, 1)
    assert f.is_bijective_up_to_replication()


def test_forward_fn_form():
    f = Fragment((8, 8), forward_fn=lambda i, j: (4 * i + j // 2, j % 2))
    assert f.is_equal(make_gemm_fragment_8x8())


def test_inferred_slots_row_major_over_free_dims():
    f = Fragment((128, 4), forward_thread_fn=lambda i, j: i)
    assert f.num_slots == 4 and f.map(7, 3) == (7, 3)
    assert f.is_bijective_up_to_replication()


def test_not_bijective_detected():
    f = Fragment((8, 8), forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j % 4)
    assert not f.is_bijective_up_to_replication()


def test_replication():
    f = Fragment((16,), forward_thread_fn=lambda i, rep: i + 16 * rep, forward_index_fn=lambda i: 0, replicate=2)
    assert f.thread_extent == 32 and f.map(3, rep=1) == (19, 0)
    assert f.is_bijective_up_to_replication()
    g = make_gemm_fragment_8x8().replicate(4)
    assert g.replicate_size == 4 and g.thread_extent == 128
    assert g.map(1, 2, rep=3) == (5 + 96, 0)
    assert g.is_bijective_up_to_replication()
    assert g.replicate(2).thread_extent == 256


def test_repeat_on_registers_and_threads():
    atom = make_gemm_fragment_8x8()
    regs = atom.repeat([2, 1], repeat_on_thread=False)
    assert regs.get_input_shape() == [16, 8] and regs.num_slots == 4 and regs.thread_extent == 32
    thr = atom.repeat([2, 2], repeat_on_thread=True, lower_dim_first=False)
    assert thr.thread_extent == 128 and thr.num_slots == 2
    assert thr.map(8, 0)[0] == 32 and thr.map(0, 8)[0] == 64       # warp = m + 2 n
    thr2 = atom.repeat([2, 2], repeat_on_thread=True, lower_dim_first=True)
    assert thr2.map(8, 0)[0] == 64 and thr2.map(0, 8)[0] == 32      # warp = 2 m + n
    for f in (regs, thr, thr2):
        assert f.is_bijective_up_to_replication()


def test_owner_table_inverts_map():
    f = make_gemm_fragment_8x8().repeat([2, 2], repeat_on_thread=False)
    own = f.owner_table()
    for i in range(16):
        for j in range(16):
            t, s = f.map(i, j)
            assert tuple(own[t, s]) == (i, j)
    assert (own >= 0).all()


def test_fully_replicated():
    f = make_fully_replicated_layout_fragment((4, 2), 64)
    assert f.thread_extent == 64 and f.num_slots == 8 and f.replicate_size == 64
    assert f.is_bijective_up_to_replication()
    assert f.map(3, 1, rep=17) == (17, 7)


def test_thread_expression_substitution():
    from tilelang.ir import expr as E
    f = make_gemm_fragment_8x8()
    t, s = f.map(E.Var("r"), 5)
    assert "r" in str(t) and str(s) == "1"


def test_index_may_not_use_replica():
    with pytest.raises(ValueError):
        Fragment((4,), forward_fn=lambda i, rep: (i, rep), replicate=2)


def test_thread_table_shape():
    f = make_gemm_fragment_8x8().replicate(2)
    assert f.thread_table().shape == (2, 8, 8)
    assert np.array_equal(f.thread_table()[1] - f.thread_table()[0], np.full((8, 8), 32))
