#include "retry.hpp"

namespace cppcdc::http {

Outcome classify_status(long status) noexcept {
  if (status >= 200 && status <= 299) return Outcome::kDelivered;
  if (status == 408 || status == 429 || (status >= 500 && status <= 599)) return Outcome::kRetry;
  return Outcome::kPermanent;
}

}  // namespace cppcdc::http
