//! Browser sessions of the sign-in pages: who signed in, when, until when. A session is
//! named by a random cookie (`HttpOnly`, `SameSite=Lax`, `Secure` over TLS); only its
//! digest is stored, and signing in always starts a new one (no fixation).

mod queries;
mod records;

pub use queries::{delete, find, start};
pub use records::{COOKIE, SESSION_SECS, Session, Started};
