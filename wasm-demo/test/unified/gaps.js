// The tests the runner skips although it could run them: each for a gap of the test
// server, of the driver, or of the runner, named with its cause in one table, as the
// Rust runner's tests/src/unified/known_gaps.rs does (whose reasons are copied where
// the same SecantusDB limit applies, since both runners drive the same Rust core
// against the same server). docs/UNIFIED_GAPS.md lists the counts. A gap closed makes
// its tests run again once its entry is removed.

export const SERVER_GAP = 'SecantusDB gap: ';
export const DRIVER_GAP = 'driver gap: ';

// SecantusDB: `configureFailPoint` accepts `onPrimaryTransactionalWrite` but the fail
// point never fires (known_gaps.rs, ON_PRIMARY_TRANSACTIONAL_WRITE).
const ON_PRIMARY_TRANSACTIONAL_WRITE = `${SERVER_GAP}the fail point onPrimaryTransactionalWrite is accepted but never fires`;
// SecantusDB: a snapshot read with atClusterTime returns the latest data
// (known_gaps.rs, SNAPSHOT_READS_SEE_LATER_WRITES).
const SNAPSHOT_READS_SEE_LATER_WRITES = `${SERVER_GAP}snapshot reads with atClusterTime see writes made after that time`;
// SecantusDB: failCommand does not fire for the retry of a write (known_gaps.rs,
// FAIL_COMMAND_SKIPS_RETRIES).
const FAIL_COMMAND_SKIPS_RETRIES = `${SERVER_GAP}failCommand does not fire for a retried write (same txnNumber): the retry succeeds`;
// SecantusDB: a retried bulkWrite runs its writes again (known_gaps.rs,
// BULK_WRITE_RETRY_RUNS_AGAIN).
const BULK_WRITE_RETRY_RUNS_AGAIN =
  `${SERVER_GAP}a retried bulkWrite (same lsid and txnNumber) runs its writes again: its insert ` +
  "fails with a duplicate key error where MongoDB returns the first attempt's result";
// The Rust runner's sharded-cluster fixture forwards sharding commands to SecantusDB,
// which does not know them (known_gaps.rs, NO_SHARDING_COMMANDS); this runner has no
// sharded fixture, so these tests are also unmet by topology, and the entry keeps the
// reason the same if one is added.
const NO_SHARDING_COMMANDS =
  `${SERVER_GAP}no sharding commands (shardCollection, checkMetadataConsistency): SecantusDB does not know them`;

// The package's Db.createCollection and dropCollection send `create` and `drop` through
// the core's runCommand, for the Node driver's results (the command's options passed
// as given; false when the collection did not exist), so their operation spans are
// the spec's `runCommand`, not `createCollection` and `dropCollection`.
const ADMIN_THROUGH_RUN_COMMAND =
  `${DRIVER_GAP}the npm package sends create and drop through runCommand: their operation spans are named runCommand`;

/** [suite folder, file relative to it, test description ('' for every test of the file), reason]. */
export const KNOWN_GAPS = [
  ['retryable_writes', 'unified/bulkWrite.json', 'First command is retried', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/bulkWrite.json', 'BulkWrite with unordered execution', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/bulkWrite.json', 'First insertOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/bulkWrite.json', 'Second updateOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/bulkWrite.json', 'Third updateOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  [
    'retryable_writes',
    'unified/client-bulkWrite-serverErrors.json',
    'client bulkWrite with no multi: true operations succeeds after retryable writeConcernError',
    BULK_WRITE_RETRY_RUNS_AGAIN,
  ],
  ['retryable_writes', 'unified/deleteOne.json', 'DeleteOne is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/deleteOne.json', 'DeleteOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndDelete.json', 'FindOneAndDelete is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndDelete.json', 'FindOneAndDelete is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndReplace.json', 'FindOneAndReplace is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndReplace.json', 'FindOneAndReplace is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndUpdate.json', 'FindOneAndUpdate is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/findOneAndUpdate.json', 'FindOneAndUpdate is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/insertMany.json', 'InsertMany succeeds after one network error', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/insertMany.json', 'InsertMany with unordered execution', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/insertMany.json', 'InsertMany fails after multiple network errors', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/insertOne-errorLabels.json', 'InsertOne fails after multiple retryable writeConcernErrors', FAIL_COMMAND_SKIPS_RETRIES],
  ['retryable_writes', 'unified/insertOne.json', 'InsertOne is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/insertOne.json', 'InsertOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/replaceOne.json', 'ReplaceOne is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/replaceOne.json', 'ReplaceOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/updateOne.json', 'UpdateOne is committed on first attempt', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/updateOne.json', 'UpdateOne is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  ['retryable_writes', 'unified/updateOne.json', 'UpdateOne with upsert is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  // The unified format's own proof-of-concept files meet the retryable writes gaps.
  ['unified-test-format', 'poc-retryable-writes.json', 'FindOneAndUpdate is never committed', ON_PRIMARY_TRANSACTIONAL_WRITE],
  [
    'unified-test-format',
    'poc-retryable-writes.json',
    'InsertOne fails after multiple retryable writeConcernErrors',
    FAIL_COMMAND_SKIPS_RETRIES,
  ],
  ['open_telemetry', 'operation/create_collection.json', 'create collection', ADMIN_THROUGH_RUN_COMMAND],
  ['open_telemetry', 'operation/drop_collection.json', 'drop collection', ADMIN_THROUGH_RUN_COMMAND],
  ['sessions', 'snapshot-sessions.json', 'Find operation with snapshot', SNAPSHOT_READS_SEE_LATER_WRITES],
  ['sessions', 'snapshot-sessions.json', 'Distinct operation with snapshot', SNAPSHOT_READS_SEE_LATER_WRITES],
  ['sessions', 'snapshot-sessions.json', 'Aggregate operation with snapshot', SNAPSHOT_READS_SEE_LATER_WRITES],
  ['sessions', 'snapshot-sessions.json', 'Mixed operation with snapshot', SNAPSHOT_READS_SEE_LATER_WRITES],
  ['sessions', 'snapshot-sessions.json', 'Write commands with snapshot session do not affect snapshot reads', SNAPSHOT_READS_SEE_LATER_WRITES],
  [
    'change_streams',
    'unified/change-streams-showExpandedEvents.json',
    'when showExpandedEvents is true, shardCollection events are reported',
    NO_SHARDING_COMMANDS,
  ],
  [
    'run_command',
    'unified/runCursorCommand.json',
    'successfully executes checkMetadataConsistency cursor creating command',
    NO_SHARDING_COMMANDS,
  ],
];

/** Why the test `test` of `file` in `suite` is skipped for a known gap, or null. */
export function knownGap(suite, file, test, gaps = KNOWN_GAPS) {
  const found = gaps.find(([s, f, t]) => s === suite && f === file && (t === '' || t === test));
  return found ? found[3] : null;
}
