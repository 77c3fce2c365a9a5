#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

#include "cppcdc/http_client.hpp"

namespace cppcdc::http {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Where a response goes while libcurl reads it.
struct Sink {
  Response* response = nullptr;
  std::size_t cap = kBodyPrefix;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t len = size * count;
  std::string& body = sink->response->body_prefix;
  if (body.size() < sink->cap) body.append(data, std::min(len, sink->cap - body.size()));
  return len;  // the rest is read and dropped
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  Response* response = static_cast<Sink*>(user)->response;
  const std::size_t len = size * count;
  std::string_view line(data, len);
  if (iequals_prefix(line, "HTTP/")) {
    response->retry_after.reset();  // a new answer (after a 100 Continue): forget the last
  } else if (iequals_prefix(line, "retry-after:")) {
    line.remove_prefix(std::strlen("retry-after:"));
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    response->retry_after = std::string(line);
  }
  return len;
}

// Transport failures that come back the same on every attempt: settings or certificates to
// fix, not a receiver to wait for.
bool permanent(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_NOT_BUILT_IN:
      return true;
    default:
      return false;
  }
}

int on_progress(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(stop)->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

struct Client::Impl {
  CURL* curl = nullptr;
  const std::atomic<bool>* stop = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  Response response;
  Sink sink{&response, kBodyPrefix};
  std::string url;
  ~Impl() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::create(const ClientOptions& options) {
  global_init();
  std::unique_ptr<Client> client(new Client());
  client->impl_ = std::make_unique<Impl>();
  Impl& d = *client->impl_;
  d.sink.cap = options.max_body;
  d.url = options.url;
  d.curl = curl_easy_init();
  if (d.curl == nullptr) return fail(Error::sink(ErrorKind::kTransient, "libcurl cannot start"));
  CURL* c = d.curl;
  const auto set = [&](const char* what, CURLcode code) -> Status {
    if (code == CURLE_OK) return ok();
    return fail(Error::sink(ErrorKind::kConfiguration, std::string("libcurl refused ") + what +
                                                           ": " + curl_easy_strerror(code)));
  };
  const auto& tls = options.tls;
  d.stop = options.stop;
  if (d.stop != nullptr) {
    // libcurl calls this at least once a second while a transfer runs (connecting and
    // waiting for an answer included); a non-zero return aborts it.
    CPPCDC_TRY(set("the stop callback",
                   curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &on_progress)));
    CPPCDC_TRY(set("the stop callback", curl_easy_setopt(c, CURLOPT_XFERINFODATA, d.stop)));
    CPPCDC_TRY(set("the stop callback", curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L)));
  }
  if (!options.url.empty()) {
    CPPCDC_TRY(set("the url", curl_easy_setopt(c, CURLOPT_URL, options.url.c_str())));
  }
  CPPCDC_TRY(set("the protocols", curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https")));
  CPPCDC_TRY(set("no signals", curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L)));
  CPPCDC_TRY(
      set("connect_timeout_ms", curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                                                 static_cast<long>(options.connect_timeout_ms))));
  CPPCDC_TRY(
      set("request_timeout_ms",
          curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout_ms))));
  CPPCDC_TRY(set("redirects", curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L)));
  CPPCDC_TRY(set("TCP keep-alive", curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L)));
  CPPCDC_TRY(set("the user agent", curl_easy_setopt(c, CURLOPT_USERAGENT, "cppcdc")));
  CPPCDC_TRY(set("tls.verify", curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, tls.verify ? 1L : 0L)));
  CPPCDC_TRY(set("tls.verify", curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, tls.verify ? 2L : 0L)));
  if (!tls.ca_file.empty()) {
    CPPCDC_TRY(set("tls.ca_file", curl_easy_setopt(c, CURLOPT_CAINFO, tls.ca_file.c_str())));
  }
  if (!tls.client_cert.empty()) {
    CPPCDC_TRY(
        set("tls.client_cert", curl_easy_setopt(c, CURLOPT_SSLCERT, tls.client_cert.c_str())));
    CPPCDC_TRY(set("tls.client_key", curl_easy_setopt(c, CURLOPT_SSLKEY, tls.client_key.c_str())));
  }
  CPPCDC_TRY(set("the error buffer", curl_easy_setopt(c, CURLOPT_ERRORBUFFER, d.error)));
  CPPCDC_TRY(set("the body callback", curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body)));
  CPPCDC_TRY(set("the body callback", curl_easy_setopt(c, CURLOPT_WRITEDATA, &d.sink)));
  CPPCDC_TRY(set("the header callback", curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header)));
  CPPCDC_TRY(set("the header callback", curl_easy_setopt(c, CURLOPT_HEADERDATA, &d.sink)));
  return client;
}

Response Client::post(const std::vector<std::string>& headers, std::string_view body) {
  return perform(impl_->url, headers, &body);
}

Response Client::send(const std::string& url, const std::vector<std::string>& headers,
                      const std::optional<std::string>& body) {
  if (!body) return perform(url, headers, nullptr);
  const std::string_view view(*body);
  return perform(url, headers, &view);
}

Response Client::perform(const std::string& url, const std::vector<std::string>& headers,
                         const std::string_view* body) {
  Impl& d = *impl_;
  d.response = Response{};
  d.error[0] = '\0';
  curl_slist* list = nullptr;
  for (const auto& h : headers) {
    curl_slist* next = curl_slist_append(list, h.c_str());
    if (next == nullptr) {
      curl_slist_free_all(list);
      d.response.transport_error = "out of memory building the request headers";
      return d.response;
    }
    list = next;
  }
  curl_easy_setopt(d.curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(d.curl, CURLOPT_HTTPHEADER, list);
  if (body) {
    curl_easy_setopt(d.curl, CURLOPT_POST, 1L);
    curl_easy_setopt(d.curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(d.curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(d.curl, CURLOPT_HTTPGET, 1L);
  }
  const CURLcode code = curl_easy_perform(d.curl);
  curl_easy_setopt(d.curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(list);
  if (code != CURLE_OK) {
    d.response.status = 0;
    if (code == CURLE_ABORTED_BY_CALLBACK) {
      d.response.transport_error =
          "the request was cut short because the process is stopping (no answer had arrived)";
      return d.response;
    }
    d.response.transport_error =
        d.error[0] != '\0' ? std::string(d.error) : std::string(curl_easy_strerror(code));
    d.response.transport_permanent = permanent(code);
    return d.response;
  }
  long status = 0;
  curl_easy_getinfo(d.curl, CURLINFO_RESPONSE_CODE, &status);
  d.response.status = status;
  return d.response;
}

std::string redact_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url.substr(0, url.find('?')));
  const std::size_t start = scheme_end + 3;
  std::size_t auth_end = url.find_first_of("/?#", start);
  if (auth_end == std::string_view::npos) auth_end = url.size();
  std::string out(url.substr(0, start));
  std::string_view authority = url.substr(start, auth_end - start);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view user = authority.substr(0, at);
    if (const auto colon = user.find(':'); colon != std::string_view::npos) {
      out += std::string(user.substr(0, colon)) + ":****";
    } else {
      out += std::string(user);
    }
    out += '@';
    authority.remove_prefix(at + 1);
  }
  out += std::string(authority);
  std::string_view rest = url.substr(auth_end);
  const auto cut = rest.find_first_of("?#");
  out += std::string(rest.substr(0, cut));
  if (cut != std::string_view::npos && rest[cut] == '?') out += "?...";
  return out;
}

}  // namespace cppcdc::http
