// CachedGlueSchemaRegistry and the in-memory registry.

#include <openssl/sha.h>

#include <cstring>

#include "cppcdc/glue.hpp"

namespace cppcdc {

CachedGlueSchemaRegistry::CachedGlueSchemaRegistry(std::shared_ptr<GlueSchemaRegistry> inner)
    : inner_(std::move(inner)) {}

Result<GlueSchemaVersionId> CachedGlueSchemaRegistry::register_schema_version(
    const std::string& schema_name, const std::string& definition) {
  std::lock_guard lock(mutex_);
  const auto key = std::make_pair(schema_name, definition);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  auto id = inner_->register_schema_version(schema_name, definition);
  if (!id) return fail(std::move(id).error());
  ids_.emplace(key, *id);
  definitions_.emplace(*id, definition);
  return *id;
}

Result<std::string> CachedGlueSchemaRegistry::schema_definition(const GlueSchemaVersionId& id) {
  std::lock_guard lock(mutex_);
  if (auto it = definitions_.find(id); it != definitions_.end()) return it->second;
  auto definition = inner_->schema_definition(id);
  if (!definition) return fail(std::move(definition).error());
  definitions_.emplace(id, *definition);
  return *definition;
}

std::string CachedGlueSchemaRegistry::describe() const { return inner_->describe(); }

namespace {

GlueSchemaVersionId derived_id(const std::string& schema_name, const std::string& definition) {
  const std::string input = schema_name + "\n" + definition;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  GlueSchemaVersionId id;
  std::memcpy(id.bytes.data(), digest, id.bytes.size());
  id.bytes[6] = static_cast<unsigned char>((id.bytes[6] & 0x0f) | 0x80);  // version 8
  id.bytes[8] = static_cast<unsigned char>((id.bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return id;
}

}  // namespace

std::optional<Error> InMemoryGlueSchemaRegistry::take_failure() {
  if (failures_left_ == 0 || !failure_) return std::nullopt;
  --failures_left_;
  return *failure_;
}

Result<GlueSchemaVersionId> InMemoryGlueSchemaRegistry::register_schema_version(
    const std::string& schema_name, const std::string& definition) {
  std::lock_guard lock(mutex_);
  if (auto e = take_failure()) return fail(std::move(*e));
  ++registrations_;
  if (schema_name.empty()) {
    return fail(Error::terminal("the in-memory Glue registry refuses an empty schema name"));
  }
  for (const auto& [id, version] : versions_) {
    if (version.first == schema_name && version.second == definition) return id;
  }
  const GlueSchemaVersionId id = derived_id(schema_name, definition);
  versions_.emplace(id, std::make_pair(schema_name, definition));
  return id;
}

Result<std::string> InMemoryGlueSchemaRegistry::schema_definition(const GlueSchemaVersionId& id) {
  std::lock_guard lock(mutex_);
  if (auto e = take_failure()) return fail(std::move(*e));
  ++fetches_;
  auto it = versions_.find(id);
  if (it == versions_.end()) {
    return fail(Error::terminal("schema version " + id.to_string() + " is not in the " +
                                describe() + " (EntityNotFoundException)"));
  }
  return it->second.second;
}

void InMemoryGlueSchemaRegistry::put(const std::string& schema_name, const GlueSchemaVersionId& id,
                                     std::string definition) {
  std::lock_guard lock(mutex_);
  versions_[id] = std::make_pair(schema_name, std::move(definition));
}

void InMemoryGlueSchemaRegistry::fail_next(std::size_t count, Error error) {
  std::lock_guard lock(mutex_);
  failures_left_ = count;
  failure_ = std::move(error);
}

std::size_t InMemoryGlueSchemaRegistry::registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_;
}

std::size_t InMemoryGlueSchemaRegistry::fetches() const {
  std::lock_guard lock(mutex_);
  return fetches_;
}

std::map<std::string, std::size_t> InMemoryGlueSchemaRegistry::schemas() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::size_t> out;
  for (const auto& [id, version] : versions_) ++out[version.first];
  return out;
}

}  // namespace cppcdc
