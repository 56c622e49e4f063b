//! MONGODB-X509 (Authentication spec, "MONGODB-X509"): the TLS client certificate is
//! the identity; one `authenticate` command, which is also the speculative form.

use bson::{doc, Document};

use super::{AuthMechanism, Conversation, Credential, Step};
use crate::error::{Error, Result};

const MECHANISM: AuthMechanism = AuthMechanism::MongoDbX509;

/// A MONGODB-X509 conversation.
pub(crate) struct X509Conversation {
    /// "If the application does not provide a username you MUST NOT send a username
    /// to the server."
    username: Option<String>,
}

impl X509Conversation {
    /// Fails if the credential has a password ("MUST NOT be specified").
    pub(crate) fn new(credential: &Credential) -> Result<Self> {
        if credential.password.is_some() {
            return Err(Error::invalid_argument(
                "MONGODB-X509 authentication does not take a password",
            ));
        }
        Ok(X509Conversation {
            username: credential.username.clone(),
        })
    }

    /// `{authenticate: 1, mechanism: "MONGODB-X509"[, user]}`.
    fn command(&self) -> Document {
        let mut command = doc! { "authenticate": 1, "mechanism": MECHANISM.name() };
        if let Some(username) = &self.username {
            command.insert("user", username.clone());
        }
        command
    }
}

impl Conversation for X509Conversation {
    /// The `authenticate` command itself (MongoDB Handshake spec, "Speculative
    /// Authentication": "the same structure as seen in the MONGODB-X509 conversation").
    fn speculative(&mut self) -> Option<Document> {
        Some(self.command())
    }

    fn start(&mut self) -> Result<Step> {
        Ok(Step::Send(self.command()))
    }

    /// Any successful reply (`{dbname, user}`) completes the conversation.
    fn reply(&mut self, _reply: &Document) -> Result<Step> {
        Ok(Step::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(username: Option<&str>, password: Option<&str>) -> Credential {
        Credential {
            username: username.map(Into::into),
            password: password.map(Into::into),
            mechanism: Some(MECHANISM),
            ..Credential::default()
        }
    }

    #[test]
    fn the_user_is_sent_only_when_given() {
        let mut anonymous = X509Conversation::new(&credential(None, None)).unwrap();
        let expected = doc! { "authenticate": 1, "mechanism": "MONGODB-X509" };
        assert_eq!(anonymous.start().unwrap(), Step::Send(expected.clone()));
        assert_eq!(anonymous.speculative(), Some(expected));

        let subject = "C=IS,ST=Reykjavik,L=Reykjavik,O=MongoDB,OU=Drivers,CN=client";
        let mut named = X509Conversation::new(&credential(Some(subject), None)).unwrap();
        let expected = doc! { "authenticate": 1, "mechanism": "MONGODB-X509", "user": subject };
        assert_eq!(named.start().unwrap(), Step::Send(expected));
        let reply = doc! { "dbname": "$external", "user": subject };
        assert_eq!(named.reply(&reply).unwrap(), Step::Done);
    }

    #[test]
    fn a_password_is_refused() {
        assert!(X509Conversation::new(&credential(Some("u"), Some("p"))).is_err());
    }
}
