//! Messages to an API's MCP endpoint, in both revisions, as the gateway reads them: the
//! JSON-RPC envelope, the routing headers, a tool call's arguments and the operation's
//! request made of them. Nothing may panic.
#![no_main]

use apim_http::{Request, Scheme};
use apim_manifest::mcp::{ArgumentLocation, McpServer, McpTool, ToolArgument};
use gateway::mcp::{self, Step};
use libfuzzer_sys::fuzz_target;

fn server() -> McpServer {
    let argument = |name: &str, location| ToolArgument {
        name: name.into(),
        location,
        required: false,
    };
    McpServer {
        tools: vec![McpTool {
            name: "t".into(),
            description: String::new(),
            method: "POST".into(),
            template: "/a/{p}/b".into(),
            scope: None,
            arguments: vec![
                argument("p", ArgumentLocation::Path),
                argument("q", ArgumentLocation::Query),
                argument("h", ArgumentLocation::Header),
                argument("body", ArgumentLocation::Body),
            ],
            input_schema: r#"{"type":"object","properties":{"p":{"type":"string"}}}"#.into(),
            output_schema: Some(r#"{"type":"object"}"#.into()),
        }],
    }
}

fuzz_target!(|data: &[u8]| {
    let server = server();
    let mut validators = mcp::Validators::default();
    for version in ["2026-07-28", "2025-11-25"] {
        let request = Request {
            method: "POST".into(),
            path_with_query: "/api/v1/mcp".into(),
            headers: vec![
                ("mcp-protocol-version".into(), version.as_bytes().to_vec()),
                ("mcp-method".into(), b"tools/call".to_vec()),
                ("mcp-name".into(), b"t".to_vec()),
            ],
            body: data.to_vec(),
            scheme: Scheme::Http,
        };
        if let Step::Call(call) = mcp::step(&server, &request, &|_| true, &mut validators) {
            let operation = mcp::operation_request(&server.tools[call.tool], &call.arguments, "/api/v1", &request);
            let _ = apim_manifest::canon::Target::parse(&operation.path_with_query);
        }
    }
});
