//! What a WSDL must be: a file name, and a WSDL 1.1 document (well-formed XML whose root
//! is `definitions`, without a DOCTYPE: see `crate::xml`) of at most 1 MiB.

use super::queries::WsdlRow;
use crate::error::{Error, Result};
use crate::http::multipart::check_file_name;

/// Largest WSDL, bytes.
const MAX_WSDL_BYTES: usize = 1024 * 1024;

/// Checks a WSDL's name and definition, both required.
pub fn check(name: Option<String>, definition: Option<String>) -> Result<WsdlRow> {
    crate::error::require_present(&[
        ("name", name.is_none()),
        ("wsdlDefinition", definition.is_none()),
    ])?;
    let name = name.unwrap_or_default();
    check_file_name(&name)?;
    let definition = definition.unwrap_or_default();
    if definition.len() > MAX_WSDL_BYTES {
        return Err(Error::PayloadTooLarge);
    }
    if definition.contains('\0') {
        return Err(Error::Invalid(
            "The WSDL must not contain NUL characters".into(),
        ));
    }
    crate::xml::check_document(&definition, "definitions")
        .map_err(|problem| Error::Invalid(format!("Invalid WSDL: {problem}")))?;
    Ok(WsdlRow { name, definition })
}
