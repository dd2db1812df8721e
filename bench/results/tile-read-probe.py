"""Does the streaming GEMM's weight-read pattern (block j reading rows 64j..64j+63 of an N x K
fp16 matrix, k-tile by k-tile in a cp.async ring, every block at the same k at once) lose
bandwidth to that lockstep, against the same reads with each block starting at a rotated
k-tile? Pure reads, rotating buffers past L2, each repetition behind a hold kernel."""
import json
import statistics

SOURCE = r'''
extern "C" __global__ void hold(long long ns) {
    long long t0 = clock64();
    while (clock64() - t0 < ns * 2) {}
}
template <int S>
__global__ void tile_read(const char* __restrict__ W, long long row_bytes, int KT, int BKB,
                          int rot, int splits, unsigned* out) {
    extern __shared__ __align__(128) char smem[];
    const int tile_bytes = 64 * BKB, chunks = tile_bytes / 16, per_row = BKB / 16;
    const int j = blockIdx.x / splits, z = blockIdx.x % splits;
    const int k0 = (int)((long long)KT * z / splits), k1 = (int)((long long)KT * (z + 1) / splits);
    const int n = k1 - k0;
    const char* base = W + (long long)j * 64 * row_bytes;
    const int start = n ? (j * rot) % n : 0;
    unsigned acc = 0;
    auto issue = [&](int i) {
        if (i < n) {
            int kt = start + i; if (kt >= n) kt -= n;
            kt += k0;
            char* dst = smem + (i % S) * tile_bytes;
            for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
                int row = c / per_row, col = c % per_row;
                const char* src = base + row * row_bytes + (long long)kt * BKB + col * 16;
                unsigned d = (unsigned)__cvta_generic_to_shared(dst + c * 16);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src));
            }
        }
        asm volatile("cp.async.commit_group;");
    };
    for (int s = 0; s < S - 1; ++s) issue(s);
    for (int i = 0; i < n; ++i) {
        issue(i + S - 1);
        asm volatile("cp.async.wait_group %0;" :: "n"(S - 1));
        __syncthreads();
        acc ^= ((const unsigned*)(smem + (i % S) * tile_bytes))[threadIdx.x];
        __syncthreads();
    }
    if (acc == 0x12345678u) out[blockIdx.x] = acc;
}
'''
STAGES = (4, 8, 16)


def main() -> None:
    import cupy as cp
    import torch

    mod = cp.RawModule(code=SOURCE, options=("-arch=sm_90", "-std=c++17"),
                       name_expressions=[f"tile_read<{s}>" for s in STAGES])
    hold = mod.get_function("hold")
    kernels = {s: mod.get_function(f"tile_read<{s}>") for s in STAGES}
    for k in kernels.values():
        k.max_dynamic_shared_size_bytes = 200 * 1024
    out = cp.zeros(1 << 16, dtype=cp.uint32)
    stream = cp.cuda.Stream(non_blocking=True)

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
        return statistics.median(cp.cuda.get_elapsed_time(s, e) for s, e in evs) * 1e3

    big = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(2)]
    tstream = torch.cuda.ExternalStream(stream.ptr)

    def copy1g(r):
        with torch.cuda.stream(tstream):
            big[1].copy_(big[0])
    us = timed(copy1g, 10)
    copy_gbps = 2 * (1 << 30) / us / 1e3
    print(f"1 GiB copy: {us:.1f} us, {copy_gbps:.0f} GB/s", flush=True)
    results = {"copy_1GiB_GBps": copy_gbps, "rows": []}
    for name, N, K in (("llama_fc1", 5632, 8192), ("llama_fc2", 8192, 2816)):
        nbytes = N * K * 2
        copies = max(2, -(-(120 << 20) // nbytes))
        bufs = [cp.ones(nbytes // 4, dtype=cp.uint32) for _ in range(copies)]
        need = nbytes / (0.9 * copy_gbps) / 1e3
        print(f"{name}: {nbytes / 1e6:.1f} MB, 0.9 of the copy needs {need:.2f} us", flush=True)
        for bk in (64, 128):
            kt = K // bk
            for stages in STAGES:
                if stages * 64 * bk * 2 > 200 * 1024:
                    continue
                for splits in (1, 3):
                    for rot in (0, 1, 7):
                        def launch(r, bk=bk, kt=kt, stages=stages, splits=splits, rot=rot, N=N, K=K,
                                   bufs=bufs, copies=copies):
                            kernels[stages]((N // 64 * splits,), (128,),
                                            (bufs[r % copies], cp.int64(K * 2), cp.int32(kt),
                                             cp.int32(bk * 2), cp.int32(rot),
                                             cp.int32(splits), out),
                                            shared_mem=stages * 64 * bk * 2)
                        t = timed(launch)
                        frac = nbytes / t / 1e3 / copy_gbps
                        print(f"  BK {bk:3d} s{stages:2d} splits {splits} rot {rot}: "
                              f"{t:6.2f} us  {frac:.3f} of the copy", flush=True)
                        results["rows"].append(dict(name=name, bk=bk, stages=stages,
                                                    splits=splits, rot=rot, us=t,
                                                    fraction_of_copy=frac))
        bufs.clear()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
