#include "harness/core/number_format.hpp"

#include <cmath>
#include <cstdio>

namespace encbench::numbers {

namespace {
template <class... Args>
std::string printf_string(const char* format, Args... args) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  if (n >= 0 && static_cast<std::size_t>(n) < sizeof buf) return buf;
  std::string out(static_cast<std::size_t>(n), '\0');  // 1e300 with many digits
  std::snprintf(out.data(), out.size() + 1, format, args...);
  return out;
}
}  // namespace

std::string fixed(double value, int digits) { return printf_string("%.*f", digits, value); }

std::string signed_fixed(double value, int digits) { return printf_string("%+.*f", digits, value); }

std::string significant(double value, int significant) { return printf_string("%.*g", significant, value); }

std::string grouped(double value) {
  if (!std::isfinite(value)) return value != value ? "nan" : (value > 0 ? "inf" : "-inf");
  const double magnitude = std::fabs(value);
  if (magnitude != 0 && magnitude < 0.01) return significant(value, 3);  // small fractions keep their digits
  const bool integral = value == std::floor(value) && magnitude < 1e15;
  const std::string digits = fixed(magnitude, integral ? 0 : 2);
  const auto dot = digits.find('.');
  const std::string whole = digits.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : digits.substr(dot);
  std::string out = value < 0 ? "-" : "";
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (i && (whole.size() - i) % 3 == 0) out += ',';
    out += whole[i];
  }
  return out + frac;
}

std::string percent_of_fraction(double fraction, int digits) { return fixed(100.0 * fraction, digits) + "%"; }

std::string exact_us(long long ns) {
  // Magnitudes as unsigned, so that the most negative value has a magnitude too.
  const unsigned long long magnitude = ns < 0 ? 0ULL - static_cast<unsigned long long>(ns) : static_cast<unsigned long long>(ns);
  return printf_string("%s%llu.%03llu", ns < 0 ? "-" : "", magnitude / 1000, magnitude % 1000);
}

}  // namespace encbench::numbers
