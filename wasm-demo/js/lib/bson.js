// `anymongo/lib/bson`, installed as `mongodb`: `mongodb/lib/bson`, which libraries
// (Mongoose) require for the BSON types: the `bson` package, as the Node driver
// re-exports it there, and its BSON option helpers.
export * from 'bson';
export { parseUtf8ValidationOption, pluckBSONSerializeOptions, resolveBSONOptions } from '../bson_options.js';
