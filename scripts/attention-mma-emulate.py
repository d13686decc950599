#!/usr/bin/env python3
# Replays kernels/cuda/attention_mma.cu's index math for one thread block on the CPU, in fp64, with
# the PTX ISA's semantics of ldmatrix(.x4, .trans), mma.m16n8k16 fragments and shfl_xor, and
# compares the block's output with plain attention. It checks the shared-memory addresses, the
# fragment bookkeeping, the masking and the epilogue, not the hardware (asm constraints, cp.async
# ordering and speed need a GPU). Shared memory starts as NaN, so a read of anything the kernel
# did not write (padding, unfilled rows) poisons the result.
#   python3 scripts/attention-mma-emulate.py   (a python3 with numpy; exit 1 on a mismatch; ~1 min)
# Keep in step with the kernel when either changes.
import sys
import numpy as np
def run(D, kWarps, seq_len, q_begin, rng):
    DP = (D + 15)//16*16; LD = DP + 8; BM = 16*kWarps; BN = 64
    kv = BN*LD; koff = BM*LD; voff = koff + 2*kv
    smem = np.full(voff + 2*kv, np.nan, dtype=np.float64)  # element-addressed (16-bit units)
    Q = rng.standard_normal((seq_len, D)); K = rng.standard_normal((seq_len, D)); V = rng.standard_normal((seq_len, D))
    scale = 1/np.sqrt(D); sl2 = scale*np.log2(np.e)
    def load_rows(dst, src, rows, max_rows):  # src: array rows
        for r in range(max_rows):
            for c in range(D//8):
                smem[dst + r*LD + c*8: dst + r*LD + c*8 + 8] = src[r, c*8:c*8+8] if r < rows else 0
    # zero pad columns
    for r in range(BM + 4*BN): smem[r*LD + D: r*LD + DP] = 0
    q_rows = min(BM, seq_len - q_begin)
    load_rows(0, Q[q_begin:], q_rows, BM)
    def ldsm(addrs_bytes, trans):  # addrs: per lane byte address; returns regs[lane][i] = (lo, hi)
        regs = [[None]*4 for _ in range(32)]
        for i in range(4):
            rows = [addrs_bytes[8*i + r]//2 for r in range(8)]
            mat = np.array([smem[a:a+8] for a in rows])  # 8x8
            if trans: mat = mat.T
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                regs[lane][i] = (mat[g, 2*t], mat[g, 2*t+1])
        return regs
    def mma(d, a, b0, b1):  # d[lane][4], a[lane][4 regs of pairs], b regs per lane
        A = np.zeros((16, 16)); B = np.zeros((16, 8))
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            A[g, 2*t:2*t+2] = a[lane][0]; A[g+8, 2*t:2*t+2] = a[lane][1]
            A[g, 2*t+8:2*t+10] = a[lane][2]; A[g+8, 2*t+8:2*t+10] = a[lane][3]
            B[2*t:2*t+2, g] = b0[lane]; B[2*t+8:2*t+10, g] = b1[lane]
        C = A @ B
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            d[lane][0] += C[g, 2*t]; d[lane][1] += C[g, 2*t+1]; d[lane][2] += C[g+8, 2*t]; d[lane][3] += C[g+8, 2*t+1]
    out = np.full((q_rows, D), np.nan)
    kv_steps = (seq_len + BN - 1)//BN
    def load_kv(step):
        rows = min(BN, seq_len - step*BN); buf = step & 1
        load_rows(koff + buf*kv, K[step*BN:], rows, BN); load_rows(voff + buf*kv, V[step*BN:], rows, BN)
    for warp in range(kWarps):
        # (blocks are emulated warp by warp: the emulation has no concurrency; buffers reloaded per warp)
        o = [[[0.0]*4 for _ in range(32)] for _ in range(DP//8)]
        m = [[-np.inf]*2 for _ in range(32)]; lsum = [[0.0]*2 for _ in range(32)]
        for step in range(kv_steps):
            load_kv(step); buf = step & 1
            s = [[[0.0]*4 for _ in range(32)] for _ in range(BN//8)]
            kb = koff + buf*kv
            for kk in range(DP//16):
                qf = ldsm([((warp*16 + (l & 15))*LD + (l >> 4)*8 + kk*16)*2 for l in range(32)], False)
                for j in range(BN//16):
                    b = ldsm([(kb + ((l & 7) + ((l >> 4) << 3))*LD + ((l >> 3) & 1)*8 + j*16*LD + kk*16)*2 for l in range(32)], False)
                    mma(s[2*j], qf, [b[l][0] for l in range(32)], [b[l][1] for l in range(32)])
                    mma(s[2*j+1], qf, [b[l][2] for l in range(32)], [b[l][3] for l in range(32)])
            valid = seq_len - step*BN
            if valid < BN:
                for n in range(BN//8):
                    for l in range(32):
                        for e in range(4):
                            if n*8 + (l & 3)*2 + (e & 1) >= valid: s[n][l][e] = -np.inf
            for h in range(2):
                mx = [max(max(s[n][l][2*h], s[n][l][2*h+1]) for n in range(BN//8)) for l in range(32)]
                mx = [max(mx[l], mx[l ^ 1]) for l in range(32)]; mx = [max(mx[l], mx[l ^ 2]) for l in range(32)]
                for l in range(32):
                    mn = max(m[l][h], mx[l]*sl2); alpha = 2.0**(m[l][h] - mn); m[l][h] = mn
                    sm = 0
                    for n in range(BN//8):
                        for e in (2*h, 2*h+1):
                            s[n][l][e] = 2.0**(s[n][l][e]*sl2 - mn); sm += s[n][l][e]
                    lsum[l][h] = lsum[l][h]*alpha + sm
                    for d in range(DP//8): o[d][l][2*h] *= alpha; o[d][l][2*h+1] *= alpha
            vb = voff + buf*kv
            for kk in range(BN//16):
                a = [[(s[2*kk][l][0], s[2*kk][l][1]), (s[2*kk][l][2], s[2*kk][l][3]), (s[2*kk+1][l][0], s[2*kk+1][l][1]), (s[2*kk+1][l][2], s[2*kk+1][l][3])] for l in range(32)]
                for j in range(DP//16):
                    b = ldsm([(vb + (l & 15)*LD + (l >> 4)*8 + kk*16*LD + j*16)*2 for l in range(32)], True)
                    mma(o[2*j], a, [b[l][0] for l in range(32)], [b[l][1] for l in range(32)])
                    mma(o[2*j+1], a, [b[l][2] for l in range(32)], [b[l][3] for l in range(32)])
        # epilogue: stage into the warp's Q rows, then 16-byte chunks
        inv = []
        for l in range(32):
            row = []
            for h in range(2):
                tot = lsum[l][h] + lsum[l ^ 1][h]; tot2 = tot + (lsum[l ^ 2][h] + lsum[l ^ 3][h])
                row.append(1/tot2)
            inv.append(row)
        stage = warp*16*LD
        for l in range(32):
            g, c = l >> 2, (l & 3)*2
            for d in range(DP//8):
                smem[stage + g*LD + d*8 + c: stage + g*LD + d*8 + c + 2] = [o[d][l][0]*inv[l][0], o[d][l][1]*inv[l][0]]
                smem[stage + (g+8)*LD + d*8 + c: stage + (g+8)*LD + d*8 + c + 2] = [o[d][l][2]*inv[l][1], o[d][l][3]*inv[l][1]]
        for i in range(16*(D//8)):
            r, ch = i // (D//8), i % (D//8)
            if warp*16 + r < q_rows: out[warp*16 + r, ch*8:ch*8+8] = smem[stage + r*LD + ch*8: stage + r*LD + ch*8 + 8]
    Sref = Q[q_begin:q_begin+q_rows] @ K.T * scale
    P = np.exp(Sref - Sref.max(1, keepdims=True)); P /= P.sum(1, keepdims=True)
    ref = P @ V
    return np.abs(out - ref).max()
rng = np.random.default_rng(0)
worst = 0.0
for D, W, L, qb in [(72, 4, 130, 64), (80, 4, 65, 0), (64, 4, 1, 0), (128, 4, 127, 64), (72, 8, 15, 0), (80, 4, 200, 128)]:
    err = run(D, W, L, qb, rng)
    worst = max(worst, err) if np.isfinite(err) else np.inf
    print(f"head_dim {D:3} warps {W} seq_len {L:3} q_begin {qb:3}: max |emulated - reference| = {err:.2e}", flush=True)
sys.exit(0 if worst < 1e-12 else 1)
