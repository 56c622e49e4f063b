//! Collecting the driver's OpenTelemetry spans and checking `expectTracingMessages`
//! (spec "entity", `client`: `observeTracingMessages`; "test",
//! `expectTracingMessages`; schema 1.27).
//!
//! The driver's spans are `tracing` spans (target
//! [`anymongo::open_telemetry::TARGET`]) whose fields are the OpenTelemetry attributes,
//! `otel.name` the span's name. The runner's subscriber ([`logs::install`]) is a
//! registry, which knows each span's parent; a test whose clients observe tracing
//! runs its operations in a span of the runner's own ([`SpanRecorder`]), the
//! application's current span the driver's operation spans start in, and the
//! collector files every driver span under the test whose span it descends from.
//! Only client entities with `observeTracingMessages` trace (the others are created
//! with tracing off), so the spans of a test are those of its observing client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use anymongo::open_telemetry;
use bson::{Bson, Document};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Span, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::logs::{self, Fields};
use super::matching::Matcher;
use super::model::{ExpectedSpan, ExpectedTracingMessagesForClient};
use super::Abort;

/// The `tracing` target of the runner's span of a test.
const RUNNER_TARGET: &str = "anymongo_tests::unified::spans";

/// How many tests collect spans now; no span is built while there are none.
static OBSERVERS: AtomicUsize = AtomicUsize::new(0);
/// The number of the next test that collects spans.
static NEXT_TEST: AtomicU64 = AtomicU64::new(1);
/// The spans collected, by test, in the order they started.
static SPANS: Mutex<Option<HashMap<u64, Vec<Collected>>>> = Mutex::new(None);

/// One driver span as collected: its fields, and its parent among the test's spans.
#[derive(Debug, Clone)]
struct Collected {
    fields: Document,
    parent: Option<usize>,
}

/// One driver span as the unified format sees it.
#[derive(Debug, Clone)]
pub struct CollectedSpan {
    /// Its OpenTelemetry name (`otel.name`).
    pub name: String,
    /// Its attributes: its fields but `otel.*`; `db.mongodb.lsid` read back from its
    /// Extended JSON into a document, for `$$sessionLsid`.
    pub attributes: Document,
    /// The index of its parent among the test's spans.
    pub parent: Option<usize>,
}

/// The registry extension of the runner's span of a test: the test's number.
struct TestSpan(u64);

/// The registry extension of a collected driver span: its test and index there.
struct Filed {
    test: u64,
    index: usize,
}

/// Whether the collector looks at spans of `metadata`'s callsite.
pub fn collects(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && [open_telemetry::TARGET, RUNNER_TARGET].contains(&metadata.target())
}

/// Whether spans of `metadata`'s callsite are to be built now.
pub fn is_observed(metadata: &Metadata<'_>) -> bool {
    collects(metadata) && OBSERVERS.load(Ordering::SeqCst) > 0
}

/// Files a new span: the runner's span of a test is marked with the test's number; a
/// driver span under one is collected.
pub fn new_span<S: Subscriber + for<'a> LookupSpan<'a>>(
    attributes: &Attributes<'_>,
    id: &Id,
    context: &Context<'_, S>,
) {
    let Some(span) = context.span(id) else {
        return;
    };
    let target = attributes.metadata().target();
    let mut fields = Fields(Document::new());
    attributes.record(&mut fields);
    let fields = fields.0;
    if target == RUNNER_TARGET {
        if let Ok(test) = fields.get_i64("test") {
            span.extensions_mut().insert(TestSpan(test as u64));
        }
        return;
    }
    if target != open_telemetry::TARGET {
        return;
    }
    // The nearest collected ancestor is the parent; the test is that of the nearest
    // ancestor that knows it.
    let mut parent = None;
    let mut test = None;
    for ancestor in span.scope().skip(1) {
        let extensions = ancestor.extensions();
        if let Some(filed) = extensions.get::<Filed>() {
            parent = Some(filed.index);
            test = Some(filed.test);
            break;
        }
        if let Some(TestSpan(number)) = extensions.get::<TestSpan>() {
            test = Some(*number);
            break;
        }
    }
    let Some(test) = test else {
        return;
    };
    let mut spans = SPANS.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(collected) = spans.as_mut().and_then(|spans| spans.get_mut(&test)) else {
        return;
    };
    collected.push(Collected { fields, parent });
    let index = collected.len() - 1;
    drop(spans);
    span.extensions_mut().insert(Filed { test, index });
}

/// Adds the values recorded on a collected span.
pub fn record<S: Subscriber + for<'a> LookupSpan<'a>>(
    id: &Id,
    values: &Record<'_>,
    context: &Context<'_, S>,
) {
    let Some(span) = context.span(id) else {
        return;
    };
    let extensions = span.extensions();
    let Some(filed) = extensions.get::<Filed>() else {
        return;
    };
    let mut fields = Fields(Document::new());
    values.record(&mut fields);
    let mut spans = SPANS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(collected) = spans
        .as_mut()
        .and_then(|spans| spans.get_mut(&filed.test))
        .and_then(|collected| collected.get_mut(filed.index))
    {
        collected.fields.extend(fields.0);
    }
}

/// The collection of one test's spans: from its start until it is dropped.
pub struct SpanRecorder {
    test: u64,
    span: Span,
}

impl SpanRecorder {
    /// Starts collecting for a test.
    pub fn start() -> SpanRecorder {
        logs::install();
        let test = NEXT_TEST.fetch_add(1, Ordering::SeqCst);
        SPANS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert(test, Vec::new());
        OBSERVERS.fetch_add(1, Ordering::SeqCst);
        let span = tracing::info_span!(target: RUNNER_TARGET, "unified test", test);
        SpanRecorder { test, span }
    }

    /// The span the test's operations run in: the application's current span.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The test's spans so far, in the order they started.
    pub fn spans(&self) -> Vec<CollectedSpan> {
        let spans = SPANS.lock().unwrap_or_else(PoisonError::into_inner);
        let collected = spans.as_ref().and_then(|spans| spans.get(&self.test));
        collected
            .into_iter()
            .flatten()
            .map(|collected| {
                let fields = &collected.fields;
                let name = fields.get_str("otel.name").unwrap_or_default().to_owned();
                let mut attributes: Document = fields
                    .iter()
                    .filter(|(key, _)| !key.starts_with("otel."))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                if let Ok(lsid) = attributes.get_str("db.mongodb.lsid") {
                    let lsid = serde_json::from_str::<serde_json::Value>(lsid)
                        .ok()
                        .and_then(|json| Bson::try_from(json).ok());
                    if let Some(lsid) = lsid {
                        attributes.insert("db.mongodb.lsid", lsid);
                    }
                }
                CollectedSpan {
                    name,
                    attributes,
                    parent: collected.parent,
                }
            })
            .collect()
    }
}

impl Drop for SpanRecorder {
    fn drop(&mut self) {
        let mut spans = SPANS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(spans) = spans.as_mut() {
            spans.remove(&self.test);
        }
        OBSERVERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Checks one `expectTracingMessages` entry against the spans of the test.
pub fn check(
    expected: &ExpectedTracingMessagesForClient,
    spans: &[CollectedSpan],
    matcher: &Matcher<'_>,
) -> Result<(), Abort> {
    let roots = children(spans, None);
    let checker = Checker {
        spans,
        matcher,
        ignore_extra: expected.ignore_extra_spans,
    };
    checker
        .list(&expected.spans, &roots, "spans")
        .map_err(|why| {
            Abort::Failed(format!(
                "client {}: {why}\nspans:\n{}",
                expected.client,
                render(spans, None, 1)
            ))
        })
}

/// The indexes of the spans whose parent is `parent`, in the order they started.
fn children(spans: &[CollectedSpan], parent: Option<usize>) -> Vec<usize> {
    (0..spans.len())
        .filter(|&index| spans[index].parent == parent)
        .collect()
}

/// The spans under `parent`, one a line, indented by depth.
fn render(spans: &[CollectedSpan], parent: Option<usize>, depth: usize) -> String {
    children(spans, parent)
        .into_iter()
        .map(|index| {
            let span = &spans[index];
            let line = format!("{}{} {}", "  ".repeat(depth), span.name, span.attributes);
            let nested = render(spans, Some(index), depth + 1);
            match nested.is_empty() {
                true => line,
                false => format!("{line}\n{nested}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

struct Checker<'a> {
    spans: &'a [CollectedSpan],
    matcher: &'a Matcher<'a>,
    /// `ignoreExtraSpans`: the expected spans are a subsequence of the actual ones,
    /// at every level; otherwise they are all of them.
    ignore_extra: bool,
}

impl Checker<'_> {
    /// Whether the spans `actual` are those `expected` lists (at `path`).
    fn list(&self, expected: &[ExpectedSpan], actual: &[usize], path: &str) -> Result<(), String> {
        if !self.ignore_extra {
            if expected.len() != actual.len() {
                return Err(format!(
                    "{path}: expected {} spans, got {}",
                    expected.len(),
                    actual.len()
                ));
            }
            for (position, (want, &got)) in expected.iter().zip(actual).enumerate() {
                self.span(want, got, &format!("{path}[{position}]"))?;
            }
            return Ok(());
        }
        let mut rest = actual.iter();
        for (position, want) in expected.iter().enumerate() {
            let here = format!("{path}[{position}]");
            let mut last = None;
            let found = rest.by_ref().any(|&got| match self.span(want, got, &here) {
                Ok(()) => true,
                Err(why) => {
                    last = Some(why);
                    false
                }
            });
            if !found {
                return Err(format!(
                    "{here}: no span {:?} in order{}",
                    want.name,
                    last.map(|why| format!(" (last mismatch: {why})"))
                        .unwrap_or_default()
                ));
            }
        }
        Ok(())
    }

    /// Whether the span `actual` is the one `expected` describes, nested spans
    /// included.
    fn span(&self, expected: &ExpectedSpan, actual: usize, path: &str) -> Result<(), String> {
        let span = &self.spans[actual];
        if span.name != expected.name {
            return Err(format!(
                "{path}: expected the span {:?}, got {:?}",
                expected.name, span.name
            ));
        }
        // Attributes are matched as a root document: a span may have attributes the
        // test does not list (spec "Evaluating Matches", "Allowing Extra Fields").
        self.matcher
            .root(
                &Bson::Document(expected.attributes.clone()),
                &Bson::Document(span.attributes.clone()),
            )
            .map_err(|why| format!("{path} ({}): {why}", expected.name))?;
        self.list(
            &expected.nested,
            &children(self.spans, Some(actual)),
            &format!("{path}.nested"),
        )
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;
    use crate::unified::entities::EntityMap;

    fn span(name: &str, attributes: Document, parent: Option<usize>) -> CollectedSpan {
        CollectedSpan {
            name: name.to_owned(),
            attributes,
            parent,
        }
    }

    fn expected(ignore_extra_spans: bool, spans: Bson) -> ExpectedTracingMessagesForClient {
        bson::deserialize_from_document(doc! {
            "client": "client0",
            "ignoreExtraSpans": ignore_extra_spans,
            "spans": spans,
        })
        .unwrap()
    }

    #[test]
    fn spans_match_by_name_attributes_and_nesting() {
        let spans = [
            span("runCommand admin", doc! {}, None),
            span("find d.c", doc! { "db.namespace": "d", "extra": 1 }, None),
            span("find", doc! { "db.command.name": "find" }, Some(1)),
            span("find", doc! { "db.command.name": "find" }, Some(1)),
        ];
        let entities = EntityMap::default();
        let matcher = Matcher::new(&entities);
        let find = |nested: i32| {
            let commands: Vec<Bson> = (0..nested)
                .map(|_| bson::bson!({ "name": "find", "attributes": { "db.command.name": "find" } }))
                .collect();
            bson::bson!({
                "name": "find d.c",
                "attributes": { "db.namespace": "d", "missing": { "$$exists": false } },
                "nested": commands,
            })
        };
        // Extra root spans and nested spans only with ignoreExtraSpans.
        let subsequence = expected(true, bson::bson!([find(1)]));
        assert!(check(&subsequence, &spans, &matcher).is_ok());
        let exact = expected(false, bson::bson!([find(2)]));
        assert!(check(&exact, &spans, &matcher).is_err());
        let exact = expected(
            false,
            bson::bson!([{ "name": "runCommand admin", "attributes": {} }, find(2)]),
        );
        assert!(check(&exact, &spans, &matcher).is_ok());
        let too_many = expected(true, bson::bson!([find(3)]));
        assert!(check(&too_many, &spans, &matcher).is_err());
        let wrong_attribute = expected(
            true,
            bson::bson!([{ "name": "find d.c", "attributes": { "db.namespace": "e" } }]),
        );
        assert!(check(&wrong_attribute, &spans, &matcher).is_err());
        let wrong_name = expected(
            true,
            bson::bson!([{ "name": "find d.e", "attributes": {} }]),
        );
        assert!(check(&wrong_name, &spans, &matcher).is_err());
    }
}
