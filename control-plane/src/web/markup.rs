//! What publishers wrote, made safe to put in a page: Markdown rendered, then every
//! piece of HTML (Markdown's, or an inline document's own) passed through ammonia, which
//! keeps the structure and text and drops scripts, styles, event handlers, frames, forms
//! and images (which would only ask the browser to reach another host), and any link
//! that is not http, https or mailto.

use std::collections::HashSet;

/// Markdown as sanitised HTML.
pub fn markdown(text: &str) -> String {
    let mut html = String::with_capacity(text.len() * 3 / 2);
    let parser = pulldown_cmark::Parser::new_ext(text, pulldown_cmark::Options::ENABLE_TABLES);
    pulldown_cmark::html::push_html(&mut html, parser);
    sanitised(&html)
}

/// HTML as sanitised HTML.
pub fn sanitised(html: &str) -> String {
    ammonia::Builder::default()
        .rm_tags(HashSet::from(["img"]))
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(html)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_keeps_its_structure_and_loses_what_runs() {
        let html = markdown(
            "# Title\n\n*Pets* and [docs](https://example.com/docs).\n\n<script>alert(1)</script>\n\n[bad](javascript:alert(1)) <img src=\"https://tracker.example/p.gif\"> <a href=\"#\" onclick=\"x()\">x</a>",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<em>Pets</em>"));
        assert!(html.contains("href=\"https://example.com/docs\""));
        for gone in [
            "<script",
            "javascript:",
            "<img",
            "onclick",
            "tracker.example",
        ] {
            assert!(!html.contains(gone), "{gone} in {html}");
        }
    }

    #[test]
    fn inline_html_is_cleaned_too() {
        let html = sanitised(
            "<p style=\"color:red\">Hi<iframe src=\"https://x\"></iframe><form><input></form></p>",
        );
        assert!(html.starts_with("<p>Hi</p>"), "{html}");
        for gone in ["style", "iframe", "form", "input"] {
            assert!(!html.contains(gone), "{gone} in {html}");
        }
    }
}
