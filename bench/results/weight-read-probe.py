"""Probe (device, not a bench): how fast can any kernel read the weights of the LLaMA / GPT-3
MLP GEMMs at M <= 64, whose goal is 0.9 of a 1 GiB copy's rate? A streaming read (16-byte
non-allocating loads, four in flight a thread, each block a contiguous run; the fastest of 12
grids) against a 1 GiB copy timed the same way, rotating buffers so that every repetition
misses L2, the repetitions queued behind a hold kernel.
`python bench/results/weight-read-probe.py` (CuPy, torch)."""
import json
import statistics

SOURCE = r'''
#define LOAD(v, at) asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" \
    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(at))
extern "C" __global__ void hold(long long ns) {
    long long t0 = clock64();
    while (clock64() - t0 < ns * 2) {}
}
extern "C" __global__ void read_all(const uint4* __restrict__ p, unsigned long long n16,
                                    unsigned int* out, int unroll) {
    unsigned long long per = (n16 + gridDim.x - 1) / gridDim.x;
    unsigned long long lo = per * blockIdx.x, hi = min(lo + per, n16);
    unsigned int acc = 0;
    unsigned long long i = lo + threadIdx.x;
    for (; i + 3 * blockDim.x < hi; i += 4 * blockDim.x) {
        uint4 a, b, c, d;
        LOAD(a, p + i);
        LOAD(b, p + i + blockDim.x);
        LOAD(c, p + i + 2 * blockDim.x);
        LOAD(d, p + i + 3 * blockDim.x);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
        acc ^= c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < hi; i += blockDim.x) { uint4 a = p[i]; acc ^= a.x ^ a.y ^ a.z ^ a.w; }
    if (acc == 0x12345678u) out[blockIdx.x] = acc;
}
'''


def main() -> None:
    import cupy as cp
    import torch

    mod = cp.RawModule(code=SOURCE, options=("-arch=sm_90",))
    hold, read_all = mod.get_function("hold"), mod.get_function("read_all")
    out = cp.zeros(1 << 16, dtype=cp.uint32)
    stream = cp.cuda.Stream(non_blocking=True)
    results = {}

    def timed(launch, reps=40):
        with stream:
            launch(0)
            stream.synchronize()
            hold((1,), (1,), (cp.int64(200_000 * reps),))
            evs = []
            for r in range(reps):
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record(stream)
                launch(r)
                e.record(stream)
                evs.append((s, e))
            stream.synchronize()
        return statistics.median(cp.cuda.get_elapsed_time(s, e) for s, e in evs) * 1e3  # us

    big = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(2)]
    tstream = torch.cuda.ExternalStream(stream.ptr)

    def copy1g(r):
        with torch.cuda.stream(tstream):
            big[1].copy_(big[0])
    us = timed(copy1g, 10)
    copy_gbps = 2 * (1 << 30) / us / 1e3
    results["copy_1GiB_GBps"] = copy_gbps
    print(f"1 GiB copy: {us:.1f} us, {copy_gbps:.0f} GB/s", flush=True)
    for name, nbytes in (("llama_fc2", 8192 * 2816 * 2), ("llama_fc1", 5632 * 8192 * 2),
                         ("gpt3", 6144 * 12288 * 2)):
        copies = max(2, -(-(120 << 20) // nbytes))
        bufs = [cp.ones(nbytes // 16 * 4, dtype=cp.uint32) for _ in range(copies)]
        best = None
        for blocks in (132, 264, 528, 1056):
            for threads in (256, 512, 1024):
                def launch(r, blocks=blocks, threads=threads, bufs=bufs, copies=copies,
                           nbytes=nbytes):
                    read_all((blocks,), (threads,), (bufs[r % copies], cp.uint64(nbytes // 16),
                                                     out, cp.int32(4)))
                us = timed(launch)
                gbps = nbytes / us / 1e3
                if best is None or us < best[0]:
                    best = (us, blocks, threads, gbps)
        us, blocks, threads, gbps = best
        need = nbytes / (0.9 * copy_gbps) / 1e3
        print(f"{name}: {nbytes/1e6:.1f} MB read in {us:.2f} us ({blocks}x{threads}), "
              f"{gbps:.0f} GB/s = {gbps / copy_gbps:.3f} of the 1 GiB copy; 0.9 needs "
              f"{need:.2f} us", flush=True)
        results[name] = {"bytes": nbytes, "read_us": us, "grid": [blocks, threads],
                         "gbps": gbps, "fraction_of_copy": gbps / copy_gbps,
                         "us_for_0.9": need, "rotating": copies}
        del bufs
    print(json.dumps(results))


if __name__ == "__main__":
    main()
