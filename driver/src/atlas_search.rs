//! Builders of Atlas Search pipeline stages (`$search`, `$searchMeta`), with the
//! official driver's names: an operator's function (`text`, `compound`, `range`, …)
//! takes its required fields, its setters the optional ones, and
//! [`into_stage`](SearchOperator::into_stage) (or [`search`] and [`search_meta`], for
//! the stage's own options) makes the stage document. They only build documents: the
//! server checks them when the aggregate runs (Atlas, or a deployment with `mongot`).
//!
//! ```no_run
//! # async fn example(movies: anymongo::Collection<anymongo::bson::Document>) -> anymongo::Result<()> {
//! use anymongo::atlas_search::{self, compound, search, text};
//! use anymongo::bson::doc;
//! let pipeline = [
//!     search(
//!         compound()
//!             .must(text("plot", "baseball"))
//!             .should([text("genres", "Comedy").unit(), atlas_search::range("year").gte(2000).unit()]),
//!     )
//!     .index("movies")
//!     .into_stage(),
//!     doc! { "$limit": 10 },
//! ];
//! let cursor = movies.aggregate(pipeline).await?;
//! # let _ = cursor; Ok(()) }
//! ```
//!
//! The operators' documents are those of the Atlas Search reference
//! (<https://www.mongodb.com/docs/atlas/atlas-search/operators-and-collectors/>).

use std::marker::PhantomData;

use bson::{doc, oid::ObjectId, Bson, DateTime, Document};

/// An Atlas Search operator (or collector) being built; `T` names which (its setters
/// are those of `T`'s operator), [`unit`](Self::unit) forgets it.
#[derive(Clone, Debug)]
pub struct SearchOperator<T> {
    /// The operator's name, the key of its document (`text`, `compound`…).
    name: &'static str,
    /// Its fields.
    spec: Document,
    _operator: PhantomData<T>,
}

impl<T> SearchOperator<T> {
    fn new(name: &'static str, spec: Document) -> Self {
        SearchOperator {
            name,
            spec,
            _operator: PhantomData,
        }
    }

    /// Sets the field `key`.
    fn set(mut self, key: &str, value: impl Into<Bson>) -> Self {
        self.spec.insert(key, value);
        self
    }

    /// The operator as a `$search` stage, without the stage's options.
    pub fn into_stage(self) -> Document {
        search(self).into_stage()
    }

    /// The operator as a `$searchMeta` stage, without the stage's options.
    pub fn into_stage_meta(self) -> Document {
        search_meta(self).into_stage()
    }

    /// The same operator, its type forgotten: operators of different kinds then go in
    /// one array (`compound().should([text(…).unit(), range(…).unit()])`).
    pub fn unit(self) -> SearchOperator<()> {
        SearchOperator::new(self.name, self.spec)
    }

    /// `{ <name>: { <fields> } }`, as the operator appears in a stage or in another
    /// operator.
    fn into_document(self) -> Document {
        doc! { self.name: self.spec }
    }
}

/// One operator is an iterator of one: what takes several operators
/// ([`compound`]'s clauses) takes a single one too.
impl<T> IntoIterator for SearchOperator<T> {
    type Item = SearchOperator<T>;
    type IntoIter = std::iter::Once<SearchOperator<T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self)
    }
}

/// The `$search` stage of `operator`, whose options its setters set.
pub fn search<T>(operator: SearchOperator<T>) -> AtlasSearch {
    AtlasSearch {
        stage: operator.into_document(),
    }
}

/// A `$search` stage being built: what [`search`] returns.
#[derive(Clone, Debug)]
pub struct AtlasSearch {
    stage: Document,
}

impl AtlasSearch {
    fn set(mut self, key: &str, value: impl Into<Bson>) -> Self {
        self.stage.insert(key, value);
        self
    }

    /// Searches the segments in parallel on dedicated search nodes (`concurrent`).
    pub fn concurrent(self, value: bool) -> Self {
        self.set("concurrent", value)
    }

    /// How to count the results (`count`).
    pub fn count(self, value: Document) -> Self {
        self.set("count", value)
    }

    /// Highlights the search terms in the results (`highlight`).
    pub fn highlight(self, value: Document) -> Self {
        self.set("highlight", value)
    }

    /// The Atlas Search index to use (`index`; `default` when unset).
    pub fn index(self, value: impl Into<String>) -> Self {
        self.set("index", value.into())
    }

    /// Returns only the fields stored in the search index (`returnStoredSource`).
    pub fn return_stored_source(self, value: bool) -> Self {
        self.set("returnStoredSource", value)
    }

    /// Pages forward from this reference point (`searchAfter`).
    pub fn search_after(self, value: impl Into<String>) -> Self {
        self.set("searchAfter", value.into())
    }

    /// Pages backward from this reference point (`searchBefore`).
    pub fn search_before(self, value: impl Into<String>) -> Self {
        self.set("searchBefore", value.into())
    }

    /// Details each result's score (`scoreDetails`).
    pub fn score_details(self, value: bool) -> Self {
        self.set("scoreDetails", value)
    }

    /// The order of the results (`sort`).
    pub fn sort(self, value: Document) -> Self {
        self.set("sort", value)
    }

    /// The stage: `{ $search: { … } }`.
    pub fn into_stage(self) -> Document {
        doc! { "$search": self.stage }
    }
}

/// The `$searchMeta` stage of `operator` (metadata of the results, such as a
/// [`facet()`]'s counts), whose options its setters set.
pub fn search_meta<T>(operator: SearchOperator<T>) -> AtlasSearchMeta {
    AtlasSearchMeta {
        stage: operator.into_document(),
    }
}

/// A `$searchMeta` stage being built: what [`search_meta`] returns.
#[derive(Clone, Debug)]
pub struct AtlasSearchMeta {
    stage: Document,
}

impl AtlasSearchMeta {
    /// How to count the results (`count`).
    pub fn count(mut self, value: Document) -> Self {
        self.stage.insert("count", value);
        self
    }

    /// The Atlas Search index to use (`index`).
    pub fn index(mut self, value: impl Into<String>) -> Self {
        self.stage.insert("index", value.into());
        self
    }

    /// The stage: `{ $searchMeta: { … } }`.
    pub fn into_stage(self) -> Document {
        doc! { "$searchMeta": self.stage }
    }
}

/// Keeps the parameter traits to the types listed here.
mod private {
    use bson::Bson;

    /// A value an operator's field takes, as BSON.
    pub trait Parameter {
        /// The value as its field holds it.
        fn to_bson(self) -> Bson;
    }
}
use private::Parameter;

impl<T: Into<Bson>> Parameter for T {
    fn to_bson(self) -> Bson {
        self.into()
    }
}

impl<T> Parameter for SearchOperator<T> {
    fn to_bson(self) -> Bson {
        Bson::Document(self.into_document())
    }
}

/// A field that takes a string or an array of strings (a `path`, a `query`).
pub trait StringOrArray: Parameter {}
impl StringOrArray for &str {}
impl StringOrArray for String {}
impl<const N: usize> StringOrArray for [&str; N] {}
impl StringOrArray for &[&str] {}
impl StringOrArray for &[String] {}

/// A field that takes an operator: one built here, or its document.
pub trait SearchOperatorParam: Parameter {}
impl<T> SearchOperatorParam for SearchOperator<T> {}
impl SearchOperatorParam for Document {}

/// A field that takes a document or an array of documents ([`more_like_this`]).
pub trait DocumentOrArray: Parameter {}
impl DocumentOrArray for Document {}
impl<const N: usize> DocumentOrArray for [Document; N] {}
impl DocumentOrArray for &[Document] {}

/// The origin of [`near`]: a number, a date or a GeoJSON point (a document).
pub trait NearOrigin: Parameter {}
impl NearOrigin for DateTime {}
impl NearOrigin for Document {}

/// A number ([`near`]'s `pivot`).
pub trait BsonNumber: Parameter {}

/// A bound of [`range`]: a number, a date, a string or an ObjectId.
pub trait RangeValue: Parameter {}
impl RangeValue for DateTime {}
impl RangeValue for &str {}
impl RangeValue for &String {}
impl RangeValue for String {}
impl RangeValue for ObjectId {}

/// The numbers each numeric parameter takes.
macro_rules! numbers {
    ($($Trait:ident),*) => {
        $(
            impl $Trait for i32 {}
            impl $Trait for i64 {}
            impl $Trait for u32 {}
            impl $Trait for f32 {}
            impl $Trait for f64 {}
        )*
    };
}
numbers!(NearOrigin, BsonNumber, RangeValue);

/// An enumeration of strings an operator's field takes, with `Other` for a value
/// the server accepts and this crate does not name yet.
macro_rules! string_enum {
    ($(#[$doc:meta])* $Enum:ident { $($(#[$variant_doc:meta])* $Variant:ident => $name:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum $Enum {
            $($(#[$variant_doc])* $Variant,)*
            /// Another value, sent as it is.
            Other(String),
        }

        impl $Enum {
            /// The value as the server names it.
            fn name(&self) -> &str {
                match self {
                    $($Enum::$Variant => $name,)*
                    $Enum::Other(name) => name,
                }
            }
        }
    };
}

string_enum!(
    /// In which order [`autocomplete`]'s tokens match (`tokenOrder`).
    TokenOrder {
        /// In any order.
        Any => "any",
        /// Next to each other, in the query's order.
        Sequential => "sequential",
    }
);

string_enum!(
    /// Which of [`text`]'s terms a document must contain (`matchCriteria`).
    MatchCriteria {
        /// Any of them.
        Any => "any",
        /// All of them.
        All => "all",
    }
);

string_enum!(
    /// How the indexed shape relates to [`geo_shape`]'s geometry (`relation`).
    Relation {
        /// The indexed shape contains the geometry.
        Contains => "contains",
        /// They have nothing in common.
        Disjoint => "disjoint",
        /// They intersect.
        Intersects => "intersects",
        /// The indexed shape is within the geometry.
        Within => "within",
    }
);

/// Writes an operator: its marker type, its function (the required fields) and its
/// setters (the optional ones), each field as the Atlas Search reference names it.
macro_rules! operator {
    (
        $(#[$doc:meta])*
        $Marker:ident = $name:literal,
        fn $function:ident($($arg:ident: $ArgType:ty => $key:literal via $to_bson:ident),*) {
            $(
                $(#[$setter_doc:meta])*
                $setter:ident($value:ident: $ValueType:ty) => $field:literal via $value_to_bson:ident,
            )*
        }
    ) => {
        #[doc = concat!("The `", $name, "` operator's type: [`", stringify!($function), "`](", stringify!($function), "()) makes one.")]
        #[derive(Clone, Copy, Debug)]
        pub struct $Marker;

        $(#[$doc])*
        #[doc = ""]
        #[doc = concat!("Atlas Search reference: `", $name, "`.")]
        pub fn $function($($arg: $ArgType),*) -> SearchOperator<$Marker> {
            SearchOperator::new($name, doc! { $($key: $to_bson($arg),)* })
        }

        impl SearchOperator<$Marker> {
            $(
                $(#[$setter_doc])*
                pub fn $setter(self, $value: $ValueType) -> Self {
                    self.set($field, $value_to_bson($value))
                }
            )*
        }
    };
}

/// An operator's `score` setter's documentation.
macro_rules! score_doc {
    () => {
        "How the operator scores the results (`score`: `boost`, `constant`, `function`)."
    };
}

operator!(
    /// Searches a field indexed for autocompletion for words starting with `query`.
    Autocomplete = "autocomplete",
    fn autocomplete(path: impl StringOrArray => "path" via bson, query: impl StringOrArray => "query" via bson) {
        /// In which order the query's tokens must match (`tokenOrder`).
        token_order(order: TokenOrder) => "tokenOrder" via bson,
        /// Matches words close to the query's (`fuzzy`: `maxEdits`, `prefixLength`, …).
        fuzzy(fuzzy: Document) => "fuzzy" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Combines operators in clauses: each setter adds a clause, of one operator or an
    /// array of them.
    Compound = "compound",
    fn compound() {
        /// Operators every result matches (`must`).
        must(clauses: impl IntoIterator<Item = impl SearchOperatorParam>) => "must" via operators,
        /// Operators no result matches (`mustNot`).
        must_not(clauses: impl IntoIterator<Item = impl SearchOperatorParam>) => "mustNot" via operators,
        /// Operators that score the results that match them higher (`should`).
        should(clauses: impl IntoIterator<Item = impl SearchOperatorParam>) => "should" via operators,
        /// Operators every result matches, without scoring (`filter`).
        filter(clauses: impl IntoIterator<Item = impl SearchOperatorParam>) => "filter" via operators,
        /// How many `should` clauses a result matches at least (`minimumShouldMatch`).
        minimum_should_match(count: i32) => "minimumShouldMatch" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches an array's embedded documents one at a time against `operator`.
    EmbeddedDocument = "embeddedDocument",
    fn embedded_document(path: impl StringOrArray => "path" via bson, operator: impl SearchOperatorParam => "operator" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches a field equal to `value`.
    Equals = "equals",
    fn equals(path: impl StringOrArray => "path" via bson, value: impl Into<Bson> => "value" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches documents in which the indexed field `path` exists.
    Exists = "exists",
    fn exists(path: impl StringOrArray => "path" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Counts the results by the values or ranges of fields: the `facet` collector,
    /// for [`search_meta`]; `facets` names each facet ([`facet::string`],
    /// [`facet::number`], [`facet::date`]).
    Facet = "facet",
    fn facet(facets: Document => "facets" via bson) {
        /// The operator whose results are counted (`operator`; all documents when
        /// unset).
        operator(operator: impl SearchOperatorParam) => "operator" via bson,
    }
);

operator!(
    /// Matches shapes that relate to `geometry` as `relation` says.
    GeoShape = "geoShape",
    fn geo_shape(path: impl StringOrArray => "path" via bson, relation: Relation => "relation" via bson, geometry: Document => "geometry" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches points within a box, a circle or a geometry (one of its setters).
    GeoWithin = "geoWithin",
    fn geo_within(path: impl StringOrArray => "path" via bson) {
        /// A box (`box`: `bottomLeft`, `topRight`).
        geo_box(geo_box: Document) => "box" via bson,
        /// A circle (`circle`: `center`, `radius`).
        circle(circle: Document) => "circle" via bson,
        /// A GeoJSON polygon or multipolygon (`geometry`).
        geometry(geometry: Document) => "geometry" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches a field holding `value`, or one of the values of an array `value` (the
    /// `in` operator).
    SearchIn = "in",
    fn search_in(path: impl StringOrArray => "path" via bson, value: impl Into<Bson> => "value" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches documents like the documents `like`.
    MoreLikeThis = "moreLikeThis",
    fn more_like_this(like: impl DocumentOrArray => "like" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Scores numbers, dates and points by how near `origin` they are; at `pivot`
    /// away, a result scores half.
    Near = "near",
    fn near(path: impl StringOrArray => "path" via bson, origin: impl NearOrigin => "origin" via bson, pivot: impl BsonNumber => "pivot" via bson) {
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches the terms of `query` in their order.
    Phrase = "phrase",
    fn phrase(path: impl StringOrArray => "path" via bson, query: impl StringOrArray => "query" via bson) {
        /// How far apart the terms may be (`slop`).
        slop(slop: i32) => "slop" via bson,
        /// The synonym mapping to use (`synonyms`).
        synonyms(synonyms: impl AsRef<str>) => "synonyms" via string,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches a Lucene-style query string (`AND`, `OR`, `NOT`, fields, ranges),
    /// searching `default_path` where the query names no field.
    QueryString = "queryString",
    fn query_string(default_path: impl StringOrArray => "defaultPath" via bson, query: impl AsRef<str> => "query" via string) {}
);

operator!(
    /// Matches numbers, dates, strings or ObjectIds within the bounds its setters set.
    Range = "range",
    fn range(path: impl StringOrArray => "path" via bson) {
        /// Greater than (`gt`).
        gt(bound: impl RangeValue) => "gt" via bson,
        /// Greater than or equal to (`gte`).
        gte(bound: impl RangeValue) => "gte" via bson,
        /// Less than (`lt`).
        lt(bound: impl RangeValue) => "lt" via bson,
        /// Less than or equal to (`lte`).
        lte(bound: impl RangeValue) => "lte" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches a regular expression, unanalyzed.
    Regex = "regex",
    fn regex(path: impl StringOrArray => "path" via bson, query: impl AsRef<str> => "query" via string) {
        /// Runs on an analyzed field too (`allowAnalyzedField`).
        allow_analyzed_field(allow: bool) => "allowAnalyzedField" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// A full-text search of `query`, with the index's analyzer.
    Text = "text",
    fn text(path: impl StringOrArray => "path" via bson, query: impl StringOrArray => "query" via bson) {
        /// Matches words close to the query's (`fuzzy`).
        fuzzy(fuzzy: Document) => "fuzzy" via bson,
        /// Whether a result contains any or all of the terms (`matchCriteria`).
        match_criteria(criteria: MatchCriteria) => "matchCriteria" via bson,
        /// The synonym mapping to use (`synonyms`).
        synonyms(synonyms: impl AsRef<str>) => "synonyms" via string,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

operator!(
    /// Matches a pattern with wildcards (`?` one character, `*` any), unanalyzed.
    Wildcard = "wildcard",
    fn wildcard(path: impl StringOrArray => "path" via bson, query: impl AsRef<str> => "query" via string) {
        /// Runs on an analyzed field too (`allowAnalyzedField`).
        allow_analyzed_field(allow: bool) => "allowAnalyzedField" via bson,
        #[doc = score_doc!()]
        score(score: Document) => "score" via bson,
    }
);

/// The string enumerations are sent as their names.
impl Parameter for TokenOrder {
    fn to_bson(self) -> Bson {
        Bson::String(self.name().to_string())
    }
}

impl Parameter for MatchCriteria {
    fn to_bson(self) -> Bson {
        Bson::String(self.name().to_string())
    }
}

impl Parameter for Relation {
    fn to_bson(self) -> Bson {
        Bson::String(self.name().to_string())
    }
}

/// A field's value as BSON.
fn bson(value: impl Parameter) -> Bson {
    value.to_bson()
}

/// A field's string as BSON.
fn string(value: impl AsRef<str>) -> Bson {
    Bson::String(value.as_ref().to_string())
}

/// A clause's operators as a BSON array.
fn operators(operators: impl IntoIterator<Item = impl SearchOperatorParam>) -> Bson {
    Bson::Array(operators.into_iter().map(Parameter::to_bson).collect())
}

/// The facets of a [`facet`](fn@facet) collector, each a field of its `facets`
/// document: `doc! { "directors": facet::string("directors").num_buckets(7) }`.
pub mod facet {
    use std::marker::PhantomData;

    use bson::{doc, Bson, DateTime, Document};

    /// A facet; `T` says which kind ([`String`], [`Number`], [`Date`]).
    #[derive(Clone, Debug)]
    pub struct Facet<T> {
        definition: Document,
        _kind: PhantomData<T>,
    }

    impl<T> Facet<T> {
        fn new(definition: Document) -> Self {
            Facet {
                definition,
                _kind: PhantomData,
            }
        }
    }

    /// A facet is a document in `facets`.
    impl<T> From<Facet<T>> for Bson {
        fn from(facet: Facet<T>) -> Bson {
            Bson::Document(facet.definition)
        }
    }

    /// The kind of a string facet ([`string`]).
    #[derive(Clone, Copy, Debug)]
    pub struct String;

    /// The kind of a numeric facet ([`number`]).
    #[derive(Clone, Copy, Debug)]
    pub struct Number;

    /// The kind of a date facet ([`date`]).
    #[derive(Clone, Copy, Debug)]
    pub struct Date;

    /// Counts the results by the most frequent values of the string field `path`.
    pub fn string(path: impl AsRef<str>) -> Facet<String> {
        Facet::new(doc! { "type": "string", "path": path.as_ref() })
    }

    impl Facet<String> {
        /// How many values to count at most (`numBuckets`, up to 1000).
        pub fn num_buckets(mut self, count: i32) -> Self {
            self.definition.insert("numBuckets", count);
            self
        }
    }

    /// Counts the results by ranges of the numeric field `path`, between
    /// `boundaries`.
    pub fn number(
        path: impl AsRef<str>,
        boundaries: impl IntoIterator<Item = impl Into<Bson>>,
    ) -> Facet<Number> {
        let boundaries: Vec<Bson> = boundaries.into_iter().map(Into::into).collect();
        Facet::new(doc! { "type": "number", "path": path.as_ref(), "boundaries": boundaries })
    }

    impl Facet<Number> {
        /// The name of the bucket that counts the results outside the boundaries
        /// (`default`).
        pub fn default_bucket(mut self, name: impl AsRef<str>) -> Self {
            self.definition.insert("default", name.as_ref());
            self
        }
    }

    /// Counts the results by ranges of the date field `path`, between `boundaries`.
    pub fn date(
        path: impl AsRef<str>,
        boundaries: impl IntoIterator<Item = DateTime>,
    ) -> Facet<Date> {
        let boundaries: Vec<DateTime> = boundaries.into_iter().collect();
        Facet::new(doc! { "type": "date", "path": path.as_ref(), "boundaries": boundaries })
    }

    impl Facet<Date> {
        /// The name of the bucket that counts the results outside the boundaries
        /// (`default`).
        pub fn default_bucket(mut self, name: impl AsRef<str>) -> Self {
            self.definition.insert("default", name.as_ref());
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_becomes_a_search_or_search_meta_stage() {
        let stage = autocomplete("title", "pre")
            .fuzzy(doc! { "maxEdits": 1, "prefixLength": 1, "maxExpansions": 256 })
            .into_stage();
        assert_eq!(
            stage,
            doc! { "$search": { "autocomplete": {
                "path": "title",
                "query": "pre",
                "fuzzy": { "maxEdits": 1, "prefixLength": 1, "maxExpansions": 256 },
            } } }
        );
        assert_eq!(
            exists("plot").into_stage_meta(),
            doc! { "$searchMeta": { "exists": { "path": "plot" } } }
        );
    }

    #[test]
    fn the_stage_options_follow_the_operator() {
        let stage = search(text("plot", ["baseball", "bat"]).match_criteria(MatchCriteria::All))
            .index("movies")
            .concurrent(true)
            .count(doc! { "type": "total" })
            .highlight(doc! { "path": "plot" })
            .return_stored_source(false)
            .search_after("token")
            .score_details(true)
            .sort(doc! { "year": -1 })
            .into_stage();
        assert_eq!(
            stage,
            doc! { "$search": {
                "text": { "path": "plot", "query": ["baseball", "bat"], "matchCriteria": "all" },
                "index": "movies",
                "concurrent": true,
                "count": { "type": "total" },
                "highlight": { "path": "plot" },
                "returnStoredSource": false,
                "searchAfter": "token",
                "scoreDetails": true,
                "sort": { "year": -1 },
            } }
        );
        let meta = search_meta(facet(doc! {
            "directorsFacet": facet::string("directors").num_buckets(7),
            "yearFacet": facet::number("year", [2000, 2005]).default_bucket("other"),
        }))
        .index("movies")
        .count(doc! { "type": "lowerBound" })
        .into_stage();
        assert_eq!(
            meta,
            doc! { "$searchMeta": {
                "facet": { "facets": {
                    "directorsFacet": { "type": "string", "path": "directors", "numBuckets": 7 },
                    "yearFacet": {
                        "type": "number", "path": "year", "boundaries": [2000, 2005],
                        "default": "other",
                    },
                } },
                "index": "movies",
                "count": { "type": "lowerBound" },
            } }
        );
    }

    #[test]
    fn compound_clauses_take_one_operator_or_several_of_any_kind() {
        let stage = compound()
            .must(text("description", "varieties"))
            .should([
                text("description", "Fuji").unit(),
                range("year").gte(2000).lt(2010).unit(),
            ])
            .must_not([doc! { "exists": { "path": "deleted" } }])
            .filter(vec![equals("verified", true)])
            .minimum_should_match(1)
            .score(doc! { "boost": { "value": 2 } })
            .into_stage();
        assert_eq!(
            stage,
            doc! { "$search": { "compound": {
                "must": [{ "text": { "path": "description", "query": "varieties" } }],
                "should": [
                    { "text": { "path": "description", "query": "Fuji" } },
                    { "range": { "path": "year", "gte": 2000, "lt": 2010 } },
                ],
                "mustNot": [{ "exists": { "path": "deleted" } }],
                "filter": [{ "equals": { "path": "verified", "value": true } }],
                "minimumShouldMatch": 1,
                "score": { "boost": { "value": 2 } },
            } } }
        );
    }

    #[test]
    fn every_operator_names_its_fields_as_the_reference_does() {
        let point = doc! { "type": "Point", "coordinates": [-73.9, 40.7] };
        let start = DateTime::from_millis(0);
        let cases = [
            (
                autocomplete(["title", "plot"], "pre")
                    .token_order(TokenOrder::Sequential)
                    .into_stage(),
                doc! { "autocomplete": {
                    "path": ["title", "plot"], "query": "pre", "tokenOrder": "sequential",
                } },
            ),
            (
                embedded_document("items", text("items.tags", "school"))
                    .score(doc! { "embedded": { "aggregate": "mean" } })
                    .into_stage(),
                doc! { "embeddedDocument": {
                    "path": "items",
                    "operator": { "text": { "path": "items.tags", "query": "school" } },
                    "score": { "embedded": { "aggregate": "mean" } },
                } },
            ),
            (
                geo_shape("address.location", Relation::Within, point.clone()).into_stage(),
                doc! { "geoShape": {
                    "path": "address.location", "relation": "within", "geometry": point.clone(),
                } },
            ),
            (
                geo_within("address.location")
                    .circle(doc! { "center": point.clone(), "radius": 1600 })
                    .geo_box(doc! { "bottomLeft": point.clone(), "topRight": point.clone() })
                    .geometry(point.clone())
                    .into_stage(),
                doc! { "geoWithin": {
                    "path": "address.location",
                    "circle": { "center": point.clone(), "radius": 1600 },
                    "box": { "bottomLeft": point.clone(), "topRight": point.clone() },
                    "geometry": point.clone(),
                } },
            ),
            (
                search_in("genres", vec!["Drama", "Comedy"]).into_stage(),
                doc! { "in": { "path": "genres", "value": ["Drama", "Comedy"] } },
            ),
            (
                more_like_this([doc! { "title": "Alpha" }, doc! { "genre": "Beta" }]).into_stage(),
                doc! { "moreLikeThis": { "like": [{ "title": "Alpha" }, { "genre": "Beta" }] } },
            ),
            (
                near("released", start, 7_776_000_000_i64).into_stage(),
                doc! { "near": { "path": "released", "origin": start, "pivot": 7_776_000_000_i64 } },
            ),
            (
                phrase("title", "new york")
                    .slop(5)
                    .synonyms("my_synonyms")
                    .into_stage(),
                doc! { "phrase": {
                    "path": "title", "query": "new york", "slop": 5, "synonyms": "my_synonyms",
                } },
            ),
            (
                query_string("title", "Rocky AND (IV OR 4)").into_stage(),
                doc! { "queryString": { "defaultPath": "title", "query": "Rocky AND (IV OR 4)" } },
            ),
            (
                range("title").gt("a").lte(String::from("m")).into_stage(),
                doc! { "range": { "path": "title", "gt": "a", "lte": "m" } },
            ),
            (
                regex("title", "(.*) Seattle")
                    .allow_analyzed_field(true)
                    .into_stage(),
                doc! { "regex": {
                    "path": "title", "query": "(.*) Seattle", "allowAnalyzedField": true,
                } },
            ),
            (
                text("title", "surfer")
                    .fuzzy(doc! { "maxEdits": 1 })
                    .synonyms("words")
                    .match_criteria(MatchCriteria::Other("some".to_string()))
                    .into_stage(),
                doc! { "text": {
                    "path": "title", "query": "surfer", "fuzzy": { "maxEdits": 1 },
                    "synonyms": "words", "matchCriteria": "some",
                } },
            ),
            (
                wildcard("title", "Green D*").into_stage(),
                doc! { "wildcard": { "path": "title", "query": "Green D*" } },
            ),
            (
                facet(doc! {
                    "released": facet::date("released", [start]).default_bucket("other"),
                })
                .operator(range("released").gte(start))
                .into_stage(),
                doc! { "facet": {
                    "facets": { "released": {
                        "type": "date", "path": "released", "boundaries": [start],
                        "default": "other",
                    } },
                    "operator": { "range": { "path": "released", "gte": start } },
                } },
            ),
        ];
        for (stage, operator) in cases {
            assert_eq!(stage, doc! { "$search": operator });
        }
    }
}
