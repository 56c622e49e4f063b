// Matching actual values against expected ones (unified test format, "Evaluating
// Matches" and "Special Operators for Matching Assertions"), and the exact comparison
// of collection contents `outcome` asks for.
//
// Expected values come from the test files, parsed as canonical Extended JSON (numbers
// are bson's Int32, Long and Double); actual values come from the npm package, whose
// replies are deserialized with bson's defaults (promoteValues, promoteLongs): int32,
// int64 and double all arrive as JS numbers, so numbers compare by value, as the spec's
// "Flexible Numeric Comparisons" asks, and `$$type` can only tell them apart by value
// (see hasType).
import { EJSON } from 'bson';

/** A mismatch: what the runner reports as the reason of a failed test. */
export class MatchError extends Error {}

/** The BSON type name of a bson package value (`Int32`, `ObjectId`...), if it is one. */
function bsonType(value) {
  return value !== null && typeof value === 'object' && typeof value._bsontype === 'string' ? value._bsontype : null;
}

/** Whether `value` is a document: a plain object or a result class instance, not a BSON value. */
export function isDocument(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  if (bsonType(value) || value instanceof Date || value instanceof RegExp || ArrayBuffer.isView(value)) return false;
  if (value instanceof Map || typeof value.then === 'function') return false;
  return true;
}

const NUMERIC = new Set(['Int32', 'Double', 'Long']);

/** An int32, int64 or double as a JS number or bigint; null for anything else (Decimal128 is left out, per the spec). */
function numeric(value) {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return value;
  const type = bsonType(value);
  if (!NUMERIC.has(type)) return null;
  if (type === 'Long') return BigInt(value.toString());
  return value.valueOf();
}

function numbersEqual(a, b) {
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    const toBig = (n) => (typeof n === 'bigint' ? n : Number.isInteger(n) ? BigInt(n) : null);
    const [x, y] = [toBig(a), toBig(b)];
    return x !== null && y !== null ? x === y : Number(a) === Number(b);
  }
  return a === b;
}

/** A regular expression as [pattern, sorted flags], whichever class carries it. */
function regex(value) {
  if (value instanceof RegExp) return [value.source, [...value.flags].sort().join('')];
  if (bsonType(value) === 'BSONRegExp') return [value.pattern, [...value.options].sort().join('')];
  return null;
}

/** Two values that are neither documents nor arrays are equal: numbers by value, others by type and value. */
export function scalarsEqual(expected, actual) {
  const [x, y] = [numeric(expected), numeric(actual)];
  if (x !== null || y !== null) return x !== null && y !== null && numbersEqual(x, y);
  if (expected === null || expected === undefined) return actual === null || actual === undefined;
  if (typeof expected !== 'object' || actual === null || typeof actual !== 'object') return expected === actual;
  if (expected instanceof Date || actual instanceof Date) {
    return expected instanceof Date && actual instanceof Date && expected.getTime() === actual.getTime();
  }
  const [r, s] = [regex(expected), regex(actual)];
  if (r || s) return Boolean(r && s) && r[0] === s[0] && r[1] === s[1];
  const type = bsonType(expected);
  if (type !== bsonType(actual)) {
    // UUID is a Binary of subtype 4 (bson deserializes it as Binary).
    const binary = (t) => t === 'Binary' || t === 'UUID';
    if (!(binary(type) && binary(bsonType(actual)))) return false;
  }
  switch (type) {
    case 'ObjectId':
      return expected.equals(actual);
    case 'Binary':
    case 'UUID':
      return expected.sub_type === actual.sub_type && Buffer.from(expected.buffer).equals(Buffer.from(actual.buffer));
    case 'Timestamp':
      return expected.t === actual.t && expected.i === actual.i;
    case 'Decimal128':
      return expected.toString() === actual.toString();
    case 'MinKey':
    case 'MaxKey':
      return true;
    case 'Code':
      return expected.code === actual.code;
    case 'BSONSymbol':
      return expected.value === actual.value;
    default:
      return EJSON.stringify(expected) === EJSON.stringify(actual);
  }
}

/** Whether `value` is of the `$type` alias `alias` (spec `$$type`). */
export function hasType(value, alias) {
  const type = bsonType(value);
  const isInteger = typeof value === 'number' && Number.isInteger(value);
  switch (alias) {
    // Promoted numbers lost their BSON type: a JS number passes for any numeric type
    // its value fits (an integer-valued double cannot be told from an int).
    case 'double':
      return type === 'Double' || typeof value === 'number';
    case 'int':
      return type === 'Int32' || (isInteger && value >= -(2 ** 31) && value < 2 ** 31);
    case 'long':
      return type === 'Long' || typeof value === 'bigint' || isInteger;
    case 'number':
      return NUMERIC.has(type) || type === 'Decimal128' || typeof value === 'number' || typeof value === 'bigint';
    case 'decimal':
      return type === 'Decimal128';
    case 'string':
      return typeof value === 'string';
    case 'object':
      return isDocument(value);
    case 'array':
      return Array.isArray(value);
    case 'binData':
      return type === 'Binary' || type === 'UUID';
    case 'undefined':
      return value === undefined;
    case 'objectId':
      return type === 'ObjectId';
    case 'bool':
      return typeof value === 'boolean';
    case 'date':
      return value instanceof Date;
    case 'null':
      return value === null;
    case 'regex':
      return regex(value) !== null;
    case 'dbPointer':
      return type === 'DBPointer' || type === 'DBRef';
    case 'javascript':
      return type === 'Code' && !value.scope;
    case 'javascriptWithScope':
      return type === 'Code' && Boolean(value.scope);
    case 'symbol':
      return type === 'BSONSymbol';
    case 'timestamp':
      return type === 'Timestamp';
    case 'minKey':
      return type === 'MinKey';
    case 'maxKey':
      return type === 'MaxKey';
    default:
      throw new MatchError(`unknown $$type alias ${JSON.stringify(alias)}`);
  }
}

/** The operator and argument of `{ $$name: argument }` (a document whose only key starts with `$$`). */
function specialOperator(expected) {
  if (!isDocument(expected)) return null;
  const keys = Object.keys(expected);
  return keys.length === 1 && keys[0].startsWith('$$') ? [keys[0], expected[keys[0]]] : null;
}

/** A value, shortened, for messages. */
export function show(value) {
  let text;
  try {
    text = value === undefined ? 'undefined' : EJSON.stringify(value, { relaxed: true });
  } catch {
    text = String(value);
  }
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

function at(path) {
  return path === '' ? 'at the root' : `at ${path}`;
}

function child(path, key) {
  return path === '' ? String(key) : `${path}.${key}`;
}

/** Hexadecimal text (either case, possibly empty) as bytes, or null. */
function decodeHex(text) {
  return typeof text === 'string' && /^([0-9a-fA-F]{2})*$/.test(text) ? Buffer.from(text, 'hex') : null;
}

/**
 * Matches actual values against expected ones; `entities` resolves `$$matchesEntity`
 * (`value(name)`) and `$$sessionLsid` (`sessionLsid(name)`).
 */
export class Matcher {
  constructor(entities = { value: (name) => { throw new MatchError(`no entity ${name}`); }, sessionLsid: (name) => { throw new MatchError(`no session ${name}`); } }) {
    this.entities = entities;
  }

  /**
   * Matches `actual` against `expected` as a root-level value: a document may have
   * fields the expected one does not name (spec "Allowing Extra Fields in Root-level
   * Documents"); documents nested in it may not. `actual` undefined means absent.
   */
  root(expected, actual, path = '') {
    this.#value(expected, actual, true, path, actual !== undefined);
  }

  /**
   * The documents of an iterable result (find, aggregate...): as many as expected,
   * each a root-level document (spec: runners "MUST differentiate between an array of
   * values ... and an array of root-level documents derived from an iterable result").
   */
  iterated(expected, actual) {
    if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
      expected.forEach((item, i) => this.#value(item, actual[i], true, String(i), true));
    } else {
      this.root(expected, actual);
    }
  }

  #value(expected, actual, root, path, present) {
    // The Node driver's client bulk write results and errors key their per-operation
    // results by index in Maps; the spec writes them as documents.
    if (actual instanceof Map) actual = Object.fromEntries(actual);
    const special = specialOperator(expected);
    if (special) {
      this.#operator(special[0], special[1], actual, root, path, present);
      return;
    }
    if (!present) {
      throw new MatchError(`${at(path)}: missing, expected ${show(expected)}`);
    }
    if (isDocument(expected)) {
      if (!isDocument(actual)) throw new MatchError(`${at(path)}: expected a document, got ${show(actual)}`);
      this.#document(expected, actual, root, path);
    } else if (Array.isArray(expected)) {
      if (!Array.isArray(actual)) throw new MatchError(`${at(path)}: expected an array, got ${show(actual)}`);
      // Spec "Arrays Must Contain the Same Number of Elements".
      if (expected.length !== actual.length) {
        throw new MatchError(`${at(path)}: expected ${expected.length} elements, got ${actual.length}: ${show(actual)}`);
      }
      expected.forEach((item, i) => this.#value(item, actual[i], false, child(path, i), true));
    } else if (!scalarsEqual(expected, actual)) {
      throw new MatchError(`${at(path)}: expected ${show(expected)}, got ${show(actual)}`);
    }
  }

  #document(expected, actual, root, path) {
    for (const [key, value] of Object.entries(expected)) {
      // $$exists and $$unsetOrMatches see whether the field is there: a JS undefined
      // is absent (bson leaves undefined out), and getters of result classes count.
      const present = key in actual && actual[key] !== undefined;
      this.#value(value, actual[key], false, child(path, key), present);
    }
    if (!root) {
      const extra = Object.keys(actual).find((key) => actual[key] !== undefined && !(key in expected));
      if (extra !== undefined) {
        throw new MatchError(`${at(path)}: unexpected field ${JSON.stringify(extra)} in ${show(actual)}`);
      }
    }
  }

  #operator(operator, argument, actual, root, path, present) {
    const here = at(path);
    switch (operator) {
      case '$$exists':
        if (typeof argument !== 'boolean') throw new MatchError(`${here}: $$exists takes a boolean, not ${show(argument)}`);
        if (argument && !present) throw new MatchError(`${here}: missing, expected to exist`);
        if (!argument && present) throw new MatchError(`${here}: expected to be absent, got ${show(actual)}`);
        return;
      case '$$type': {
        if (!present) throw new MatchError(`${here}: missing, expected a value of type ${show(argument)}`);
        const aliases = Array.isArray(argument) ? argument : [argument];
        if (!aliases.some((alias) => hasType(actual, alias))) {
          throw new MatchError(`${here}: expected a value of type ${show(argument)}, got ${show(actual)}`);
        }
        return;
      }
      case '$$matchesEntity':
        this.#value(this.entities.value(argument), actual, root, path, present);
        return;
      case '$$matchesHexBytes': {
        const bytes = decodeHex(argument);
        if (!bytes) throw new MatchError(`${here}: $$matchesHexBytes: ${show(argument)} is not hexadecimal bytes`);
        const actualBytes =
          bsonType(actual) === 'Binary' ? Buffer.from(actual.buffer) : ArrayBuffer.isView(actual) ? Buffer.from(actual) : decodeHex(actual);
        if (!actualBytes || !actualBytes.equals(bytes)) throw new MatchError(`${here}: expected the bytes ${argument}, got ${show(actual)}`);
        return;
      }
      case '$$unsetOrMatches':
        if (present) this.#value(argument, actual, root, path, true);
        return;
      case '$$sessionLsid': {
        const lsid = this.entities.sessionLsid(argument);
        if (!present || !exactlyEqual(lsid, actual)) {
          throw new MatchError(`${here}: expected the lsid of ${argument} (${show(lsid)}), got ${show(actual)}`);
        }
        return;
      }
      case '$$lte': {
        const [limit, value] = [numeric(argument), present ? numeric(actual) : null];
        if (limit === null || value === null) throw new MatchError(`${here}: $$lte compares numbers: ${show(argument)} and ${show(actual)}`);
        if (!(Number(value) <= Number(limit))) throw new MatchError(`${here}: expected at most ${show(argument)}, got ${show(actual)}`);
        return;
      }
      case '$$matchAsDocument': {
        if (typeof actual !== 'string') throw new MatchError(`${here}: $$matchAsDocument needs an Extended JSON string, got ${show(actual)}`);
        let document;
        try {
          document = EJSON.parse(actual, { relaxed: false });
        } catch (error) {
          throw new MatchError(`${here}: $$matchAsDocument: ${error.message}`);
        }
        if (!isDocument(document)) throw new MatchError(`${here}: ${show(document)} is not a document`);
        // Spec: "The actual value MUST NOT be considered a root-level document".
        this.#value(argument, document, false, path, true);
        return;
      }
      case '$$matchAsRoot':
        this.#value(argument, actual, true, path, present);
        return;
      default:
        throw new MatchError(`${here}: unknown special operator ${operator}`);
    }
  }
}

/**
 * Whether two values are the same: documents with the same fields in any order,
 * arrays element by element, numbers by value, anything else by type and value. What
 * `outcome` requires (spec "Executing a Test": the documents "MUST match exactly;
 * however, test runners MUST permit variations in document key order").
 */
export function exactlyEqual(expected, actual) {
  if (isDocument(expected) || isDocument(actual)) {
    if (!isDocument(expected) || !isDocument(actual)) return false;
    const keys = Object.keys(expected);
    return (
      keys.length === Object.keys(actual).length &&
      keys.every((key) => Object.prototype.hasOwnProperty.call(actual, key) && exactlyEqual(expected[key], actual[key]))
    );
  }
  if (Array.isArray(expected) || Array.isArray(actual)) {
    return (
      Array.isArray(expected) &&
      Array.isArray(actual) &&
      expected.length === actual.length &&
      expected.every((item, i) => exactlyEqual(item, actual[i]))
    );
  }
  return scalarsEqual(expected, actual);
}
