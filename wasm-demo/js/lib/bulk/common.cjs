// `require('anymongo/lib/bulk/common')`: js/lib/bulk/common.js for CommonJS, over the
// package's CommonJS entry (pkg/node.cjs), so that its classes are that entry's.
const driver = require('../../../pkg/node.cjs');

module.exports = {
  BatchType: Object.freeze({ INSERT: 1, UPDATE: 2, DELETE: 3 }),
  BulkWriteResult: driver.BulkWriteResult,
  MongoBulkWriteError: driver.MongoBulkWriteError,
  WriteError: driver.WriteError,
  WriteConcernError: driver.WriteConcernError,
  BulkOperationBase: driver.BulkOperation,
};
