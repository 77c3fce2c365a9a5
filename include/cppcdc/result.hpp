#pragma once
// Result<T>: the return type of every fallible public call. A value of T, or an Error
// (error.hpp). Status is Result<void>. Built on tl::expected (Debian's libexpected-dev).

#include <tl/expected.hpp>

#include "cppcdc/error.hpp"

namespace cppcdc {

/// A tl::expected<T, Error> that must not be ignored: dropping a Result (and so its error) is a
/// compile-time warning. Converts to and from tl::expected<T, Error>; everything else is
/// tl::expected's.
template <class T>
class [[nodiscard]] Result : public tl::expected<T, Error> {
 public:
  using Base = tl::expected<T, Error>;
  using Base::Base;
  Result() = default;
  Result(const Base& b) : Base(b) {}        // NOLINT(google-explicit-constructor)
  Result(Base&& b) : Base(std::move(b)) {}  // NOLINT(google-explicit-constructor)
};

using Status = Result<void>;

/// Builds the error side of a Result: `return fail(Error::terminal("..."));`
inline tl::unexpected<Error> fail(Error error) { return tl::unexpected<Error>(std::move(error)); }

/// A successful Status.
inline Status ok() { return {}; }

}  // namespace cppcdc

/// Propagates the error of a Result-returning expression, otherwise yields nothing.
#define CPPCDC_TRY(expr)                                    \
  do {                                                      \
    auto cppcdc_try_result_ = (expr);                       \
    if (!cppcdc_try_result_) {                              \
      return ::tl::unexpected(std::move(cppcdc_try_result_).error()); \
    }                                                       \
  } while (false)

/// Propagates the error of a Result-returning expression, adding a context layer.
#define CPPCDC_TRY_CTX(expr, what)                          \
  do {                                                      \
    auto cppcdc_try_result_ = (expr);                       \
    if (!cppcdc_try_result_) {                              \
      return ::tl::unexpected(std::move(cppcdc_try_result_).error().context(what)); \
    }                                                       \
  } while (false)
