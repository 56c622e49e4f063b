//! PLAIN (Authentication spec, "PLAIN"; RFC 4616): LDAP proxy authentication in one
//! `saslStart` whose payload is `\0username\0password`.

use bson::Document;

use super::sasl::{self, Reply};
use super::{auth_error, missing, AuthMechanism, Conversation, Credential, Step};
use crate::error::Result;

const MECHANISM: AuthMechanism = AuthMechanism::Plain;

/// A PLAIN conversation. It holds the password, so it has no `Debug`.
pub(crate) struct PlainConversation {
    source: String,
    username: String,
    password: String,
}

impl PlainConversation {
    /// Fails unless the credential has a user name and a password.
    pub(crate) fn new(credential: &Credential) -> Result<Self> {
        Ok(PlainConversation {
            source: credential.effective_source().to_owned(),
            username: credential
                .username
                .clone()
                .ok_or_else(|| missing(MECHANISM, "a user name"))?,
            password: credential
                .password
                .clone()
                .ok_or_else(|| missing(MECHANISM, "a password"))?,
        })
    }
}

impl Conversation for PlainConversation {
    /// PLAIN has no speculative form.
    fn speculative(&mut self) -> Option<Document> {
        None
    }

    fn start(&mut self) -> Result<Step> {
        // The message without an authorization identity: "\0user\0password".
        let payload = format!("\0{}\0{}", self.username, self.password);
        Ok(Step::Send(sasl::start_command(
            MECHANISM,
            payload.into_bytes(),
            false,
        )))
    }

    fn reply(&mut self, reply: &Document) -> Result<Step> {
        match Reply::parse(MECHANISM, &self.source, reply)?.done {
            true => Ok(Step::Done),
            false => Err(auth_error(
                MECHANISM,
                &self.source,
                "the server did not end the conversation after the only PLAIN message",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn credential(password: Option<&str>) -> Credential {
        Credential {
            username: Some("user".into()),
            password: password.map(Into::into),
            mechanism: Some(MECHANISM),
            ..Credential::default()
        }
    }

    /// The spec's example: user "user", password "pencil" → `AHVzZXIAcGVuY2ls`.
    #[test]
    fn spec_example() {
        let mut plain = PlainConversation::new(&credential(Some("pencil"))).unwrap();
        assert_eq!(plain.speculative(), None);
        let Step::Send(command) = plain.start().unwrap() else {
            panic!("PLAIN sends saslStart");
        };
        assert_eq!(command.get_i32("saslStart").unwrap(), 1);
        assert_eq!(command.get_str("mechanism").unwrap(), "PLAIN");
        assert_eq!(
            command.get_binary_generic("payload").unwrap(),
            b"\0user\0pencil"
        );
        assert!(!command.contains_key("options"));
        let done = doc! { "conversationId": 1, "done": true, "payload": bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic, bytes: Vec::new() }, "ok": 1 };
        assert_eq!(plain.reply(&done).unwrap(), Step::Done);
        let not_done = doc! { "conversationId": 1, "done": false };
        assert!(plain.reply(&not_done).is_err());
    }

    #[test]
    fn a_password_is_required() {
        assert!(PlainConversation::new(&credential(None)).is_err());
    }
}
