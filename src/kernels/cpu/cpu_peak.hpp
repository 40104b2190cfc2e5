#pragma once
// Micro-benchmarks of this machine's limits for the roofline (`llmport bench --roofline`):
// instruction throughput loops with independent accumulator chains and a streaming read.
#include <cstddef>
#include <cstdint>

namespace llmport::cpu {
/// Runs `iters` x 12 independent vdpbf16ps (zmm) on one thread; returns FLOPs done
/// (64 per instruction). Only on AVX512_BF16 CPUs.
double peak_bf16_avx512bf16(long iters);
/// Runs `iters` x 12 independent fp32 FMAs (zmm); returns FLOPs (32 per instruction).
double peak_f32_avx512(long iters);
/// Same with ymm FMAs (16 FLOPs per instruction).
double peak_f32_avx2(long iters);
/// Runs `iters` x 12 independent int8 dot products of u8 x s8 pairs into int32 lanes;
/// returns operations, 2 per multiply-add (as a GEMM's 2 m n k FLOPs count them): vpdpbusd
/// zmm (128 per instruction, AVX512_VNNI CPUs), vpmaddubsw + vpmaddwd + vpaddd on zmm (128
/// per three) or ymm (64 per three).
double peak_int8_avx512vnni(long iters);
double peak_int8_avx512(long iters);
double peak_int8_avx2(long iters);
/// Reads `bytes` bytes of any content (a float buffer, packed bf16 weights) as `streams`
/// (1..8) concurrent sequential streams, one per equal part. Hardware prefetchers track
/// several streams: on some CPUs (a 2-vCPU Xeon VM here: 26 -> 29 GB/s) this reads faster
/// than one stream, as the decode GEMV does (it streams several weight panels at once).
/// Integer XOR, which unlike float adds has no slow path for denormal bit patterns; returns
/// the XOR of all 8-byte lanes and tail bytes (keeps the reads live).
uint64_t read_xor_streams_avx512(const void* data, std::size_t bytes, int streams);
uint64_t read_xor_streams_avx2(const void* data, std::size_t bytes, int streams);
}  // namespace llmport::cpu
