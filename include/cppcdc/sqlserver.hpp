#pragma once
// SQL Server: what exists of the connector so far is the notation and order of its checkpoint
// offsets (the CDC-table source itself is a later issue).
//
// An offset is "<commit lsn>" or "<commit lsn>:<seqval>:<operation>", each LSN 10 bytes of hex
// with or without a 0x prefix. Only the commit LSN is ordered: a bare commit LSN and the long
// form of the same commit are both valid resume points and compare equal.

#include <memory>

#include "cppcdc/position.hpp"

namespace cppcdc::sqlserver {

/// The order of SQL Server checkpoint offsets described above.
std::shared_ptr<const PositionOrder> offset_order();

/// Registers offset_order() for source type "sqlserver" (idempotent, thread-safe).
void register_positions();

/// Reserves source type "sqlserver" in the plugin registry (cppcdc/plugin.hpp) and
/// registers the offset order: the source itself is not built yet, so a configuration that
/// asks for it is told so. Idempotent.
void register_plugin();

}  // namespace cppcdc::sqlserver
