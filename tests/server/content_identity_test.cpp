// The live server's content identity (harness/server/content_identity.hpp): each image's mm_hash
// from its encoded bytes, the prompt's identity from its text and those hashes, and the API-server
// stage's processor cache keyed by them. vLLM's caches see the same equality (blake3 there).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

#include "harness/server/api_server_stage.hpp"
#include "harness/server/content_identity.hpp"
#include "harness/server/openai_request.hpp"
#include "harness/serving/api_server_pipeline.hpp"
#include "harness/vision/vision_geometry.hpp"
#include "tests/server/test_images.hpp"

namespace encbench::server {
namespace {

using nlohmann::json;

TEST(ContentHash, DistinctInputsGiveDistinctHashesAndOneBitFlipsHalfTheOutput) {
  // Lengths 0..64 of zero bytes (only the length differs), and every one-bit flip of a 64-byte
  // block: all distinct, and a flip changes about half of the 64 output bits.
  std::set<std::uint64_t> seen;
  for (std::size_t n = 0; n <= 64; ++n) EXPECT_TRUE(seen.insert(content_hash64(std::string(n, '\0'))).second) << n;
  std::string block(64, '\0');
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 37 + 11);
  const std::uint64_t base = content_hash64(block);
  double flipped_bits = 0;
  for (std::size_t bit = 0; bit < block.size() * 8; ++bit) {
    std::string flipped = block;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    const std::uint64_t h = content_hash64(flipped);
    EXPECT_TRUE(seen.insert(h).second) << bit;
    flipped_bits += std::popcount(h ^ base);
  }
  const double mean = flipped_bits / (block.size() * 8);
  EXPECT_GT(mean, 30.0);  // 32 expected; 512 draws of sd 4 give a mean within +-0.6
  EXPECT_LT(mean, 34.0);
  // Deterministic, seed-separated, order-sensitive combination.
  EXPECT_EQ(content_hash64("abc"), content_hash64(std::string("abc")));
  EXPECT_NE(content_hash64("abc", 1), content_hash64("abc", 2));
  EXPECT_NE(combine_identity(combine_identity(0, 1), 2), combine_identity(combine_identity(0, 2), 1));
  EXPECT_EQ(nonzero_identity(0), 1u);
  EXPECT_EQ(nonzero_identity(42), 42u);
}

RequestParseOptions parse_options() {
  RequestParseOptions o;
  o.served_model_name = "m";
  o.geometry = vision::vision_geometry_for("qwen2.5-vl-7b");
  return o;
}

json chat_body(const std::string& text, const std::string& image_url, int max_tokens, const std::string& role = "user") {
  json content = json::array({{{"type", "text"}, {"text", text}}});
  if (!image_url.empty()) content.push_back({{"type", "image_url"}, {"image_url", {{"url", image_url}}}});
  return {{"model", "m"}, {"messages", {{{"role", role}, {"content", content}}}}, {"max_tokens", max_tokens}};
}

GenerationRequest parse_chat(const json& body) {
  return parse_generation_request(Endpoint::chat_completions, body.dump(), parse_options());
}

// An image's mm_hash is the hash of its encoded bytes as sent; the prompt's identity follows its
// text and images, not its sampling fields.
TEST(PromptIdentity, SameTextAndImageShareItAndAnyContentChangeMovesIt) {
  const std::string png = testing::encode_image(64, 48, false);
  const std::string url = "data:image/png;base64," + testing::base64(png);
  const GenerationRequest a = parse_chat(chat_body("what is this", url, 5));
  json with_sampling = chat_body("what is this", url, 9);
  with_sampling["seed"] = 7;
  with_sampling["temperature"] = 0.5;
  const GenerationRequest b = parse_chat(with_sampling);
  ASSERT_EQ(a.images.size(), 1u);
  EXPECT_EQ(a.images[0].mm_hash, content_hash64(png));  // the bytes behind the base64
  EXPECT_NE(a.images[0].mm_hash, 0u);
  EXPECT_NE(a.prompt_hash, 0u);
  EXPECT_EQ(b.images[0].mm_hash, a.images[0].mm_hash);
  EXPECT_EQ(b.prompt_hash, a.prompt_hash);
  EXPECT_NE(b.body_hash, a.body_hash);  // the body's hash (stop-length seed) does differ

  // Other image bytes (one row more; the same image as JPEG), other text, another role: new identity.
  const GenerationRequest taller = parse_chat(chat_body("what is this", testing::data_url(64, 49, false), 5));
  const GenerationRequest jpeg = parse_chat(chat_body("what is this", testing::data_url(64, 48, true), 5));
  const GenerationRequest other_text = parse_chat(chat_body("what is that", url, 5));
  const GenerationRequest system = parse_chat(chat_body("what is this", url, 5, "system"));
  const GenerationRequest no_image = parse_chat(chat_body("what is this", "", 5));
  EXPECT_NE(taller.images[0].mm_hash, a.images[0].mm_hash);
  EXPECT_NE(jpeg.images[0].mm_hash, a.images[0].mm_hash);
  EXPECT_EQ(other_text.images[0].mm_hash, a.images[0].mm_hash);
  std::set<std::uint64_t> prompts{a.prompt_hash};
  for (const GenerationRequest* r : {&taller, &jpeg, &other_text, &system, &no_image})
    EXPECT_TRUE(prompts.insert(r->prompt_hash).second);

  // A string content and one text part are the same prompt; text then image differs from image then text.
  const json as_string = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "what is this"}}}}};
  EXPECT_EQ(parse_chat(as_string).prompt_hash, no_image.prompt_hash);
  json swapped = chat_body("what is this", url, 5);
  std::swap(swapped["messages"][0]["content"][0], swapped["messages"][0]["content"][1]);
  EXPECT_TRUE(prompts.insert(parse_chat(swapped).prompt_hash).second);
}

TEST(PromptIdentity, CompletionsKeyOnTheirPromptTextOrTokenIds) {
  const auto parse = [](const std::string& body) {
    return parse_generation_request(Endpoint::completions, body, parse_options()).prompt_hash;
  };
  const std::uint64_t text = parse(R"({"model":"m","prompt":"hello there","max_tokens":3})");
  EXPECT_NE(text, 0u);
  EXPECT_EQ(parse(R"({"model":"m","prompt":["hello there"],"max_tokens":8})"), text);
  EXPECT_NE(parse(R"({"model":"m","prompt":"hello there!","max_tokens":3})"), text);
  const std::uint64_t ids = parse(R"({"model":"m","prompt":[1,2,3]})");
  EXPECT_EQ(parse(R"({"model":"m","prompt":[1,2,3],"seed":4})"), ids);
  EXPECT_NE(parse(R"({"model":"m","prompt":[1,3,2]})"), ids);
  EXPECT_NE(parse(R"({"model":"m","prompt":[1,2]})"), ids);
  // The chat template's tokens differ from a bare completion of the same text.
  EXPECT_NE(parse_chat({{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hello there"}}}}}).prompt_hash,
            text);
}

TEST(PromptIdentity, AnImageFromDiskHasTheSameMmHashAsItsDataUrl) {
  const auto dir = std::filesystem::temp_directory_path() / ("encbench_identity_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string png = testing::encode_image(40, 30, false);
  std::ofstream(dir / "a.png", std::ios::binary) << png;
  RequestParseOptions o = parse_options();
  o.image_policy.allowed_local_media_path = std::filesystem::canonical(dir);
  const auto mm_hash = [&](const std::string& url) {
    return parse_generation_request(Endpoint::chat_completions, chat_body("x", url, 1).dump(), o).images.at(0).mm_hash;
  };
  EXPECT_EQ(mm_hash("file://" + std::filesystem::canonical(dir / "a.png").string()),
            mm_hash("data:image/png;base64," + testing::base64(png)));
  std::filesystem::remove_all(dir);
}

TEST(ImagesIdentity, OneImageIsItsHashSeveralAreCombinedInOrder) {
  EXPECT_EQ(images_identity({}), 0u);
  EXPECT_EQ(images_identity({77}), 77u);
  const std::uint64_t ab = images_identity({5, 9});
  EXPECT_NE(ab, 0u);
  EXPECT_NE(ab, images_identity({9, 5}));
  EXPECT_NE(ab, images_identity({5}));
}

// The live stage's costs are the virtual pipeline's, call for call: a duplicate's images hit the
// processor cache and cost decode + hash + prompt update + fixed, no HF processor.
TEST(LiveApiServerStage, ADuplicatesCostIsTheVirtualPipelinesWithoutTheHfProcessor) {
  serving::ApiServerModel model;
  model.name = "test";
  serving::set_api_server_count(model, 1, "test");
  model.request_ms = {2, "test"};
  model.decode_ns_per_pixel = {30, "test"};
  model.hash_ns_per_pixel = {3, "test"};
  model.process_ns_per_pixel = {400, "test"};
  model.prompt_us_per_token = {5, "test"};
  model.media_loading_threads = {2, "test"};
  model.processor_cache_gib = {1, "test"};
  ApiServerStage live(model, 100);
  serving::ApiServerPipeline virt(model);
  const std::int64_t pixels = 640 * 480, tokens = 300;
  const std::int64_t bytes = serving::processor_item_bytes(vision::GridTHW{1, 34, 46}.patches(), 14, 2, 2.0);
  const std::uint64_t keys[] = {11, 11, 12, 11};
  Nanos modelled = 0;
  for (int i = 0; i < 4; ++i) {
    const Nanos sent = i * 1'000'000;
    const ApiServerInput input{tokens, {{pixels, keys[i], bytes}}};
    const Nanos ready = live.ready_at(sent, sent, sent, input);  // a parse that took no time
    const serving::ApiServerProcessed p = virt.process(virt.decode(sent, pixels), input.images, tokens);
    EXPECT_EQ(ready, p.end_ns) << i;
    EXPECT_EQ(p.cache_hits, (i == 1 || i == 3) ? 1 : 0) << i;
    const Nanos serial = 2'000'000 + pixels * 3 + tokens * 5'000 + (p.cache_hits > 0 ? 0 : pixels * 400);
    EXPECT_EQ(p.cost_ns, serial) << i;
    modelled += serial + pixels * 30;
  }
  const ApiServerStats s = live.stats();
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.processor_cache_hits, 2);
  EXPECT_EQ(s.modelled_ns, modelled);
}

}  // namespace
}  // namespace encbench::server
