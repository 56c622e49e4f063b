//! The npm package's OpenTelemetry spans (open-telemetry.md): the core's spans
//! (`anymongo::open_telemetry`, `tracing` spans whose fields are the spec's
//! attributes) forwarded as they start, are recorded and end to a JavaScript sink,
//! which `js/tracing.js` turns into `@opentelemetry/api` spans. The names, the
//! attributes and the nesting are decided here, once, by the core; the glue only
//! maps `otel.name`, `otel.kind` and `otel.status_code` to the API's span name, kind
//! and status, as `tracing-opentelemetry` does natively.
//!
//! The sink is `sink(kind, id, parent, fields)`: `kind` is `"start"` (with `parent`,
//! the id of the enclosing span, or `undefined` for an operation outside any span of
//! the driver), `"record"` (fields recorded later: an error, a reply's cursor) or
//! `"end"`; `fields` maps attribute names to strings, numbers and booleans. An i64
//! beyond JavaScript's safe integers (a cursor id) is given as its decimal text, as
//! `@opentelemetry/api` attributes have no 64-bit integer.
//!
//! The subscriber takes only the spans of the target `anymongo::open_telemetry`:
//! the driver's log messages, and the spans of clients that do not trace (none are
//! created), cost nothing more than without it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Debug;

use anymongo::open_telemetry::TARGET;
use js_sys::{Function, Object, Reflect};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_core::span::Current;
use wasm_bindgen::JsValue;

/// Starts forwarding the core's spans to `sink`; a later call replaces the sink (all
/// clients of a page share one `@opentelemetry/api`, so one sink serves them all).
pub fn forward_spans(sink: Function) {
    STATE.with(|state| state.borrow_mut().sink = Some(sink));
    // The first call installs the subscriber; later ones find it installed.
    let _ = tracing::subscriber::set_global_default(JsSpans);
}

thread_local! {
    // wasm32-unknown-unknown has one thread: the subscriber (which must be Sync)
    // keeps its state, JavaScript values included, here.
    static STATE: RefCell<State> = RefCell::new(State::default());
}

#[derive(Default)]
struct State {
    sink: Option<Function>,
    last_id: u64,
    /// The spans not yet closed: their metadata and how many handles hold them.
    open: HashMap<u64, (&'static Metadata<'static>, usize)>,
    /// The spans entered (an operation's while its future runs), innermost last: a
    /// command's span, created in its operation's, starts there.
    entered: Vec<u64>,
}

/// The attributes a span records, as a JavaScript object.
struct Fields(Object);

impl Fields {
    fn set(&self, field: &Field, value: JsValue) {
        let _ = Reflect::set(&self.0, &JsValue::from_str(field.name()), &value);
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field, JsValue::from_str(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        const SAFE: u64 = (1 << 53) - 1;
        self.set(
            field,
            if value.unsigned_abs() <= SAFE {
                JsValue::from(value as f64)
            } else {
                JsValue::from_str(&value.to_string())
            },
        );
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_i64(field, i64::try_from(value).unwrap_or(i64::MAX));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, JsValue::from_bool(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, JsValue::from_f64(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.set(field, JsValue::from_str(&format!("{value:?}")));
    }
}

struct JsSpans;

impl JsSpans {
    fn emit(kind: &str, id: u64, parent: Option<u64>, fields: Fields) {
        let Some(sink) = STATE.with(|state| state.borrow().sink.clone()) else {
            return;
        };
        let parent = parent.map_or(JsValue::UNDEFINED, |parent| JsValue::from(parent as f64));
        let arguments = js_sys::Array::of4(
            &JsValue::from_str(kind),
            &JsValue::from(id as f64),
            &parent,
            &fields.0,
        );
        // An exception of the application's tracer is not the driver's.
        let _ = sink.apply(&JsValue::NULL, &arguments);
    }
}

impl Subscriber for JsSpans {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.enabled(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_span() && metadata.target() == TARGET
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let (id, parent) = STATE.with(|state| {
            let mut state = state.borrow_mut();
            state.last_id += 1;
            let id = state.last_id;
            state.open.insert(id, (span.metadata(), 1));
            let parent = match span.parent() {
                Some(parent) => Some(parent.into_u64()),
                None if span.is_contextual() => state.entered.last().copied(),
                None => None,
            };
            (id, parent)
        });
        let mut fields = Fields(Object::new());
        span.record(&mut fields);
        JsSpans::emit("start", id, parent, fields);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut fields = Fields(Object::new());
        values.record(&mut fields);
        JsSpans::emit("record", span.into_u64(), None, fields);
    }

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, _event: &Event<'_>) {}

    fn enter(&self, span: &Id) {
        STATE.with(|state| state.borrow_mut().entered.push(span.into_u64()));
    }

    fn exit(&self, span: &Id) {
        STATE.with(|state| {
            let entered = &mut state.borrow_mut().entered;
            if let Some(at) = entered.iter().rposition(|id| *id == span.into_u64()) {
                entered.remove(at);
            }
        });
    }

    fn clone_span(&self, span: &Id) -> Id {
        STATE.with(|state| {
            if let Some((_, handles)) = state.borrow_mut().open.get_mut(&span.into_u64()) {
                *handles += 1;
            }
        });
        span.clone()
    }

    fn try_close(&self, span: Id) -> bool {
        let id = span.into_u64();
        let closed = STATE.with(|state| {
            let mut state = state.borrow_mut();
            let Some((_, handles)) = state.open.get_mut(&id) else {
                return false;
            };
            *handles -= 1;
            if *handles > 0 {
                return false;
            }
            state.open.remove(&id);
            true
        });
        if closed {
            JsSpans::emit("end", id, None, Fields(Object::new()));
        }
        closed
    }

    fn current_span(&self) -> Current {
        STATE.with(|state| {
            let state = state.borrow();
            match state.entered.last() {
                Some(id) => match state.open.get(id) {
                    Some((metadata, _)) => Current::new(Id::from_u64(*id), metadata),
                    None => Current::none(),
                },
                None => Current::none(),
            }
        })
    }
}
