// Names made safe for Markdown and file names: what reaches a page is text, never
// markup; what reaches a path is one component inside the chosen directory.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/core/text_escape.hpp"

using encbench::markdown_code;
using encbench::markdown_text;
using encbench::safe_file_component;

TEST(MarkdownText, HtmlBecomesEntitiesAndMarkupIsEscaped) {
  EXPECT_EQ(markdown_text("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(markdown_text("<img src=x onerror=\"y\">"), "&lt;img src=x onerror=&quot;y&quot;&gt;");
  EXPECT_EQ(markdown_text("a|b"), "a\\|b");  // a pipe would split the table cell
  EXPECT_EQ(markdown_text("`code` *bold* [link](u) ~~s~~ \\"), "\\`code\\` \\*bold\\* \\[link\\](u) \\~\\~s\\~\\~ \\\\");
  EXPECT_EQ(markdown_text("line\nbreak\r\tand\x01"), "line break  and ");  // a newline would end the row
  EXPECT_EQ(markdown_text("a & b"), "a &amp; b");
}

TEST(MarkdownText, OrdinaryNamesAreUnchanged) {
  EXPECT_EQ(markdown_text("syncs_per_forward"), "syncs_per_forward");  // GFM: no emphasis inside a word
  EXPECT_EQ(markdown_text("Mean TTFT (ms)"), "Mean TTFT (ms)");
  EXPECT_EQ(markdown_text("qwen2.5-vl-7b/layer.3"), "qwen2.5-vl-7b/layer.3");
  EXPECT_EQ(markdown_text("_x_ and a_"), "\\_x\\_ and a\\_");  // at a word edge it could emphasise
}

TEST(MarkdownCode, FenceIsLongerThanAnyBacktickRun) {
  EXPECT_EQ(markdown_code("base.json"), "`base.json`");
  EXPECT_EQ(markdown_code("we`ird.json"), "``we`ird.json``");
  EXPECT_EQ(markdown_code("a``b"), "```a``b```");
  EXPECT_EQ(markdown_code("`x`"), "`` `x` ``");  // padded: a span may not start with its fence char
  EXPECT_EQ(markdown_code("a\nb"), "`a b`");
  EXPECT_EQ(markdown_code("a|b", true), "`a\\|b`");
  EXPECT_EQ(markdown_code("a|b"), "`a|b`");
}

TEST(SafeFileComponent, NeverLeavesTheDirectory) {
  EXPECT_EQ(safe_file_component("../../x"), ".._.._x");
  EXPECT_EQ(safe_file_component(".."), "_..");
  EXPECT_EQ(safe_file_component("."), "_.");
  EXPECT_EQ(safe_file_component("a/b\\c"), "a_b_c");
  EXPECT_EQ(safe_file_component("tab\there\n\x7f"), "tab_here__");
  EXPECT_EQ(safe_file_component("", "bench"), "bench");
  EXPECT_EQ(safe_file_component("/"), "_");
  EXPECT_EQ(safe_file_component(std::string(300, 'a')).size(), 200u);
  for (const std::string name : {"../../x", "..", "/etc/passwd", "a/../../b", "x\0y"}) {
    const std::filesystem::path joined = std::filesystem::path("rd") / safe_file_component(name);
    EXPECT_EQ(joined.parent_path(), "rd") << name;
    EXPECT_NE(joined.filename(), "..");
  }
}

TEST(SafeFileComponent, OrdinaryLabelsAreUnchanged) {
  for (const char* name : {"vllm-0.6", "qwen2.5-vl-7b", "openai-chat", "arm_b", "baseline+fix", "run@host"})
    EXPECT_EQ(safe_file_component(name), name);
}
