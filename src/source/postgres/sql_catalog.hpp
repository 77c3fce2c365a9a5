#pragma once
// Catalog look-ups for the assembler over an ordinary SQL connection: column type names (with
// domains resolved to their base type), NOT NULL flags and the primary key of a relation.

#include <libpq-fe.h>

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

}  // namespace cppcdc::pg
