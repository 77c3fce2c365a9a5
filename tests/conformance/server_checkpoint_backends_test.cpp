// The checkpoint conformance suite for the backends that keep the record on a server:
// "postgresql" (a row of the test PostgreSQL, CPPCDC_TEST_PG_DSN) and "redis" (a key of the
// test Redis, CPPCDC_TEST_REDIS_PORT). Built into the integration tests; each test skips,
// naming the variable, when its server is not configured. The harnesses are in
// tests/integration/state_backend_util.hpp.

#include "conformance/checkpoint_conformance.hpp"
#include "integration/state_backend_util.hpp"

namespace cppcdc::conformance {

INSTANTIATE_TYPED_TEST_SUITE_P(PostgresqlCheckpoint, CheckpointConformance,
                               it::state::PostgresqlCheckpointHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(RedisCheckpoint, CheckpointConformance,
                               it::state::RedisCheckpointHarness);

}  // namespace cppcdc::conformance
