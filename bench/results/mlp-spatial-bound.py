"""Probe (device): how fast could a spatial pipeline of the GPT-3 / LLaMA MLP be (Kitsune's form:
GEMM1's stage and GEMM2's on disjoint SMs at once), with our TMA GEMM tiles?

A pipeline of the two stages on U and 132 - U SMs takes at least as long as the same two kernels
run side by side on those SMs *without* any dependency between them (waiting for H only adds
time), less the round trip of H through DRAM that a queue in L2 saves. So for each row this
times, in turns:

  bulk        GEMM1 then GEMM2 on one stream, every SM each (the persistent TMA kernels of
              `bench mlp`'s tma:persistent, the same tiles);
  side U      GEMM1 persistent on U blocks and GEMM2 on 132 - U blocks, on two streams, both
              started by one event and joined (independent: no H dependency);
  torch       cuBLAS through PyTorch in a CUDA graph (X @ W1, GeLU / SwiGLU, @ W2).

and prints the best split's time less H's DRAM round trip at the measured copy bandwidth (the
pipeline's bound) against cuBLAS's graph / 1.15 (issue 11's MLP goal).
"""
import json
import os
import statistics

ROWS = [("gpt3", 64), ("gpt3", 256), ("gpt3", 512), ("llama", 64), ("llama", 256),
        ("llama", 512)]
SPLITS = (33, 44, 55, 66, 77, 88, 99)
TURNS, REPS = 3, 20


def main() -> None:
    import numpy as np
    import torch

    from tilesync.harness.compile import compile_kernel
    from tilesync.harness.runner import GemmRunner
    from tilesync.harness.timing import hold_stream
    from tilesync.kernels.mlp import MODELS, mlp_spec, persistent_spec
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device
    from tilesync.runtime.stream import Event, Stream, elapsed_ms

    device = get_device()
    sms = device.sm_count
    s1, s2 = Stream(), Stream()

    rng = np.random.default_rng(0)

    def random_fp16(shape):
        """Random operands: the tensor cores draw less power on zeros, and a compute-bound
        GEMM then runs at clocks it would not keep on real data."""
        values = rng.standard_normal(shape, dtype=np.float32) * 0.1
        return DeviceBuffer.from_numpy(values.astype(np.float16).view(np.uint16))

    def operands(cfg):
        a = random_fp16((cfg.M, cfg.K))
        b = random_fp16((cfg.N, cfg.K) if cfg.b_layout == "col" else (cfg.K, cfg.N))
        c = DeviceBuffer.zeros((cfg.M, cfg.out_cols), np.uint16)
        return a, b, c

    def timed(enqueue) -> float:
        """Median ms of REPS back-to-back runs behind a hold kernel, events on s1."""
        enqueue()
        s1.synchronize()
        hold_stream(200_000 * REPS, s1)
        pairs = []
        for _ in range(REPS):
            start = s1.record(Event())
            enqueue()
            pairs.append((start, s1.record(Event())))
        s1.synchronize()
        return statistics.median(elapsed_ms(a, b) for a, b in pairs)

    copy_src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    copy_dst = torch.empty_like(copy_src)

    def measure_row(model: str, m: int) -> dict:
        spec = persistent_spec(mlp_spec(model, m, mma="tma"))
        cfg1, cfg2 = spec.cfg1, spec.cfg2
        ptx1, ptx2 = (compile_kernel(c, device.arch).ptx for c in (cfg1, cfg2))
        buf1, buf2 = operands(cfg1), operands(cfg2)
        full1, full2 = GemmRunner(cfg1, ptx1), GemmRunner(cfg2, ptx2)

        def on(runner, blocks):
            r = GemmRunner.__new__(GemmRunner)
            r.__dict__.update(runner.__dict__)
            r.grid = (min(blocks, runner.grid[0]), 1, 1)
            return r

        def bulk():
            full1.launch(*buf1, stream=s1)
            full2.launch(*buf2, stream=s1)

        def side(r1, r2):
            def run():
                go = s1.record(Event(timing=False))
                s2.wait_event(go)
                r1.launch(*buf1, stream=s1)
                r2.launch(*buf2, stream=s2)
                s1.wait_event(s2.record(Event(timing=False)))
            return run

        splits = {u: (on(full1, u), on(full2, sms - u)) for u in SPLITS}
        shape = MODELS[model]
        x = torch.randn(m, shape["K1"], dtype=torch.float16, device="cuda")
        w1 = torch.randn(shape["K1"], shape["N1"], dtype=torch.float16, device="cuda") * 0.01
        w2 = torch.randn(shape["H"], shape["K1"], dtype=torch.float16, device="cuda") * 0.01

        def mlp_torch():
            h = x @ w1
            if shape["epilogue"] == "swiglu":
                g, u = h.chunk(2, dim=1)
                h = torch.nn.functional.silu(g) * u
            else:
                h = torch.nn.functional.gelu(h, approximate="tanh")
            return h @ w2

        graph_stream = torch.cuda.Stream()
        with torch.cuda.stream(graph_stream):
            for _ in range(3):
                mlp_torch()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            mlp_torch()

        def torch_ms() -> float:
            graph.replay()
            torch.cuda.synchronize()
            times = []
            for _ in range(REPS):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                graph.replay()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b))
            return statistics.median(times)

        def copy_gbps() -> float:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            copy_dst.copy_(copy_src)
            a.record()
            for _ in range(5):
                copy_dst.copy_(copy_src)
            b.record()
            b.synchronize()
            return 2 * copy_src.numel() * 5 / (a.elapsed_time(b) * 1e-3) / 1e9  # read + written

        times = {"bulk": [], "torch_graph": [], **{f"side{u}": [] for u in SPLITS}}
        gbps = []
        for _ in range(TURNS):
            times["bulk"].append(timed(bulk))
            for u, (r1, r2) in splits.items():
                times[f"side{u}"].append(timed(side(r1, r2)))
            times["torch_graph"].append(torch_ms())
            gbps.append(copy_gbps())
        med = {k: statistics.median(v) for k, v in times.items()}
        best = min(SPLITS, key=lambda u: med[f"side{u}"])
        h_bytes = 2 * m * shape["H"] * 2  # H written and read once, fp16
        copy = statistics.median(gbps)
        credit = h_bytes / (copy * 1e9) * 1e3  # both count bytes read and bytes written
        bound = med[f"side{best}"] - credit
        goal = med["torch_graph"] / 1.15
        row = {"model": model, "M": m, "configs": [repr(cfg1), repr(cfg2)],
               "blocks": [full1.grid[0], full2.grid[0]], "median_ms": med, "samples_ms": times,
               "best_split": best, "h_round_trip_ms": credit, "pipeline_bound_ms": bound,
               "goal_ms": goal, "copy_gbps": copy}
        print(f"{model} M={m}: bulk {med['bulk']:.4f}  best side-by-side U={best} "
              f"{med[f'side{best}']:.4f}  (H round trip {credit:.4f})  pipeline bound "
              f"{bound:.4f}  torch graph {med['torch_graph']:.4f}  goal (/1.15) {goal:.4f}  "
              f"bound/goal {bound / goal:.3f}  | " + " ".join(
                  f"U{u}:{med[f'side{u}']:.4f}" for u in SPLITS), flush=True)
        return row

    out = [measure_row(model, m) for model, m in ROWS]
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "turns": TURNS, "reps": REPS, "splits": SPLITS, "rows": out},
              open(os.environ.get("OUT", "/tmp") + "/mlp-spatial-bound.json", "w"), indent=1)


if __name__ == "__main__":
    main()
