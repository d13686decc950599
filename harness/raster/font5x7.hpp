#pragma once
// A built-in 5x7 bitmap font for printable ASCII (the raster's text; no font files are read).
namespace encbench::raster {

inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7;
inline constexpr int kGlyphAdvance = 6;  // one blank column between characters

// Whether the glyph of `c` inks (column, row), row 0 at the top; characters outside 32..126 draw
// an outlined box.
bool glyph_pixel(char c, int column, int row);

}  // namespace encbench::raster
