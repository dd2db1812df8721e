"""Probe (device, not a bench): is fc2 faster with W2 in L2, and does an evict_last prefetch keep
W2 there while another 92 MB streams through L2? All on one stream, L2 emptied by reading a
clean 256 MB buffer. `python bench/results/mlp-w2-l2-probe.py llama 256` (torch, CuPy)."""
import statistics
import sys

SOURCE = r'''
extern "C" __global__ void prefetch_l2(const char* base, unsigned long long bytes,
                                       int policy_last, int chunk) {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    unsigned long long nthreads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned long long off = t * chunk; off < bytes; off += nthreads * chunk) {
        unsigned int n = (unsigned int)min((unsigned long long)chunk, bytes - off);
        if (policy_last)
            asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;"
                         :: "l"(base + off), "r"(n), "l"(pol) : "memory");
        else
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
                         :: "l"(base + off), "r"(n) : "memory");
    }
}
'''


def main() -> None:
    """The probe's forms, timed in turns; the device's packages imported here (the package's
    modules import them lazily)."""
    import cupy as cp
    import torch

    MODEL, M = sys.argv[1], int(sys.argv[2])
    D, F1, HID = {"llama": (8192, 5632, 2816), "gpt3": (12288, 6144, 6144)}[MODEL]
    h = torch.randn(M, HID, device="cuda", dtype=torch.float16)
    w2 = torch.randn(HID, D, device="cuda", dtype=torch.float16) * 0.02
    w1_like = torch.randn(D * F1 // 2, device="cuda", dtype=torch.float32)  # W1's bytes
    clean = torch.ones(64 << 20, device="cuda", dtype=torch.float32)  # 256 MB, read to empty L2
    kernel = cp.RawModule(code=SOURCE, options=("-arch=sm_90",)).get_function("prefetch_l2")
    stream = torch.cuda.current_stream()

    def prefetch(last: bool, blocks: int = 132) -> None:
        with cp.cuda.ExternalStream(stream.cuda_stream):
            kernel((blocks,), (128,), (w2.data_ptr(), cp.uint64(w2.numel() * 2),
                                       cp.int32(last), cp.int32(16384)))

    def timed(fn):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        return start, end

    def once(form: str) -> dict[str, float]:
        clean.sum()
        marks = {}
        if form == "hot":
            h @ w2
        elif form.startswith("prefetch"):
            last = form.endswith("last")
            marks["prefetch"] = timed(lambda: prefetch(last))
            if "stream" in form:
                marks["stream92MB"] = timed(lambda: w1_like.sum())
        elif form == "stream_only":
            marks["stream92MB"] = timed(lambda: w1_like.sum())
        marks["fc2"] = timed(lambda: h @ w2)
        torch.cuda.synchronize()
        return {k: a.elapsed_time(b) * 1000 for k, (a, b) in marks.items()}

    FORMS = ["cold", "hot", "prefetch", "prefetch_last", "stream_only", "prefetch_stream",
             "prefetch_last_stream"]
    for f in FORMS:
        once(f)
    results = {f: [once(f) for _ in range(25)] for f in FORMS}
    print(f"{MODEL} M={M}: W2 {w2.numel() * 2 / 1e6:.0f} MB; medians of 25 (us)")
    for f in FORMS:
        print(f"  {f:22s} " + "  ".join(f"{k} {statistics.median(r[k] for r in results[f]):7.1f}"
                                        for k in results[f][0]))


if __name__ == "__main__":
    main()
