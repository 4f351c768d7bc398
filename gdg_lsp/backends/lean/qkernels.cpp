// Matrix products over GGUF block-quantized weights, kept packed (quant.py drives them).
//
// A GGUF file stores each weight row as blocks: 4-8 bit codes and per-block scales
// (Q4_0 ... Q8_0: 32 weights a block; Q4_K, Q5_K, Q6_K: super-blocks of 256). Widening
// them to 16 bits doubles or triples what a decode step reads. Here each tensor is
// re-laid once, at load, into tiles of 16 output rows that the integer dot-product
// instructions read directly, and the activations are quantized to int8 per block of
// 32 inputs (their own scale each), so a product is
//
//     y[n] = sum_b dx_b * (S[n,b] * sum_i (c[n,i] - OFF) * xq[i] + M[n,b] * sum_i xq[i])
//
// with c the unsigned code of the weight, S its block scale and M its block minimum
// (or OFF a constant offset): exactly the GGUF weights, the only rounding being the
// activations' (at most half a step of dx_b per input). The same kernel runs a
// decode step (1 row), a draft (a few) and a prefill chunk (hundreds: int8 products
// are compute-bound there and twice bf16's rate on VNNI).
//
// Tile layout, per tile of 16 rows and block of 32 inputs: eight operands of 64 bytes,
// operand j holding inputs 4j..4j+3 of row r in bytes 4r..4r+3 (one 32-bit lane per
// row, as VPDPBUSD and PMADDUBSW sum 4 bytes into a lane); 4-bit codes share a byte
// (operand 2g low nibble, 2g+1 high), a 5th bit is a 64-bit mask per operand, 5th and
// 6th bits are 2-bit fields in two 64-byte planes, 8-bit codes are bytes. Scales are
// separate arrays [tile][group][16 rows] in the file's own precision (fp16, 6-bit
// and 8-bit integers), so the bytes read stay the file's.
//
// Kernels: AVX512-VNNI (VPDPBUSD) where the CPU has it, AVX2 (PMADDUBSW) elsewhere,
// chosen at run time; the library is compiled for plain x86-64 with per-function
// targets. Threads: OpenMP, which resolves to the runtime torch already loaded
// (libgomp.so.1), so the products share torch's threads instead of competing with them.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <algorithm>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) || defined(_M_X64)
#define QK_X86 1
#include <immintrin.h>
#endif

// plain loops compiled for each of these ISAs, one clone picked at load time
#if defined(QK_X86) && defined(__GNUC__) && !defined(__clang__)
#define QK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QK_CLONES
#endif

namespace {

// ggml's type ids (gguf.GGMLQuantizationType)
enum QType { Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q4_K = 12, Q5_K = 13, Q6_K = 14 };

constexpr int TILE = 16;
constexpr int BLOCK = 32;
constexpr int SUPER = 256;

struct Format {
    int bits;        // 4, 5, 6 or 8
    int code_bytes;  // per tile and block of 32
    int off;         // constant offset of the codes (symmetric formats), else 0
    bool affine;     // a minimum per block (M)
    bool ksuper;     // fp16 scales per super-block of 256, integer scales per block
    bool sub16;      // two integer scales per block (Q6_K's 16-input groups)
    int raw_block;   // bytes of one GGUF block
    int raw_elems;   // weights of one GGUF block
};

constexpr Format format_const(int qtype) {
    return qtype == Q4_0   ? Format{4, 256, 8, false, false, false, 18, 32}
           : qtype == Q4_1 ? Format{4, 256, 0, true, false, false, 20, 32}
           : qtype == Q5_0 ? Format{5, 320, 16, false, false, false, 22, 32}
           : qtype == Q5_1 ? Format{5, 320, 0, true, false, false, 24, 32}
           : qtype == Q8_0 ? Format{8, 512, 128, false, false, false, 34, 32}
           : qtype == Q4_K ? Format{4, 256, 0, true, true, false, 144, 256}
           : qtype == Q5_K ? Format{5, 320, 0, true, true, false, 176, 256}
           : qtype == Q6_K ? Format{6, 384, 32, false, true, true, 210, 256}
                           : Format{0, 0, 0, false, false, false, 0, 0};
}

bool format_of(int qtype, Format* f) {
    *f = format_const(qtype);
    return f->bits != 0;
}

// sizes of the packed arrays, per tile (elements of their type)
struct Sizes {
    int64_t codes, fs, fm, isc, imn;
};

Sizes sizes_of(const Format& f, int64_t K) {
    int64_t nb = K / BLOCK, groups = f.ksuper ? K / SUPER : nb;
    Sizes s;
    s.codes = nb * f.code_bytes;
    s.fs = groups * TILE;
    s.fm = f.affine ? groups * TILE : 0;
    s.isc = f.ksuper ? nb * TILE * (f.sub16 ? 2 : 1) : 0;
    s.imn = (f.ksuper && f.affine) ? nb * TILE : 0;
    return s;
}

struct Packed {
    int qtype;
    Format f;
    int64_t K, tiles;
    const uint8_t* codes;
    const uint16_t* fs;  // fp16 bits
    const uint16_t* fm;  // fp16 bits (Q4_1, Q5_1: the minimum; K-quants: dmin)
    const uint8_t* isc;  // K-quants: 6-bit scales (Q6_K: int8, two per block)
    const uint8_t* imn;  // K-quants: 6-bit minimums
};

inline uint16_t rd16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do { man <<= 1; ++e; } while (!(man & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

// Q4_K / Q5_K: the 6-bit scale and minimum of sub-block j (0..7) of a super-block
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// One GGUF row decoded: unsigned codes and the parameters of each block / super-block.
struct Row {
    std::vector<uint8_t> c;     // K codes
    std::vector<uint16_t> fs;   // per group
    std::vector<uint16_t> fm;   // per group (affine)
    std::vector<uint8_t> isc;   // per block (x2 for Q6_K)
    std::vector<uint8_t> imn;   // per block
};

void decode_row(int qtype, const Format& f, const uint8_t* raw, int64_t K, Row& row) {
    int64_t nblocks = K / f.raw_elems;
    uint8_t* c = row.c.data();
    for (int64_t b = 0; b < nblocks; ++b) {
        const uint8_t* p = raw + b * f.raw_block;
        uint8_t* cb = c + b * f.raw_elems;
        switch (qtype) {
            case Q4_0:
            case Q4_1: {
                row.fs[b] = rd16(p);
                const uint8_t* qs = p + 2;
                if (qtype == Q4_1) { row.fm[b] = rd16(p + 2); qs = p + 4; }
                for (int i = 0; i < 16; ++i) { cb[i] = qs[i] & 0xF; cb[i + 16] = qs[i] >> 4; }
                break;
            }
            case Q5_0:
            case Q5_1: {
                row.fs[b] = rd16(p);
                const uint8_t* qh = p + 2;
                if (qtype == Q5_1) { row.fm[b] = rd16(p + 2); qh = p + 4; }
                uint32_t high = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
                const uint8_t* qs = qh + 4;
                for (int i = 0; i < 16; ++i) {
                    cb[i] = (qs[i] & 0xF) | (((high >> i) & 1) << 4);
                    cb[i + 16] = (qs[i] >> 4) | (((high >> (i + 16)) & 1) << 4);
                }
                break;
            }
            case Q8_0: {
                row.fs[b] = rd16(p);
                for (int i = 0; i < 32; ++i) cb[i] = (uint8_t)((int)(int8_t)p[2 + i] + 128);
                break;
            }
            case Q4_K:
            case Q5_K: {
                row.fs[b] = rd16(p);
                row.fm[b] = rd16(p + 2);
                const uint8_t* scales = p + 4;
                const uint8_t* qh = p + 16;
                const uint8_t* qs = qtype == Q5_K ? p + 48 : p + 16;
                for (int j = 0; j < 8; ++j) scale_min_k4(j, scales, &row.isc[b * 8 + j], &row.imn[b * 8 + j]);
                for (int chunk = 0; chunk < 4; ++chunk) {
                    for (int l = 0; l < 32; ++l) {
                        uint8_t lo = qs[32 * chunk + l] & 0xF, hi = qs[32 * chunk + l] >> 4;
                        if (qtype == Q5_K) {
                            lo |= ((qh[l] >> (2 * chunk)) & 1) << 4;
                            hi |= ((qh[l] >> (2 * chunk + 1)) & 1) << 4;
                        }
                        cb[64 * chunk + l] = lo;
                        cb[64 * chunk + 32 + l] = hi;
                    }
                }
                break;
            }
            case Q6_K: {
                const uint8_t* ql = p;
                const uint8_t* qh = p + 128;
                const int8_t* sc = (const int8_t*)(p + 192);
                row.fs[b] = rd16(p + 208);
                for (int g = 0; g < 16; ++g) row.isc[b * 16 + g] = (uint8_t)sc[g];
                for (int half = 0; half < 2; ++half) {
                    const uint8_t* l0 = ql + 64 * half;
                    const uint8_t* h0 = qh + 32 * half;
                    uint8_t* o = cb + 128 * half;
                    for (int l = 0; l < 32; ++l) {
                        o[l] = (l0[l] & 0xF) | (((h0[l] >> 0) & 3) << 4);
                        o[l + 32] = (l0[l + 32] & 0xF) | (((h0[l] >> 2) & 3) << 4);
                        o[l + 64] = (l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4);
                        o[l + 96] = (l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4);
                    }
                }
                break;
            }
        }
    }
}

// Write row r of a tile from its decoded row.
void place_row(const Format& f, int64_t K, const Row& row, int r, uint8_t* codes, uint16_t* fs, uint16_t* fm,
               uint8_t* isc, uint8_t* imn) {
    int64_t nb = K / BLOCK, groups = f.ksuper ? K / SUPER : nb;
    for (int64_t b = 0; b < nb; ++b) {
        uint8_t* cb = codes + b * f.code_bytes;
        const uint8_t* c = row.c.data() + b * BLOCK;
        for (int j = 0; j < 8; ++j) {
            for (int i = 0; i < 4; ++i) {
                uint8_t code = c[4 * j + i];
                if (f.bits == 8) {
                    cb[64 * j + 4 * r + i] = code;
                    continue;
                }
                uint8_t* nib = cb + 64 * (j / 2) + 4 * r + i;
                *nib |= (j % 2 == 0) ? (code & 0xF) : (uint8_t)((code & 0xF) << 4);
                if (f.bits == 5) {
                    if (code & 0x10) cb[256 + 8 * j + (4 * r + i) / 8] |= (uint8_t)(1u << ((4 * r + i) % 8));
                } else if (f.bits == 6) {
                    cb[256 + 64 * (j / 4) + 4 * r + i] |= (uint8_t)(((code >> 4) & 3) << (2 * (j % 4)));
                }
            }
        }
        if (f.ksuper) {
            if (f.sub16) {
                isc[(b * 2 + 0) * TILE + r] = row.isc[2 * b];
                isc[(b * 2 + 1) * TILE + r] = row.isc[2 * b + 1];
            } else {
                isc[b * TILE + r] = row.isc[b];
                if (f.affine) imn[b * TILE + r] = row.imn[b];
            }
        }
    }
    for (int64_t g = 0; g < groups; ++g) {
        fs[g * TILE + r] = row.fs[g];
        if (f.affine) fm[g * TILE + r] = row.fm[g];
    }
}

// The value of weight (r, k) of a tile: the layout read back (for tests and row reads).
float tile_weight(const Packed& p, int64_t t, int r, int64_t k) {
    const Format& f = p.f;
    Sizes s = sizes_of(f, p.K);
    int64_t b = k / BLOCK;
    int j = (int)(k % BLOCK) / 4, i = (int)(k % 4);
    const uint8_t* cb = p.codes + t * s.codes + b * f.code_bytes;
    int code;
    if (f.bits == 8) {
        code = cb[64 * j + 4 * r + i];
    } else {
        uint8_t nib = cb[64 * (j / 2) + 4 * r + i];
        code = (j % 2 == 0) ? (nib & 0xF) : (nib >> 4);
        if (f.bits == 5) code |= ((cb[256 + 8 * j + (4 * r + i) / 8] >> ((4 * r + i) % 8)) & 1) << 4;
        if (f.bits == 6) code |= ((cb[256 + 64 * (j / 4) + 4 * r + i] >> (2 * (j % 4))) & 3) << 4;
    }
    int64_t g = f.ksuper ? k / SUPER : b;
    float d = half_to_float(p.fs[t * s.fs + g * TILE + r]);
    if (!f.ksuper) {
        if (f.affine) return d * (float)code + half_to_float(p.fm[t * s.fm + g * TILE + r]);
        return d * (float)(code - f.off);
    }
    if (f.sub16) {
        int h = (int)(k % BLOCK) / 16;
        int8_t sc = (int8_t)p.isc[t * s.isc + (b * 2 + h) * TILE + r];
        return d * (float)sc * (float)(code - f.off);
    }
    float sc = (float)p.isc[t * s.isc + b * TILE + r], mn = (float)p.imn[t * s.imn + b * TILE + r];
    float dmin = half_to_float(p.fm[t * s.fm + g * TILE + r]);
    return d * sc * (float)code - dmin * mn;
}

// Activations: int8 per block of 32 inputs with its own scale, and the codes' sums per 16.
QK_CLONES void quantize_row(const float* x, int64_t K, int8_t* xq, float* dx, int32_t* xs) {
    for (int64_t b = 0; b < K / BLOCK; ++b) {
        const float* v = x + b * BLOCK;
        float amax = 0.f;
#pragma omp simd reduction(max : amax)
        for (int i = 0; i < BLOCK; ++i) amax = std::max(amax, fabsf(v[i]));
        const float inv = amax > 0.f ? 127.f / amax : 0.f;
        int32_t q[BLOCK];
#pragma omp simd
        for (int i = 0; i < BLOCK; ++i) {
            // round to nearest (ties to even) by the 1.5 * 2^23 trick: |v * inv| <= 127
            q[i] = (int32_t)((v[i] * inv + 12582912.f) - 12582912.f);
        }
        int32_t s0 = 0, s1 = 0;
#pragma omp simd reduction(+ : s0)
        for (int i = 0; i < 16; ++i) s0 += q[i];
#pragma omp simd reduction(+ : s1)
        for (int i = 16; i < BLOCK; ++i) s1 += q[i];
        for (int i = 0; i < BLOCK; ++i) xq[b * BLOCK + i] = (int8_t)q[i];
        dx[b] = amax / 127.f;
        xs[2 * b] = s0;
        xs[2 * b + 1] = s1;
    }
}

void quantize_activations(const float* x, int64_t M, int64_t K, int8_t* xq, float* dx, int32_t* xs, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && M * K >= (1 << 16))
    for (int64_t m = 0; m < M; ++m) quantize_row(x + m * K, K, xq + m * K, dx + m * (K / BLOCK), xs + m * (K / 16));
}

constexpr int64_t ROWS_PER_PASS = 64;  // activation rows per pass over a tile (their accumulators stay in L1)
constexpr int64_t PAIRED_ROWS = 8;     // beyond this many rows, tiles are taken two at a time

#ifdef QK_X86

#define QK_TARGET_512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))
#define QK_TARGET_256 __attribute__((target("avx2,fma,f16c")))

// The codes of a tile's block as the eight operands of VPDPBUSD (unsigned bytes).
template <int BITS>
QK_TARGET_512 inline void load_ops_512(const uint8_t* cb, __m512i* op) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit5 = _mm512_set1_epi8(0x10), bits56 = _mm512_set1_epi8(0x30);
    if (BITS == 8) {
        for (int j = 0; j < 8; ++j) op[j] = _mm512_loadu_si512(cb + 64 * j);
        return;
    }
    for (int g = 0; g < 4; ++g) {
        __m512i v = _mm512_loadu_si512(cb + 64 * g);
        op[2 * g] = _mm512_and_si512(v, low4);
        op[2 * g + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    }
    if (BITS == 5) {
        for (int j = 0; j < 8; ++j) {
            uint64_t bits;
            memcpy(&bits, cb + 256 + 8 * j, 8);
            op[j] = _mm512_mask_add_epi8(op[j], (__mmask64)bits, op[j], bit5);
        }
    } else if (BITS == 6) {
        for (int h = 0; h < 2; ++h) {
            __m512i v = _mm512_loadu_si512(cb + 256 + 64 * h);
            op[4 * h + 0] = _mm512_or_si512(op[4 * h + 0], _mm512_and_si512(_mm512_slli_epi16(v, 4), bits56));
            op[4 * h + 1] = _mm512_or_si512(op[4 * h + 1], _mm512_and_si512(_mm512_slli_epi16(v, 2), bits56));
            op[4 * h + 2] = _mm512_or_si512(op[4 * h + 2], _mm512_and_si512(v, bits56));
            op[4 * h + 3] = _mm512_or_si512(op[4 * h + 3], _mm512_and_si512(_mm512_srli_epi16(v, 2), bits56));
        }
    }
}

// A tile's block parameters: the fp32 scale (x the integer scale of K-quants but Q6_K's),
// the minimum of affine formats, Q6_K's two integer scales.
struct Scales512 {
    __m512 scale, minimum;
    __m512i sc0, sc1;
};

template <int QT>
QK_TARGET_512 inline Scales512 block_scales_512(const Packed& p, const Sizes& s, int64_t t, int64_t b) {
    constexpr Format f = format_const(QT);
    const int64_t g = f.ksuper ? b / (SUPER / BLOCK) : b;
    Scales512 out;
    out.scale = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p.fs + t * s.fs + g * TILE)));
    out.minimum = _mm512_setzero_ps();
    out.sc0 = out.sc1 = _mm512_setzero_si512();
    if (f.ksuper && f.sub16) {
        const uint8_t* q = p.isc + t * s.isc + b * 2 * TILE;
        out.sc0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)q));
        out.sc1 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(q + TILE)));
    } else if (f.ksuper) {
        __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p.isc + t * s.isc + b * TILE))));
        __m512 mn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p.imn + t * s.imn + b * TILE))));
        __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p.fm + t * s.fm + g * TILE)));
        out.scale = _mm512_mul_ps(out.scale, sc);
        out.minimum = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dmin, mn));
    } else if (f.affine) {
        out.minimum = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p.fm + t * s.fm + g * TILE)));
    }
    return out;
}

// NT neighbouring tiles (t, t+1, ...) times rows m0 .. m0+rows of the activations: each
// activation broadcast feeds NT tiles' products (a prefill chunk), out[., col + 16 i] for tile t+i
template <int QT, int NT>
QK_TARGET_512 void tiles_avx512(const Packed& p, int64_t t, const int8_t* xq, const float* dx, const int32_t* xs,
                                int64_t m0, int64_t rows, float* out, int64_t ldo, int64_t col, const float* bias) {
    constexpr Format f = format_const(QT);
    const int64_t K = p.K, nb = K / BLOCK;
    const Sizes s = sizes_of(f, K);
    alignas(64) float acc[ROWS_PER_PASS * TILE * NT];
    for (int64_t m = 0; m < rows * NT; ++m) _mm512_store_ps(acc + m * TILE, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; ++b) {
        __m512i op[NT][8];
        Scales512 sc[NT];
        for (int i = 0; i < NT; ++i) {
            load_ops_512<f.bits>(p.codes + (t + i) * s.codes + b * f.code_bytes, op[i]);
            sc[i] = block_scales_512<QT>(p, s, t + i, b);
        }
        for (int64_t m = 0; m < rows; ++m) {
            const int64_t row = m0 + m;
            const int32_t* xw = (const int32_t*)(xq + row * K + b * BLOCK);
            __m512i s0[NT], s1[NT];
            for (int i = 0; i < NT; ++i) s0[i] = s1[i] = _mm512_setzero_si512();
            for (int j = 0; j < 8; ++j) {
                const __m512i x = _mm512_set1_epi32(xw[j]);
                for (int i = 0; i < NT; ++i) {
                    if (j < 4) s0[i] = _mm512_dpbusd_epi32(s0[i], op[i][j], x);
                    else s1[i] = _mm512_dpbusd_epi32(s1[i], op[i][j], x);
                }
            }
            const int32_t xa = xs[row * (K / 16) + 2 * b], xb = xs[row * (K / 16) + 2 * b + 1];
            const __m512 d = _mm512_set1_ps(dx[row * nb + b]);
            for (int i = 0; i < NT; ++i) {
                float* accm = acc + (m * NT + i) * TILE;
                __m512 a = _mm512_load_ps(accm);
                if (f.sub16) {
                    __m512i v = _mm512_add_epi32(
                        _mm512_mullo_epi32(_mm512_sub_epi32(s0[i], _mm512_set1_epi32(f.off * xa)), sc[i].sc0),
                        _mm512_mullo_epi32(_mm512_sub_epi32(s1[i], _mm512_set1_epi32(f.off * xb)), sc[i].sc1));
                    a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(sc[i].scale, d), a);
                } else {
                    __m512i v = _mm512_add_epi32(s0[i], s1[i]);
                    if (f.off) v = _mm512_sub_epi32(v, _mm512_set1_epi32(f.off * (xa + xb)));
                    a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(sc[i].scale, d), a);
                    if (f.affine) a = _mm512_fmadd_ps(sc[i].minimum, _mm512_mul_ps(d, _mm512_set1_ps((float)(xa + xb))), a);
                }
                _mm512_store_ps(accm, a);
            }
        }
    }
    for (int i = 0; i < NT; ++i) {
        const __m512 add = bias ? _mm512_loadu_ps(bias + (t + i) * TILE) : _mm512_setzero_ps();
        for (int64_t m = 0; m < rows; ++m)
            _mm512_storeu_ps(out + (m0 + m) * ldo + col + i * TILE, _mm512_add_ps(_mm512_load_ps(acc + (m * NT + i) * TILE), add));
    }
}

template <int NT>
void tiles_avx512_any(const Packed& p, int64_t t, const int8_t* xq, const float* dx, const int32_t* xs, int64_t m0,
                      int64_t rows, float* out, int64_t ldo, int64_t col, const float* bias) {
    switch (p.qtype) {
        case Q4_0: return tiles_avx512<Q4_0, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q4_1: return tiles_avx512<Q4_1, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_0: return tiles_avx512<Q5_0, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_1: return tiles_avx512<Q5_1, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q8_0: return tiles_avx512<Q8_0, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q4_K: return tiles_avx512<Q4_K, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_K: return tiles_avx512<Q5_K, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q6_K: return tiles_avx512<Q6_K, NT>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
    }
}

QK_TARGET_256 inline __m256i expand_bits(uint32_t bits) {
    // byte k of the result is 0xFF where bit k of ``bits`` is set
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i which = _mm256_set1_epi64x(0x8040201008040201LL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), pick);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, which), which);
}

template <int QT>
QK_TARGET_256 void tile_avx2(const Packed& p, int64_t t, const int8_t* xq, const float* dx, const int32_t* xs,
                             int64_t m0, int64_t rows, float* out, int64_t ldo, int64_t col, const float* bias) {
    constexpr Format f = format_const(QT);
    const int64_t K = p.K, nb = K / BLOCK;
    const Sizes s = sizes_of(f, K);
    alignas(32) float acc[ROWS_PER_PASS * TILE];
    for (int64_t m = 0; m < rows * TILE; m += 8) _mm256_store_ps(acc + m, _mm256_setzero_ps());
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit5 = _mm256_set1_epi8(0x10), bits56 = _mm256_set1_epi8(0x30);
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    const uint8_t* codes = p.codes + t * s.codes;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* cb = codes + b * f.code_bytes;
        const int64_t g = f.ksuper ? b / (SUPER / BLOCK) : b;
        for (int half = 0; half < 2; ++half) {  // rows 0..7, then 8..15
            __m256i op[8];
            if (f.bits == 8) {
                for (int j = 0; j < 8; ++j) op[j] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(cb + 64 * j + 32 * half)), flip);
            } else {
                for (int q = 0; q < 4; ++q) {
                    __m256i v = _mm256_loadu_si256((const __m256i*)(cb + 64 * q + 32 * half));
                    op[2 * q] = _mm256_and_si256(v, low4);
                    op[2 * q + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                }
                if (f.bits == 5) {
                    for (int j = 0; j < 8; ++j) {
                        uint32_t bits;
                        memcpy(&bits, cb + 256 + 8 * j + 4 * half, 4);
                        op[j] = _mm256_or_si256(op[j], _mm256_and_si256(expand_bits(bits), bit5));
                    }
                } else if (f.bits == 6) {
                    for (int h = 0; h < 2; ++h) {
                        __m256i v = _mm256_loadu_si256((const __m256i*)(cb + 256 + 64 * h + 32 * half));
                        op[4 * h + 0] = _mm256_or_si256(op[4 * h + 0], _mm256_and_si256(_mm256_slli_epi16(v, 4), bits56));
                        op[4 * h + 1] = _mm256_or_si256(op[4 * h + 1], _mm256_and_si256(_mm256_slli_epi16(v, 2), bits56));
                        op[4 * h + 2] = _mm256_or_si256(op[4 * h + 2], _mm256_and_si256(v, bits56));
                        op[4 * h + 3] = _mm256_or_si256(op[4 * h + 3], _mm256_and_si256(_mm256_srli_epi16(v, 2), bits56));
                    }
                }
            }
            const int64_t lane0 = 8 * half;
            __m256 scale = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p.fs + t * s.fs + g * TILE + lane0)));
            __m256 minimum = _mm256_setzero_ps();
            __m256i sc0 = _mm256_setzero_si256(), sc1 = _mm256_setzero_si256();
            if (f.ksuper && f.sub16) {
                const uint8_t* q = p.isc + t * s.isc + b * 2 * TILE + lane0;
                sc0 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)q));
                sc1 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(q + TILE)));
            } else if (f.ksuper) {
                __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(p.isc + t * s.isc + b * TILE + lane0))));
                __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(p.imn + t * s.imn + b * TILE + lane0))));
                __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p.fm + t * s.fm + g * TILE + lane0)));
                scale = _mm256_mul_ps(scale, sc);
                minimum = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(dmin, mn));
            } else if (f.affine) {
                minimum = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p.fm + t * s.fm + g * TILE + lane0)));
            }
            for (int64_t m = 0; m < rows; ++m) {
                const int64_t row = m0 + m;
                const int32_t* xw = (const int32_t*)(xq + row * K + b * BLOCK);
                __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
                for (int j = 0; j < 8; ++j) {
                    __m256i x = _mm256_set1_epi32(xw[j]), pairs;
                    if (f.bits == 8) {  // signed codes: |q| x sign(x, q), which PMADDUBSW cannot saturate
                        pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(op[j], op[j]), _mm256_sign_epi8(x, op[j]));
                    } else {  // codes <= 63: pair sums within int16
                        pairs = _mm256_maddubs_epi16(op[j], x);
                    }
                    __m256i quad = _mm256_madd_epi16(pairs, ones);
                    if (j < 4) s0 = _mm256_add_epi32(s0, quad); else s1 = _mm256_add_epi32(s1, quad);
                }
                const int32_t xa = xs[row * (K / 16) + 2 * b], xb = xs[row * (K / 16) + 2 * b + 1];
                const float d = dx[row * nb + b];
                // the 8-bit codes were made signed above: no offset left to remove
                const int off = f.bits == 8 ? 0 : f.off;
                float* accm = acc + m * TILE + lane0;
                __m256 a = _mm256_load_ps(accm);
                if (f.sub16) {
                    __m256i v = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_sub_epi32(s0, _mm256_set1_epi32(off * xa)), sc0),
                                                 _mm256_mullo_epi32(_mm256_sub_epi32(s1, _mm256_set1_epi32(off * xb)), sc1));
                    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(scale, _mm256_set1_ps(d)), a);
                } else {
                    __m256i v = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), _mm256_set1_epi32(off * (xa + xb)));
                    a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(scale, _mm256_set1_ps(d)), a);
                    if (f.affine) a = _mm256_fmadd_ps(minimum, _mm256_set1_ps(d * (float)(xa + xb)), a);
                }
                _mm256_store_ps(accm, a);
            }
        }
    }
    const __m256 add0 = bias ? _mm256_loadu_ps(bias + t * TILE) : _mm256_setzero_ps();
    const __m256 add1 = bias ? _mm256_loadu_ps(bias + t * TILE + 8) : _mm256_setzero_ps();
    for (int64_t m = 0; m < rows; ++m) {
        _mm256_storeu_ps(out + (m0 + m) * ldo + col, _mm256_add_ps(_mm256_load_ps(acc + m * TILE), add0));
        _mm256_storeu_ps(out + (m0 + m) * ldo + col + 8, _mm256_add_ps(_mm256_load_ps(acc + m * TILE + 8), add1));
    }
}

void tile_avx2_any(const Packed& p, int64_t t, const int8_t* xq, const float* dx, const int32_t* xs, int64_t m0,
                   int64_t rows, float* out, int64_t ldo, int64_t col, const float* bias) {
    switch (p.qtype) {
        case Q4_0: return tile_avx2<Q4_0>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q4_1: return tile_avx2<Q4_1>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_0: return tile_avx2<Q5_0>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_1: return tile_avx2<Q5_1>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q8_0: return tile_avx2<Q8_0>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q4_K: return tile_avx2<Q4_K>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q5_K: return tile_avx2<Q5_K>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
        case Q6_K: return tile_avx2<Q6_K>(p, t, xq, dx, xs, m0, rows, out, ldo, col, bias);
    }
}

#endif  // QK_X86

enum Isa { ISA_NONE = 0, ISA_AVX2 = 1, ISA_AVX512_VNNI = 2 };

int detect_isa() {
#ifdef QK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
        return ISA_AVX512_VNNI;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        return ISA_AVX2;
#endif
    return ISA_NONE;
}

int g_isa = -1;  // the kernels in use (detect_isa, or lowered by set_isa for tests)

// out[m, tile*16 + r] for the tiles listed (all when ``tile_ids`` is null), M activation rows.
void matmul(const Packed& p, const float* x, int64_t M, const int64_t* tile_ids, int64_t ntiles, float* out,
            int64_t ldo, const float* bias, int threads) {
    const int64_t K = p.K;
    std::vector<int8_t> xq((size_t)(M * K));
    std::vector<float> dx((size_t)(M * (K / BLOCK)));
    std::vector<int32_t> xs((size_t)(M * (K / 16)));
    quantize_activations(x, M, K, xq.data(), dx.data(), xs.data(), threads);
    const int isa = g_isa;
    // many rows (a prefill chunk): two neighbouring tiles per pass share each activation load
    const int64_t group = (isa == ISA_AVX512_VNNI && !tile_ids && M > PAIRED_ROWS) ? 2 : 1;
    const int64_t units = (ntiles + group - 1) / group;
    const int64_t passes = (M + ROWS_PER_PASS - 1) / ROWS_PER_PASS, work = units * passes;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && work > 1)
    for (int64_t w = 0; w < work; ++w) {
        const int64_t unit = w / passes, pass = w % passes;
        const int64_t index = unit * group, count = std::min(group, ntiles - index);
        const int64_t tile = tile_ids ? tile_ids[index] : index;
        const int64_t m0 = pass * ROWS_PER_PASS, rows = std::min(ROWS_PER_PASS, M - m0);
        // a listed tile's output lands at its place in the list
        const int64_t col = index * TILE;
#ifdef QK_X86
        if (isa == ISA_AVX512_VNNI && count == 2)
            tiles_avx512_any<2>(p, tile, xq.data(), dx.data(), xs.data(), m0, rows, out, ldo, col, bias);
        else if (isa == ISA_AVX512_VNNI)
            tiles_avx512_any<1>(p, tile, xq.data(), dx.data(), xs.data(), m0, rows, out, ldo, col, bias);
        else
            tile_avx2_any(p, tile, xq.data(), dx.data(), xs.data(), m0, rows, out, ldo, col, bias);
#endif
    }
}

// -- the rest of a CPU decode step: RMSNorm and one token's attention over the cache --
//
// Plain loops, vectorised by the compiler for each of the ISAs below (one clone is picked
// at load time); reductions are written as OpenMP SIMD reductions so that they vectorise
// without -ffast-math.


// e^x for x <= 0 (softmax after subtracting the maximum): 2^n * p(r), |r| <= ln2/2,
// a degree-6 polynomial (relative error ~2e-7); no library call, so the loop vectorises
inline float exp_nonpositive(float x) {
    x = x < -87.f ? -87.f : x;
    const float t = x * 1.44269504088896341f;
    const float n = (t + 12582912.f) - 12582912.f;  // round to nearest (1.5 * 2^23)
    const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723212e-6f;
    float p = 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return p * scale;
}

// e^(score - top) in place; their sum (the softmax's denominator)
QK_CLONES float exponentiate(float* scores, int64_t length, float top) {
    float total = 0.f;
#pragma omp simd reduction(+ : total)
    for (int64_t l = 0; l < length; ++l) {
        scores[l] = exp_nonpositive(scores[l] - top);
        total += scores[l];
    }
    return total;
}

QK_CLONES void rms_norm_rows(const float* x, const float* w, float eps, int64_t rows, int64_t n, float* out) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* v = x + r * n;
        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < n; ++i) sum += v[i] * v[i];
        const float inv = 1.f / sqrtf(sum / (float)n + eps);
        float* o = out + r * n;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) o[i] = v[i] * inv * w[i];
    }
}

// x rotated by the rotary tables of its position: x*cos + roll(x, dim/2)*sin (sin signed)
QK_CLONES void rotate(const float* x, const float* cos, const float* sin, int64_t dim, float* out) {
    const int64_t half = dim / 2;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) out[i] = x[i] * cos[i] + x[i + half] * sin[i];
#pragma omp simd
    for (int64_t i = half; i < dim; ++i) out[i] = x[i] * cos[i] + x[i - half] * sin[i];
}

// The queries and keys of n tokens rotated, keys and values written into the cache at their
// positions: qkv [n, (heads + 2 kv_heads) * dim]; keys/values point at the first position,
// kv heads ``head_stride`` floats apart; q_out [heads, n, dim].
void rope_into_cache(const float* qkv, int64_t n, int64_t heads, int64_t kv_heads, int64_t dim, const float* cos,
                     const float* sin, float* q_out, float* keys, float* values, int64_t head_stride) {
    const int64_t width = (heads + 2 * kv_heads) * dim;
    for (int64_t t = 0; t < n; ++t) {
        const float* row = qkv + t * width;
        const float* c = cos + t * dim;
        const float* s = sin + t * dim;
        for (int64_t h = 0; h < heads; ++h) rotate(row + h * dim, c, s, dim, q_out + (h * n + t) * dim);
        for (int64_t h = 0; h < kv_heads; ++h) {
            rotate(row + (heads + h) * dim, c, s, dim, keys + h * head_stride + t * dim);
            memcpy(values + h * head_stride + t * dim, row + (heads + kv_heads + h) * dim, (size_t)dim * sizeof(float));
        }
    }
}

// SwiGLU's middle: silu(gate) * up for rows [n, 2 * width] (gate | up) into [n, width]
QK_CLONES void silu_mul(const float* gate_up, int64_t n, int64_t width, float* out) {
    for (int64_t t = 0; t < n; ++t) {
        const float* g = gate_up + t * 2 * width;
        const float* u = g + width;
        float* o = out + t * width;
#pragma omp simd
        for (int64_t i = 0; i < width; ++i) {
            // silu(g) = g / (1 + e^-g), e^-g from the non-positive exponent: exact rearrangement
            const float a = g[i] < 0.f ? g[i] : -g[i];
            const float e = exp_nonpositive(a);
            const float sig = g[i] < 0.f ? e / (1.f + e) : 1.f / (1.f + e);
            o[i] = g[i] * sig * u[i];
        }
    }
}

// one query head against keys/values [length, dim] (rows ``stride`` floats apart)
QK_CLONES void attend_head(const float* q, const float* keys, const float* values, int64_t stride, int64_t length,
                           int64_t dim, float scale, float* scores, float* out) {
    float top = -INFINITY;
    for (int64_t l = 0; l < length; ++l) {
        const float* k = keys + l * stride;
        float dot = 0.f;
#pragma omp simd reduction(+ : dot)
        for (int64_t i = 0; i < dim; ++i) dot += q[i] * k[i];
        scores[l] = dot * scale;
        top = scores[l] > top ? scores[l] : top;
    }
    const float total = exponentiate(scores, length, top);
    for (int64_t i = 0; i < dim; ++i) out[i] = 0.f;
    for (int64_t l = 0; l < length; ++l) {
        const float* v = values + l * stride;
        const float p = scores[l];
#pragma omp simd
        for (int64_t i = 0; i < dim; ++i) out[i] += p * v[i];
    }
    const float inv = 1.f / total;
#pragma omp simd
    for (int64_t i = 0; i < dim; ++i) out[i] *= inv;
}

#ifdef QK_X86
// The vector operations of attend_head_simd, for AVX-512 (16 floats) and AVX2 (8 floats).
#define QK_VECTOR_OPS(NAME, TARGET, VEC, LANES, LOAD, STORE, SET1, ZERO, MUL, FMA, SUM) \
    struct NAME {                                                                        \
        using V = VEC;                                                                   \
        static constexpr int N = LANES;                                                  \
        TARGET static inline V load(const float* p) { return LOAD(p); }                  \
        TARGET static inline void store(float* p, V v) { STORE(p, v); }                  \
        TARGET static inline V set1(float x) { return SET1(x); }                         \
        TARGET static inline V zero() { return ZERO(); }                                 \
        TARGET static inline V mul(V a, V b) { return MUL(a, b); }                       \
        TARGET static inline V fma(V a, V b, V c) { return FMA(a, b, c); }               \
        TARGET static inline float sum(V v) { return SUM(v); }                           \
    };

QK_TARGET_256 inline float sum_ymm(__m256 v) {
    __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    half = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(half, _mm_movehdup_ps(half)));
}

QK_VECTOR_OPS(Zmm, QK_TARGET_512, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_setzero_ps,
              _mm512_mul_ps, _mm512_fmadd_ps, _mm512_reduce_add_ps)
QK_VECTOR_OPS(Ymm, QK_TARGET_256, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_setzero_ps,
              _mm256_mul_ps, _mm256_fmadd_ps, sum_ymm)

// One query head of D floats (64, 128) against ``length`` keys and values: q and the output
// held in registers. The body is shared; each ISA's instance carries its own target.
#define QK_ATTEND_HEAD(NAME, TARGET, S)                                                                             \
    template <int D>                                                                                                \
    TARGET void NAME(const float* q, const float* keys, const float* values, int64_t length, float scale,            \
                     float* scores, float* out) {                                                                   \
        constexpr int R = D / S::N;                                                                                 \
        S::V qv[R], ov[R];                                                                                          \
        for (int c = 0; c < R; ++c) qv[c] = S::mul(S::load(q + S::N * c), S::set1(scale));                         \
        float top = -INFINITY;                                                                                      \
        for (int64_t l = 0; l < length; ++l) {                                                                      \
            S::V acc = S::mul(qv[0], S::load(keys + l * D));                                                        \
            for (int c = 1; c < R; ++c) acc = S::fma(qv[c], S::load(keys + l * D + S::N * c), acc);                 \
            scores[l] = S::sum(acc);                                                                                \
            top = scores[l] > top ? scores[l] : top;                                                                \
        }                                                                                                           \
        const float total = exponentiate(scores, length, top);                                                      \
        for (int c = 0; c < R; ++c) ov[c] = S::zero();                                                              \
        for (int64_t l = 0; l < length; ++l) {                                                                      \
            const S::V p = S::set1(scores[l]);                                                                      \
            for (int c = 0; c < R; ++c) ov[c] = S::fma(p, S::load(values + l * D + S::N * c), ov[c]);               \
        }                                                                                                           \
        for (int c = 0; c < R; ++c) S::store(out + S::N * c, S::mul(ov[c], S::set1(1.f / total)));                 \
    }

QK_ATTEND_HEAD(attend_head_512, QK_TARGET_512, Zmm)
QK_ATTEND_HEAD(attend_head_256, QK_TARGET_256, Ymm)
#endif

void attend_head_any(const float* q, const float* keys, const float* values, int64_t length, int64_t dim, float scale,
                     float* scores, float* out) {
#ifdef QK_X86
    if (g_isa == ISA_AVX512_VNNI && dim == 64) return attend_head_512<64>(q, keys, values, length, scale, scores, out);
    if (g_isa == ISA_AVX512_VNNI && dim == 128) return attend_head_512<128>(q, keys, values, length, scale, scores, out);
    if (g_isa == ISA_AVX2 && dim == 64) return attend_head_256<64>(q, keys, values, length, scale, scores, out);
    if (g_isa == ISA_AVX2 && dim == 128) return attend_head_256<128>(q, keys, values, length, scale, scores, out);
#endif
    attend_head(q, keys, values, dim, length, dim, scale, scores, out);
}

// q [heads, dim]; keys/values: kv_heads blocks ``head_stride`` floats apart, rows ``dim`` apart;
// out [heads, dim]. Query head h reads key head h / (heads / kv_heads).
void attend_one(const float* q, const float* keys, const float* values, int64_t head_stride, int64_t length,
                int64_t heads, int64_t kv_heads, int64_t dim, float scale, float* out, int threads) {
    const int64_t group = heads / kv_heads;
#pragma omp parallel num_threads(threads) if (threads > 1 && heads > 1)
    {
        std::vector<float> scores((size_t)length);
#pragma omp for schedule(static)
        for (int64_t h = 0; h < heads; ++h) {
            const int64_t kv = h / group;
            attend_head_any(q + h * dim, keys + kv * head_stride, values + kv * head_stride, length, dim, scale,
                            scores.data(), out + h * dim);
        }
    }
}

// -- Python bindings: every buffer is passed as an address (torch tensors' data_ptr) --

bool read_packed(PyObject* const* args, Packed* p) {
    int qtype = (int)PyLong_AsLong(args[0]);
    p->qtype = qtype;
    if (!format_of(qtype, &p->f)) {
        PyErr_Format(PyExc_ValueError, "unsupported GGUF type %d", qtype);
        return false;
    }
    p->K = PyLong_AsLongLong(args[1]);
    p->tiles = PyLong_AsLongLong(args[2]);
    p->codes = (const uint8_t*)PyLong_AsVoidPtr(args[3]);
    p->fs = (const uint16_t*)PyLong_AsVoidPtr(args[4]);
    p->fm = (const uint16_t*)PyLong_AsVoidPtr(args[5]);
    p->isc = (const uint8_t*)PyLong_AsVoidPtr(args[6]);
    p->imn = (const uint8_t*)PyLong_AsVoidPtr(args[7]);
    if (PyErr_Occurred()) return false;
    if (p->K % BLOCK || (p->f.ksuper && p->K % SUPER)) {
        PyErr_Format(PyExc_ValueError, "%lld inputs are not whole blocks of this type", (long long)p->K);
        return false;
    }
    return true;
}

constexpr Py_ssize_t PACKED_ARGS = 8;  // qtype, K, tiles, codes, fs, fm, isc, imn

PyObject* py_isa(PyObject*, PyObject*) { return PyLong_FromLong(g_isa); }

PyObject* py_set_isa(PyObject*, PyObject* arg) {
    long want = PyLong_AsLong(arg);
    if (want == -1 && PyErr_Occurred()) return nullptr;
    int best = detect_isa();
    g_isa = (int)std::min<long>(std::max<long>(want, ISA_NONE), best);
    return PyLong_FromLong(g_isa);
}

PyObject* py_sizes(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != 2) { PyErr_SetString(PyExc_TypeError, "sizes(qtype, K)"); return nullptr; }
    Format f;
    if (!format_of((int)PyLong_AsLong(args[0]), &f)) { PyErr_SetString(PyExc_ValueError, "unsupported GGUF type"); return nullptr; }
    Sizes s = sizes_of(f, PyLong_AsLongLong(args[1]));
    return Py_BuildValue("(LLLLL)", (long long)s.codes, (long long)s.fs, (long long)s.fm, (long long)s.isc, (long long)s.imn);
}

// pack(qtype, K, tiles, codes, fs, fm, isc, imn, raw, rows, row_stride_bytes, threads): the GGUF rows
// (raw: row-major blocks, rows of ``row_stride_bytes``) into zeroed packed arrays; rows past ``rows`` stay 0
PyObject* py_pack(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != PACKED_ARGS + 4) { PyErr_SetString(PyExc_TypeError, "pack: wrong number of arguments"); return nullptr; }
    Packed p;
    if (!read_packed(args, &p)) return nullptr;
    const uint8_t* raw = (const uint8_t*)PyLong_AsVoidPtr(args[8]);
    int64_t rows = PyLong_AsLongLong(args[9]), stride = PyLong_AsLongLong(args[10]);
    int threads = (int)PyLong_AsLong(args[11]);
    if (PyErr_Occurred()) return nullptr;
    const Format f = p.f;
    const int64_t K = p.K;
    Sizes s = sizes_of(f, K);
    uint8_t* codes = (uint8_t*)p.codes;
    uint16_t *fs = (uint16_t*)p.fs, *fm = (uint16_t*)p.fm;
    uint8_t *isc = (uint8_t*)p.isc, *imn = (uint8_t*)p.imn;
    const int qtype = (int)PyLong_AsLong(args[0]);
    Py_BEGIN_ALLOW_THREADS
#pragma omp parallel num_threads(threads)
    {
        Row row;
        int64_t nb = K / BLOCK, groups = f.ksuper ? K / SUPER : nb;
        row.c.resize((size_t)K);
        row.fs.resize((size_t)groups);
        row.fm.resize((size_t)groups);
        row.isc.resize((size_t)nb * 2);
        row.imn.resize((size_t)nb);
#pragma omp for schedule(static)
        for (int64_t t = 0; t < p.tiles; ++t) {
            for (int r = 0; r < TILE; ++r) {
                int64_t n_row = t * TILE + r;
                if (n_row >= rows) break;
                decode_row(qtype, f, raw + n_row * stride, K, row);
                place_row(f, K, row, r, codes + t * s.codes, fs + t * s.fs, f.affine ? fm + t * s.fm : nullptr,
                          f.ksuper ? isc + t * s.isc : nullptr, (f.ksuper && f.affine) ? imn + t * s.imn : nullptr);
            }
        }
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

// unpack(..packed.., first_row, rows, out): the weights of rows [first_row, first_row + rows) as fp32
PyObject* py_unpack(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != PACKED_ARGS + 3) { PyErr_SetString(PyExc_TypeError, "unpack: wrong number of arguments"); return nullptr; }
    Packed p;
    if (!read_packed(args, &p)) return nullptr;
    int64_t first = PyLong_AsLongLong(args[8]), rows = PyLong_AsLongLong(args[9]);
    float* out = (float*)PyLong_AsVoidPtr(args[10]);
    if (PyErr_Occurred()) return nullptr;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < rows; ++i) {
        int64_t row = first + i;
        for (int64_t k = 0; k < p.K; ++k) out[i * p.K + k] = tile_weight(p, row / TILE, (int)(row % TILE), k);
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

// matmul(..packed.., x, M, tile_ids or 0, ntiles, out, ldo, bias or 0, threads): out[m, i*16 + r] = row r
// of the i-th tile (listed, or the i-th) times x[m] (fp32, [M, K] contiguous), plus bias[tile*16 + r]
// (the bias padded to whole tiles)
PyObject* py_matmul(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != PACKED_ARGS + 8) { PyErr_SetString(PyExc_TypeError, "matmul: wrong number of arguments"); return nullptr; }
    Packed p;
    if (!read_packed(args, &p)) return nullptr;
    const float* x = (const float*)PyLong_AsVoidPtr(args[8]);
    int64_t M = PyLong_AsLongLong(args[9]);
    const int64_t* tile_ids = (const int64_t*)PyLong_AsVoidPtr(args[10]);
    int64_t ntiles = PyLong_AsLongLong(args[11]);
    float* out = (float*)PyLong_AsVoidPtr(args[12]);
    int64_t ldo = PyLong_AsLongLong(args[13]);
    const float* bias = (const float*)PyLong_AsVoidPtr(args[14]);
    int threads = (int)PyLong_AsLong(args[15]);
    if (PyErr_Occurred()) return nullptr;
    if (g_isa <= ISA_NONE) { PyErr_SetString(PyExc_RuntimeError, "this CPU has neither AVX2 nor AVX512-VNNI"); return nullptr; }
    Py_BEGIN_ALLOW_THREADS
    matmul(p, x, M, tile_ids, ntiles, out, ldo, bias, std::max(1, threads));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyObject* py_rms_norm(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != 6) { PyErr_SetString(PyExc_TypeError, "rms_norm(x, w, eps, rows, n, out)"); return nullptr; }
    const float* x = (const float*)PyLong_AsVoidPtr(args[0]);
    const float* w = (const float*)PyLong_AsVoidPtr(args[1]);
    float eps = (float)PyFloat_AsDouble(args[2]);
    int64_t rows = PyLong_AsLongLong(args[3]), width = PyLong_AsLongLong(args[4]);
    float* out = (float*)PyLong_AsVoidPtr(args[5]);
    if (PyErr_Occurred()) return nullptr;
    rms_norm_rows(x, w, eps, rows, width, out);
    Py_RETURN_NONE;
}

PyObject* py_attend_one(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != 11) { PyErr_SetString(PyExc_TypeError, "attend_one: wrong number of arguments"); return nullptr; }
    const float* q = (const float*)PyLong_AsVoidPtr(args[0]);
    const float* keys = (const float*)PyLong_AsVoidPtr(args[1]);
    const float* values = (const float*)PyLong_AsVoidPtr(args[2]);
    int64_t head_stride = PyLong_AsLongLong(args[3]), length = PyLong_AsLongLong(args[4]);
    int64_t heads = PyLong_AsLongLong(args[5]), kv_heads = PyLong_AsLongLong(args[6]), dim = PyLong_AsLongLong(args[7]);
    float scale = (float)PyFloat_AsDouble(args[8]);
    float* out = (float*)PyLong_AsVoidPtr(args[9]);
    int threads = (int)PyLong_AsLong(args[10]);
    if (PyErr_Occurred()) return nullptr;
    if (kv_heads <= 0 || heads % kv_heads || length <= 0) { PyErr_SetString(PyExc_ValueError, "attend_one: bad shape"); return nullptr; }
    Py_BEGIN_ALLOW_THREADS
    attend_one(q, keys, values, head_stride, length, heads, kv_heads, dim, scale, out, std::max(1, threads));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyObject* py_rope_into_cache(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != 11) { PyErr_SetString(PyExc_TypeError, "rope_into_cache: wrong number of arguments"); return nullptr; }
    const float* qkv = (const float*)PyLong_AsVoidPtr(args[0]);
    int64_t tokens = PyLong_AsLongLong(args[1]), heads = PyLong_AsLongLong(args[2]);
    int64_t kv_heads = PyLong_AsLongLong(args[3]), dim = PyLong_AsLongLong(args[4]);
    const float* cos = (const float*)PyLong_AsVoidPtr(args[5]);
    const float* sin = (const float*)PyLong_AsVoidPtr(args[6]);
    float* q_out = (float*)PyLong_AsVoidPtr(args[7]);
    float* keys = (float*)PyLong_AsVoidPtr(args[8]);
    float* values = (float*)PyLong_AsVoidPtr(args[9]);
    int64_t head_stride = PyLong_AsLongLong(args[10]);
    if (PyErr_Occurred()) return nullptr;
    if (dim % 2) { PyErr_SetString(PyExc_ValueError, "rope_into_cache: odd head size"); return nullptr; }
    rope_into_cache(qkv, tokens, heads, kv_heads, dim, cos, sin, q_out, keys, values, head_stride);
    Py_RETURN_NONE;
}

PyObject* py_silu_mul(PyObject*, PyObject* const* args, Py_ssize_t n) {
    if (n != 4) { PyErr_SetString(PyExc_TypeError, "silu_mul(gate_up, n, width, out)"); return nullptr; }
    const float* gate_up = (const float*)PyLong_AsVoidPtr(args[0]);
    int64_t rows = PyLong_AsLongLong(args[1]), width = PyLong_AsLongLong(args[2]);
    float* out = (float*)PyLong_AsVoidPtr(args[3]);
    if (PyErr_Occurred()) return nullptr;
    silu_mul(gate_up, rows, width, out);
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"isa", (PyCFunction)py_isa, METH_NOARGS, "the kernels in use: 0 none, 1 AVX2, 2 AVX512-VNNI"},
    {"set_isa", (PyCFunction)py_set_isa, METH_O, "use at most these kernels (tests); returns those in use"},
    {"sizes", (PyCFunction)(void (*)(void))py_sizes, METH_FASTCALL, "per-tile sizes of the packed arrays"},
    {"pack", (PyCFunction)(void (*)(void))py_pack, METH_FASTCALL, "GGUF rows into packed tiles"},
    {"unpack", (PyCFunction)(void (*)(void))py_unpack, METH_FASTCALL, "packed rows back to fp32"},
    {"matmul", (PyCFunction)(void (*)(void))py_matmul, METH_FASTCALL, "packed weights times fp32 activations"},
    {"rms_norm", (PyCFunction)(void (*)(void))py_rms_norm, METH_FASTCALL, "RMSNorm of fp32 rows"},
    {"attend_one", (PyCFunction)(void (*)(void))py_attend_one, METH_FASTCALL, "one token's grouped-query attention"},
    {"rope_into_cache", (PyCFunction)(void (*)(void))py_rope_into_cache, METH_FASTCALL, "rotary positions, keys and values cached"},
    {"silu_mul", (PyCFunction)(void (*)(void))py_silu_mul, METH_FASTCALL, "silu(gate) * up"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_qkernels", "Packed GGUF matrix products (qkernels.cpp).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__qkernels(void) {
    g_isa = detect_isa();
    return PyModule_Create(&module);
}
