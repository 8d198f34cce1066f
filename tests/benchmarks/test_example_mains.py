"""benchmarks/example_mains.py: the parser on lines the published examples' `main()` print
(copied from their print statements with realistic values), the pairing of the two packages'
runs, and the driver end to end on a stand-in examples folder."""
import importlib.util
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def mains():
    spec = importlib.util.spec_from_file_location("example_mains", os.path.join(ROOT, "benchmarks", "example_mains.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def brief(metrics):
    return [(m["label"], m["kind"], round(m["value"], 6), m["n"], m["role"]) for m in metrics]


def test_flash_attention_fwd(mains):
    # flash_attention/example_mha_fwd_bshd.py main(): "{:.2f} ms".format(...) pairs
    out = "All checks pass.\nRef: 4.21 ms\nRef: 130.62 TFlops\nTile-lang: 0.97 ms\nTile-lang: 566.85 TFlops\n"
    assert brief(mains.parse_metrics(out)) == [
        ("Ref", "latency", 4.21, 0, "reference"), ("Ref", "tflops", 130.62, 0, "reference"),
        ("Tile-lang", "latency", 0.97, 0, "kernel"), ("Tile-lang", "tflops", 566.85, 0, "kernel")]


def test_unitless_and_bare_numbers(mains):
    # the autotune branch, mla_decode, gemm_intrinsics' print(latency), sparse_mla_fwd, topk
    out = ("Best latency: 0.40123\nBest TFlops: 612.3\nBest config: {'block_M': 128, 'num_stages': 2}\n"
           "Ref latency: 1.5\nLatency: 0.0981 ms\nTFlops: 701.2 TFlops\n0.41234\n"
           "Average time: 1.234 ms\nfwd tflops =  412.3\nTilelang latency: 0.0123\n")
    assert brief(mains.parse_metrics(out)) == [
        ("Best latency", "latency", 0.40123, 0, "kernel"), ("Best TFlops", "tflops", 612.3, 0, "kernel"),
        ("Ref latency", "latency", 1.5, 0, "reference"), ("Latency", "latency", 0.0981, 0, "kernel"),
        ("TFlops", "tflops", 701.2, 0, "kernel"), ("", "latency", 0.41234, 0, "kernel"),
        ("Average time", "latency", 1.234, 0, "kernel"), ("fwd tflops", "tflops", 412.3, 0, "kernel"),
        ("Tilelang latency", "latency", 0.0123, 0, "kernel")]


def test_several_metrics_on_a_line_and_units(mains):
    # norm/layernorm.py, gemm_sp/example_gemm_sp.py, deepseek_v32/fp8_lighting_indexer.py,
    # deepseek_v4/sparse_attn_fwd_sm90.py, a "perf" line with GB/s, GFLOPS
    out = ("fwd  tilelang: 0.0123 ms   ref: 0.0456 ms\n"
           "Sparse TFLOPS: 310.20, Latency: 0.00042 s\nReference TFLOPS: 100.00, Latency: 1.2e-03 s\n"
           "logits_tflops: 301.5, logits_ms: 0.0123\n  tilelang: 0.123 ms  (456.78 TFlops)\n"
           "perf tl: 0.120 ms, 345.000 TFLOPS, 500.000 GB/s\nAverage flops: 1234.00 GFLOPS\n"
           "tilelang Latency: 0.0123ms\n")
    assert brief(mains.parse_metrics(out)) == [
        ("fwd tilelang", "latency", 0.0123, 0, "kernel"), ("ref", "latency", 0.0456, 0, "reference"),
        ("Sparse TFLOPS", "tflops", 310.2, 0, "kernel"), ("Latency", "latency", 0.42, 0, "kernel"),
        ("Reference TFLOPS", "tflops", 100.0, 0, "reference"), ("Latency", "latency", 1.2, 1, "reference"),
        ("logits_tflops", "tflops", 301.5, 0, "kernel"), ("logits_ms", "latency", 0.0123, 0, "kernel"),
        ("tilelang", "latency", 0.123, 0, "kernel"), ("tilelang", "tflops", 456.78, 0, "kernel"),
        ("perf tl", "latency", 0.12, 0, "kernel"), ("perf tl", "tflops", 345.0, 0, "kernel"),
        ("perf tl", "gbps", 500.0, 0, "kernel"), ("Average flops", "tflops", 1.234, 0, "kernel"),
        ("tilelang Latency", "latency", 0.0123, 0, "kernel")]


def test_throughput_takes_the_role_of_its_latency(mains):
    # the "Torch latency / Flops / Tilelang latency / Flops" sequence (gemm_tcgen05, aws/gemm)
    out = ("Torch latency: 0.30 ms\nFlops: 458.1 TFLOPS\nTilelang latency: 0.25 ms\nFlops: 549.7 TFLOPS\n")
    assert brief(mains.parse_metrics(out)) == [
        ("Torch latency", "latency", 0.3, 0, "reference"), ("Flops", "tflops", 458.1, 0, "reference"),
        ("Tilelang latency", "latency", 0.25, 0, "kernel"), ("Flops", "tflops", 549.7, 1, "kernel")]


def test_unlabelled_lines_take_their_role_by_order(mains):
    # flash_decoding/example_mha_inference.py prints the reference's time, then the kernel's
    out = "All checks passed!\n1.52 ms\n45.26 TFlops\n0.2718 ms\n252.81 TFlops\n"
    got = brief(mains.parse_metrics(out, "flash_decoding/example_mha_inference.py"))
    assert got == [("", "latency", 1.52, 0, "reference"), ("", "tflops", 45.26, 0, "reference"),
                   ("", "latency", 0.2718, 1, "kernel"), ("", "tflops", 252.81, 1, "kernel")]


def test_lines_that_are_no_metric(mains):
    out = ("Speedup: 1.23x\ndiff: 1e-05\ncost_ref: 1234567\nCUDA device capability: 90\n"
           "Running BlockSparse MatMul Benchmark for M=1024, N=1024, K=1024\nTarget Block Sparsity: 0.5\n"
           "Using default kernel with block size (128, 128, 32)\nrepeat = 100\nseqlen = 4096\n"
           "tensor([[ 0.1234, -1.5000],\n        [ 2.0000,  0.5000]], device='cuda:0', dtype=torch.float16)\n"
           "Persistent GEMM Speedup: 1.0412\n"
           # a torch.profiler key_averages() table (fp8_lighting_indexer): rows and totals
           "-----------------  ------------  ------------  ------------  ------------\n"
           "             Name     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls\n"
           "  mqa_attn_kernel     123.456us        98.76%     123.456us     123.456us             1\n"
           "Self CPU time total: 1.234ms\nSelf CUDA time total: 125.001us\n")
    assert mains.parse_metrics(out) == []
    # the number inside the label is not the kernel time (deepseek_mhc/example_mhc_bwd.py)
    got = brief(mains.parse_metrics("\nKernel execution time (repeat = 100): 12.345 ms\n"))
    assert got == [("Kernel execution time (repeat = 100)", "latency", 12.345, 0, "kernel")]


def test_pair_ratio_and_geomean(mains):
    def side(text):
        return {"rc": 0, "seconds": 1.0, "metrics": mains.parse_metrics(text)}
    ours = {"a.py": side("Ref: 4.00 ms\nTile-lang: 1.00 ms\nTile-lang: 500.00 TFlops\n"),
            "b.py": side("Latency: 2.0 ms\n")}
    published = {"a.py": side("Ref: 4.00 ms\nTile-lang: 2.00 ms\nTile-lang: 250.00 TFlops\n"),
                 "b.py": side("Latency: 1.0 ms\nExtra latency: 3.0 ms\n")}
    rows = {(r["file"], r["label"], r["kind"]): r for r in mains.pair(ours, published)}
    assert rows[("a.py", "Tile-lang", "latency")]["ratio"] == 2.0     # published slower: ours faster
    assert rows[("a.py", "Tile-lang", "tflops")]["ratio"] == 2.0      # ours / published
    assert rows[("a.py", "Ref", "latency")]["ratio"] == 1.0
    assert rows[("b.py", "Latency", "latency")]["ratio"] == 0.5
    assert rows[("b.py", "Extra latency", "latency")]["ours"] is None
    assert rows[("b.py", "Extra latency", "latency")]["ratio"] is None
    assert mains.geomean([2.0, 0.5, None]) == pytest.approx(1.0)
    meta = {"commit": "abc", "date": "2026-12-02", "device": "NVIDIA H200", "published": "/tmp/pubpkg",
            "examples": "x", "command": "python benchmarks/example_mains.py"}
    ours["c.py"] = {"rc": 1, "seconds": 0.5, "metrics": [], "error": "RuntimeError: no CUDA GPU"}
    md = mains.markdown(meta, mains.pair(ours, published), ours, published, {"d.py": "needs fla (not installed)"})
    assert "published / ours: 1.000** over 2 paired" in md      # kernel latencies 2.0 and 0.5
    assert "references" in md and "1.000 over 1" in md
    assert "| c.py | ours | 1 | 0.5 | RuntimeError: no CUDA GPU |" in md
    assert "- d.py: needs fla (not installed)" in md


def test_missing_modules(mains, tmp_path):
    (tmp_path / "helper.py").write_text("import not_a_module_anywhere_xyz\nimport os\n")
    (tmp_path / "ex.py").write_text("import torch_like_missing_abc.sub\nfrom helper import x\nimport tilelang\n"
                                    "try:\n    import optional_missing_def\nexcept ImportError:\n    pass\n"
                                    "def f():\n    from inner_missing_ghi import y\n")
    assert mains.missing_modules(tmp_path / "ex.py") == {
        "torch_like_missing_abc", "not_a_module_anywhere_xyz", "inner_missing_ghi"}


def _stand_in(tmp_path):
    """An examples/ folder whose files print like the published ones, faster under ours, and a
    published package folder; which package a run has is read from PYTHONPATH."""
    ex = tmp_path / "examples"
    (ex / "gemm").mkdir(parents=True)
    pub = tmp_path / "pubpkg"
    (pub / "tilelang").mkdir(parents=True)
    speed = "import os\nslow = 2.0 if 'pubpkg' in os.environ['PYTHONPATH'].split(':')[0] else 1.0\n"
    (ex / "gemm" / "example_gemm.py").write_text(
        speed + "if __name__ == '__main__':\n    print('All check passed.')\n"
        "    print(f'tilelang Latency: {0.5 * slow}ms')\n")
    (ex / "gemm" / "example_crash.py").write_text(
        "print('Ref: 1.00 ms')\nraise RuntimeError('no CUDA GPU: torch.cuda.is_available() is False')\n")
    (ex / "gemm" / "example_needs.py").write_text("import fla_not_installed_here\n")
    return ex, pub


def test_driver_end_to_end(mains, tmp_path, capsys):
    ex, pub = _stand_in(tmp_path)
    files = "gemm/example_gemm.py,gemm/example_crash.py,gemm/example_needs.py,gemm/absent.py"
    out = tmp_path / "out"
    assert mains.main(["--examples", str(ex), "--published", str(pub), "--out", str(out), "--files", files,
                       "--device", "NVIDIA H200", "--timeout", "60", "--logs", str(out / "logs")]) == 0
    (report,) = out.glob("*_h200_example_mains.json")
    data = json.loads(report.read_text())
    (row,) = [r for r in data["rows"] if r["file"] == "gemm/example_gemm.py"]
    assert (row["ours"], row["published"], row["ratio"], row["role"]) == (0.5, 1.0, 2.0, "kernel")
    assert data["ours"]["gemm/example_crash.py"]["error"].startswith("RuntimeError: no CUDA GPU")
    assert data["skipped"] == {"gemm/example_needs.py": "needs fla_not_installed_here (not installed)",
                               "gemm/absent.py": "no such file in --examples"}
    md = report.with_suffix(".md").read_text()
    assert "published / ours: 2.000** over 1" in md and "## Not run" in md
    assert (out / "logs" / "gemm__example_gemm.py.published.log").read_text().startswith("All check passed.")

    # a deadline too short for any file: every file is listed as skipped, none runs
    out2 = tmp_path / "out2"
    mains.main(["--examples", str(ex), "--out", str(out2), "--files", "gemm/example_gemm.py",
                "--device", "NVIDIA H200", "--deadline", "5"])
    data2 = json.loads(next(out2.glob("*.json")).read_text())
    assert data2["ours"] == {} and data2["skipped"]["gemm/example_gemm.py"].startswith("deadline")

    # the next call resumes from that report: the file the deadline left out runs now
    out3 = tmp_path / "out3"
    mains.main(["--examples", str(ex), "--out", str(out3), "--files", "gemm/example_gemm.py",
                "--device", "NVIDIA H200", "--resume", str(next(out2.glob("*.json")))])
    data4 = json.loads(next(out3.glob("*.json")).read_text())
    assert data4["ours"]["gemm/example_gemm.py"]["metrics"][0]["value"] == 0.5 and data4["skipped"] == {}

    # two partial reports merged into one table
    merged = tmp_path / "merged"
    mains.main(["--merge", f"{report},{next(out2.glob('*.json'))}", "--out", str(merged)])
    data3 = json.loads(next(merged.glob("*.json")).read_text())
    assert "gemm/example_gemm.py" in data3["ours"] and "gemm/example_gemm.py" not in data3["skipped"]
    capsys.readouterr()


def test_only_selects_folders_and_substrings(mains):
    rels = mains.select(None, ["gemm/", "mla_decode_ws"])
    assert "gemm/example_gemm.py" in rels and "deepseek_mla/example_mla_decode_ws.py" in rels
    assert not [r for r in rels if r.startswith(("dequantize_gemm/", "grouped_gemm/", "deepseek_deepgemm/"))]


def test_bad_arguments(mains, tmp_path):
    with pytest.raises(SystemExit):
        mains.main(["--examples", str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit):
        mains.main(["--examples", str(tmp_path), "--published", str(tmp_path)])   # no tilelang/ inside


def test_default_files_exist_in_the_published_checkout(mains):
    import subprocess
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=ROOT, capture_output=True, text=True)
    main_tree = os.path.dirname(os.path.abspath(os.path.join(ROOT, common.stdout.strip() or ".git")))
    examples = os.path.join(main_tree, ".pub", "examples")   # .pub is git-excluded, beside the main tree
    if not os.path.isdir(examples):
        pytest.skip("no published checkout at .pub/")
    assert [f for f in mains.DEFAULT_FILES if not os.path.exists(os.path.join(examples, f))] == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
