#pragma once
// The project's one number formatter: every table, progress line and page that prints a number
// goes through these, so one value reads the same in the terminal, Markdown and HTML. Non-finite
// values print as printf writes them ("inf", "-inf", "nan").
#include <string>

namespace encbench::numbers {

// "12.35": `digits` after the point.
std::string fixed(double value, int digits);
// "+1.6", "-0.4", "+0.0": the sign always written.
std::string signed_fixed(double value, int digits);
// "0.0001235", "1.235e+06", "12": `significant` significant digits (printf's %g).
std::string significant(double value, int significant);
// The seeds' tables: "1,207.07" (thousands grouped, two decimals), "2,475" (whole numbers
// without), "0.00123" (below 0.01, three significant digits).
std::string grouped(double value);
// "12.5%" from a fraction 0.125, `digits` after the point.
std::string percent_of_fraction(double fraction, int digits);
// Integer nanoseconds as microseconds with all three decimals, exactly: 1736405443881410320 ->
// "1736405443881410.320" (a double holds ~16 digits; absolute profiler times have 19).
std::string exact_us(long long ns);

}  // namespace encbench::numbers
