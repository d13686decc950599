// The parquet reader: every fixture's rows equal the rows its writer was given (NAME.jsonl, written
// by the generator from those rows, not read back from the parquet), across data page v1 and v2,
// PLAIN and dictionary encodings, four codecs and several row groups; any subset of rows reads the
// same; damaged files and an unsupported codec are one-line InvalidInput naming the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/client/image.hpp"
#include "harness/core/error.hpp"
#include "harness/parquet/reader.hpp"

namespace fs = std::filesystem;
using encbench::InvalidInput;
using encbench::parquet::ParquetFile;
using nlohmann::json;

namespace {

fs::path data_dir() {
  const char* source = std::getenv("ENCBENCH_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests" / "parquet" / "data";
}

std::vector<json> jsonl_rows(const fs::path& file) {
  std::ifstream in(file);
  std::vector<json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

std::string bytes_of(const json& binary) {
  const auto& b = binary.get_binary();
  return std::string(b.begin(), b.end());
}

// A parquet row against the JSONL row: the message lists equal, each image's bytes equal.
void expect_same_row(const json& got, const json& want, const std::string& key, const std::string& where) {
  ASSERT_TRUE(got.is_object()) << where;
  EXPECT_EQ(got.at(key), want.at(key)) << where;
  const json& images = got.at("images");
  ASSERT_EQ(images.size(), want.at("images").size()) << where;
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::string expected;
    ASSERT_TRUE(encbench::client::base64_decode(want["images"][i]["bytes"].get<std::string>(), expected));
    ASSERT_TRUE(images[i].at("bytes").is_binary()) << where;
    EXPECT_EQ(bytes_of(images[i]["bytes"]), expected) << where << " image " << i;
    EXPECT_EQ(expected.substr(1, 3), "PNG") << where;
  }
}

struct Fixture {
  const char* name;
  const char* key;
  std::size_t rows, row_groups;
};
const Fixture kFixtures[] = {
    {"bench_v2_snappy_dict", "turns", 23, 5},        // v2, RLE_DICTIONARY, SNAPPY, rows of 5
    {"bench_v2_zstd", "turns", 23, 3},               // v2, ZSTD
    {"bench_v2_plain_uncompressed", "turns", 23, 1}, // v2, PLAIN, UNCOMPRESSED
    {"bench_v1_gzip", "turns", 23, 4},               // v1 (parquetjs-lite), GZIP
    {"chat_v2_gzip_dict", "conversation", 11, 3},    // v2, RLE_DICTIONARY, GZIP
    {"chat_v1_snappy", "conversation", 11, 4},       // v1, SNAPPY
};

std::vector<std::int64_t> all_rows(std::size_t n) {
  std::vector<std::int64_t> rows(n);
  for (std::size_t i = 0; i < n; ++i) rows[i] = static_cast<std::int64_t>(i);
  return rows;
}

}  // namespace

TEST(ParquetReader, EveryFixtureHoldsTheRowsItsWriterWasGiven) {
  for (const Fixture& f : kFixtures) {
    const ParquetFile file(data_dir() / (std::string(f.name) + ".parquet"));
    const auto want = jsonl_rows(data_dir() / (std::string(f.name) + ".jsonl"));
    ASSERT_EQ(want.size(), f.rows) << f.name;
    EXPECT_EQ(file.num_rows(), static_cast<std::int64_t>(f.rows)) << f.name;
    EXPECT_EQ(file.num_row_groups(), f.row_groups) << f.name;
    const auto got = file.read_rows(all_rows(f.rows), {f.key, "images"});
    ASSERT_EQ(got.size(), f.rows) << f.name;
    for (std::size_t i = 0; i < f.rows; ++i) {
      expect_same_row(got[i], want[i], f.key, std::string(f.name) + " row " + std::to_string(i));
      EXPECT_FALSE(got[i].contains("question_id")) << "only the columns asked for";
    }
  }
}

TEST(ParquetReader, ScalarColumnsAndNullsAsWritten) {
  for (const char* name : {"chat_v2_gzip_dict", "chat_v1_snappy"}) {
    const ParquetFile file(data_dir() / (std::string(name) + ".parquet"));
    EXPECT_EQ(file.column_names(), (std::vector<std::string>{"conversation_id", "model", "num_turns", "conversation", "images"}));
    const auto rows = file.read_rows(all_rows(11), {"conversation_id", "model", "num_turns", "images"});
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i]["conversation_id"], "c-" + std::to_string(i)) << name;
      EXPECT_EQ(rows[i]["model"], i % 2 ? "model-a" : "model-b") << name;
      EXPECT_EQ(rows[i]["num_turns"], 1 + i % 3) << name;
      EXPECT_TRUE(rows[i]["images"][0]["path"].is_null()) << name << " row " << i;
    }
  }
  // The bench rows: an even row's first image has a path, an odd row's none (null in the struct).
  const auto bench = ParquetFile(data_dir() / "bench_v1_gzip.parquet").read_rows({0, 1, 4}, {"images"});
  EXPECT_EQ(bench[0]["images"][0]["path"], "img_0.png");
  EXPECT_TRUE(bench[1]["images"][0]["path"].is_null());
  EXPECT_EQ(bench[2]["images"].size(), 2u);  // row 4 has two images
}

TEST(ParquetReader, AnySubsetOfRowsReadsTheSameRows) {
  const std::vector<std::vector<std::int64_t>> subsets = {{0}, {22}, {4, 5}, {0, 4, 5, 9, 10, 17, 22}, {3, 14, 15, 16}};
  for (const char* name : {"bench_v2_snappy_dict", "bench_v1_gzip", "bench_v2_zstd"}) {
    const ParquetFile file(data_dir() / (std::string(name) + ".parquet"));
    const auto want = jsonl_rows(data_dir() / (std::string(name) + ".jsonl"));
    for (const auto& subset : subsets) {
      const auto got = file.read_rows(subset, {"turns", "images"});
      ASSERT_EQ(got.size(), subset.size());
      for (std::size_t k = 0; k < subset.size(); ++k)
        expect_same_row(got[k], want[static_cast<std::size_t>(subset[k])], "turns", std::string(name) + " row " + std::to_string(subset[k]));
    }
  }
}

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path write_temp(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / ("encbench_parquet_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// Opens and reads every row; returns the InvalidInput's message, "" when the file read cleanly.
std::string read_error(const fs::path& p) {
  try {
    const ParquetFile file(p);
    (void)file.read_rows(all_rows(static_cast<std::size_t>(file.num_rows())), file.column_names());
    return "";
  } catch (const InvalidInput& e) {
    return e.what();
  }
}

}  // namespace

TEST(ParquetReader, TruncatedFilesAreOneLineNamingTheFile) {
  const std::string bytes = read_all(data_dir() / "bench_v2_snappy_dict.parquet");
  for (const std::size_t keep : {std::size_t{0}, std::size_t{3}, std::size_t{11}, bytes.size() / 2, bytes.size() - 1, bytes.size() - 9}) {
    const fs::path p = write_temp("cut.parquet", bytes.substr(0, keep));
    const std::string message = read_error(p);
    EXPECT_EQ(message.rfind(p.string() + ": ", 0), 0u) << keep << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    fs::remove(p);
  }
  // The data cut out of the middle, the footer kept: the column chunks point past what is left.
  std::string holed = bytes;
  holed.erase(100, 2000);
  const fs::path p = write_temp("holed.parquet", holed);
  const std::string message = read_error(p);
  EXPECT_NE(message.find("column '"), std::string::npos) << message;
  fs::remove(p);
}

TEST(ParquetReader, DamagedBytesAreInvalidInputOrReadNeverACrash) {
  for (const char* name : {"bench_v2_snappy_dict", "bench_v1_gzip", "chat_v2_gzip_dict"}) {
    const std::string bytes = read_all(data_dir() / (std::string(name) + ".parquet"));
    int refused = 0;
    for (std::size_t pos = 4; pos + 8 < bytes.size(); pos += 13) {
      std::string damaged = bytes;
      damaged[pos] = static_cast<char>(damaged[pos] ^ 0x5A);
      const fs::path p = write_temp("flip.parquet", damaged);
      const std::string message = read_error(p);  // anything but InvalidInput fails the test
      if (!message.empty()) {
        ++refused;
        EXPECT_EQ(message.rfind(p.string() + ": ", 0), 0u) << message;
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      }
      fs::remove(p);
    }
    EXPECT_GT(refused, 10) << name << ": damage to the footer and headers is noticed";
  }
}

TEST(ParquetReader, UnsupportedCodecNamesTheColumnAndWhatIsRead) {
  const fs::path p = data_dir() / "bad_codec_brotli.parquet";
  const std::string message = read_error(p);
  EXPECT_EQ(message.rfind(p.string() + ": column '", 0), 0u) << message;
  EXPECT_NE(message.find("BROTLI is not supported (expected UNCOMPRESSED, SNAPPY, GZIP or ZSTD)"), std::string::npos) << message;
}
