#pragma once
// Checked reads of JSON values from files a user hands us. nlohmann's get<int> of 4.9e21, of 2^63
// or of 1.5 is a float-to-int cast or a narrowing with undefined behaviour, and get<> of the
// wrong type throws a type_error no caller expects (both found by the fuzz targets of
// tests/fuzz). as<T> answers nullopt instead, so a reader can say which key is wrong.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::json_read {

template <typename T>
struct is_vector : std::false_type {};
template <typename U>
struct is_vector<std::vector<U>> : std::true_type {};
template <typename T>
struct is_pair : std::false_type {};
template <typename A, typename B>
struct is_pair<std::pair<A, B>> : std::true_type {};

// T: bool, an integer type (only JSON integers in T's range), a floating type (any JSON number),
// std::string, or std::vector / std::pair (a JSON array of two) of those.
template <typename T>
std::optional<T> as(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return std::nullopt;
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return std::nullopt;
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
      return static_cast<T>(u);
    }
    const auto i = v.get<std::int64_t>();
    if (i < 0 && (!std::is_signed_v<T> || i < static_cast<std::int64_t>(std::numeric_limits<T>::min())))
      return std::nullopt;
    if (i > 0 && static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      return std::nullopt;
    return static_cast<T>(i);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return std::nullopt;
    return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return std::nullopt;
    return v.get<std::string>();
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) return std::nullopt;
    T out;
    out.reserve(v.size());
    for (const auto& e : v) {
      auto item = as<typename T::value_type>(e);
      if (!item) return std::nullopt;
      out.push_back(std::move(*item));
    }
    return out;
  } else if constexpr (is_pair<T>::value) {
    if (!v.is_array() || v.size() != 2) return std::nullopt;
    auto first = as<typename T::first_type>(v[0]);
    auto second = as<typename T::second_type>(v[1]);
    if (!first || !second) return std::nullopt;
    return T{std::move(*first), std::move(*second)};
  } else {
    static_assert(sizeof(T) == 0, "json_read::as: unsupported type");
  }
}

}  // namespace encbench::json_read
