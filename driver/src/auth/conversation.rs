//! The shape every mechanism shares: an I/O-free [`Conversation`] that says, step by
//! step, what to send next ([`Step`]), and [`next_command`], which runs its slow rounds
//! without starving the host.

use std::fmt;
use std::time::Duration;

use bson::Document;

use super::credential::AuthMechanism;
use crate::error::{Error, ErrorKind, Result};
use crate::rt::{Clock, KeyDerivation, Pbkdf2};

/// What a [`Conversation`] wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Send this command (to the credential's source database, which the runner adds
    /// as `$db`) and feed the reply to [`Conversation::reply`].
    Send(Document),
    /// Call [`Conversation::compute`] for a round of slow, CPU-bound work (SCRAM's key
    /// derivation), after letting the executor run its other tasks: see
    /// [`next_command`].
    Compute,
    /// Authentication succeeded.
    Done,
}

/// An I/O-free authentication conversation for one connection.
///
/// The runner calls [`speculative`](Conversation::speculative) while building the
/// handshake; if the hello reply carries `speculativeAuthenticate`, that document is
/// fed to [`reply`](Conversation::reply) and the conversation goes on from there.
/// Otherwise it calls [`start`](Conversation::start) and then `reply` for each reply
/// until [`Step::Done`] or an error; [`next_command`] runs the [`Step::Compute`] steps
/// in between.
pub trait Conversation: crate::rt::MaybeSend {
    /// The document for the hello's `speculativeAuthenticate` field, if this mechanism
    /// supports speculative authentication.
    fn speculative(&mut self) -> Option<Document>;
    /// The first command (e.g. `saslStart`) when no speculative exchange happened.
    fn start(&mut self) -> Result<Step>;
    /// Consumes a successful (`ok: 1`) reply and says what comes next. A bad reply
    /// (for instance a wrong server signature) is an error.
    fn reply(&mut self, reply: &Document) -> Result<Step>;
    /// Runs one bounded round of the work a [`Step::Compute`] announced and says what
    /// comes next. Only mechanisms that return `Step::Compute` (SCRAM) implement it;
    /// for the others a call is out of turn, an error.
    fn compute(&mut self) -> Result<Step> {
        Err(Error::invalid_argument(
            "this authentication conversation has no work to compute",
        ))
    }
    /// The PBKDF2 derivation that the pending [`Step::Compute`] rounds would run, for
    /// a host that derives keys itself ([`KeyDerivation`]); `None` (the default) when
    /// the work is something else or no derivation is pending.
    fn key_derivation(&self) -> Option<Pbkdf2<'_>> {
        None
    }
    /// Ends the pending [`Step::Compute`] rounds with `key`, the output of the
    /// derivation [`key_derivation`](Conversation::key_derivation) asked for, and says
    /// what comes next.
    fn derived(&mut self, _key: &[u8]) -> Result<Step> {
        Err(Error::invalid_argument(
            "this authentication conversation derives no key",
        ))
    }
}

/// How long the rounds of a [`Step::Compute`] run back to back at most before
/// [`next_command`] gives the host a turn through the clock (a timer), not only the
/// executor.
const LONGEST_STRETCH: Duration = Duration::from_millis(20);

/// Runs the [`Step::Compute`] rounds of `conversation` from `step` on: the next command
/// to send, or `None` once authentication succeeded.
///
/// Before each round it yields to the executor ([`crate::rt::yield_now`]), so that a
/// long key derivation never starves the other tasks and timers of a runtime worker,
/// and the connection attempt's timeout (`connectTimeoutMS`) can fire and drop it. On
/// a JavaScript event loop that yield is a microtask, after which the host's timers and
/// I/O callbacks still wait; so every 20 ms of work the rounds wait for
/// a zero-length timer of `clock` instead, which lets the host run them.
///
/// With a host `key_derivation`, a key derivation the conversation announces
/// ([`Conversation::key_derivation`]) is handed to the host in one call instead; if the
/// host fails (or gives a key of the wrong length), the rounds run as without one.
pub async fn next_command(
    conversation: &mut dyn Conversation,
    mut step: Step,
    clock: &dyn Clock,
    key_derivation: Option<&dyn KeyDerivation>,
) -> Result<Option<Document>> {
    let mut stretch_started = clock.now();
    // Asked once per call: after a failure the core's own rounds take over.
    let mut host = key_derivation;
    loop {
        step = match step {
            Step::Send(command) => return Ok(Some(command)),
            Step::Done => return Ok(None),
            Step::Compute => {
                if let Some(next) = derive_on_host(conversation, host.take()).await {
                    step = next?;
                    continue;
                }
                if clock.now() - stretch_started >= LONGEST_STRETCH {
                    clock.sleep(Duration::ZERO).await;
                    stretch_started = clock.now();
                } else {
                    crate::rt::yield_now().await;
                }
                conversation.compute()?
            }
        };
    }
}

/// Ends the conversation's pending key derivation with the key `host` derives, and
/// says what comes next; `None` when there is no host derivation, nothing to derive,
/// or the host failed. (The conversation is borrowed mutably throughout, which keeps
/// the future `Send` natively: `Conversation` is `Send`, not `Sync`.)
async fn derive_on_host(
    conversation: &mut dyn Conversation,
    host: Option<&dyn KeyDerivation>,
) -> Option<Result<Step>> {
    let request = conversation.key_derivation()?;
    let key = host?.pbkdf2(request).await.ok()?;
    (key.len() == request.length).then(|| conversation.derived(&key))
}

/// An authentication failure the driver detects in the server's replies (a wrong
/// server signature, a malformed SCRAM message, ...) while authenticating against
/// `source`. The message never contains a secret.
pub(crate) fn auth_error(
    mechanism: AuthMechanism,
    source: &str,
    message: impl fmt::Display,
) -> Error {
    Error::new(ErrorKind::Authentication {
        mechanism: mechanism.name(),
        source: source.to_owned(),
        message: message.to_string(),
        code: None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use bson::doc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A conversation that computes `rounds` rounds, then sends a command.
    struct Rounds {
        rounds: u32,
    }

    impl Conversation for Rounds {
        fn speculative(&mut self) -> Option<Document> {
            None
        }
        fn start(&mut self) -> Result<Step> {
            Ok(Step::Compute)
        }
        fn reply(&mut self, _reply: &Document) -> Result<Step> {
            Ok(Step::Done)
        }
        fn compute(&mut self) -> Result<Step> {
            self.rounds -= 1;
            Ok(match self.rounds {
                0 => Step::Send(doc! { "saslContinue": 1 }),
                _ => Step::Compute,
            })
        }
    }

    /// A clock 5 ms later at each reading, counting the timers asked of it.
    #[derive(Default)]
    pub(in crate::auth) struct Ticking {
        readings: AtomicU64,
        timers: AtomicU64,
    }

    impl Clock for Ticking {
        fn now(&self) -> crate::rt::Instant {
            let reading = self.readings.fetch_add(1, Ordering::Relaxed);
            crate::rt::Instant::from_origin(Duration::from_millis(5 * reading))
        }
        fn unix_time(&self) -> Duration {
            Duration::ZERO
        }
        fn sleep(&self, _duration: Duration) -> crate::rt::BoxFuture<'static, ()> {
            self.timers.fetch_add(1, Ordering::Relaxed);
            crate::rt::boxed(async {})
        }
    }

    /// Long work gives the host a timer's turn (a JavaScript event loop runs its timers
    /// and I/O then) every LONGEST_STRETCH, not only microtask-like yields.
    #[test]
    fn long_work_gives_the_host_a_turn_through_the_clock() {
        let clock = Ticking::default();
        let mut conversation = Rounds { rounds: 40 };
        let step = conversation.start().unwrap();
        let command =
            futures::executor::block_on(next_command(&mut conversation, step, &clock, None))
                .unwrap();
        assert_eq!(command, Some(doc! { "saslContinue": 1 }));
        // 5 ms a reading: the stretch reaches 20 ms every few rounds.
        let timers = clock.timers.load(Ordering::Relaxed);
        assert!((5..=20).contains(&timers), "{timers} timers for 40 rounds");
    }
}
