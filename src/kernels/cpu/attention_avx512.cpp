// Flash-style (online softmax) causal GQA attention with AVX-512 intrinsics, for the
// avx512 and avx512bf16 levels (the generic ops_impl.inc kernel serves scalar / avx2).
//
// Per key tile of kTile keys the K rows are transposed once into scratch, Kt [head_dim][kTile],
// shared by every query row of the work item (group * tokens rows): a row's 64 scores are then
// sum_i q[i] * Kt[i][:], vectorized over keys with no horizontal reductions, register-blocked
// over kScoreRows rows. Softmax runs on the scores while they are still in registers. P.V
// keeps up to 6 output rows x 4 zmm of head_dim (24 accumulators) in registers across the
// keys of the tile, in passes of 64 dims.
// Decode (m = 1, rows = group) at a GQA group of up to kDirectRows (8) scores each row straight
// from the K rows instead (16 dot products per key block, reduced by a transpose-and-add
// tree): there the transpose cost more than the scores. The transposed path reads each K row
// once per tile, the direct path once per query row (from L1/L2 after the first); each V row
// is read once per tile and pass. In decode the tile's rows are prefetched into L2 first
// (they come cold from DRAM). head_dim need not be a multiple of 16.
// Tiled attention: Dao et al., "FlashAttention" (2022), online softmax: Milakov & Gimelshein
// (2018). Only internal-linkage helpers here (see cpu_kernels.hpp on std templates).
// GCC 12's AVX-512 headers trip -Wuninitialized inside _mm512_undefined_ps (self-init idiom).
// clang has no -Wmaybe-uninitialized (an unknown warning group is itself a warning, an
// error under -Werror) and no such false positive: GCC only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/cpu_kernels.hpp"

namespace llmport::cpu::avx512 {
namespace {

constexpr int kTile = 64;      // keys per tile: 4 zmm of scores per row
constexpr int kScoreRows = 6;  // query rows per score micro-kernel (6 x 4 zmm accumulators)
// Work items of at most this many query rows score straight from the K rows
// (score_row_direct) instead of transposing the tile: decode at GQA group <= 8. Measured
// (BM_Attention decode, Zen 5, 2 threads, ctx 160/512, two interleaved runs): group 2 hd 128
// 2.3-2.5x faster than the transposed tile, group 4 hd 64 1.45-1.6x, group 8 hd 64 1.1x.
constexpr int kDirectRows = 8;
// head_dim zmm per P.V pass (64 floats): 6 rows x 4 zmm accumulators, and a pass reads
// 256 B of each V row, so the tile's V slice (16 KiB at 64 keys) stays in L1D across the
// row blocks. At 8 zmm (3 rows, 32 KiB slice re-read from L2 per block) hd 128 ran
// 1.2-1.3x slower (BM_Attention m 512, Zen 4).
constexpr int kPvZmm = 4;
constexpr int kPvMaxRows = 6;  // query rows per P.V micro-kernel: up to 24 zmm accumulators
// P.V rows per micro-kernel for a pass of nz zmm (rows * nz <= 24 accumulators).
inline int pv_rows_for(int nz) { return nz <= 4 ? 6 : nz <= 6 ? 4 : 3; }

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }

inline __mmask16 lanes(int n) {  // first n lanes (n clamped to [0, 16])
  if (n <= 0) return 0;
  if (n >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << n) - 1u);
}

// exp(x), Cephes expf polynomial (as ops_impl.inc's exp_f32, rel. error ~2 ulp). The clamps
// take x as their second operand so a NaN passes through (vminps returns the second operand
// when either is NaN). x < -87.3 gives exactly 0 (not ~1e-38): softmax weights that small
// are far below fp32 resolution of the row sum (>= 1), and p * V would be subnormal.
inline __m512 exp_ps(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_NLT_UQ);  // NaN kept
  x = _mm512_min_ps(_mm512_set1_ps(88.7f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x);
  const __m512 n = _mm512_roundscale_ps(
      _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e));
}

inline float exp_ss(float x) { return _mm512_cvtss_f32(exp_ps(_mm512_set1_ps(x))); }

// In-register transpose of a 16x16 fp32 block (unpack, shuffle, two 128-bit lane stages).
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      t[8 * h + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0x88);
      t[8 * h + 4 + i] = _mm512_shuffle_f32x4(r[8 * h + i], r[8 * h + 4 + i], 0xDD);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
  }
}

// Asks for rows [0, n) of hd floats at `rows` into L2. In decode every K and V row comes
// cold from DRAM (a whole step's weights streamed through the caches since this layer last
// ran); requested up front, the tile's misses overlap instead of arriving one transpose
// block or V row at a time.
inline void prefetch_rows_l2(const float* rows, int n, int hd) {
  const char* p = reinterpret_cast<const char*>(rows);
  const std::size_t bytes = static_cast<std::size_t>(n) * hd * sizeof(float);
  for (std::size_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

// kt[i][jj] = k[jj][i] for jj < nk, i < hd; keys [nk, 16 * ceil(nk / 16)) are zero.
// k: [nk][hd] (rows of the cache), kt: [hd][kTile], 64-byte aligned.
void transpose_tile(const float* k, int hd, int nk, float* kt) {
  for (int kb = 0; kb * 16 < nk; ++kb) {
    const int nrow = imin(16, nk - kb * 16);
    const float* src = k + static_cast<std::size_t>(kb) * 16 * hd;
    for (int i0 = 0; i0 < hd; i0 += 16) {
      const __mmask16 dm = lanes(hd - i0);
      __m512 r[16];
      for (int x = 0; x < 16; ++x)
        r[x] = x < nrow ? _mm512_maskz_loadu_ps(dm, src + static_cast<std::size_t>(x) * hd + i0)
                        : _mm512_setzero_ps();
      transpose16(r);
      const int nd = imin(16, hd - i0);
      for (int d = 0; d < nd; ++d) _mm512_store_ps(kt + (i0 + d) * kTile + kb * 16, r[d]);
    }
  }
}

// The online-softmax update of RB rows from their raw scores acc (q . k, unscaled) against
// NV * 16 keys of the tile: p[r][:] = exp(s - new max) (0 past the row's jn[r] valid keys),
// corr[r] = exp(old max - new max), l[r] = l[r] * corr[r] + sum p. Every row has jn >= 1.
// p: [RB][kTile].
template <int RB, int NV>
inline void softmax_update(__m512 (&acc)[RB][NV], float scale, const int* jn, float* mx, float* l,
                           float* corr, float* p) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 ninf = _mm512_set1_ps(-__builtin_huge_valf());
  #pragma GCC unroll 8
  for (int r = 0; r < RB; ++r) {
    __mmask16 mk[NV];
    __m512 vmax = ninf;
    #pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      mk[v] = lanes(jn[r] - 16 * v);
      acc[r][v] = _mm512_mask_mul_ps(ninf, mk[v], acc[r][v], vscale);
      vmax = _mm512_max_ps(vmax, acc[r][v]);
    }
    float bmax = _mm512_reduce_max_ps(vmax);
    bmax = mx[r] > bmax ? mx[r] : bmax;
    const float c = exp_ss(mx[r] - bmax);
    const __m512 vb = _mm512_set1_ps(bmax);
    __m512 sum = _mm512_setzero_ps();
    #pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const __m512 e = _mm512_maskz_mov_ps(mk[v], exp_ps(_mm512_sub_ps(acc[r][v], vb)));
      _mm512_store_ps(p + r * kTile + 16 * v, e);
      sum = _mm512_add_ps(sum, e);
    }
    l[r] = l[r] * c + _mm512_reduce_add_ps(sum);
    mx[r] = bmax;
    corr[r] = c;
  }
}

// Scores of RB query rows against NV * 16 keys of the transposed tile, then the softmax
// update. q[r]: [hd]; kt: [hd][kTile]; p: [RB][kTile].
template <int RB, int NV>
void score_rows(const float* const* q, const float* kt, int hd, float scale, const int* jn,
                float* mx, float* l, float* corr, float* p) {
  __m512 acc[RB][NV];
  #pragma GCC unroll 8
  for (int r = 0; r < RB; ++r)
    #pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int i = 0; i < hd; ++i) {
    __m512 kv[NV];
    #pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) kv[v] = _mm512_load_ps(kt + i * kTile + 16 * v);
    #pragma GCC unroll 8
    for (int r = 0; r < RB; ++r) {
      const __m512 qb = _mm512_set1_ps(q[r][i]);
      #pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(qb, kv[v], acc[r][v]);
    }
  }
  softmax_update<RB, NV>(acc, scale, jn, mx, l, corr, p);
}

// Lane j of the result = the sum of the 16 lanes of v[j] (a transpose-and-add tree:
// 45 shuffles and adds instead of 16 horizontal reductions).
inline __m512 sum16(const __m512 (&v)[16]) {
  __m512 u[8], w[4];
  for (int i = 0; i < 8; ++i)  // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    u[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i)  // per 128-bit lane: that lane's sums of keys 4i .. 4i+3
    w[i] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                         _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
  const __m512 q01 = _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x44), _mm512_shuffle_f32x4(w[0], w[1], 0xEE));
  const __m512 q23 = _mm512_add_ps(_mm512_shuffle_f32x4(w[2], w[3], 0x44), _mm512_shuffle_f32x4(w[2], w[3], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(q01, q23, 0x88), _mm512_shuffle_f32x4(q01, q23, 0xDD));
}

// Decode with few query rows per kv head (rows <= kDirectRows): the scores of one row
// against NV * 16 keys straight from the cache rows, k: [nk][hd], as 16 dot products per
// key block reduced by sum16, then the softmax update. Transposing the tile costs ~100
// cycles per 16 x 16 block, which only pays off when many rows share it: at group 2 and
// head_dim 128 (Qwen3-0.6B) the transpose was ~6x the score FMAs.
template <int NV>
void score_row_direct(const float* q, const float* k, int hd, int nk, float scale, const int* jn,
                      float* mx, float* l, float* corr, float* p) {
  const int hz = (hd + 15) / 16;
  const __mmask16 last = lanes(hd - (hz - 1) * 16);
  __m512 acc[1][NV];
  #pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    __m512 dot[16];
    #pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) dot[j] = _mm512_setzero_ps();
    // Keys past nk read the block's last valid row: their lanes are masked to -inf below.
    const float* rows[16];
    #pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) rows[j] = k + static_cast<std::size_t>(imin(16 * v + j, nk - 1)) * hd;
    for (int z = 0; z < hz; ++z) {
      const __mmask16 dm = z == hz - 1 ? last : static_cast<__mmask16>(0xFFFF);
      const __m512 qv = _mm512_maskz_loadu_ps(dm, q + 16 * z);
      #pragma GCC unroll 16
      for (int j = 0; j < 16; ++j)
        dot[j] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(dm, rows[j] + 16 * z), dot[j]);
    }
    acc[0][v] = sum16(dot);
  }
  softmax_update<1, NV>(acc, scale, jn, mx, l, corr, p);
}

// o[r][dims] = o[r][dims] * corr[r] + sum_{j < jn[r]} p[r][j] * v[j][dims] for RB rows and
// the NZ zmm of head_dim starting at zmm z0 (the last one masked at hd). Each V row is
// loaded once for all RB rows; no row takes a V row past its causal limit.
// v: [jn max][hd] (rows of the cache), p: [RB][kTile], o: [RB][hdp].
template <int RB, int NZ>
void pv_rows(const float* v, int hd, int z0, const float* p, const int* jn, const float* corr,
             float* o, int hdp) {
  const __mmask16 last = lanes(hd - (z0 + NZ - 1) * 16);
  __m512 acc[RB][NZ];
  int jmin = jn[0], jmax = jn[0];
  #pragma GCC unroll 8
  for (int r = 0; r < RB; ++r) {
    jmin = imin(jmin, jn[r]);
    jmax = imax(jmax, jn[r]);
    const __m512 c = _mm512_set1_ps(corr[r]);
    #pragma GCC unroll 8
    for (int z = 0; z < NZ; ++z)
      acc[r][z] = _mm512_mul_ps(_mm512_load_ps(o + r * hdp + (z0 + z) * 16), c);
  }
  for (int j = 0; j < jmin; ++j) {
    const float* vr = v + static_cast<std::size_t>(j) * hd + z0 * 16;
    __m512 pb[RB];
    #pragma GCC unroll 8
    for (int r = 0; r < RB; ++r) pb[r] = _mm512_set1_ps(p[r * kTile + j]);
    #pragma GCC unroll 8
    for (int z = 0; z < NZ; ++z) {
      const __m512 vv = z == NZ - 1 ? _mm512_maskz_loadu_ps(last, vr + 16 * z)
                                    : _mm512_loadu_ps(vr + 16 * z);
      #pragma GCC unroll 8
      for (int r = 0; r < RB; ++r) acc[r][z] = _mm512_fmadd_ps(pb[r], vv, acc[r][z]);
    }
  }
  // Diagonal keys: masked FMAs leave a row's accumulators untouched (even by a NaN V
  // element) for keys past its causal limit. All indices compile-time: acc stays in zmm.
  for (int j = jmin; j < jmax; ++j) {
    const float* vr = v + static_cast<std::size_t>(j) * hd + z0 * 16;
    __m512 pb[RB];
    __mmask16 mr[RB];
    #pragma GCC unroll 8
    for (int r = 0; r < RB; ++r) {
      pb[r] = _mm512_set1_ps(p[r * kTile + j]);
      mr[r] = j < jn[r] ? 0xFFFF : 0;
    }
    #pragma GCC unroll 8
    for (int z = 0; z < NZ; ++z) {
      const __m512 vv = z == NZ - 1 ? _mm512_maskz_loadu_ps(last, vr + 16 * z)
                                    : _mm512_loadu_ps(vr + 16 * z);
      #pragma GCC unroll 8
      for (int r = 0; r < RB; ++r) acc[r][z] = _mm512_mask3_fmadd_ps(pb[r], vv, acc[r][z], mr[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < RB; ++r)
    #pragma GCC unroll 8
    for (int z = 0; z < NZ; ++z) _mm512_store_ps(o + r * hdp + (z0 + z) * 16, acc[r][z]);
}

using ScoreFn = void (*)(const float* const*, const float*, int, float, const int*, float*,
                         float*, float*, float*);
using PvFn = void (*)(const float*, int, int, const float*, const int*, const float*, float*,
                      int);

template <int RB>
ScoreFn score_fn(int nv) {
  switch (nv) {
    case 1: return &score_rows<RB, 1>;
    case 2: return &score_rows<RB, 2>;
    case 3: return &score_rows<RB, 3>;
    default: return &score_rows<RB, 4>;
  }
}
ScoreFn score_fn(int rb, int nv) {
  switch (rb) {
    case 1: return score_fn<1>(nv);
    case 2: return score_fn<2>(nv);
    case 3: return score_fn<3>(nv);
    case 4: return score_fn<4>(nv);
    case 5: return score_fn<5>(nv);
    default: return score_fn<6>(nv);
  }
}
using DirectFn = void (*)(const float*, const float*, int, int, float, const int*, float*, float*,
                          float*, float*);
DirectFn direct_fn(int nv) {
  switch (nv) {
    case 1: return &score_row_direct<1>;
    case 2: return &score_row_direct<2>;
    case 3: return &score_row_direct<3>;
    default: return &score_row_direct<4>;
  }
}

template <int NZ>
PvFn pv_fn(int rb) {
  switch (rb) {
    case 1: return &pv_rows<1, NZ>;
    case 2: return &pv_rows<2, NZ>;
    case 3: return &pv_rows<3, NZ>;
    case 4: return &pv_rows<NZ <= 6 ? 4 : 3, NZ>;
    case 5: return &pv_rows<NZ <= 4 ? 5 : 3, NZ>;
    default: return &pv_rows<NZ <= 4 ? 6 : 3, NZ>;
  }
}
// rb <= pv_rows_for(nz).
PvFn pv_fn(int rb, int nz) {
  switch (nz) {
    case 1: return pv_fn<1>(rb);
    case 2: return pv_fn<2>(rb);
    case 3: return pv_fn<3>(rb);
    case 4: return pv_fn<4>(rb);
    case 5: return pv_fn<5>(rb);
    case 6: return pv_fn<6>(rb);
    case 7: return pv_fn<7>(rb);
    default: return pv_fn<8>(rb);
  }
}

static_assert(kScoreRows == 6 && kPvMaxRows == 6 && kPvZmm <= 8 && kTile == 64,
              "the dispatch switches above cover these block sizes");

}  // namespace

void attention_flash(const AttnArgs& a, int kvh, int t0, int t1, float* scratch) {
  const int group = a.n_heads / a.n_kv_heads;
  const int hd = a.head_dim;
  const int hz = (hd + 15) / 16;  // zmm per head_dim row
  const int hdp = hz * 16;
  const int rows = (t1 - t0) * group;  // row r: token t0 + r / group, head kvh*group + r % group
  // Scratch (attn_scratch_floats), 64-byte aligned.
  const auto addr = reinterpret_cast<std::uintptr_t>(scratch);
  float* base = scratch + ((64 - addr % 64) % 64) / sizeof(float);
  float* o = base;                                         // [rows][hdp] running output
  float* kt = o + static_cast<std::size_t>(rows) * hdp;    // [hd][kTile] transposed K tile
  float* p = kt + static_cast<std::size_t>(hd) * kTile;    // [rows][kTile] probabilities
  float* mx = p + static_cast<std::size_t>(rows) * kTile;  // [rows] running max
  float* l = mx + rows;                                    // [rows] running denominator
  float* corr = l + rows;                                  // [rows] this tile's rescale
  for (int r = 0; r < rows; ++r) {
    mx[r] = -__builtin_huge_valf();
    l[r] = 0.0f;
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * hdp; i += 16)
    _mm512_store_ps(o + i, _mm512_setzero_ps());

  const std::size_t head_stride = static_cast<std::size_t>(a.max_seq) * hd;
  const float* kbase = a.k_cache + static_cast<std::size_t>(kvh) * head_stride;  // [max_seq][hd]
  const float* vbase = a.v_cache + static_cast<std::size_t>(kvh) * head_stride;  // [max_seq][hd]
  auto q_row = [&](int r) {
    const int t = t0 + r / group, h = kvh * group + r % group;
    return a.q + (static_cast<std::size_t>(t) * a.n_heads + h) * hd;
  };
  // Valid keys of row r in the tile starting at j0 (causal limit start_pos + t).
  auto keys_of = [&](int r, int j0) { return imin(kTile, a.start_pos + t0 + r / group + 1 - j0); };

  const int kend = a.start_pos + t1;  // keys [0, kend) are needed by some row
  // The two score paths sum q . k in different orders, so the choice must not follow how
  // the rows were cut into work items (that follows the thread count): decode (one query
  // token, rows = the GQA group) scores direct when the group is small, a prefill always
  // from the transposed tile, and batch-invariant mode takes the direct path for all.
  const bool direct = a.direct_scores || (a.m == 1 && rows <= kDirectRows);
  // Only decode prefetches (the tile now, the next one while this one is computed): a
  // prefill tile is read by every query tile of its kv head and is mostly cache-resident,
  // where the prefetch loops cost ~3% of attention.
  const bool decode = t1 - t0 == 1;
  auto prefetch_tile = [&](int j0) {
    const int nk = imin(kTile, kend - j0);
    prefetch_rows_l2(kbase + static_cast<std::size_t>(j0) * hd, nk, hd);
    prefetch_rows_l2(vbase + static_cast<std::size_t>(j0) * hd, nk, hd);
  };
  for (int j0 = 0; j0 < kend; j0 += kTile) {
    const int nk = imin(kTile, kend - j0);
    const int nv = (nk + 15) / 16;
    if (decode && j0 == 0) prefetch_tile(0);
    if (decode && j0 + kTile < kend) prefetch_tile(j0 + kTile);
    const float* ktile = kbase + static_cast<std::size_t>(j0) * hd;  // [nk][hd]
    // Rows of tokens before j0 - start_pos see no key of this tile: skip them.
    const int r_first = (imax(t0, j0 - a.start_pos) - t0) * group;
    if (direct) {
      for (int r = r_first; r < rows; ++r) {
        const int jn = keys_of(r, j0);
        direct_fn((jn + 15) / 16)(q_row(r), ktile, hd, nk, a.scale, &jn, mx + r, l + r, corr + r,
                                  p + static_cast<std::size_t>(r) * kTile);
      }
    } else {
      transpose_tile(ktile, hd, nk, kt);
      for (int r = r_first; r < rows; r += kScoreRows) {
        const int rb = imin(kScoreRows, rows - r);
        const float* qs[kScoreRows];
        int jn[kScoreRows], jmax = 1;
        for (int i = 0; i < rb; ++i) {
          qs[i] = q_row(r + i);
          jn[i] = keys_of(r + i, j0);
          jmax = imax(jmax, jn[i]);
        }
        // On the diagonal tile a row block sees fewer keys than the tile holds: score only
        // the 16-key vectors it can see (P.V reads no p past a row's jn either).
        score_fn(rb, imin(nv, (jmax + 15) / 16))(qs, kt, hd, a.scale, jn, mx + r, l + r, corr + r,
                                                  p + static_cast<std::size_t>(r) * kTile);
      }
    }
    const float* vt = vbase + static_cast<std::size_t>(j0) * hd;  // [nk][hd]
    for (int z0 = 0; z0 < hz; z0 += kPvZmm) {
      const int nz = imin(kPvZmm, hz - z0), prb = pv_rows_for(nz);
      for (int r = r_first; r < rows; r += prb) {
        const int rb = imin(prb, rows - r);
        int jn[kPvMaxRows];
        for (int i = 0; i < rb; ++i) jn[i] = keys_of(r + i, j0);
        pv_fn(rb, nz)(vt, hd, z0, p + static_cast<std::size_t>(r) * kTile, jn, corr + r,
                      o + static_cast<std::size_t>(r) * hdp, hdp);
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    const int t = t0 + r / group, h = kvh * group + r % group;
    float* dst = a.out + (static_cast<std::size_t>(t) * a.n_heads + h) * hd;
    const __m512 inv = _mm512_set1_ps(1.0f / l[r]);
    const float* orow = o + static_cast<std::size_t>(r) * hdp;
    for (int z = 0; z < hz; ++z)
      _mm512_mask_storeu_ps(dst + z * 16, lanes(hd - z * 16),
                            _mm512_mul_ps(_mm512_load_ps(orow + z * 16), inv));
  }
}

}  // namespace llmport::cpu::avx512
