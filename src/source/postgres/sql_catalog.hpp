#pragma once
// Catalog look-ups for the assembler over an ordinary SQL connection: column type names (with
// domains resolved to their base type), NOT NULL flags and the primary key of a relation; and
// under which name a publication sends a partition's changes.

#include <libpq-fe.h>

#include <optional>
#include <string>

#include "source/postgres/assembler.hpp"

namespace cppcdc::pg {

class SqlCatalog final : public CatalogLookup {
 public:
  /// `conn` is borrowed and must outlive this object.
  explicit SqlCatalog(PGconn* conn) : conn_(conn) {}
  /// Errors keep libpq's classification (transient for a lost connection).
  Result<RelationDetails> describe(const RelationMsg& rel) override;

 private:
  PGconn* conn_;
};

/// Whether publication `publication` publishes via the partition root (its
/// publish_via_partition_root, pg_publication.pubviaroot): then the changes of a partition of a
/// published table arrive under the name of its partition root, else under the partition's own
/// name. nullopt when there is no such publication. Errors keep libpq's classification.
Result<std::optional<bool>> publishes_via_root(PGconn* conn, const std::string& publication);

/// The log line for a partition `partition` ("schema.table") that the stream names and whose
/// ancestor `ancestor` is captured: under which name its changes arrive, given `via_root` (what
/// publishes_via_root() said about `publication`; nullopt: not known).
std::string partition_capture_note(const std::string& partition, const std::string& ancestor,
                                   const std::string& publication, std::optional<bool> via_root);

}  // namespace cppcdc::pg
