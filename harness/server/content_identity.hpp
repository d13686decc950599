#pragma once
// Content identity of what a request carries, as vLLM keys its content caches: the multimodal
// processor cache and the encoder cache by each image's mm_hash (blake3 of the encoded image bytes
// since vLLM PR #29621), prefix caching's block hashes by the prompt's token ids and those mm
// hashes. Only equality matters here (same bytes, same identity), so a fast 64-bit hash replaces
// blake3: a collision would make two different contents share a cache entry, about 2^-64 per pair.
// Identities are never 0 (0 means "unknown, never a hit" to the caches).
#include <cstdint>
#include <string_view>
#include <vector>

namespace encbench::server {

// A 64-bit hash of `bytes`, 8 bytes per multiply (an image's encoded bytes cost about what
// copying them does), finished with a full avalanche; `seed` separates kinds of content.
std::uint64_t content_hash64(std::string_view bytes, std::uint64_t seed = 0);

// Folds `value` into a running identity, order-sensitive: (a, b) and (b, a) differ.
std::uint64_t combine_identity(std::uint64_t running, std::uint64_t value);

// 0 is reserved for "no identity".
inline std::uint64_t nonzero_identity(std::uint64_t h) { return h == 0 ? 1 : h; }

// The identity of a request's images as one value, which the engine timeline records per request:
// the one image's mm_hash, or their hashes combined in order; 0 without images. The processor and
// encoder caches key each image on its own mm_hash, as vLLM's do.
std::uint64_t images_identity(const std::vector<std::uint64_t>& mm_hashes);

}  // namespace encbench::server
