//! What an application's name and token type must be, as the store and an import check
//! them.

use crate::error::{Error, Result};

/// A name of at most 70 printable characters without white space around it.
pub fn check_name(name: &str) -> Result<()> {
    if name.trim() != name {
        return Err(Error::Invalid(
            "Application name cannot contain leading or trailing white spaces".into(),
        ));
    }
    if name.chars().count() > 70 || name.chars().any(char::is_control) {
        return Err(Error::Invalid(
            "Application name must have at most 70 printable characters".into(),
        ));
    }
    Ok(())
}

/// `OAUTH` or `JWT` (and `DEFAULT`, DefaultApplication's).
pub fn check_token_type(token_type: &str) -> Result<()> {
    if matches!(token_type, "OAUTH" | "JWT" | "DEFAULT") {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "Invalid tokenType '{token_type}'; allowed values are OAUTH, JWT"
    )))
}
