#pragma once
// AWS Signature Version 4 for Glue's JSON API: POST to "/" with an empty query, the headers
// Content-Type, Host, X-Amz-Date, X-Amz-Target (and X-Amz-Security-Token with temporary
// credentials) signed. Pure functions, no I/O; the unit tests check them against botocore.

#include <chrono>
#include <string>
#include <vector>

namespace cppcdc::glue_detail {

struct SigV4Request {
  std::string host;  ///< the Host header: host, with the port when one is written
  std::string region;
  std::string service = "glue";
  std::string operation;  ///< "RegisterSchemaVersion": X-Amz-Target AWSGlue.<operation>
  std::string body;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  ///< empty: none
  std::string amz_date;       ///< "20261204T070000Z"
};

/// "YYYYMMDDTHHMMSSZ" in UTC.
std::string amz_date(std::chrono::system_clock::time_point when);

/// The request's headers ("Name: value" lines), Authorization included.
std::vector<std::string> sign_glue_request(const SigV4Request& request);

}  // namespace cppcdc::glue_detail
