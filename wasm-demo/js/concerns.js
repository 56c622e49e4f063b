// ReadPreference, ReadConcern and WriteConcern, as the Node.js driver's classes, and
// what the core takes of each (a plain document), whichever form the application gave:
// the class, a plain object, or a string.
import { MongoInvalidArgumentError } from './errors.js';

const MODES = ['primary', 'primaryPreferred', 'secondary', 'secondaryPreferred', 'nearest'];

/** Where reads go: `new ReadPreference('secondary', [{ dc: 'east' }], { maxStalenessSeconds: 90 })`. */
export class ReadPreference {
  static PRIMARY = 'primary';
  static PRIMARY_PREFERRED = 'primaryPreferred';
  static SECONDARY = 'secondary';
  static SECONDARY_PREFERRED = 'secondaryPreferred';
  static NEAREST = 'nearest';

  constructor(mode, tags, options = {}) {
    if (!ReadPreference.isValid(mode)) {
      throw new MongoInvalidArgumentError(`Invalid read preference mode ${JSON.stringify(mode)}`);
    }
    this.mode = mode;
    this.tags = tags;
    this.hedge = options.hedge;
    this.maxStalenessSeconds = options.maxStalenessSeconds;
  }

  static isValid(mode) {
    return MODES.includes(mode);
  }

  static fromString(mode) {
    return new ReadPreference(mode);
  }

  /** The read preference of `options.readPreference` (a mode, an object or a ReadPreference). */
  static fromOptions(options) {
    const value = options?.readPreference;
    if (value === undefined || value === null || value instanceof ReadPreference) return value ?? undefined;
    if (typeof value === 'string') return new ReadPreference(value, options.readPreferenceTags);
    return new ReadPreference(value.mode, value.tags ?? value.tagSets, value);
  }

  isValid(mode = this.mode) {
    return ReadPreference.isValid(mode);
  }

  /** Whether reads may go to a secondary. */
  secondaryOk() {
    return this.mode !== 'primary';
  }

  equals(other) {
    return other?.mode === this.mode;
  }

  toJSON() {
    const document = { mode: this.mode };
    if (this.tags?.length) document.tags = this.tags;
    if (this.maxStalenessSeconds !== undefined) document.maxStalenessSeconds = this.maxStalenessSeconds;
    if (this.hedge !== undefined) document.hedge = this.hedge;
    return document;
  }
}
for (const mode of MODES) {
  ReadPreference[mode] = new ReadPreference(mode);
}

/** How fresh and durable reads are: `new ReadConcern('majority')`. */
export class ReadConcern {
  static LOCAL = 'local';
  static MAJORITY = 'majority';
  static AVAILABLE = 'available';
  static LINEARIZABLE = 'linearizable';
  static SNAPSHOT = 'snapshot';

  constructor(level) {
    this.level = level;
  }

  static fromOptions(options) {
    const value = options?.readConcern ?? (options?.level ? options : undefined);
    if (value === undefined || value === null) return undefined;
    return value instanceof ReadConcern ? value : new ReadConcern(typeof value === 'string' ? value : value.level);
  }

  toJSON() {
    return { level: this.level };
  }
}

/** How writes are acknowledged: `new WriteConcern('majority', 5000, true)`. */
export class WriteConcern {
  constructor(w, wtimeoutMS, journal) {
    if (w !== undefined) this.w = w;
    if (wtimeoutMS !== undefined) this.wtimeoutMS = this.wtimeout = wtimeoutMS;
    if (journal !== undefined) this.journal = this.j = journal;
  }

  static fromOptions(options) {
    const value = options?.writeConcern ?? options;
    if (value === undefined || value === null) return undefined;
    if (value instanceof WriteConcern) return value;
    const concern = new WriteConcern(value.w, value.wtimeoutMS ?? value.wtimeout, value.journal ?? value.j);
    return concern.w === undefined && concern.wtimeoutMS === undefined && concern.journal === undefined ? undefined : concern;
  }
}

/** The read preference as the core takes it: `{ mode, tagSets, maxStalenessSeconds, hedge }`. */
export function readPreferenceDocument(value) {
  const preference = ReadPreference.fromOptions({ readPreference: value });
  if (!preference) return undefined;
  const document = { mode: preference.mode };
  if (preference.tags?.length) document.tagSets = preference.tags;
  if (preference.maxStalenessSeconds !== undefined && preference.maxStalenessSeconds !== null) {
    document.maxStalenessSeconds = preference.maxStalenessSeconds;
  }
  if (preference.hedge !== undefined && preference.hedge !== null) document.hedge = preference.hedge;
  return document;
}

/** The read concern as the core takes it: `{ level }`. */
export function readConcernDocument(value) {
  const concern = ReadConcern.fromOptions({ readConcern: value });
  return concern ? { level: concern.level } : undefined;
}

/** The write concern as the core takes it: `{ w, j, wtimeout }`. */
export function writeConcernDocument(value) {
  if (value === undefined || value === null) return undefined;
  const concern = value instanceof WriteConcern ? value : WriteConcern.fromOptions({ writeConcern: value }) ?? {};
  const document = {};
  if (concern.w !== undefined) document.w = concern.w;
  if (concern.journal !== undefined) document.j = concern.journal;
  if (concern.wtimeoutMS !== undefined) document.wtimeout = concern.wtimeoutMS;
  return document;
}

/**
 * The concerns of `options` (`readPreference`, `readConcern`, `writeConcern`, and
 * `timeoutMS`) as the core takes them, those of `inherited` where `options` has none;
 * undefined if none.
 */
export function concernsOf(options, inherited) {
  const concerns = { ...inherited };
  const readPreference = readPreferenceDocument(options?.readPreference);
  if (readPreference) concerns.readPreference = readPreference;
  const readConcern = readConcernDocument(options?.readConcern);
  if (readConcern) concerns.readConcern = readConcern;
  const writeConcern = writeConcernDocument(options?.writeConcern);
  if (writeConcern) concerns.writeConcern = writeConcern;
  // Not a concern, but inherited the same way (CSOT spec: client, database, collection).
  if (typeof options?.timeoutMS === 'number') concerns.timeoutMS = options.timeoutMS;
  return Object.keys(concerns).length ? concerns : undefined;
}

/**
 * The connection string options of the client options given as objects, as the Node
 * driver merges them: `readPreference` (mode, tags, staleness), `readConcern`,
 * `writeConcern`.
 */
export function concernParameters(options) {
  const out = [];
  const readPreference = readPreferenceDocument(options.readPreference);
  if (readPreference) {
    out.push(['readPreference', readPreference.mode]);
    for (const tags of readPreference.tagSets ?? []) {
      out.push(['readPreferenceTags', Object.entries(tags).map(([key, value]) => `${key}:${value}`).join(',')]);
    }
    if (readPreference.maxStalenessSeconds !== undefined) {
      out.push(['maxStalenessSeconds', String(readPreference.maxStalenessSeconds)]);
    }
  }
  const readConcern = readConcernDocument(options.readConcern);
  if (readConcern?.level) out.push(['readConcernLevel', readConcern.level]);
  const writeConcern = writeConcernDocument(options.writeConcern);
  if (writeConcern?.w !== undefined) out.push(['w', String(writeConcern.w)]);
  if (writeConcern?.j !== undefined) out.push(['journal', String(writeConcern.j)]);
  if (writeConcern?.wtimeout !== undefined) out.push(['wtimeoutMS', String(writeConcern.wtimeout)]);
  return out;
}
