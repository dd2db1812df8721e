"""Probe (device): the SM clock and board power while GEMM 4096^3 (fp16) runs back to back, for
our data-parallel kernel (the H100 record's choice), its stream-K twin and cuBLAS. Stream-K
fills the last partial round (116 of 132 SMs busy in data-parallel) and still ran no faster
(stream-k-fixup-probe): if the chip is held at its power limit, SMs left idle let the others
clock higher, and a full last round pays in clock what it gains in SMs.

`python bench/results/gemm-clock-probe.py` (torch; nvidia-smi samples every 10 ms; writes
$OUT/gemm-clock-probe.json, kept as gemm-clock-probe-<device>.json)."""
import json
import os
import statistics
import subprocess
import time
from dataclasses import replace

SECONDS = 2.0  # of back-to-back launches per form and turn
FIELDS = "clocks.sm,power.draw,temperature.gpu"


def _reasons_field() -> str:
    """The throttle-reason bitmask's query name where this driver knows it (renamed in 535)."""
    for name in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        probe = subprocess.run(["nvidia-smi", f"--query-gpu={name}", "--format=csv,noheader"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and "Field" not in probe.stdout:
            return "," + name
    return ""


def sampled(run, launches: int) -> dict:
    """Run `launches` back to back while nvidia-smi samples clock and power."""
    import torch

    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={FIELDS}",
                            "--format=csv,noheader,nounits", "-lms", "10"],
                           stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        run()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    time.sleep(0.05)
    smi.terminate()
    out, _ = smi.communicate()
    rows = []
    for line in out.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 3 and "N/A" not in parts[:3]:
            rows.append([float(x) for x in parts[:3]] + parts[3:])
    busy = [r for r in rows[len(rows) // 4:-3]]  # the samples inside the run
    return {"us_per_launch": seconds / launches * 1e6,
            "sm_mhz": statistics.median(r[0] for r in busy) if busy else None,
            "watts": statistics.median(r[1] for r in busy) if busy else None,
            "celsius": statistics.median(r[2] for r in busy) if busy else None,
            "samples": len(busy),
            "reasons": sorted({r[3] for r in busy if len(r) > 3})}


def main() -> None:
    global FIELDS
    FIELDS += _reasons_field()
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit,power.max_limit,"
                          "clocks.max.sm,clocks.max.mem", "--format=csv"],
                         capture_output=True, text=True).stdout, flush=True)
    import numpy as np
    import torch

    from tilesync.harness.runner import GemmRunner
    from tilesync.kernels.choice import stream_k_twins
    from tilesync.kernels.config import GemmConfig
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device

    record = json.load(open("bench/results/kernels-nvidia-h100-80gb-hbm3.json"))
    row = next(r for r in record["gemm"] if r["name"] == "gemm4096" and r["dtype"] == "f16")
    dp = replace(eval(row["choice"]["repr"], {"GemmConfig": GemmConfig}), stream_k_tiles=0)
    sk = stream_k_twins(dp)[0]
    device = get_device()
    rng = np.random.default_rng(0)
    n = 4096
    a = DeviceBuffer.from_numpy(rng.standard_normal((n, n)).astype(np.float16).view(np.uint16))
    bshape = (n, n)
    b = DeviceBuffer.from_numpy(rng.standard_normal(bshape).astype(np.float16).view(np.uint16))
    c = DeviceBuffer.zeros((n, n), np.uint16)
    runners = {"dp": GemmRunner(dp), "sk": GemmRunner(sk)}
    ta = torch.randn(n, n, dtype=torch.half, device="cuda")
    tb = torch.randn(n, n, dtype=torch.half, device="cuda")
    tc = torch.empty(n, n, dtype=torch.half, device="cuda")
    forms = {"dp": lambda: runners["dp"].launch(a, b, c),
             "sk": lambda: runners["sk"].launch(a, b, c),
             "cublas": lambda: torch.matmul(ta, tb, out=tc)}
    launches = int(SECONDS / 180e-6)
    for run in forms.values():  # warm up and load
        for _ in range(50):
            run()
    torch.cuda.synchronize()
    results = {name: [] for name in forms}
    for turn in range(2):
        for name, run in forms.items():
            results[name].append(sampled(run, launches))
            r = results[name][-1]
            print(f"turn {turn} {name:7s} {r['us_per_launch']:7.2f} us/launch  "
                  f"{r['sm_mhz']} MHz  {r['watts']} W  {r['celsius']} C  "
                  f"({r['samples']} samples) reasons {r['reasons']}", flush=True)
            time.sleep(1.0)
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "dp": repr(dp), "sk": repr(sk), "launches": launches, "results": results},
              open(os.environ.get("OUT", "/tmp") + "/gemm-clock-probe.json", "w"), indent=1)


if __name__ == "__main__":
    main()
