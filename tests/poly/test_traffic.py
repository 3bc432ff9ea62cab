"""Tests of the global-memory traffic counted from the footprints (per GPU block, summed over blocks)."""
import tesched as ts


def _gemm(M, N, K, tile):
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def test_without_block_loops_everything_is_one_block():
    A, B, C = _gemm(12, 10, 7, 4)
    t = ts.lower(ts.create_schedule(C.op), [A, B, C]).global_traffic
    assert t.blocks == 1 and t.reads == {"A": 84, "B": 70} and t.writes == {"C": 120}   # the accumulator is output


def test_blocks_count_their_own_footprints_with_partial_tiles():
    A, B, C = _gemm(12, 10, 7, 4)
    s = ts.create_schedule(C.op)
    s[C].gpu_tile(C.op.axis[0], C.op.axis[1], 4, 4)       # 3 x 3 blocks, the last column 2 wide
    t = ts.lower(s, [A, B, C]).global_traffic
    assert t.blocks == 9
    # each block reads its 4 rows of A and its columns of B in full, for each of the 3 x 3 blocks
    assert t.reads["A"] == 3 * (4 * 7) * 3 and t.reads["B"] == 3 * (7 * (4 + 4 + 2))
    assert t.writes == {"C": 120}


def test_stages_in_shared_memory_cost_no_traffic():
    from tests.codegen.test_gpu import shared_stage
    s, args = shared_stage(2, bind=False)          # C[i] = B[i] - B[i + 2] for i < 61, 4 blocks of 16
    t = ts.lower(s, args).global_traffic
    assert "B" not in t.reads and "B" not in t.writes
    assert t.reads == {"A": 18 + 18 + 18 + 15} and t.writes == {"C": 61} and t.total == 69 + 61
