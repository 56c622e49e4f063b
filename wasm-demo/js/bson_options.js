// The BSON options of the Node.js driver (`promoteLongs`, `useBigInt64`, `ignoreUndefined`,
// `raw`...): given to a MongoClient, a Db, a Collection or one operation, each level
// inheriting what it does not set from the one above (client → db → collection →
// operation), and turned into the `bson` package's serialize and deserialize options.
// Also exported by `anymongo/lib/bson` (as `mongodb/lib/bson` exports them).

/** The BSON options and their defaults (the Node driver's). */
const DEFAULTS = {
  raw: false,
  useBigInt64: false,
  promoteLongs: true,
  promoteValues: true,
  promoteBuffers: false,
  ignoreUndefined: false,
  bsonRegExp: false,
  serializeFunctions: false,
  fieldsAsRaw: {},
  enableUtf8Validation: true,
};

/** The names of the BSON options. */
export const BSON_OPTION_NAMES = Object.keys(DEFAULTS);

/** What of `options` the serializer takes: `checkKeys`, `serializeFunctions`, `ignoreUndefined`. */
export function pluckBSONSerializeOptions(options = {}) {
  const { checkKeys, serializeFunctions, ignoreUndefined } = options;
  return { checkKeys, serializeFunctions, ignoreUndefined };
}

/**
 * The BSON options of `options`, each one it does not set taken from `parent` (an
 * object with `bsonOptions`: a client, database or collection), else its default.
 */
export function resolveBSONOptions(options, parent) {
  const inherited = parent?.bsonOptions ?? DEFAULTS;
  const resolved = {};
  for (const name of BSON_OPTION_NAMES) {
    resolved[name] = options?.[name] ?? inherited[name] ?? DEFAULTS[name];
  }
  return resolved;
}

/** The deserializer's `validation` for `enableUtf8Validation` (checked unless it is false). */
export function parseUtf8ValidationOption(options) {
  return options?.enableUtf8Validation === false ? { utf8: false } : { utf8: { writeErrors: false } };
}

/** The `bson` package's serialize options for resolved BSON options. */
export function serializeOptions(bsonOptions) {
  return { ignoreUndefined: bsonOptions.ignoreUndefined, serializeFunctions: bsonOptions.serializeFunctions };
}

/** The `bson` package's deserialize options for resolved BSON options. */
export function deserializeOptions(bsonOptions) {
  const { useBigInt64, promoteLongs, promoteValues, promoteBuffers, bsonRegExp, fieldsAsRaw } = bsonOptions;
  return {
    useBigInt64,
    promoteLongs,
    promoteValues,
    promoteBuffers,
    bsonRegExp,
    fieldsAsRaw,
    validation: parseUtf8ValidationOption(bsonOptions),
  };
}
