// mask: redact, null, truncate, hash, keyed hash, encrypt and decrypt values by path.

#include <algorithm>
#include <memory>

#include "cppcdc/transforms.hpp"
#include "transform/columns.hpp"
#include "transform/crypto.hpp"

namespace cppcdc {
namespace {

using namespace transform_detail;

// The first `n` UTF-8 code points of `text` (a continuation byte never starts one).
std::string_view utf8_prefix(std::string_view text, std::size_t n) {
  std::size_t points = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (points == n) return text.substr(0, i);
      ++points;
    }
  }
  return text;
}

struct Masker {
  MaskRule rule;
  std::unique_ptr<HmacSha256> hmac;
  std::unique_ptr<AesGcm> aes;

  static Result<Masker> create(MaskRule rule, std::string_view where) {
    const auto bad = [&](std::string what) {
      return fail(Error::configuration(std::move(what)).context(std::string(where)));
    };
    Masker m;
    switch (rule.kind) {
      case MaskRule::Kind::kRedact:
        if (rule.marker.empty()) {
          return bad(
              "redact with an empty marker leaves an empty string that looks like a real empty "
              "value; use a marker such as \"***\", or null");
        }
        break;
      case MaskRule::Kind::kTruncate:
        if (rule.length == 0) {
          return bad(
              "truncate to 0 characters leaves an empty string that looks like a real empty "
              "value; keep at least 1, or use redact or null");
        }
        break;
      case MaskRule::Kind::kHmacSha256:
      case MaskRule::Kind::kEncrypt:
      case MaskRule::Kind::kDecrypt:
        if (rule.secret.empty()) return bad(std::string(to_string(rule.kind)) + " needs a secret");
        if (rule.kind == MaskRule::Kind::kHmacSha256) {
          m.hmac = std::make_unique<HmacSha256>(rule.secret);
          if (!m.hmac->ok()) return fail(Error::internal("HMAC-SHA256 is not available in OpenSSL"));
        } else {
          m.aes = std::make_unique<AesGcm>(rule.secret);
          if (!m.aes->ok()) return fail(Error::internal("AES-256-GCM is not available in OpenSSL"));
        }
        break;
      default:
        break;
    }
    m.rule = std::move(rule);
    return m;
  }

  // The masked text of a non-NULL value; nullopt is NULL.
  Result<std::optional<std::string>> apply(std::string_view text, Sha256& sha,
                                           const std::string& aad) const {
    using Out = std::optional<std::string>;
    std::string out;
    switch (rule.kind) {
      case MaskRule::Kind::kPassthrough: return Out(std::string(text));
      case MaskRule::Kind::kNull: return Out();
      case MaskRule::Kind::kRedact: return Out(rule.marker);
      case MaskRule::Kind::kTruncate: return Out(std::string(utf8_prefix(text, rule.length)));
      case MaskRule::Kind::kUnsaltedSha256:
        if (!sha.hex(text, out)) return fail(Error::internal("SHA-256 failed in OpenSSL"));
        return Out(std::move(out));
      case MaskRule::Kind::kHmacSha256:
        if (!hmac->hex(text, out)) return fail(Error::internal("HMAC-SHA256 failed in OpenSSL"));
        return Out(std::move(out));
      case MaskRule::Kind::kEncrypt: {
        auto sealed = aes->encrypt(text, aad);
        if (!sealed) return fail(sealed.error());
        return Out(std::move(*sealed));
      }
      case MaskRule::Kind::kDecrypt: {
        auto plain = aes->decrypt(text, aad);
        if (!plain) return fail(plain.error());
        return Out(std::move(*plain));
      }
    }
    return Out(std::string(text));
  }
};

struct CompiledMaskRule {
  FieldPath path;
  Masker masker;
  std::unique_ptr<RuleCounter> counter = std::make_unique<RuleCounter>();
};

class MaskAction final : public TransformAction {
 public:
  std::string_view type() const noexcept override { return "mask"; }

  static Result<std::unique_ptr<TransformAction>> create(MaskConfig config) {
    auto a = std::make_unique<MaskAction>();
    for (auto& [text, rule] : config.rules) {
      auto path = parse_field_path(text);
      if (!path) return fail(path.error().context("rules." + text));
      for (const auto& r : a->rules_) {
        if (r.path.text == text) {
          return fail(Error::configuration("the path has two rules").context("rules." + text));
        }
      }
      auto masker = Masker::create(std::move(rule), "rules." + text);
      if (!masker) return fail(masker.error());
      a->rules_.push_back(CompiledMaskRule{std::move(*path), std::move(*masker)});
    }
    if (config.default_rule.kind != MaskRule::Kind::kPassthrough) {
      auto masker = Masker::create(std::move(config.default_rule), "default_rule");
      if (!masker) return fail(masker.error());
      a->default_ = std::make_unique<Masker>(std::move(*masker));
    }
    // Only rules of those kinds can trip the per-event key check.
    auto merges = [](const Masker& m) { return !keeps_rows_apart(m.rule.kind); };
    a->merges_keys_ =
        std::any_of(a->rules_.begin(), a->rules_.end(),
                    [&](const CompiledMaskRule& r) { return merges(r.masker); }) ||
        (a->default_ && merges(*a->default_));
    return std::unique_ptr<TransformAction>(std::move(a));
  }

  Result<ActionResult> apply(Event& event, std::string_view stage) override {
    Row* after = event.after ? &*event.after : nullptr;
    Row* before = before_row(event);
    if (after == nullptr && before == nullptr) return ActionResult::kKeep;
    if (merges_keys_ && event.primary_key) {
      if (auto st = check_key_rules(event, stage); !st) return fail(st.error());
    }
    for (auto& r : rules_) {
      r.counter->evaluated();
      bool hit = false;
      if (after != nullptr) {
        auto st = apply_rule(r, *after, event, hit);
        if (!st) return fail(st.error());
      }
      if (before != nullptr) {
        auto st = apply_rule(r, *before, event, hit);
        if (!st) return fail(st.error());
      }
      if (hit) r.counter->hit();
    }
    if (default_) {
      for (Row* row : {after, before}) {
        if (row == nullptr) continue;
        for (auto& column : *row) {
          if (!column.text || named_by_rule(column.name)) continue;
          auto masked = default_->apply(*column.text, sha_, aad(*default_, event, column.name));
          if (!masked) return fail(masked.error());
          column.text = std::move(*masked);
          column.is_json = false;
        }
      }
    }
    return ActionResult::kKeep;
  }

  // Hashing (or decrypting) a key column keeps one key per row; the rest is refused here.
  bool rewrites_key_values() const noexcept override { return true; }

  void collect_rules(std::string_view stage, std::vector<TransformRuleStats>& out) const override {
    for (const auto& r : rules_) {
      TransformRuleStats s;
      s.transform = std::string(stage);
      s.action = "mask";
      s.kind = "mask";
      s.rule = r.path.text;
      s.hits = r.counter->hits.load(std::memory_order_relaxed);
      s.evaluations = r.counter->evaluations.load(std::memory_order_relaxed);
      s.unmatched = s.hits == 0;
      s.consequence = "the column is shipping in clear text (no event carried a value at \"" +
                      r.path.text + "\")";
      out.push_back(std::move(s));
    }
  }

 private:
  // A rule that would reach a primary-key column must keep one key per row: null, redact and
  // truncate would give many rows the same key (a compacted topic or an upserting consumer
  // keeps one of them), encrypt a new key per version (a fresh nonce each time).
  static bool keeps_rows_apart(MaskRule::Kind kind) {
    return kind == MaskRule::Kind::kPassthrough || kind == MaskRule::Kind::kHmacSha256 ||
           kind == MaskRule::Kind::kUnsaltedSha256 || kind == MaskRule::Kind::kDecrypt;
  }

  Status check_key_rules(const Event& event, std::string_view stage) const {
    for (const auto& key : *event.primary_key) {
      const MaskRule* rule = nullptr;
      std::string path;
      for (const auto& r : rules_) {
        if (r.path.column() == key && !keeps_rows_apart(r.masker.rule.kind)) {
          rule = &r.masker.rule;
          path = "rule \"" + r.path.text + "\"";
          break;
        }
      }
      if (rule == nullptr && default_ && !named_by_rule(key) &&
          !keeps_rows_apart(default_->rule.kind)) {
        rule = &default_->rule;
        path = "default_rule";
      }
      if (rule == nullptr) continue;
      return fail(Error::invalid_data(
          "stage \"" + std::string(stage) + "\" would " +
          (rule->kind == MaskRule::Kind::kNull ? std::string("set to NULL")
                                               : std::string(to_string(rule->kind))) +
          " primary-key column \"" + key + "\" of table " + qualified_table(event) + " (" + path +
          "): " +
          (rule->kind == MaskRule::Kind::kEncrypt
               ? "a fresh nonce per event would give every version of a row another key"
               : "rows would share one key, and a consumer that upserts by key (or a compacted "
                 "topic) would keep only one of them") +
          ". Hash it with hmac_sha256 instead (name it with its own rule to exempt it from a "
          "default_rule), or set the key to none first (key_shaping set_primary_key)"));
    }
    return ok();
  }

  bool named_by_rule(std::string_view column) const {
    return std::any_of(rules_.begin(), rules_.end(),
                       [column](const CompiledMaskRule& r) { return r.path.column() == column; });
  }

  // The associated data of an encryption (table and path); the other kinds ignore it, so
  // they get an empty string without building one per value.
  const std::string& aad(const Masker& masker, const Event& event, std::string_view path) {
    aad_.clear();
    if (masker.rule.kind != MaskRule::Kind::kEncrypt &&
        masker.rule.kind != MaskRule::Kind::kDecrypt) {
      return aad_;
    }
    if (event.schema && !event.schema->empty()) {
      aad_ += *event.schema;
      aad_ += '.';
    }
    aad_ += event.table;
    aad_ += '\n';
    aad_ += path;
    return aad_;
  }

  Status apply_rule(const CompiledMaskRule& r, Row& row, const Event& event, bool& hit) {
    ColumnValue* column = find_column_mut(row, r.path.column());
    if (column == nullptr) return ok();
    if (r.path.segments.size() == 1) {
      hit = true;
      if (!column->text) return ok();
      auto masked = r.masker.apply(*column->text, sha_, aad(r.masker, event, r.path.text));
      if (!masked) return fail(masked.error().context("mask rule \"" + r.path.text + "\""));
      column->text = std::move(*masked);
      column->is_json = false;
      return ok();
    }
    if (!column->text || !column->is_json) return ok();
    auto json = column_to_json(*column);
    if (!json) return ok();
    Status status = ok();
    const auto& key = aad(r.masker, event, r.path.text);
    const std::size_t reached = for_each_json_match(
        *json, std::span<const std::string>(r.path.segments).subspan(1),
        [&](boost::json::value& v) {
          if (!status || v.is_null()) return;
          const auto text = json_text(v);
          auto masked = r.masker.apply(*text, sha_, key);
          if (!masked) {
            status = fail(masked.error().context("mask rule \"" + r.path.text + "\""));
            return;
          }
          if (*masked) {
            v = boost::json::string(**masked);
          } else {
            v = nullptr;
          }
        });
    if (!status) return status;
    if (reached > 0) {
      hit = true;
      column->text = boost::json::serialize(*json);
    }
    return ok();
  }

  std::vector<CompiledMaskRule> rules_;
  std::unique_ptr<Masker> default_;
  bool merges_keys_ = false;  // a rule (or the default) a key column must not get
  Sha256 sha_;
  std::string aad_;
};

}  // namespace

Result<std::unique_ptr<TransformAction>> make_mask(MaskConfig config) {
  return MaskAction::create(std::move(config));
}

}  // namespace cppcdc
